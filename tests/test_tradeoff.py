"""Trade-off functions: Chen et al. 2024 Lemmas A.1, A.3, A.4 and Proposition 2, each against an independent oracle.

* A.3 (Neyman-Pearson): the likelihood-ratio curve lies below every one of the 2^m
  deterministic tests of a small pair, and its breakpoints are attained by some test.
* A.1 (Renyi from the trade-off function): against a 50-digit mpmath sum of P^lam Q^(1-lam).
* A.4 (two Gaussians): the likelihood-ratio test in R^2 integrated by 2-d quadrature.
* Prop. 2 (GDP composition): the hockey-stick of a 2-d Gaussian shift by 2-d quadrature
  against the closed form of sqrt(mu1^2 + mu2^2)-GDP.
"""

import itertools
import math

import mpmath as mp
import numpy as np
import pytest
from scipy import integrate, stats

from shuffle_lib.core import renyi
from shuffle_lib.core import tradeoff as tf


def _random_pairs(seed, m=7, count=12):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        p, q = rng.random(m), rng.random(m)
        p[rng.random(m) < 0.2] = 0.0            # outcomes impossible under P or Q
        q[rng.random(m) < 0.2] = 0.0
        p[0], q[1] = max(p[0], 0.1), max(q[1], 0.1)
        yield p / p.sum(), q / q.sum()


def test_lemma_a3_neyman_pearson_is_optimal_over_all_tests():
    for p, q in _random_pairs(1):
        a_br, b_br = tf.tradeoff_pmfs(p, q)
        tests = [(math.fsum(p[list(S)]), 1.0 - math.fsum(q[list(S)]))
                 for r in range(p.size + 1) for S in itertools.combinations(range(p.size), r)]
        alphas = np.array([t[0] for t in tests])
        betas = np.array([t[1] for t in tests])
        assert np.all(betas >= tf.tradeoff_at(p, q, alphas) - 1e-12)       # nothing beats NP
        for a, b in zip(a_br, b_br):                                           # and NP is attained
            assert np.min(np.abs(alphas - a) + np.abs(betas - b)) < 1e-12
        da, db = np.diff(a_br), np.diff(b_br)
        slopes = db[da > 0] / da[da > 0]
        assert np.all(db <= 1e-15) and np.all(np.diff(slopes) >= -1e-9)       # decreasing and convex


def test_tradeoff_endpoints_and_identity():
    p = np.array([0.2, 0.3, 0.5])
    assert tf.tradeoff_at(p, p, [0.0, 0.25, 1.0]) == pytest.approx([1.0, 0.75, 0.0], abs=1e-15)
    q = np.array([0.0, 0.4, 0.6])               # P-mass where Q = 0
    r = np.array([0.5, 0.5, 0.0])
    assert tf.tradeoff_at(r, p, 0.0) == pytest.approx(0.5)      # Q-mass 0.5 where P = 0 is rejected for free
    assert tf.tradeoff_at(p, q, 0.0) == pytest.approx(1.0)
    assert tf.tradeoff_at(p, q, 1.0) == 0.0


@pytest.mark.parametrize("lam", [1.5, 2.0, 3.7, 8.0])
def test_lemma_a1_renyi_from_tradeoff_against_mpmath(lam):
    mp.mp.dps = 50
    for p, q in _random_pairs(2, count=8):
        got = tf.renyi_from_tradeoff(*tf.tradeoff_segments(p, q), lam)
        if np.any((p > 0) & (q == 0)):
            assert got == math.inf
            continue
        s = mp.fsum(mp.mpf(float(a)) ** lam * mp.mpf(float(b)) ** (1 - lam) for a, b in zip(p, q) if a > 0)
        want = float(mp.log(s) / (lam - 1))
        assert got == pytest.approx(want, rel=1e-12, abs=1e-14)
        assert got == pytest.approx(renyi.renyi_pmfs(p, q, lam)[0][0], rel=1e-12, abs=1e-14)


