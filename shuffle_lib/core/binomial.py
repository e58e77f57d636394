"""Binomial helpers shared by the mechanisms: an accurate log-PMF and certified tail ranges.

* :func:`binom_logpmf` -- log P[Bin(n, p) = j] with full relative accuracy up to n ~ 1e8;
* :func:`tail_range` -- [lo, hi] leaving at most tau in each tail, from Chernoff's bound with the
  exact Kullback-Leibler exponent (scipy's ppf/isf fail below ~1e-20);
* :func:`binom_window` -- the window outside which Bin(N, p) has mass <= tail (tail/2 a side),
  the one every mechanism cuts its binomials with.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import binom

from shuffle_lib.core import search
from shuffle_lib.core import validate as v

MAX_TRIALS = 2 ** 53   # trials exactly representable as a float (scipy computes in doubles)


def binom_logpmf(j: int | np.ndarray, n: int | np.ndarray, p: float) -> np.ndarray:
    """log P[Bin(n, p) = j], accurate to ~1e-14 relative for n up to 1e8 and beyond.

    scipy's ``binom.logpmf`` subtracts log-gammas of size n log n and loses about
    log10(n log n) digits (at n = 1e7 its PMF sums to 1 + 1.4e-9); ``binom.pmf``
    (Boost, ibeta_derivative) keeps full relative accuracy, so its log is used
    wherever it does not underflow, and logpmf only in the far tails below 1e-300.
    Any integer ``j`` is allowed (log 0 = -inf outside 0..n); ``n`` integers in [0, 2^53], ``p`` in
    [0, 1].
    """
    j = v.integers("j", j, -MAX_TRIALS, MAX_TRIALS)
    n = v.integers("n", n, 0, MAX_TRIALS)
    p = v.real("p", p, 0.0, 1.0)
    pmf = binom.pmf(j, n, p)
    with np.errstate(divide="ignore"):
        return np.where(pmf > 1e-300, np.log(np.where(pmf > 0, pmf, 1.0)), binom.logpmf(j, n, p))


def _kl(x, p):
    with np.errstate(divide="ignore", invalid="ignore"):
        # log x - log p, not log(x / p): x / p overflowed to inf for a subnormal p (gamma = 1e-320),
        # an infinite KL that claimed an empty tail and narrowed the window unsoundly
        t1 = np.where(x > 0, x * (np.log(x) - np.log(p)), 0.0)
        t2 = np.where(x < 1, (1 - x) * np.log((1 - x) / (1 - p)), 0.0)
    return t1 + t2


def tail_range(m: int | np.ndarray, p: float, tau: float) -> tuple[np.ndarray, np.ndarray]:
    """[lo, hi] with P(X < lo) <= tau and P(X > hi) <= tau for X ~ Bin(m, p) (arrays of m).

    Chernoff: P(X >= m x) <= exp(-m KL(x || p)) for x > p; x found by bisection.  Used
    instead of scipy's ppf/isf, which fail below ~1e-20 (binom.isf(1e-30, 10**6-1, 0.37)
    returns 10**6-1).  ``m`` integers in [0, 2^53], ``p`` in [0, 1], ``tau`` in (0, 1].
    """
    m = np.atleast_1d(v.integers("m", m, 0, MAX_TRIALS)).astype(float)
    p = v.real("p", p, 0.0, 1.0)
    tau = v.real("tau", tau, 0.0, 1.0, lo_open=True)
    target = math.log(1.0 / tau) / np.maximum(m, 1.0)
    # both sides in one elementwise bisection: the far side (KL >= target) is kept, 1 above the
    # mean and 0 below it, the near side starts at p
    # the far ends are found to within 1/(16 m) of the bisection's limit: enough for the integer
    # window (ceil/floor of m x moves by at most one), and log2(m) + 4 steps instead of 60
    n = m.size
    steps = min(60, int(math.ceil(math.log2(max(float(m.max()), 1.0)))) + 4)
    far = np.concatenate([np.ones(n), np.zeros(n)])
    both = search.narrow_arrays(lambda x: _kl(x, p) >= np.concatenate([target, target]),
                                far, np.full(2 * n, p), steps)[0]
    k_hi = np.minimum(np.ceil(m * both[:n]), m)
    k_lo = np.maximum(np.floor(m * both[n:]), 0)
    return k_lo.astype(np.int64), k_hi.astype(np.int64)


def binom_window(
    N: int | np.ndarray, p: float, tail: float
) -> tuple[int, int] | tuple[np.ndarray, np.ndarray]:
    """[lo, hi] outside which Bin(N, p) has mass <= tail (Chernoff, :func:`tail_range` with tail/2 a
    side); the full range [0, N] if tail == 0 or p is 0 or 1.  Ints for a scalar N, arrays for an
    array N.  ``N`` integers in [0, 2^53], ``p`` and ``tail`` in [0, 1]."""
    arr = v.integers("N", N, 0, MAX_TRIALS)
    p = v.real("p", p, 0.0, 1.0)
    tail = v.real("tail", tail, 0.0, 1.0)
    if tail == 0.0 or p in (0.0, 1.0):
        lo, hi = np.zeros_like(arr), arr.copy()
    else:
        lo, hi = tail_range(arr.reshape(-1), p, tail / 2)
    if arr.ndim == 0:
        return int(np.ravel(lo)[0]), int(np.ravel(hi)[0])
    return lo.reshape(arr.shape), hi.reshape(arr.shape)
