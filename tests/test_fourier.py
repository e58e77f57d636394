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
import os

import exact_oracle as oracle
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import shuffle_lib as sl
from shuffle_lib.core import fourier, grid

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
    """The default: relative width <= 1 % for delta >= 1e-10 at K <= 100."""
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
    """A target eps that ties with an atom's loss up to rounding.  Exact values from
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


@settings(max_examples=40, **FAST)
@given(st.integers(2, 300), st.integers(1, 12), st.integers(1, 5), st.integers(0, 2 ** 32 - 1),
       st.floats(-30, 0), st.floats(0.0, 3.0), st.sampled_from([1, 4, 64]))
def test_window_edges_bound_the_exact_tails(m, k1, k2, seed, logspread, rho, size):
    """The one-FFT window's ends (grid.py point 6, :func:`grid._chernoff_edge`): the exact weight of
    the composition below the lower edge, above the upper one, and above the untilted one (weights
    times e^{-rho s}) is at most the allowance, by long-double convolution; the same with the
    thetas of another grid given (any theta is a valid bound)."""
    rng = np.random.default_rng(seed)
    h = 0.01
    grids = []
    for k, off in ((k1, -int(rng.integers(0, 40))), (k2, int(rng.integers(0, 40)))):
        a = np.exp(logspread * rng.random(m))
        grids.append((a / a.sum(), off, k))
    blocks = [(grid._blocks(b, o, h, size), k) for b, o, k in grids]
    exact, lo = np.array([1.0], dtype=np.longdouble), 0
    for b, o, k in grids:
        for _ in range(k):
            exact, lo = np.convolve(exact, b.astype(np.longdouble)), lo + o
    s = (lo + np.arange(exact.size)) * h
    log_tail = math.log(1e-12)
    other = {}
    for theta in (None, 0.5):
        for key, upper, r in (("lo", False, 0.0), ("hi", True, 0.0), ("u", True, -rho)):
            x, th = grid._chernoff_edge(blocks, log_tail, upper, r, theta=other.get(key, theta))
            other[key] = th
            w = exact * np.exp(np.longdouble(r) * s)
            beyond = float(w[s >= x].sum() if upper else w[s < x].sum())
            assert beyond <= math.exp(log_tail) * (1 + 1e-9), (key, x, theta)
            assert grid._log_tail_at(blocks, x, th, upper, r) <= log_tail + 1e-9


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
    """A composition whose grid would exceed MEMORY_LIMIT is refused with the size it needs."""
    monkeypatch.setattr(grid, "MEMORY_LIMIT", 1e6)
    monkeypatch.setattr(grid, "resident_bytes", lambda: 0.0)   # the grid's own estimate alone
    p, q = [0.5, 0.3, 0.2], [0.2, 0.35, 0.45]         # off every lattice: composed on a grid
    with pytest.raises(ValueError, match=r"GB.*SHUFFLE_LIB_MEMORY_LIMIT"):
        sl.epsilon_bracket([(sl.pld_from_pmfs(p, q), 10)], [(sl.pld_from_pmfs(q, p), 10)], [1e-6], accuracy=1e-6)
    assert grid.check_memory(1000, "x") == 1000


def test_memory_guard_counts_what_the_process_holds(monkeypatch):
    """The limit bounds what the process holds plus what a grid adds: a grid that fits alone is
    refused beside 3.9 GB already held (delta krr-strong --n 200 --gamma 0.5 --k 2, K = 1000, died
    under a 4 GiB address-space limit with a 59M-point window estimated at 3.8 GB)."""
    monkeypatch.setattr(grid, "MEMORY_LIMIT", 4e9)
    monkeypatch.setattr(grid, "resident_bytes", lambda: 0.0)
    assert grid.check_memory(10 ** 7, "x") == 10 ** 7
    monkeypatch.setattr(grid, "resident_bytes", lambda: 3.9e9)
    with pytest.raises(grid.MemoryLimitError, match="3.9 GB the process holds"):
        grid.check_memory(10 ** 7, "x")


def test_the_resident_set_grows_with_an_array():
    if not os.path.exists("/proc/self/statm"):
        pytest.skip("no /proc/self/statm here: resident_bytes reads 0 and the grid's estimate alone counts")
    held = grid.resident_bytes()
    big = np.ones(2 * 10 ** 7)          # 160 MB, written
    assert grid.resident_bytes() >= held + 1e8
    del big


def test_a_grid_refused_for_memory_is_composed_coarser(monkeypatch):
    """The accuracy-driven route retries a grid the memory guard refuses on a step twice as coarse
    (certified, with "memory" noted by the callers) instead of failing the query."""
    p, q = [0.5, 0.3, 0.2], [0.2, 0.35, 0.45]         # off every lattice: composed on a grid
    comps = [(sl.pld_from_pmfs(p, q), 10)]
    fine = fourier.compose(comps, accuracy=1e-5)
    monkeypatch.setattr(grid, "resident_bytes", lambda: 0.0)
    monkeypatch.setattr(grid, "MEMORY_LIMIT", grid.BYTES_PER_POINT * fine.up.w.size * 0.6)
    coarse = fourier.compose(comps, accuracy=1e-5)
    assert coarse.h >= 2 * fine.h
    e_fine = fourier.epsilon_bracket_one(fine, 1e-6)
    e_coarse = fourier.epsilon_bracket_one(coarse, 1e-6)
    assert e_coarse.lower <= e_fine.upper and e_fine.lower <= e_coarse.upper


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


# ---- the grid's block tail sums (grid._block_log_sums, grid._TopTail, the fast reads) ----

@pytest.mark.parametrize("n, size", [(1000, 7), (1024, 256), (5, 256), (0, 4), (777, 1)])
@pytest.mark.parametrize("rate", [0.25, -0.25, 0.0])
def test_block_log_sums_match_long_double_sums(n, size, rate):
    """Each block's log sum of w e^{rate k} against a long-double sum, with zeros and weights of
    1e-290 (summed again scaled, no subnormal products) among the blocks."""
    rng = np.random.default_rng(n + size)
    w = rng.random(n)
    w[rng.random(n) < 0.3] = 0.0
    w[: n // 3] *= 1e-290
    got = grid._block_log_sums(w, size, rate / max(size, 1))
    f = np.exp(np.longdouble(rate / max(size, 1)) * np.arange(size, dtype=np.longdouble))
    ref = []
    for b in range(-(-n // size)):
        chunk = w[b * size:(b + 1) * size].astype(np.longdouble)
        total = np.sum(chunk * f[: chunk.size])
        ref.append(float(np.log(total)) if total > 0 else -math.inf)
    assert got.size == len(ref)
    assert np.array_equal(np.isinf(got), np.isinf(ref))
    fin = np.isfinite(ref)
    assert np.allclose(got[fin], np.array(ref)[fin], rtol=1e-13, atol=1e-12)


@pytest.mark.parametrize("lam, h", [(0.0, 1e-3), (1.0, 1e-4), (30.0, 0.05), (2.0, 2.0)])
def test_top_tail_masses_match_the_pointwise_cumulative_sum(lam, h):
    """grid._TopTail's masses of the top n points and its cut count against the pointwise sum
    from the top of m_i = w_i e^{logscale - lam s_i} (in long double)."""
    rng = np.random.default_rng(7)
    m = 3000
    w = np.exp(-rng.random(m) * 40)
    w[rng.random(m) < 0.1] = 0.0
    w /= w.max()
    s = (-1000 + np.arange(m)) * h
    with np.errstate(divide="ignore"):
        logscale = -float(np.max(np.log(w) - lam * s))      # untilted masses at most 1, as on a grid
    g = grid._Grid(w, -1000, logscale, 0.0, 0.0, 0.0, 0.0)
    with np.errstate(divide="ignore"):
        lm = np.log(w.astype(np.longdouble)) + np.longdouble(g.logscale) - np.longdouble(lam) * s
    exact = np.cumsum(np.exp(lm[::-1]))
    tail = grid._TopTail(g, h, lam)
    for n in (1, 2, tail.size, tail.size + 1, m // 2, m):
        assert tail.mass(n) == pytest.approx(float(exact[n - 1]), rel=1e-12, abs=1e-300)
    cum = exact.astype(float)
    # cuts between two distinct sums (a tie with a sum is decided by its last ulp either way)
    steps = np.nonzero(cum[1:] > cum[:-1] * (1 + 1e-9))[0]
    assert steps.size >= 4
    gaps = steps[[0, steps.size // 3, steps.size // 2, -1]]
    for tau in [0.5 * (cum[k] + cum[k + 1]) for k in gaps] + [0.0, 2 * cum[-1]]:
        assert tail.count_within(tau) == int(np.searchsorted(cum, tau, side="right"))


def test_fast_reads_follow_the_exact_reads():
    """The steering reads (block tail sums) agree with the certified pointwise read to 1e-9 over a
    composed grid's range: they steer the searches, the pointwise reads certify."""
    p = sl.pld_from_pmfs([0.5, 0.3, 0.2], [0.2, 0.3, 0.5])
    cg = sl.compose([(p, 40)], accuracy=1e-3, lam=0.8)
    for side in ("up", "low"):
        g = cg.up if side == "up" else cg.low
        for x in np.linspace(0.0, (g.offset + g.w.size) * cg.h, 23):
            exact = grid._grid_delta(g, cg.h, cg.lam, float(x))[0]
            fast = grid._fast_grid_delta(cg, side, float(x))
            assert fast == pytest.approx(exact, rel=1e-9, abs=1e-300), (side, x)


