"""A full-support pair composed a million times: bounded, certified, checked.

The composed loss of a binary pair is a binomial lattice, L_k = k a + (K - k) b, so its exact
delta is a one-dimensional sum over k (scipy's binomial log-PMF and ``math.fsum``; no shuffle_lib).
"""

import json
import math

import numpy as np
from scipy.stats import binom

import shuffle_lib as sl
from shuffle_lib.core.fourier import delta_bracket

P, Q = [0.5, 0.5], [0.4, 0.6]


def exact_delta(p, q, K, eps):
    """max over both directions of sum_k Binom(K, x0)(k) (1 - e^{eps - L_k})_+ (Koskela et al. 2021 Thm 5)."""
    out = []
    for x, y in ((p, q), (q, p)):
        a, b = math.log(x[0] / y[0]), math.log(x[1] / y[1])
        k = np.arange(K + 1)
        loss = k * a + (K - k) * b
        keep = loss > eps
        out.append(math.fsum(np.exp(binom.logpmf(k[keep], K, x[0])) * -np.expm1(eps - loss[keep])))
    return max(out)


def test_binary_pair_at_a_million_rounds_brackets_the_binomial_sum():
    """K = 1e6 at eps two standard deviations above the composed loss's mean (delta ~ 2e-2): the
    accuracy's grid would need ~1e10 points, so a bounded one (2^21) answers; the bracket holds the
    exact binomial sum and is informative (the run took 178 s and 2.2 GB before, 4 s now)."""
    K = 10 ** 6
    kl = max(sum(x * math.log(x / y) for x, y in zip(P, Q)), sum(y * math.log(y / x) for x, y in zip(P, Q)))
    eps = K * kl + 2 * math.sqrt(K * 0.25) * math.log(1.5)
    exact = exact_delta(P, Q, K, eps)
    br = delta_bracket([(sl.pld_from_pmfs(P, Q), K)], [(sl.pld_from_pmfs(Q, P), K)], [eps])[0]
    assert br.lower <= exact * (1 + 1e-9) and exact * (1 - 1e-9) <= br.upper
    assert 0.8 * exact < br.lower and br.upper < 1.2 * exact


MIRROR = [0.5, 0.3, 0.2]   # q is p reversed: losses g, 0, -g with g = log 2.5, a lattice pair


def mirror_delta(p, K, eps, width=12.0):
    """Exact delta(eps) of the K-fold pair (p, p reversed) on three outcomes, from below.

    The composed loss is g (n_1 - n_3), g = log(p_1 / p_3): under P, m = n_1 + n_3 is
    Binom(K, p_1 + p_3) and n_1 given m is Binom(m, p_1 / (p_1 + p_3)), so delta(eps) = sum_m
    sum_{a: (2a - m) g > eps} Binom(m) Binom(a) (1 - e^{eps - (2a - m) g}) (both directions are the
    same by the symmetry).  The sums run over ``width`` standard deviations of each binomial: what
    they leave out is below 2 e^{-2 width^2 r (1 - r)} (Hoeffding) per binomial, under 1e-24 here,
    and they only drop positive terms.  scipy's binomial log-PMF and ``math.fsum``; no shuffle_lib.
    """
    p1, _, p3 = p
    g = math.log(p1 / p3)
    r = p1 + p3
    mu, sd = K * r, math.sqrt(K * r * (1 - r))
    ms = np.arange(max(0, math.floor(mu - width * sd)), min(K, math.ceil(mu + width * sd)) + 1)
    f = p1 / r
    terms = []
    for m, lw in zip(ms, binom.logpmf(ms, K, r)):
        a = np.arange(max(math.floor((m + eps / g) / 2) + 1, 0),
                      min(m, math.ceil(m * f + width * math.sqrt(m * f * (1 - f))) + 1) + 1)
        loss = (2 * a - m) * g
        keep = loss > eps
        terms.append(np.exp(lw + binom.logpmf(a[keep], m, f)) * -np.expm1(eps - loss[keep]))
    return math.fsum(np.concatenate(terms))


def _oracle_rtol(K):
    """The oracle's relative error: each log-PMF is a difference of log-gamma values of size up to
    K log K, each within a few ulp, so a term is off by at most ~8 u K log K relatively (64 u K log K
    allowed), plus the 1e-24 the windows leave out (absolute, far below delta = 1e-6)."""
    return 64 * 2.0 ** -53 * K * math.log(K)


def test_lattice_pair_at_1e5_rounds_brackets_the_binomial_sum():
    """The 3-outcome lattice pair at K = 1e5: the accuracy's grid would need ~1e9 points, so the
    pair composes exactly on its lattice (step log 2.5); eps(1e-6) is certified on both sides by the
    exact sum, and delta at the bracket's middle holds the exact value."""
    K, d = 10 ** 5, 1e-6
    a, b = [(sl.pld_from_pmfs(MIRROR, MIRROR[::-1]), K)], [(sl.pld_from_pmfs(MIRROR[::-1], MIRROR), K)]
    br = sl.epsilon_bracket(a, b, [d])[0]
    tol = _oracle_rtol(K)
    assert mirror_delta(MIRROR, K, br.lower) * (1 + tol) > d        # the tight eps is >= lower
    assert mirror_delta(MIRROR, K, br.upper) * (1 - tol) <= d       # ... and <= upper
    assert br.upper - br.lower <= 1e-6 * br.upper
    mid = 0.5 * (br.lower + br.upper)
    exact = mirror_delta(MIRROR, K, mid)
    dbr = delta_bracket(a, b, [mid])[0]
    assert dbr.lower <= exact * (1 + tol) and exact * (1 - tol) <= dbr.upper
    assert dbr.upper - dbr.lower <= 0.05 * dbr.upper


def test_lattice_pair_at_a_million_rounds_is_within_one_percent(cli_json, tmp_path):
    """The 3-outcome pair at K = 1e6 (eps ~ 2.8e5): eps(1e-6) within 1 % and meeting the default
    accuracy (on a bounded grid its lower end is 0, its upper 278647)."""
    f = tmp_path / "pair.json"
    f.write_text(json.dumps({"p": MIRROR, "q": MIRROR[::-1]}))
    out = cli_json("epsilon", "custom", "--pmfs", str(f), "--compositions", "1000000", "--delta", "1e-6")
    (r,) = out["results"]
    assert r["accuracy_met"] is True and r["limit"] is None
    assert 0 < r["eps_upper"] - r["eps_lower"] <= 0.01 * r["eps_upper"]
    assert 2.7e5 < r["eps_lower"] < 2.8e5
