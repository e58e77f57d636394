"""A full-support pair composed a million times (issue 17 item 3): bounded, certified, checked.

The composed loss of a binary pair is a binomial lattice, L_k = k a + (K - k) b, so its exact
delta is a one-dimensional sum over k (scipy's binomial log-PMF and ``math.fsum``; no shuffle_lib).
"""

import math

import numpy as np
from scipy.stats import binom

import shuffle_lib as sl
from shuffle_lib.core.fourier import delta_bracket

P, Q = [0.5, 0.5], [0.4, 0.6]


def exact_delta(p, q, K, eps):
    """max over both directions of sum_k Binom(K, x0)(k) (1 - e^{eps - L_k})_+ (seed 000 Thm 5)."""
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
