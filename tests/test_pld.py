"""Exact PLD and hockey-stick divergence: against the definition (sup over events)."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import shuffle_lib as sl

SETTINGS = settings(max_examples=150, deadline=None, derandomize=True, database=None)


@st.composite
def pairs(draw, m_max=6):
    m = draw(st.integers(2, m_max))
    p = np.array(draw(st.lists(st.floats(0, 1), min_size=m, max_size=m)))
    q = np.array(draw(st.lists(st.floats(0, 1), min_size=m, max_size=m)))
    if p.sum() == 0 or q.sum() == 0:
        p, q = p + 1, q + 1
    return p / p.sum(), q / q.sum()


def sup_over_events(p, q, eps):
    """Definition 1 of Koskela et al. 2021: the largest P(E) - e^eps Q(E) over all events E."""
    m = len(p)
    best = 0.0
    for r in range(m + 1):
        for E in itertools.combinations(range(m), r):
            E = list(E)
            best = max(best, p[E].sum() - math.exp(eps) * q[E].sum())
    return best


@SETTINGS
@given(pairs(), st.floats(0, 5))
def test_hockey_stick_is_the_sup_over_events(pq, eps):
    p, q = pq
    got = sl.hockey_stick(sl.pld_from_pmfs(p, q), eps)
    assert got == pytest.approx(sup_over_events(p, q, eps), abs=1e-14)


@SETTINGS
@given(pairs(), st.floats(0, 5))
def test_tail_probability_bounds_delta(pq, eps):
    pld = sl.pld_from_pmfs(*pq)
    assert sl.tail_probability(pld, eps) >= sl.hockey_stick(pld, eps) - 1e-16


def test_tail_is_strictly_looser_for_rr():
    pld = sl.pld_from_pmfs(*sl.rr_pmfs(1.0))
    # one atom at +1 with P-mass a: tail = a, tight delta = a (1 - e^{eps-1})
    a = 1 / (1 + math.exp(-1))
    assert sl.tail_probability(pld, 0.5) == pytest.approx(a, rel=1e-15)
    assert sl.hockey_stick(pld, 0.5) == pytest.approx(a * (1 - math.exp(-0.5)), rel=1e-14)


@SETTINGS
@given(pairs(), st.floats(0, 3))
def test_pointwise_indistinguishability_implies_dp(pq, eps):
    """Zhilyaev 2020 Prop. 2.1 (Kasiviswanathan & Smith): if P_x[P(s)/Q(s) <= e^eps] >= 1 - delta then
    (eps, delta)-DP.  The smallest such delta is P_P[L > eps]; it bounds the tight delta from above,
    and so does the two-sided form P_P[|L| > eps]."""
    p, q = pq
    with np.errstate(divide="ignore", invalid="ignore"):
        L = np.where(p > 0, np.log(p) - np.log(q), 0.0)
    one_sided = math.fsum(p[(p > 0) & (L > eps)])
    two_sided = math.fsum(p[(p > 0) & (np.abs(L) > eps)])
    d = sl.hockey_stick(sl.pld_from_pmfs(p, q), eps)     # delta_{P/Q}, the direction the event speaks of
    assert d <= one_sided + 1e-12
    assert one_sided <= two_sided + 1e-15
    # the converse fails (Prop. 2.1 is an 'if'): see test_tail_is_strictly_looser_for_rr


def test_infinite_loss_mass():
    p, q = np.array([0.5, 0.3, 0.2]), np.array([0.6, 0.4, 0.0])
    pld = sl.pld_from_pmfs(p, q)
    assert pld.inf_mass == pytest.approx(0.2)
    assert sl.hockey_stick(pld, 50.0) == pytest.approx(0.2)
    assert sl.epsilon_for_delta(pld, 0.1) == math.inf
    assert sl.hockey_stick(sl.pld_from_pmfs(q, p), 50.0) == 0.0


@SETTINGS
@given(pairs(), st.floats(1e-6, 0.5))
def test_epsilon_for_delta_inverts(pq, d):
    pld = sl.pld_from_pmfs(*pq)
    e = sl.epsilon_for_delta(pld, d)
    if math.isinf(e):
        assert pld.inf_mass > d
    elif e == 0.0:
        assert sl.hockey_stick(pld, 0.0) <= d
    else:  # delta(eps) crosses d at e: just above e it is <= d, just below it is >= d
        pad = 1e-12 * max(1.0, e)
        assert sl.hockey_stick(pld, e + pad) <= d <= sl.hockey_stick(pld, e - pad)


def test_product_pmfs_is_the_product():
    p, q = np.array([0.2, 0.8]), np.array([0.6, 0.4])
    pk, qk = sl.product_pmfs(p, q, 3)
    assert pk.sum() == pytest.approx(1.0) and pk[0] == pytest.approx(0.2 ** 3) and qk[-1] == pytest.approx(0.4 ** 3)


@pytest.mark.parametrize("p, q, msg", [
    ([0.5, 0.6], [0.5, 0.5], "must sum to 1"),
    ([-0.1, 1.1], [0.5, 0.5], "probabilities in \\[0, 1\\]"),
    ([float("nan"), 1.0], [0.5, 0.5], "finite"),
    ([0.5, 0.5], [0.2, 0.3, 0.5], "same length"),
    ([], [], "non-empty"),
])
def test_bad_pmfs(p, q, msg):
    with pytest.raises(ValueError, match=msg):
        sl.pld_from_pmfs(p, q)


def test_bad_arguments():
    p, q = sl.rr_pmfs(1.0)
    with pytest.raises(ValueError, match="eps must lie in"):
        sl.delta_exact(p, q, -0.1)
    with pytest.raises(ValueError, match="delta must lie in"):
        sl.epsilon_exact(p, q, 1.5)
    with pytest.raises(ValueError, match="k must be an integer"):
        sl.product_pmfs(p, q, 0)
    with pytest.raises(ValueError, match="inf_mass"):
        sl.pld_from_losses([0.1], [0.5], inf_mass=2.0)
    with pytest.raises(ValueError, match="must be finite"):
        sl.pld_from_losses([math.inf], [0.5])


# ---- the value types check themselves once, at construction ----

@pytest.mark.parametrize("losses, probs, inf_mass, match", [
    (np.array([1.0, 0.0]), np.array([0.5, 0.5]), 0.0, "sorted ascending"),
    (np.array([0.0, np.inf]), np.array([0.5, 0.5]), 0.0, "must be finite"),
    (np.array([0.0, 1.0]), np.array([0.5, -1e-300]), 0.0, "non-negative"),
    (np.array([0.0, 1.0]), np.array([0.5, np.nan]), 0.0, "non-negative"),
    (np.array([0.0, 1.0]), np.array([0.5]), 0.0, "equal length"),
    ([0.0, 1.0], [0.5, 0.5], 0.0, "1-d arrays"),
    (np.array([0.0]), np.array([0.5]), 1.5, "inf_mass must lie in"),
    (np.array([0.0]), np.array([0.5]), math.nan, "inf_mass must lie in"),
])
def test_a_pld_is_checked_at_construction(losses, probs, inf_mass, match):
    with pytest.raises(ValueError, match=match):
        sl.PLD(losses, probs, inf_mass)


def test_trusted_and_mass_at_infinity():
    pl = sl.PLD(np.array([0.0, 1.0]), np.array([0.5, 0.25]), 0.25)
    fast = sl.PLD.trusted(np.array([1.0, 0.0]), pl.probs, 0.25)   # no checks: the caller's word
    assert fast.losses[0] == 1.0 and fast.probs is pl.probs and isinstance(fast, sl.PLD)
    up = pl.with_mass_at_infinity(0.5)
    assert up.inf_mass == 0.75 and up.losses is pl.losses and up.probs is pl.probs
    assert pl.with_mass_at_infinity(0.9).inf_mass == 1.0          # capped at 1
    # the hockey stick only grows with the mass moved to +inf
    assert sl.hockey_stick(up, 0.5) >= sl.hockey_stick(pl, 0.5) + 0.5 - 1e-15


def test_a_bracket_is_ordered():
    assert sl.Bracket(0.1, 0.2) == (0.1, 0.2) and sl.Bracket(0.0, math.inf).upper == math.inf
    with pytest.raises(ValueError, match="lower <= upper"):
        sl.Bracket(0.3, 0.2)
    assert math.isnan(sl.Bracket(math.nan, 0.2).lower)      # left for the caller's NaN check


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False, width=64), min_size=0, max_size=60),
       st.integers(0, 2 ** 32 - 1))
def test_exact_sum_is_fsum_to_the_last_bit(xs, seed):
    """pld._exact_sum (the correctly rounded sum on arrays behind finite_mass, mass_less_one and the
    hockey stick) equals math.fsum: on arbitrary doubles, and on PLD-like masses spanning 300
    decades with a -1 and subnormals."""
    from shuffle_lib.core.pld import _exact_sum
    rng = np.random.default_rng(seed)
    wide = rng.random(500) * 10.0 ** rng.uniform(-300, 0, 500)
    for x in (np.array(xs, dtype=float), np.concatenate([wide, [-1.0, 5e-324, -2.5e-310]])):
        if np.all(np.abs(x) < 1e300):        # fsum overflows on sums beyond the double range
            got, want = _exact_sum(x), math.fsum(x)
            assert got == want, (got, want)
