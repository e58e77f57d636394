"""Binomial tail ranges from Chernoff's bound with the exact Kullback-Leibler exponent."""

import math

import numpy as np


def _kl(x, p):
    with np.errstate(divide="ignore", invalid="ignore"):
        t1 = np.where(x > 0, x * np.log(x / p), 0.0)
        t2 = np.where(x < 1, (1 - x) * np.log((1 - x) / (1 - p)), 0.0)
    return t1 + t2


def tail_range(m, p, tau):
    """[lo, hi] with P(X < lo) <= tau and P(X > hi) <= tau for X ~ Bin(m, p) (arrays of m).

    Chernoff: P(X >= m x) <= exp(-m KL(x || p)) for x > p; x found by bisection.  Used
    instead of scipy's ppf/isf, which fail below ~1e-20 (binom.isf(1e-30, 10**6-1, 0.37)
    returns 10**6-1).
    """
    m = np.atleast_1d(np.asarray(m, dtype=float))
    target = math.log(1.0 / tau) / np.maximum(m, 1.0)
    out = []
    for lo, hi in ((np.full(m.shape, p), np.ones(m.shape)), (np.zeros(m.shape), np.full(m.shape, p))):
        upper_side = lo[0] == p
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            far = _kl(mid, p) >= target
            if upper_side:
                hi, lo = np.where(far, mid, hi), np.where(far, lo, mid)
            else:
                lo, hi = np.where(far, mid, lo), np.where(far, hi, mid)
        out.append(hi if upper_side else lo)
    k_hi = np.minimum(np.ceil(m * out[0]), m)
    k_lo = np.maximum(np.floor(m * out[1]), 0)
    return k_lo.astype(np.int64), k_hi.astype(np.int64)
