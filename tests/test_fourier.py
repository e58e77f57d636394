"""The certified accountant: lower <= exact <= upper, against independent exact enumeration.

The property tests below generate 1,000+ cases per run (hypothesis, derandomised so
that CI is reproducible): random small pairs, with zeros (infinite losses) allowed,
composed K times, in both rounding modes (up/down for K <= 32, mean-preserving with
the Hoeffding shift above), heterogeneous compositions, and eps(delta) as well as
delta(eps).  Coarse accuracies are used to keep them fast: the brackets are certified
at any accuracy, so coarse grids (and rtol=1: no refinement) test the same guarantee
with wider brackets.
"""

import math

import exact_oracle as oracle
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import shuffle_lib as sl
from shuffle_lib.core import grid

FAST = dict(deadline=None, derandomize=True, database=None)


@st.composite
def pairs(draw, m_max=4, zeros=True):
    m = draw(st.integers(2, m_max))
    p = np.array(draw(st.lists(st.floats(0.01, 1), min_size=m, max_size=m)))
    q = np.array(draw(st.lists(st.floats(0.01, 1), min_size=m, max_size=m)))
    if zeros and draw(st.booleans()):
        q[draw(st.integers(0, m - 1))] = 0.0
    return p / p.sum(), q / q.sum()


def both(p, q, K):
    return [(sl.pld_from_pmfs(p, q), K)], [(sl.pld_from_pmfs(q, p), K)]


@settings(max_examples=500, **FAST)
@given(pairs(), st.integers(1, 6), st.lists(st.floats(0, 4), min_size=1, max_size=3),
       st.sampled_from([3e-2, 1e-2, 2e-3]))
def test_delta_bracket_contains_exact_updown(pq, K, eps, acc):
    p, q = pq
    out = sl.delta_bracket(*both(p, q, K), eps, accuracy=acc, rtol=1.0)
    for e, b in zip(eps, out):
        exact = oracle.delta(p, q, K, e)
        assert b.lower <= exact <= b.upper, (e, b, exact)


@settings(max_examples=150, **FAST)
@given(pairs(m_max=3), st.integers(33, 150), st.floats(0, 6), st.sampled_from([3e-2, 1e-2]))
def test_delta_bracket_contains_exact_mean_mode(pq, K, e, acc):
    p, q = pq
    out = sl.delta_bracket(*both(p, q, K), [e], accuracy=acc, rtol=1.0)[0]
    exact = oracle.delta(p, q, K, e)
    assert out.lower <= exact <= out.upper


@settings(max_examples=200, **FAST)
@given(pairs(m_max=3), st.sampled_from([2, 5, 40]), st.sampled_from([1e-1, 1e-3, 1e-6, 1e-9]))
def test_epsilon_bracket_contains_exact(pq, K, d):
    p, q = pq
    out = sl.epsilon_bracket(*both(p, q, K), [d], accuracy=1e-2)[0]
    exact = oracle.epsilon(p, q, K, d)
    assert out.lower <= exact <= out.upper, (out, exact)


@settings(max_examples=100, **FAST)
@given(pairs(m_max=3, zeros=False), pairs(m_max=3, zeros=False), st.integers(1, 3), st.integers(1, 3),
       st.floats(0, 3))
def test_heterogeneous_composition(pq1, pq2, k1, k2, e):
    (p1, q1), (p2, q2) = pq1, pq2
    P1, Q1 = sl.product_pmfs(p1, q1, k1)
    P2, Q2 = sl.product_pmfs(p2, q2, k2)
    exact = sl.delta_exact(np.kron(P1, P2), np.kron(Q1, Q2), [e])[0]
    a = [(sl.pld_from_pmfs(p1, q1), k1), (sl.pld_from_pmfs(p2, q2), k2)]
    b = [(sl.pld_from_pmfs(q1, p1), k1), (sl.pld_from_pmfs(q2, p2), k2)]
    out = sl.delta_bracket(a, b, [e], accuracy=1e-2, rtol=1.0)[0]
    assert out.lower <= exact <= out.upper


