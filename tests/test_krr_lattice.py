"""The lattice pairs of shuffled k-RR (shuffle_lib.mechanisms.krr.lattice) against exact oracles.

The oracle is the mpmath enumeration of the views of tests/test_adversarial_krr.py (60 digits,
no library call): one round's delta(eps), and two rounds' by its exact sum over pairs of views.
The lattice PLDs are read with an exact pairwise composition in numpy (no grid), so the check is
of the pair alone.  Scipy's binomial tails are checked against a 40-digit mpmath sum at n up to
1e7, where the module's error budget assumes a relative error below CDF_RTOL.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from scipy import special
from scipy.stats import binom

from shuffle_lib.core import evaluate
from shuffle_lib.core.pld import hockey_stick
from shuffle_lib.mechanisms import krr
from shuffle_lib.mechanisms.krr import lattice

from test_adversarial_krr import both, strong_atoms, weak_atoms

CASES = [("strong", 40, 0.4, 3), ("strong", 60, 0.853, 4), ("weak", 14, 0.5, 3),
         ("weak", 16, 0.853, 4), ("weak", 12, 0.3, 2)]


def _pair(adv, n, gamma, k):
    f = lattice.strong_pld_lattice if adv == "strong" else lattice.weak_pld_lattice
    return f(n, gamma, k)


def _oracle_atoms(adv, n, gamma, k):
    return (strong_atoms if adv == "strong" else weak_atoms)(n, gamma, k)


def _two_rounds(pld, eps):
    """delta_{P/Q}(eps) of two rounds of a PLD, summed exactly over its pairs of atoms."""
    s = pld.losses[:, None] + pld.losses[None, :]
    w = pld.probs[:, None] * pld.probs[None, :]
    fin = math.fsum((w * -np.expm1(np.minimum(eps - s, 0.0))).ravel())
    tot = float(np.sum(pld.probs)) + pld.inf_mass
    return fin + (tot ** 2 - (tot - pld.inf_mass) ** 2)


@pytest.mark.parametrize("adv, n, gamma, k", CASES)
def test_lattice_pair_brackets_the_exact_views_one_round(adv, n, gamma, k):
    """delta(lower) <= exact delta <= delta(upper) at every eps, one round, against the mpmath
    view laws; and the pair is not vacuous where the exact is > 1e-6 (upper < 1.5 x exact; the
    lower end > exact / 4: at n ~ 15 the pair at b + 1 that bounds A_w's block of b from below is
    far from the pair at b)."""
    pl = _pair(adv, n, gamma, k)
    atoms = _oracle_atoms(adv, n, gamma, k)
    for eps in (0.0, 0.05, 0.2, 0.5, 1.0, 2.0):
        exact = float(both(atoms, 1, eps)[0])
        lo, up = hockey_stick(pl.lower, eps), hockey_stick(pl.upper, eps)
        assert lo <= exact * (1 + 1e-12) + 1e-300, (eps, lo, exact)
        assert exact <= up * (1 + 1e-12) + 1e-300, (eps, exact, up)
        if exact > 1e-6:
            assert up < 1.5 * exact and lo > exact / 4, (eps, lo, exact, up)


@pytest.mark.parametrize("adv, n, gamma, k", CASES[1:4])
def test_lattice_pair_brackets_the_exact_views_two_rounds(adv, n, gamma, k):
    """The split (upper) and the merge (lower) stay on their sides under composition: two rounds
    of each, composed exactly, against the exact two-round delta of the views."""
    pl = _pair(adv, n, gamma, k)
    atoms = _oracle_atoms(adv, n, gamma, k)
    for eps in (0.0, 0.1, 0.4, 1.0):
        exact = float(both(atoms, 2, eps)[0])
        lo, up = _two_rounds(pl.lower, eps), _two_rounds(pl.upper, eps)
        assert lo <= exact * (1 + 1e-11) + 1e-300 and exact <= up * (1 + 1e-11) + 1e-300, \
            (eps, lo, exact, up)


@pytest.mark.parametrize("adv, n, gamma, k", CASES[1:4])
def test_pair_from_atoms_brackets_the_exact_views(adv, n, gamma, k):
    """An exact PLD grouped onto a coarse lattice (h = 1e-2, so the groups hold many atoms): the
    merge / split pair brackets the exact views, one and two rounds; the exact atom at loss 0
    stays exact in both PLDs."""
    pl = lattice.pair_from_atoms(krr.adversary_pld(adv, n, gamma, k, tail=0.0), 1e-2)
    assert 0.0 in pl.upper.losses and 0.0 in pl.lower.losses
    atoms = _oracle_atoms(adv, n, gamma, k)
    for eps in (0.0, 0.1, 0.4, 1.0):
        for K, read in ((1, hockey_stick), (2, _two_rounds)):
            exact = float(both(atoms, K, eps)[0])
            lo, up = read(pl.lower, eps), read(pl.upper, eps)
            assert lo <= exact * (1 + 1e-11) + 1e-300 and exact <= up * (1 + 1e-11) + 1e-300, \
                (K, eps, lo, exact, up)


def _mp_tails(x, m, r):
    """(P[Bin(m, r) <= x], P[Bin(m, r) > x], P[Bin(m, r) = x]) by summing the PMF outwards from x
    in 40 digits."""
    with mpmath.workdps(40):
        r = mpmath.mpf(r)
        pmf = mpmath.exp(mpmath.loggamma(m + 1) - mpmath.loggamma(x + 1) - mpmath.loggamma(m - x + 1)
                         + x * mpmath.log(r) + (m - x) * mpmath.log(1 - r))
        low, t, j = mpmath.mpf(0), pmf, x
        while j >= 0 and t > low * mpmath.mpf(10) ** -36:
            low += t
            t *= j / (m - j + 1) * (1 - r) / r
            j -= 1
        high, j = mpmath.mpf(0), x + 1
        t = pmf * (m - x) / (x + 1) * r / (1 - r)
        while j <= m and t > high * mpmath.mpf(10) ** -36:
            high += t
            t *= (m - j) / (j + 1) * r / (1 - r)
            j += 1
        return low, high, pmf


@pytest.mark.parametrize("m, x, r", [(10 ** 6, 332_000, 1 / 3), (10 ** 6, 334_500, 1 / 3),
                                     (8_530_000, 2_128_000, 0.25), (9_999_999, 2_140_000, 0.2132),
                                     (10 ** 7, 2_125_000, 0.2132)])
def test_scipy_binomial_tails_meet_the_error_budget(m, x, r):
    """binom.pmf / cdf / sf at research sizes (n up to 1e7) within CDF_RTOL / 10 of a 40-digit
    sum: the module's point 2 assumes CDF_RTOL.  special.bdtr / bdtrc (cephes), off by 1.2e-9 at
    the first case and 1.6e-8 at the fourth, fail it."""
    low, high, pmf = _mp_tails(x, m, r)
    assert abs(binom.pmf(x, m, r) / float(pmf) - 1) < lattice.CDF_RTOL / 10
    assert abs(binom.cdf(x, m, r) / float(low) - 1) < lattice.CDF_RTOL / 10
    assert abs(binom.sf(x, m, r) / float(high) - 1) < lattice.CDF_RTOL / 10
    cephes = max(abs(special.bdtr(x, m, r) / float(low) - 1),
                 abs(special.bdtrc(x, m, r) / float(high) - 1))
    assert cephes > lattice.CDF_RTOL / 10        # the oracle tells the two implementations apart


def test_strong_k10_bracket_narrower_than_the_first_order_blocks():
    """n = 1e5, gamma = 0.853, k = 4, K = 10, eps(1e-6): the block pair rounded to a grid of
    1e-5 gave [0.055852, 0.056618] (1.4 % wide); the lattice pair's bracket is inside that
    certified one and at most 0.5 % wide, at the default accuracy."""
    br = krr.epsilon_bracket("strong", 10 ** 5, 0.853, 4, [1e-6], compositions=10)[0]
    assert 0.055852 <= br.lower <= br.upper <= 0.056618
    assert (br.upper - br.lower) / br.lower < 5e-3, br


def test_weak_block_bounds_are_monotone_in_b():
    """The b-block argument: one round's delta_b(eps) is non-increasing in b (exact PLD given b,
    tail 0), at a few b around the mean for n = 400."""
    from shuffle_lib.core.pld import PLD
    from shuffle_lib.mechanisms.krr.lattice import _Sums, _weak_given_b

    def pair_at(b):
        s = _Sums(1e-3)
        _weak_given_b(s, b, 0.853, 4, 1e-30, 1.0, 1.0)
        return s.pair(1e-30)

    prev = None
    for b in (330, 335, 340, 345):
        pl = pair_at(b)
        assert isinstance(pl.upper, PLD)
        d = [hockey_stick(pl.upper, e) for e in (0.05, 0.1, 0.2)]
        if prev is not None:
            assert all(x <= y * (1 + 1e-3) for x, y in zip(d, prev)), (b, d, prev)
        prev = d


def test_model_takes_the_lattice_pair_beyond_the_exact_pld():
    """krr_model: the exact PLD where it fits (one component for both ends), the lattice pair
    (two components, 'binned') beyond; the brackets of a composition contain each other's."""
    small = krr.krr_model("strong", 200, 0.5, 4)
    assert small.upper[0] is small.lower[0] and "binned" not in small.info
    big = krr.krr_model("weak", 5000, 0.853, 4)
    assert big.info.get("binned") and big.upper[0] is not big.lower[0]
    br = evaluate.epsilon_brackets(big, [1e-6], 3)[0]
    assert 0 < br.lower <= br.upper < krr.eps0_from_gamma(0.853, 4) * 3


@pytest.mark.parametrize("m, x, r", [(10 ** 6, 332_000, 1 / 3), (9_999_999, 2_140_000, 0.2132),
                                     (10 ** 7, 2_125_000, 0.2132)])
def test_the_streamed_route_reads_binomial_cdfs_within_its_margin(m, x, r):
    """The streamed A_w / A_s route (krr.stream) covers floating point by the relative margin ROUND
    with room for a 1e3 cancellation: its CDF must be within ROUND / 1e3 of a 40-digit sum at
    research sizes (cephes' bdtr, 1.6e-8 off at the second case, would not be)."""
    from shuffle_lib.mechanisms.krr import stream
    low, _, _ = _mp_tails(x, m, r)
    got = float(stream._cdf(np.array([x]), np.array([m]), r)[0])
    assert abs(got / float(low) - 1) < stream.ROUND / 1e3