def test_lemma_a1_keeps_tiny_pieces():
    """Pieces of mass 1e-20 next to cumulative sums of order 1 must not vanish (they did when the
    pieces were read off the breakpoints): the clones pair at n = 30 has such atoms."""
    from shuffle_lib.mechanisms.clones import pld as clone_pld
    p, q = clone_pld.clone_pmfs(30, 1.0)
    assert np.min(p[p > 0]) < 1e-15
    for lam in (2.0, 16.0):
        assert tf.renyi_from_tradeoff(*tf.tradeoff_segments(p, q), lam) == pytest.approx(
            renyi.renyi_pmfs(p, q, lam)[0][0], rel=1e-12)


def _halfplane(mean, w, t, inside):
    """P(<X, w> > t) (inside) or P(<X, w> <= t) for X ~ N(mean, I_2), w2 > 0, as a 2-d integral.

    Fubini: the inner integral over y of a unit normal density on a half-line is a normal
    tail, the outer one over x is done by quadrature; no rotation of the plane is used.
    """
    def inner(x):
        cut = (t - w[0] * x) / w[1] - mean[1]
        return stats.norm.pdf(x - mean[0]) * (stats.norm.sf(cut) if inside else stats.norm.cdf(cut))
    return integrate.quad(inner, -np.inf, np.inf, epsabs=1e-14, epsrel=1e-12, limit=200)[0]


@pytest.mark.parametrize("m1", [(0.6, 0.8), (1.5, 0.4)])
def test_lemma_a4_gaussian_tradeoff_in_two_dimensions(m1):
    """Reject H0: N(0, I) when <x, m1> > t (the likelihood-ratio test); alpha, beta by 2-d quadrature."""
    mu = math.hypot(*m1)
    for t in (-0.5, 0.3, 1.2):
        alpha = _halfplane((0.0, 0.0), m1, t, inside=True)
        beta = _halfplane(m1, m1, t, inside=False)
        assert beta == pytest.approx(tf.gaussian_tradeoff(mu, alpha), abs=1e-11)
        # a test on the first coordinate alone is less powerful at the same alpha
        a1 = stats.norm.sf(t)
        b1 = stats.norm.cdf(t - m1[0])
        assert b1 >= tf.gaussian_tradeoff(mu, a1) - 1e-12


@pytest.mark.parametrize("mus", [(0.5, 1.0), (1.2, 0.7)])
def test_prop2_gdp_composition_two_gaussian_shifts(mus):
    """mu1-GDP composed with mu2-GDP is sqrt(mu1^2+mu2^2)-GDP: the hockey-stick of the product pair.

    P = N(0, I), Q = N(mus, I); log P/Q = |mus|^2/2 - <x, mus>, so P > e^eps Q on the half-plane
    H = {<x, mus> < |mus|^2/2 - eps} and delta = P(H) - e^eps Q(H), each a 2-d quadrature.
    """
    mu = math.hypot(*mus)
    for eps in (0.0, 0.5, 1.5):
        t = mu ** 2 / 2 - eps
        p_h = _halfplane((0.0, 0.0), mus, t, inside=False)
        q_h = _halfplane(mus, mus, t, inside=False)
        assert p_h - math.exp(eps) * q_h == pytest.approx(tf.gdp_delta(mu, eps), abs=1e-11)


def test_validation():
    with pytest.raises(ValueError, match="p must"):
        tf.tradeoff_pmfs([0.5, 0.6], [0.5, 0.5])
    with pytest.raises(ValueError, match="same length"):
        tf.tradeoff_pmfs([1.0], [0.5, 0.5])
    with pytest.raises(ValueError, match="alpha"):
        tf.tradeoff_at([1.0], [1.0], 1.5)
    with pytest.raises(ValueError, match="lam"):
        tf.renyi_from_tradeoff(np.array([1.0]), np.array([1.0]), 1.0)
    with pytest.raises(ValueError, match="mu"):
        tf.gaussian_tradeoff(-1.0, 0.5)
    with pytest.raises(ValueError, match="mu"):
        tf.gdp_delta(0.0, 0.5)
