"""The tails of Bin(m, 1/2) along consecutive m by recurrence (shuffle_lib.mechanisms.clones.pairs,
_sf_half_walk and conditional_tails_walk): each value within its stated bound of the exact tail,
the exact tail from 40-digit mpmath (a sum of pmf ratios, independent of scipy), and of scipy's
tail at many points; Boost's own error within the rho the bound assumes."""

import math

import mpmath
import numpy as np
import pytest
from scipy.stats import binom

from shuffle_lib.mechanisms.clones.pairs import (
    TAIL_RTOL,
    WALK_STEPS,
    boost_rtol,
    _sf_half_walk,
    conditional_tails,
    conditional_tails_walk,
)

mpmath.mp.dps = 40


def exact_tail(j, m):
    """P(Bin(m, 1/2) >= j) for j >= m/2 in mpmath: pmf(j) (log-gamma) times the sum of the products
    of the ratios pmf(a+1)/pmf(a) = (m-a)/(a+1), to a relative 1e-30."""
    lp = (mpmath.loggamma(m + 1) - mpmath.loggamma(j + 1) - mpmath.loggamma(m - j + 1)
          - m * mpmath.log(2))
    term, total, a = mpmath.mpf(1), mpmath.mpf(1), j
    while term > total * mpmath.mpf(10) ** -30:
        term *= mpmath.mpf(m - a) / (a + 1)
        a += 1
        total += term
    return mpmath.exp(lp) * total


def walk_input(m0, c, size, seed):
    """Consecutive m from m0 with thresholds ceil(c m), a step of +1 added at random (1%) and one
    jump of +3 (a restart), as the blocks' thresholds step."""
    rng = np.random.default_rng(seed)
    m = m0 + np.arange(size)
    j = np.ceil(c * m).astype(np.int64) + np.cumsum(rng.random(size) < 0.01)
    j[size // 3:] += 3
    return j, m


@pytest.mark.parametrize("m0,c", [(200_000, 0.5), (10 ** 7, 0.5003), (10 ** 8, 0.5001),
                                  (5 * 10 ** 8, 0.50002), (5 * 10 ** 8, 0.5004)])
def test_walk_is_within_its_bound_of_scipys_tail(m0, c):
    j, m = walk_input(m0, c, 3 * WALK_STEPS + 17, seed=m0 % 97)
    F, err = _sf_half_walk(j, m)
    ref = binom.sf(j - 1, m, 0.5)
    rho = np.maximum(TAIL_RTOL, 64 * np.sqrt(m) * 2.0 ** -53)
    assert np.all(np.abs(F - ref) <= err + rho * ref)
    # the bound is not vacuous: within a few rho of the value (M stays near F on these walks)
    assert np.all(err <= 4 * rho * ref + 1e-300)


@pytest.mark.parametrize("m0,c", [(10 ** 7, 0.5003), (10 ** 8, 0.5001), (5 * 10 ** 8, 0.5004)])
def test_walk_is_within_its_bound_of_the_exact_tail(m0, c):
    j, m = walk_input(m0, c, 2 * WALK_STEPS + 100, seed=1)
    F, err = _sf_half_walk(j, m)
    for i in (0, 1, WALK_STEPS - 1, WALK_STEPS, WALK_STEPS + 40, j.size - 1):
        exact = exact_tail(int(j[i]), int(m[i]))
        assert abs(mpmath.mpf(float(F[i])) - exact) <= err[i], (i, float(F[i]), float(exact))


@pytest.mark.parametrize("m", [10 ** 5, 10 ** 7, 10 ** 9])
def test_boosts_tail_and_pmf_are_within_the_assumed_rho(m):
    """The walk's bound takes Boost's relative error as <= rho(m) = max(1e-12, 64 sqrt(m) 2^-53);
    its tails and pmfs, against mpmath at points 0 to 12 standard deviations above the centre."""
    rho = max(TAIL_RTOL, 64 * math.sqrt(m) * 2.0 ** -53)
    assert boost_rtol(m) == rho
    sd = math.sqrt(m / 4)
    for z in (0.0, 0.7, 2.5, 6.0, 12.0):
        j = int(m / 2 + z * sd)
        exact = exact_tail(j, m)
        assert abs(mpmath.mpf(float(binom.sf(j - 1, m, 0.5))) / exact - 1) <= rho
        lp = (mpmath.loggamma(m + 1) - mpmath.loggamma(j + 1) - mpmath.loggamma(m - j + 1)
              - m * mpmath.log(2))
        assert abs(mpmath.mpf(float(binom.pmf(j, m, 0.5))) / mpmath.exp(lp) - 1) <= rho


@pytest.mark.parametrize("p", [1e-3, 0.0498, 0.3, 0.9])
def test_boosts_pmf_at_any_p_is_within_boost_rtol(p):
    """The weights P(S = s) of bracket_at are Boost's pmfs of Bin(n - 1, p): against mpmath (log-
    gamma, 40 digits) from 3 standard deviations below the mean to 4 above, each within
    boost_rtol(m)."""
    for m in (10 ** 5, 10 ** 7, 10 ** 9):
        sd = math.sqrt(m * p * (1 - p))
        for z in (-3.0, -1.0, 0.0, 0.5, 2.0, 4.0):
            k = int(m * p + z * sd)
            lp = (mpmath.loggamma(m + 1) - mpmath.loggamma(k + 1) - mpmath.loggamma(m - k + 1)
                  + k * mpmath.log(p) + (m - k) * mpmath.log(1 - mpmath.mpf(p)))
            err = float(abs(mpmath.mpf(float(binom.pmf(k, m, p))) / mpmath.exp(lp) - 1))
            assert err <= boost_rtol(m), (m, k, err)


def test_conditional_tails_walk_agrees_with_the_direct_tails():
    """On consecutive s with the thresholds of a loss level (the blocks' use), both tails of the
    walk are within its err plus 1e-12 of the direct tails; below the walk's range it is exact."""
    for s0, c in ((3 * 10 ** 6, 0.5002), (300, 0.55)):
        s = s0 + np.arange(1000)
        k = np.ceil(c * s).astype(np.int64)
        al, be, ga = 0.5, 0.2, 0.3
        tp, tq, err = conditional_tails_walk(s, k, al, be, ga)
        rp, rq = conditional_tails(s, k, al, be, ga)
        for got, ref in ((tp, rp), (tq, rq)):
            assert np.all(np.abs(got - ref) <= err + 2e-12 * ref)
        if s0 < 10 ** 5:
            assert np.array_equal(tp, rp) and np.array_equal(tq, rq)
