"""The shuffled Gaussian mechanism: hockey-stick divergence by Monte Carlo (Koskela et al. 2022,
Sec. 5).

n users each add N(0, sigma^2) to a real value and a shuffler permutes the n reports.  For
the neighbouring datasets X = (0, ..., 0) and X' = e_1 (one value differs by 1), the shuffled
output Y has density f(y) = prod_j phi_sigma(y_j) under X and, by permutation invariance,
f'(y) = (1/n) sum_i phi_sigma(y - e_i) under X' (Koskela et al. 2022, Sec. 5).  The likelihood ratio
is

    R(y) = f'(y) / f(y) = (1/n) sum_i exp((y_i - 1/2) / sigma^2),      L = log R,

a function of all n coordinates: the problem does not reduce to one dimension, which is the
paper's point.  Both hockey-stick directions are expectations of integrands in [0, 1]:

    delta_{X'/X}(eps) = E_{Y ~ X'} [(1 - e^{eps - L(Y)})_+],
    delta_{X/X'}(eps) = E_{Y ~ X}  [(1 - e^{eps + L(Y)})_+],

so plain Monte Carlo with seeded sampling gives unbiased estimates, and Hoeffding's inequality
gives confidence intervals that hold with probability >= 1 - alpha whatever the variance.
Cost: O(samples x n) per direction; the sample count for a fixed relative accuracy grows like
1/delta, not with n.
"""

from __future__ import annotations

import math

import numpy as np

from shuffle_lib.core import validate as v
from shuffle_lib.core.constants import MAX_SIZE
from shuffle_lib.core.tradeoff import gaussian_delta  # noqa: F401  (the n = 1 reference, public here)


def log_ratio(y: np.ndarray, sigma: float) -> np.ndarray:
    """L(y) = log((1/n) sum_i exp((y_i - 1/2)/sigma^2)) for each row of y (log-sum-exp).

    Source: Koskela et al. 2022, Sec. 5 (the likelihood ratio R of the module docstring).
    """
    sigma = v.real("sigma", sigma, 0.0, lo_open=True)
    try:                       # no O(size) finiteness scan: this runs on every Monte Carlo chunk
        y = np.asarray(y, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(
            f"y must be an array of reals (one row per sample), got y={y!r:.80}."
        ) from None
    if y.ndim == 0 or y.size == 0:
        raise ValueError(
            f"y must be a non-empty array of reals (one row per sample), got shape {y.shape}."
        )
    a = (y - 0.5) / sigma ** 2
    m = a.max(axis=-1, keepdims=True)
    return (m + np.log(np.exp(a - m).mean(axis=-1, keepdims=True)))[..., 0]


def delta_mc(
    n: int,
    sigma: float,
    eps: float,
    samples: int = 100_000,
    seed: int | None = 0,
    alpha: float = 1e-3,
    chunk: int = 20_000,
) -> tuple[float, float, float, float]:
    """Monte Carlo delta(eps) of the shuffled Gaussian mechanism, both directions.

    Returns (estimate, lower, upper, stderr) for delta = max of the two directions:
    [lower, upper] holds with probability >= 1 - alpha (Hoeffding, alpha/2 per direction; the
    max of two intervals is an interval for the max), whatever the variance; stderr is the
    usual CLT standard error of the larger direction's estimate (much tighter when delta is
    small, but only asymptotic).  ``seed`` makes the run reproducible.

    Source: Koskela et al. 2022, Sec. 5; Hoeffding's inequality for the intervals.
    """
    n = v.integer("n", n, lo=1, hi=10 ** 6)
    sigma = v.real("sigma", sigma, 0.0, 1e6, lo_open=True)
    eps = v.real("eps", eps, 0.0)
    samples = v.integer("samples", samples, lo=100, hi=10 ** 9)
    alpha = v.real("alpha", alpha, 0.0, 1.0, lo_open=True, hi_open=True)
    chunk = v.integer("chunk", chunk, lo=1, hi=MAX_SIZE)
    if seed is not None:
        seed = v.integer("seed", seed, lo=0, hi=2 ** 63 - 1)
    rng = np.random.default_rng(seed)
    sums, squares = [0.0, 0.0], [0.0, 0.0]
    done = 0
    while done < samples:
        m = min(chunk, samples - done)
        z = rng.normal(0.0, sigma, size=(m, n))
        vals = [None, -np.expm1(np.minimum(eps + log_ratio(z, sigma), 0.0))]   # Y ~ X
        z[np.arange(m), rng.integers(0, n, size=m)] += 1.0                      # Y ~ X'
        vals[0] = -np.expm1(np.minimum(eps - log_ratio(z, sigma), 0.0))
        for d in (0, 1):
            sums[d] += float(vals[d].sum())
            squares[d] += float(np.dot(vals[d], vals[d]))
        done += m
    half = math.sqrt(math.log(4.0 / alpha) / (2.0 * samples))  # two-sided, alpha/2 per direction
    est = [x / samples for x in sums]
    top = int(est[1] > est[0])
    se = math.sqrt(max(squares[top] / samples - est[top] ** 2, 0.0) / samples)
    return max(est), max(max(e - half, 0.0) for e in est), min(max(e + half for e in est), 1.0), se
