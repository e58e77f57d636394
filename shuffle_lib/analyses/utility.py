"""Utility of histogram release: shuffled k-RR + matrix inversion vs the analytic Gaussian.

Biswas et al. 2023, Sec. V.  The shuffle side privatises every value with k-RR, counts, inverts
the k-RR channel (Kairouz, Bonawitz, Ramage 2016; Biswas et al. 2023, eq. 7) and projects onto
the probability simplex (Wang & Carreira-Perpinan 2013, Algorithm 1): "shuffle+INV".
The central side adds N(0, sigma^2) to every bin count with the smallest sigma that
is (eps, delta)-DP, calibrated numerically from the Gaussian CDF (Balle & Wang 2018,
Thm 8): the mechanism with L2 sensitivity D is (eps, delta)-DP iff

    Phi(D/(2 sigma) - eps sigma/D) - e^eps Phi(-D/(2 sigma) - eps sigma/D) <= delta.

Implemented here with scipy (log_ndtr, brentq) rather than taken from diffprivlib
(the paper's choice): the library may depend on numpy/scipy only, diffprivlib is not
installed, and the calibration is 20 lines that the tests check against a 50-digit
mpmath oracle and against Google's dp_accounting.  The histogram of a
replace-one neighbouring pair changes two bins by one: D = sqrt(2).

Utilities are total variation distances between normalised histograms (Biswas et al. 2023
eq. 8-9 with d = TV).  Synthetic data are seeded: N(0, 2) discretised to k bins, and
check-in-like points on the paper's grids (24 x 17, 16 x 12) drawn from clustered
hot spots (synthetic: the Gowalla data cannot be downloaded here).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.optimize import brentq

from shuffle_lib.core import validate as v
from shuffle_lib.core.tradeoff import log_gaussian_delta


def krr_channel(eps0: float, k: int) -> np.ndarray:
    """k x k k-RR matrix R[x, y] = P(y | x) (Biswas et al. 2023, Def. III.5)."""
    eps0 = v.real("eps0", eps0, 0.0, 30.0, lo_open=True)
    k = v.integer("k", k, lo=2, hi=10 ** 4)
    R = np.full((k, k), 1.0 / (math.exp(eps0) + k - 1))
    np.fill_diagonal(R, math.exp(eps0) / (math.exp(eps0) + k - 1))
    return R


def krr_privatize(
    x: Sequence[int] | np.ndarray, eps0: float, k: int, rng: np.random.Generator
) -> np.ndarray:
    """Report each value of x (ints in [0, k)) through k-RR, using the Generator rng.

    Source: Biswas et al. 2023, Def. III.5.
    """
    v.instance("rng", rng, np.random.Generator)
    k = v.integer("k", k, lo=2, hi=10 ** 4)
    x = np.asarray(x)
    if x.size and (x.min() < 0 or x.max() >= k):
        raise ValueError(f"values must lie in [0, {k - 1}], got range [{x.min()}, {x.max()}].")
    R = krr_channel(eps0, k)
    keep = rng.random(x.size) < R[0, 0] - R[0, 1]      # report truthfully w.p. p - pbar ...
    other = rng.integers(0, k, x.size)                 # ... else a uniform value
    return np.where(keep, x, other)


def matrix_inversion(counts: Sequence[float] | np.ndarray, eps0: float, k: int) -> np.ndarray:
    """Unbiased estimate pi_hat = f R^{-1} of the input distribution (Kairouz et al. 2016).

    For k-RR, R = (p - pbar) I + pbar J and sum(pi) = 1 give pi_hat = (f - pbar)/(p - pbar),
    f = counts / n.  May leave the simplex; see :func:`project_simplex`.
    """
    counts = v.array("counts", counts, ndim=1)
    R = krr_channel(eps0, k)
    if counts.shape != (k,) or np.any(counts < 0) or counts.sum() <= 0:
        raise ValueError(
            f"counts must be {k} non-negative numbers with a positive sum, got {counts!r}."
        )
    f = counts / counts.sum()
    return (f - R[0, 1]) / (R[0, 0] - R[0, 1])


def project_simplex(y: Sequence[float] | np.ndarray) -> np.ndarray:
    """Euclidean projection onto {x >= 0, sum x = 1} (Wang & Carreira-Perpinan 2013, Alg. 1)."""
    y = v.array("y", y, ndim=1)
    u = np.sort(y)[::-1]
    css = np.cumsum(u)
    j = np.arange(1, y.size + 1)
    rho = np.nonzero(u + (1.0 - css) / j > 0)[0][-1]
    lam = (1.0 - css[rho]) / (rho + 1)
    return np.maximum(y + lam, 0.0)


def tv_distance(p: Sequence[float] | np.ndarray, q: Sequence[float] | np.ndarray) -> float:
    """Total variation distance 0.5 sum |p - q| of two vectors of equal length.

    Source: Biswas et al. 2023, eq. 8-9 with d = TV.
    """
    p, q = v.array("p", p), v.array("q", q)
    if p.shape != q.shape:
        raise ValueError(f"p and q must have the same shape, got {p.shape} and {q.shape}.")
    return 0.5 * float(np.abs(p - q).sum())


def analytic_gaussian_delta(sigma: float, eps: float, sensitivity: float = math.sqrt(2)) -> float:
    """Tight delta(eps) of the Gaussian mechanism N(0, sigma^2) at L2 sensitivity D (Thm 8).

    Source: Balle & Wang 2018, Thm 8.
    """
    sigma = v.real("sigma", sigma, 0.0, lo_open=True)
    eps = v.real("eps", eps, 0.0)
    sens = v.real("sensitivity", sensitivity, 0.0, lo_open=True)
    return math.exp(log_gaussian_delta(sigma, eps, sens))


def analytic_gaussian_sigma(eps: float, delta: float, sensitivity: float = math.sqrt(2)) -> float:
    """Smallest sigma with the Gaussian mechanism (eps, delta)-DP (Balle & Wang 2018, Alg. 1).

    Solved by brentq on log sigma of log delta(sigma) = log delta (delta(sigma) decreases
    in sigma).  eps >= 0, delta in (0, 1); delta below 1e-300 is refused.
    """
    eps = v.real("eps", eps, 0.0, 1e3)
    delta = v.real("delta", delta, 1e-300, 1.0, hi_open=True)
    sens = v.real("sensitivity", sensitivity, 0.0, lo_open=True)
    target = math.log(delta)
    f = lambda ls: log_gaussian_delta(math.exp(ls), eps, sens) - target  # noqa: E731
    lo, hi = math.log(sens) - 10.0, math.log(sens) + 10.0
    while f(lo) < 0:
        lo -= 10.0
    while f(hi) > 0:
        hi += 5.0
    return math.exp(brentq(f, lo, hi, xtol=1e-13, rtol=1e-13))


def classical_gaussian_sigma(eps: float, delta: float, sensitivity: float = math.sqrt(2)) -> float:
    """sigma = sqrt(2 log(1.25/delta)) D / eps (Dwork & Roth 2014; Biswas et al. 2023, Def. V.1; eps
    < 1)."""
    eps = v.real("eps", eps, 0.0, 1.0, lo_open=True, hi_open=True)
    delta = v.probability("delta", delta)
    sensitivity = v.real("sensitivity", sensitivity, 0.0, lo_open=True)
    return math.sqrt(2 * math.log(1.25 / delta)) * sensitivity / eps


def discretised_normal(n: int, k: int, rng: np.random.Generator, var: float = 2.0) -> np.ndarray:
    """n seeded draws of N(0, var) binned into k equal bins on [-3 sd, 3 sd] (edges absorb the
    tails).

    Source: Biswas et al. 2023, Sec. V (synthetic data).
    """
    v.instance("rng", rng, np.random.Generator)
    n = v.integer("n", n, lo=1, hi=10 ** 9)
    k = v.integer("k", k, lo=2, hi=10 ** 6)
    var = v.real("var", var, 0.0, lo_open=True)
    sd = math.sqrt(var)
    edges = np.linspace(-3 * sd, 3 * sd, k + 1)[1:-1]
    return np.searchsorted(edges, rng.normal(0.0, sd, n))


def synthetic_checkins(n: int, shape: tuple[int, int], rng: np.random.Generator, n_hot: int = 6,
                       spread: float = 0.08) -> np.ndarray:
    """n check-in cells on a grid of `shape` (cols, rows), flattened index; clustered hot spots.

    A seeded mixture: 85 % from n_hot Gaussian hot spots (random centres, widths
    spread * grid size, Zipf-like weights), 15 % uniform background.  Synthetic.

    Source: Biswas et al. 2023, Sec. V (a synthetic stand-in for its check-in data).
    """
    v.instance("rng", rng, np.random.Generator)
    n = v.integer("n", n, lo=1, hi=10 ** 9)
    n_hot = v.integer("n_hot", n_hot, lo=1, hi=10 ** 6)
    spread = v.real("spread", spread, 0.0, lo_open=True)
    cols, rows = shape
    centres = rng.random((n_hot, 2)) * [cols, rows]
    w = 1.0 / np.arange(1, n_hot + 1)
    comp = rng.choice(n_hot, size=n, p=w / w.sum())
    pts = centres[comp] + rng.normal(0, 1, (n, 2)) * spread * np.array([cols, rows])
    bg = rng.random(n) < 0.15
    pts[bg] = rng.random((bg.sum(), 2)) * [cols, rows]
    ij = np.clip(np.floor(pts).astype(int), 0, [cols - 1, rows - 1])
    return ij[:, 1] * cols + ij[:, 0]


def _check_release(x, k, sigma):
    k = v.integer("k", k, lo=2, hi=10 ** 4)
    sigma = v.real("sigma", sigma, 0.0, lo_open=True)
    x = v.integers("x", x, 0, k - 1)
    if x.ndim != 1 or x.size == 0:
        raise ValueError(
            f"x must be a non-empty 1-d array of values in [0, {k - 1}], got shape {x.shape}."
        )
    return x, k, sigma


def release_once(x: np.ndarray, k: int, eps0: float, sigma: float, rng: np.random.Generator
                 ) -> tuple[float, float, float]:
    """One run of the three releases on data x; returns TVs (gaussian, shuffle, shuffle+INV).

    Gaussian: counts + N(0, sigma^2), normalised by n (Biswas et al. 2023, eq. 9, the noisy
    histogram itself is the estimate).  Shuffle: the raw k-RR histogram / n.
    Shuffle+INV: matrix inversion then simplex projection (eq. 7-8).
    """
    v.instance("rng", rng, np.random.Generator)
    x, k, sigma = _check_release(x, k, sigma)
    counts = np.bincount(x, minlength=k).astype(float)
    n = counts.sum()
    pi = counts / n
    gauss = (counts + rng.normal(0.0, sigma, k)) / n
    y = np.bincount(krr_privatize(x, eps0, k, rng), minlength=k).astype(float)
    inv = project_simplex(matrix_inversion(y, eps0, k))
    return tv_distance(gauss, pi), tv_distance(y / n, pi), tv_distance(inv, pi)


def utility_runs(
    x: np.ndarray, k: int, eps0: float, sigma: float, runs: int, seed: int | None
) -> np.ndarray:
    """`runs` seeded repetitions of :func:`release_once`; array of shape (runs, 3).

    Source: Biswas et al. 2023, Sec. V.
    """
    runs = v.integer("runs", runs, lo=1, hi=10 ** 6)
    seed = None if seed is None else v.integer("seed", seed, lo=0, hi=2 ** 63 - 1)
    x, k, sigma = _check_release(x, k, sigma)
    rng = np.random.default_rng(seed)
    return np.array([release_once(x, k, eps0, sigma, rng) for _ in range(runs)])