@settings(max_examples=60, **FAST)
@given(st.integers(2, 3000), st.integers(2, 3000), st.integers(0, 2 ** 32 - 1), st.floats(-30, 0))
def test_fft_roundoff_within_the_stated_bound(na, nb, seed, logspread):
    """The l1 error of one FFT convolution is below the bound the accountant adds."""
    rng = np.random.default_rng(seed)
    a = np.exp(logspread * rng.random(na))
    b = np.exp(logspread * rng.random(nb))
    a, b = a / a.max(), b / b.max()
    ga = grid._Grid(a, 0, 0.0, 0.0, 0.0, 0.0, 0.0)
    gb = grid._Grid(b, 0, 0.0, 0.0, 0.0, 0.0, 0.0)
    out = grid._convolve(ga, gb, 1.0, 0.0, 0.0)
    exact = np.convolve(a.astype(np.longdouble), b.astype(np.longdouble))
    scale = float(exact.max())
    assume(out.w.size == exact.size)  # no trimming happened (tau_top = 0 keeps everything)
    err = float(np.abs(out.w * scale - exact).sum()) / scale
    assert err <= out.err


def test_randomised_response_matches_binomial_sum():
    for eps0, K in ((1.0, 10), (0.5, 64)):
        P, Q = sl.rr_pmfs(eps0)
        eps = [0.0, 0.5, 2.0, 4.0]
        out = sl.delta_bracket(*both(P, Q, K), eps)
        for e, b in zip(eps, out):
            exact = sl.rr_delta_exact(eps0, e, K)
            assert b.lower <= exact <= b.upper
            assert b.upper - b.lower <= 0.01 * b.upper


@pytest.mark.parametrize("K, rtol", [(10, 0.01), (100, 0.01)])
def test_default_width_at_small_delta(K, rtol):
    """Issue 2's default: relative width <= 1 % for delta >= 1e-10 at K <= 100."""
    eps0 = 0.3
    P, Q = sl.rr_pmfs(eps0)
    e_hi = sl.epsilon_bracket(*both(P, Q, K), [1e-10])[0].upper
    out = sl.delta_bracket(*both(P, Q, K), [e_hi * 0.999])[0]
    exact = sl.rr_delta_exact(eps0, e_hi * 0.999, K)
    assert exact >= 1e-10
    assert out.lower <= exact <= out.upper
    assert out.upper - out.lower <= rtol * out.upper


def test_one_round_is_exact():
    rng = np.random.default_rng(3)
    p, q = rng.dirichlet(np.ones(7)), rng.dirichlet(np.ones(7))
    b = sl.delta_bracket(sl.pld_from_pmfs(p, q), sl.pld_from_pmfs(q, p), [0.3])[0]
    exact = sl.delta_exact(p, q, [0.3])[0]
    assert b.lower <= exact <= b.upper and b.upper - b.lower <= 3e-12 * exact
    e = sl.epsilon_bracket(sl.pld_from_pmfs(p, q), sl.pld_from_pmfs(q, p), [1e-3])[0]
    assert e.lower <= sl.epsilon_exact(p, q, 1e-3) <= e.upper


def test_extreme_delta_gives_a_valid_bracket():
    P, Q = sl.rr_pmfs(1.0)
    out = sl.epsilon_bracket(*both(P, Q, 10), [1e-300])[0]
    assert out.lower <= 10.0 <= out.upper  # exact: 10 - 2e-299, i.e. 10.0 in double precision
    assert out.upper <= 10.0 * (1 + 1e-9)  # finite and tight: the grid-free Chernoff end
    assert out.lower >= 10.0 * (1 - 1e-9)  # and the top-atom lower end (the grid's alone gave 0 at K=1000)
    far = sl.delta_bracket(*both(P, Q, 10), [9.9])[0]   # eps beyond the grid's reach
    exact = oracle.delta(P, Q, 10, 9.9)
    assert far.lower <= exact <= far.upper and far.upper <= 1.01 * far.lower