@pytest.mark.parametrize("K", [2, 10, 40])
def test_a_lattice_pair_composes_exactly_at_the_default_accuracy(K):
    """The 3-outcome pair (0.5, 0.3, 0.2) / (0.2, 0.3, 0.5) has every loss on k log 2.5: it is
    composed on that lattice (2K + 1 points), not on a grid of the accuracy's step, so its
    eps(1e-6) bracket is as narrow as the round-off allows and holds the exact eps of the
    multinomial enumeration (no library call); a pair off every lattice keeps a grid's width."""
    p, q = [0.5, 0.3, 0.2], [0.2, 0.3, 0.5]
    br = sl.epsilon_bracket([(sl.pld_from_pmfs(p, q), K)], [(sl.pld_from_pmfs(q, p), K)], [1e-6])[0]
    exact = oracle.epsilon(p, q, K, 1e-6)
    assert br.lower <= exact <= br.upper
    assert br.upper - br.lower <= 1e-9 * br.upper
    off = [0.2, 0.35, 0.45]
    grid_br = sl.epsilon_bracket([(sl.pld_from_pmfs(p, off), K)], [(sl.pld_from_pmfs(off, p), K)],
                                 [1e-6])[0]
    assert grid_br.upper - grid_br.lower > 1e-6 * grid_br.upper


