"""Chernoff's bound, twice: binomial tail ranges with the exact Kullback-Leibler exponent, and a
grid-free upper bound on the tight delta (and eps) of a composition of PLDs.

The second: delta(eps) <= P[L >= eps] <= D_inf + E[e^{lam L}; L finite] e^{-lam eps} for every
lam > 0, where L is the composed privacy loss and D_inf = P[some round has L = +inf].  It needs
only each round's moment generating function, so it holds below the FFT's round-off floor
(~1e-13), e.g. at delta = 1e-300.
"""

import math

import numpy as np
from scipy.optimize import minimize_scalar

_REL_MARGIN = 1e-12    # covers double rounding in the log-sum-exp sums (as grid._REL_MARGIN)
_LOG_LAM = (math.log(1e-6), math.log(1e8))


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


def log_mgf(components, lam):
    """Lambda(lam) = sum over rounds of log E_P[e^{lam L}; L finite]."""
    total = 0.0
    for p, c in components:
        with np.errstate(divide="ignore"):
            a = lam * p.losses + np.log(p.probs)
        m = float(np.max(a, initial=-np.inf))
        if not math.isfinite(m):
            return -math.inf
        total += c * (m + math.log(float(np.sum(np.exp(a - m)))))
    return total


def _log_inf_free(components):
    """log P[no round has L = +inf] = sum c log(1 - inf_mass)."""
    return sum(c * math.log1p(-p.inf_mass) for p, c in components)


def chernoff_eps(components, delta):
    """A certified upper end for eps(delta) that needs no grid: delta(eps) <= P[L >= eps] <=
    D_inf + e^{Lambda(lam) - lam eps} for every lam > 0 (Lambda over finite atoms, D_inf = P[some
    round +inf]), and delta(L_top) = 0 at the largest composed finite loss L_top when D_inf = 0.
    Where the FFT's error floor (~1e-13) leaves no finite upper end (delta = 1e-300) this still
    does; lam is searched on a log scale up to 1e8, where the bound tends to L_top.
    """
    d_inf = -math.expm1(_log_inf_free(components))
    if delta <= d_inf:
        return math.inf
    if d_inf == 0.0:
        top = math.fsum(c * float(p.losses[-1]) for p, c in components)
        best = max(top, 0.0) * (1 + _REL_MARGIN) + 1e-300
    else:
        best = math.inf
    log_room = math.log(delta - d_inf)
    f = lambda t: (log_mgf(components, math.exp(t)) - log_room) / math.exp(t)  # noqa: E731
    res = minimize_scalar(f, bounds=_LOG_LAM, method="bounded", options={"xatol": 1e-4})
    return min(best, max(float(res.fun), 0.0) * (1 + _REL_MARGIN) + 1e-300)


def chernoff_delta(components, eps):
    """The same bound read the other way: delta(eps) <= D_inf + min_lam e^{Lambda(lam) - lam eps}."""
    d_inf = -math.expm1(_log_inf_free(components))
    if d_inf == 0.0 and eps >= math.fsum(c * float(p.losses[-1]) for p, c in components) * (1 + _REL_MARGIN):
        return 0.0
    f = lambda t: log_mgf(components, math.exp(t)) - math.exp(t) * eps  # noqa: E731
    res = minimize_scalar(f, bounds=_LOG_LAM, method="bounded", options={"xatol": 1e-4})
    return min(1.0, (d_inf + math.exp(min(float(res.fun), 0.0))) * (1 + _REL_MARGIN))