@settings(max_examples=150, **FAST)
@given(pairs(m_max=3), st.sampled_from([2, 5, 40]), st.sampled_from([1e-30, 1e-100, 1e-300]))
def test_tiny_delta_bracket_contains_exact(pq, K, d):
    """Below the FFT's error floor the upper end comes from the Chernoff bound: still certified,
    and finite whenever no outcome has infinite loss."""
    p, q = pq
    out = sl.epsilon_bracket(*both(p, q, K), [d], accuracy=1e-2)[0]
    exact = oracle.epsilon(p, q, K, d)
    assert out.lower <= exact <= out.upper, (out, exact)
    if np.all(p > 0) and np.all(q > 0):
        assert math.isfinite(out.upper)


@settings(max_examples=150, **FAST)
@given(pairs(m_max=3), st.sampled_from([2, 5, 40]), st.floats(0.5, 1.0))
def test_delta_bracket_near_the_largest_loss(pq, K, frac):
    """delta(eps) for eps up to the largest composed loss, where it is tiny or 0."""
    p, q = pq
    keep = (p > 0) & (q > 0)
    top = K * max(float(np.max(np.log(p[keep] / q[keep]))), float(np.max(np.log(q[keep] / p[keep]))))
    e = max(frac * top, 0.0)
    out = sl.delta_bracket(*both(p, q, K), [e], accuracy=1e-2, rtol=1.0)[0]
    exact = oracle.delta(p, q, K, e)
    assert out.lower <= exact <= out.upper, (e, out, exact)


def test_dp_accounting_agrees_within_its_own_bracket():
    """Google's dp_accounting (pessimistic/optimistic, both directions) against our bracket."""
    from dp_accounting.pld import privacy_loss_distribution as dpa

    rng = np.random.default_rng(11)
    p, q = rng.dirichlet(np.ones(12)), rng.dirichlet(np.ones(12))
    lp = {i: math.log(x) for i, x in enumerate(p)}
    lq = {i: math.log(x) for i, x in enumerate(q)}
    K, eps = 20, [1.0, 3.0]
    ours = sl.delta_bracket(*both(p, q, K), eps)
    for pess in (True, False):
        d = dpa.from_two_probability_mass_functions(lq, lp, pessimistic_estimate=pess,
                                                    value_discretization_interval=1e-4, symmetric=False)
        d = d.self_compose(K)
        for e, b in zip(eps, ours):
            theirs = d.get_delta_for_epsilon(e)
            if pess:
                assert theirs >= b.lower  # an upper bound can't sit below a certified lower bound
            else:
                assert theirs <= b.upper


@pytest.mark.parametrize("kwargs, msg", [
    (dict(accuracy=0.0), "accuracy must lie in"),
    (dict(accuracy=float("nan")), "accuracy must lie in"),
    (dict(h=1e-9, max_points=64), "too small"),
    (dict(max_points=10), "max_points must be an integer"),
])
def test_bad_grid_options(kwargs, msg):
    P, Q = sl.rr_pmfs(1.0)
    with pytest.raises(ValueError, match=msg):
        sl.delta_bracket(*both(P, Q, 3), [1.0], **kwargs)


def test_bad_components_and_targets():
    P, Q = sl.rr_pmfs(1.0)
    a, b = both(P, Q, 3)
    with pytest.raises(ValueError, match="compositions must be an integer"):
        sl.delta_bracket([(a[0][0], 0)], b, [1.0])
    with pytest.raises(ValueError, match="PLDs with counts"):
        sl.delta_bracket([(P, 2)], b, [1.0])
    with pytest.raises(ValueError, match="eps must lie in"):
        sl.delta_bracket(a, b, [-1.0])
    with pytest.raises(ValueError, match="delta must lie in"):
        sl.epsilon_bracket(a, b, [0.0])
    with pytest.raises(ValueError, match="delta must lie in"):
        sl.epsilon_bracket(a, b, [float("nan")])