def _lambda_oracle(pairs, lam):
    """Lambda(lam) = sum_rounds c log E_P[e^{lam L}; L finite], from the PMFs with mpmath (60
    digits): the losses log(p/q) are recomputed here, not read from the library's PLD."""
    import mpmath as mp
    with mp.workdps(60):
        total = mp.mpf(0)
        for (p, q), c in pairs:
            total += c * mp.log(mp.fsum(mp.mpf(a) * mp.exp(lam * mp.log(mp.mpf(a) / mp.mpf(b)))
                                        for a, b in zip(p, q) if a > 0 and b > 0))
        return float(total)


TILT_CASES = [
    ([((np.array([0.7, 0.3]), np.array([0.3, 0.7])), 1)], (0.01, 0.5, 3.0)),
    ([((np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.3, 0.5])), 10)], (2.0, 8.0, 40.0)),
    ([((np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.0, 0.8])), 4),
      ((np.array([0.6, 0.4]), np.array([0.45, 0.55])), 30)], (0.3, 1.5, 6.0)),
]


@pytest.mark.parametrize("pairs, epss", TILT_CASES)
def test_chernoff_tilt_is_the_minimiser_in_few_evaluations(pairs, epss, monkeypatch):
    """The Newton tilt search: its objective Lambda(lam) - lam eps is no worse (to 1e-9) than the
    least over a 2,001-point grid of [0, 50] (mpmath oracle), within 9 evaluations of Lambda,
    and 0 exactly where the objective increases from 0 (Lambda'(0) >= eps)."""
    comps = [(sl.pld_from_pmfs(p, q), c) for (p, q), c in pairs]
    calls = []
    cgf = fourier._cgf
    monkeypatch.setattr(fourier, "_cgf", lambda c, lam: calls.append(lam) or cgf(c, lam))
    grid_lams = np.linspace(0.0, 50.0, 2001)
    for eps in epss:
        calls.clear()
        lam = fourier._lam_for_eps(comps, eps)
        assert 0.0 <= lam <= 50.0 and len(calls) <= 9, (eps, lam, len(calls))
        obj = _lambda_oracle(pairs, lam) - lam * eps
        best = min(_lambda_oracle(pairs, x) - x * eps for x in grid_lams[::20])
        x0 = grid_lams[max(int(np.argmin([_lambda_oracle(pairs, x) - x * eps
                                          for x in grid_lams[::20]])) * 20 - 20, 0)]
        best = min([best] + [_lambda_oracle(pairs, x) - x * eps
                             for x in np.linspace(x0, min(x0 + 1.0, 50.0), 41)])
        assert obj <= best + 1e-9 * max(1.0, abs(best)), (eps, lam, obj, best)
        if lam == 0.0:
            assert _lambda_oracle(pairs, 1e-4) - 1e-4 * eps >= _lambda_oracle(pairs, 0.0) - 1e-12


@pytest.mark.parametrize("pairs, epss", TILT_CASES)
def test_rdp_guess_is_the_least_renyi_bound_on_the_range(pairs, epss):
    """The RDP guess min_lam (Lambda(lam) + log(1/delta)) / lam over [1e-3, 50]: within 1e-6
    (relative) of the least value on a fine grid (mpmath oracle), and never below it by more."""
    comps = [(sl.pld_from_pmfs(p, q), c) for (p, q), c in pairs]
    for delta in (1e-3, 1e-6, 1e-12):
        got = fourier._eps_rdp(comps, delta)
        room = math.log(1 / delta)
        vals = [(_lambda_oracle(pairs, x) + room) / x for x in np.geomspace(1e-3, 50.0, 400)]
        i = int(np.argmin(vals))
        lo, hi = np.geomspace(1e-3, 50.0, 400)[[max(i - 1, 0), min(i + 1, 399)]]
        best = min(vals + [(_lambda_oracle(pairs, x) + room) / x for x in np.linspace(lo, hi, 200)])
        assert best * (1 - 1e-6) <= got <= best * (1 + 1e-6) + 1e-12, (delta, got, best)