def test_one_round_brackets_hold_at_ties_of_the_loss():
    """Issue 17: a target eps that ties with an atom's loss up to rounding.  Exact values from
    mpmath at 50 digits, not from the library."""
    import mpmath as mp
    mp.mp.dps = 50
    # binary RR at eps = eps0: the only loss above 0 is eps0 itself, so delta(eps0) = 0 exactly
    P, Q = sl.rr_pmfs(0.3)
    br = sl.delta_bracket([(sl.pld_from_pmfs(P, Q), 1)], [(sl.pld_from_pmfs(Q, P), 1)], [0.3])[0]
    assert br.lower == 0.0 <= br.upper
    # p = (3/4, 1/4) vs its mirror just below eps = log 3: delta = 3/4 (1 - e^(eps - log 3))
    eps = math.log(3) - 1e-8
    exact = float(mp.mpf(3) / 4 * (1 - mp.e ** (mp.mpf(eps) - mp.log(3))))
    p = np.array([0.75, 0.25])
    a, b = sl.pld_from_pmfs(p, p[::-1]), sl.pld_from_pmfs(p[::-1], p)
    br = sl.delta_bracket([(a, 1)], [(b, 1)], [eps])[0]
    assert br.lower <= exact <= br.upper, (br, exact)
    e = sl.epsilon_bracket([(a, 1)], [(b, 1)], [exact])[0]
    assert e.lower <= eps <= e.upper, (e, eps)


@settings(max_examples=40, **FAST)
@given(st.integers(2, 400), st.integers(2, 60), st.integers(0, 2 ** 32 - 1), st.floats(-30, 0), st.integers(-50, 50))
def test_power_composition_within_its_stated_error(m, K, seed, logspread, offset):
    """One-FFT composition (grid.py point 6): the stored window differs from the exact K-fold
    convolution by at most err (tilted l1) plus the top it reports, mass outside the window included."""
    rng = np.random.default_rng(seed)
    a = np.exp(logspread * rng.random(m))
    a /= a.max()
    g = grid._Grid(a, offset, 0.0, 0.0, 0.0, 0.0, 0.0)
    out = grid._power_compose([(g, K)], 1.0, 0.0, 2 ** 26)
    exact = np.array([1.0], dtype=np.longdouble)
    for _ in range(K):
        exact = np.convolve(exact, a.astype(np.longdouble))
    pos = np.arange(exact.size) + K * offset                   # grid index of each exact value
    j = pos - out.offset
    inside = (j >= 0) & (j < out.w.size)
    got = out.w[j[inside]].astype(np.longdouble) * np.exp(np.longdouble(out.logscale))
    miss = float(np.abs(got - exact[inside]).sum() + exact[~inside].sum())
    assert miss <= out.err * math.exp(out.logscale) + out.top * 1.000001


def test_power_and_squaring_agree_and_both_certify():
    """The two composition methods give brackets that overlap and each contains the exact value."""
    p, q = np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.3, 0.5])
    K, eps = 12, 1.5
    exact = oracle.delta(p, q, K, eps)
    a, b = sl.pld_from_pmfs(p, q), sl.pld_from_pmfs(q, p)
    for method in ("power", "squaring"):
        up = grid.compose_on_grid([(a, K)], 1e-3, 1.0, "updown", method)
        dn = grid.compose_on_grid([(b, K)], 1e-3, 1.0, "updown", method)
        lo = max(grid.delta_lower(up, eps), grid.delta_lower(dn, eps))
        hi = max(grid.delta_upper(up, eps), grid.delta_upper(dn, eps))
        assert lo <= exact <= hi and hi - lo < 0.05 * exact


def test_memory_guard_refuses_before_allocating(monkeypatch):
    """A composition whose grid would exceed MEMORY_LIMIT is refused with the size it needs (issue 17)."""
    monkeypatch.setattr(grid, "MEMORY_LIMIT", 1e6)
    p, q = [0.5, 0.3, 0.2], [0.2, 0.3, 0.5]
    with pytest.raises(ValueError, match=r"GB.*SHUFFLE_LIB_MEMORY_LIMIT"):
        sl.epsilon_bracket([(sl.pld_from_pmfs(p, q), 10)], [(sl.pld_from_pmfs(q, p), 10)], [1e-6], accuracy=1e-6)
    assert grid.check_memory(1000, "x") == 1000


def _width(br):
    return br.upper - br.lower


@settings(max_examples=25, **FAST)
@given(pairs(m_max=4, zeros=False), st.integers(2, 12), st.lists(st.floats(0.0, 0.9), min_size=2, max_size=5),
       st.sampled_from([2e-3, 2e-4]))
def test_many_targets_each_as_tight_as_alone(pq, K, fracs, acc):
    """delta at several eps in one query: each bracket holds the exact value (enumeration) and is at
    most 5 % wider than the query of that eps alone (targets from near 0 up to 90 % of the largest
    composed loss, where delta falls to ~1e-20 and one shared tilt would leave the FFT's floor)."""
    p, q = pq
    a, b = both(p, q, K)
    top = K * float(np.max(np.abs(np.log(p / q))))
    eps = [f * top for f in fracs]
    many = sl.delta_bracket(a, b, eps, accuracy=acc)
    for e, br in zip(eps, many):
        alone = sl.delta_bracket(a, b, [e], accuracy=acc)[0]
        exact = oracle.delta(p, q, K, e)
        assert br.lower <= exact * (1 + 1e-9) and exact * (1 - 1e-9) <= br.upper, (e, br, exact)
        assert _width(br) <= 1.05 * _width(alone) + 1e-300, (e, br, alone)


def test_many_targets_of_the_clones_pair_each_as_tight_as_alone():
    """The clones pair (n = 1e4, eps0 = 4, 4 rounds) at eps = 0.02 and 1.9 in one query: delta(1.9)
    is [4.00e-12, 4.04e-12] alone, and [2.4e-169, 6.2e-9] on one grid tilted for both targets."""
    many = sl.mechanism_brackets("ldp-shuffle", "delta", [0.02, 1.9], 4, n=10_000, eps0=4)
    for e, br in zip([0.02, 1.9], many):
        alone = sl.mechanism_brackets("ldp-shuffle", "delta", [e], 4, n=10_000, eps0=4)[0]
        assert max(br.lower, alone.lower) <= min(br.upper, alone.upper)   # both certified: they meet
        assert _width(br) <= 1.05 * _width(alone)
        assert br.accuracy_met and br.limit is None
    assert 3.9e-12 < many[1].lower and many[1].upper < 4.1e-12


RARE = ([0.5, 0.5 - 1e-4, 1e-4], [0.6, 0.4 - 1e-8, 1e-8])   # a rare outcome of loss log 1e4


def test_delta_below_the_top_cuts_floor_is_tight_and_exact():
    """10 rounds of a pair with a rare large loss: delta(40) = 2.5e-18 lies below the ~1e-15 that
    the default top cut (1e-16 per step to +inf) leaves, where the bracket is [1e-40, 2.519e-18];
    with the cut kept to 1e-300 it holds the enumerated value within 1 %."""
    p, q = RARE
    a, b = both(p, q, 10)
    eps = [0.5, 30.0, 40.0]
    for e, br in zip(eps, sl.delta_bracket(a, b, eps)):
        exact = oracle.delta(p, q, 10, e)
        assert br.lower <= exact * (1 + 1e-9) and exact * (1 - 1e-9) <= br.upper, (e, br, exact)
        assert br.upper - br.lower <= 0.01 * br.upper, (e, br)


def test_eps_below_the_floor_of_the_truncation_meets_its_accuracy():
    """eps(1e-20) of 4 rounds of the clones pair (n = 1e4, eps0 = 4) was [2.52, 4.58] under the
    default top cut and [2.52, 3.69] with the cut kept to 1e-300: the pair's truncated tail (9.1e-21
    a round, as a finite top atom) outweighs delta there.  Built again deeper, with the lower end
    read off the dominated PLDs, it meets the default accuracy and agrees with the delta route (the
    exact value: tests/test_adversarial_clones.py)."""
    br = sl.mechanism_brackets("ldp-shuffle", "epsilon", [1e-20], 4, n=10_000, eps0=4)[0]
    assert br.accuracy_met and br.limit is None and br.upper < 2.70, br
    lo, hi = sl.mechanism_brackets("ldp-shuffle", "delta", [br.lower, br.upper], 4, n=10_000, eps0=4)
    assert lo.upper > 1e-20 and hi.lower <= 1e-20
