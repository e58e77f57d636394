"""Chen et al.'s (2024) Algorithm 1, the shuffled noisy SGD for eps0-LDP clients, and its privacy
budget.

A multinomial logistic regression (softmax, cross-entropy) stands in for the paper's network.
n records are split into m equal blocks (clients); each epoch visits the blocks in a fresh
random order pi; block i's clipped gradients are summed, divided by m and privatised by Laplace
noise (Chen et al. 2024, Alg. 1 lines 6-11):

    theta_i = theta_{i-1} - eta (1/m sum_{j in S_pi(i)} clip(g_j) + b_i),  b_i ~ Lap(scale)^d,
    clip(g) = g / max(1, ||g||_1 / C).

Prop. 3 (Laplace mechanism): noise Lap(Delta_1/eps0) per coordinate is eps0-DP for inputs whose
outputs differ by at most Delta_1 in l1.  Chen et al. take Delta_1 = 2C/m (one record changed);
the shuffle theorems need every client's report to be eps0-LDP against *any* other block, for
which Delta_1 = 2C k/m with k = n/m records per block (:func:`laplace_scale`).  Both agree
when k = 1 (m = n), the setting of our experiments.

Accounting (RDP adds over the T epochs; Chen et al. 2024, Thm 3 is T times Cor. 2):
:func:`alg1_rdp` gives T * RDP(m, eps0, lam) for the exact clones pair (certified upper end),
Cor. 2, or Girgis et al.'s eq. 5; :func:`eps0_for_budget` the largest eps0 meeting (lam, b lam).
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np

from shuffle_lib.bounds.renyi import cor2_rdp, girgis_upper
from shuffle_lib.core import validate as v
from shuffle_lib.core.search import secant_from_guess
from shuffle_lib.core.types import ArrayLike
from shuffle_lib.mechanisms.clones.renyi import clone_rdp

ACCOUNTANTS = ("clones", "cor2", "girgis")
Accountant = Literal["clones", "cor2", "girgis"]


def clip_l1(g: np.ndarray, C: float) -> np.ndarray:
    """Rows of ``g`` scaled to l1 norm <= C: g / max(1, ||g||_1 / C) (Chen et al. 2024, Alg. 1 line
    9)."""
    C = v.real("C", C, lo=0.0, lo_open=True)
    g = np.atleast_2d(v.array("g", g))
    norms = np.abs(g).sum(axis=1, keepdims=True)
    return g / np.maximum(1.0, norms / C)


def laplace_scale(C: float, eps0: float, m: int, k: int = 1) -> float:
    """Laplace scale Delta_1/eps0 with Delta_1 = 2 C k / m: eps0-LDP for a block of k records.

    Any two blocks of k records have sums of clipped gradients within 2Ck in l1, so after the
    1/m of Alg. 1 line 11 the l1 sensitivity is 2Ck/m (Prop. 3).  k = 1 is the paper's
    2C/(eps0 m) (Alg. 1 line 6); for k > 1 that is only (k eps0)-LDP per block (group privacy).
    eps0 = inf means no noise (scale 0), the non-private baseline.
    """
    C = v.real("C", C, lo=0.0, lo_open=True)
    m = v.integer("m", m, lo=1)
    k = v.integer("k", k, lo=1)
    if eps0 == math.inf:
        return 0.0
    eps0 = v.real("eps0", eps0, lo=0.0, lo_open=True)
    return 2 * C * k / (eps0 * m)


def _softmax_residual(theta, X, y):
    """P - Y for the rows of X (softmax probabilities minus one-hot labels)."""
    z = X @ theta
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    p[range(len(y)), y] -= 1.0
    return p


def clipped_gradient_sum(theta: np.ndarray, X: np.ndarray, y: np.ndarray, C: float) -> np.ndarray:
    """sum_j clip(g_j) for the per-record cross-entropy gradients g_j = x_j (p_j - y_j)^T.

    ||x r^T||_1 = ||x||_1 ||r||_1, so the per-record norms come without forming each g_j.

    Source: Chen et al. 2024, Alg. 1 lines 9-11.
    """
    C = v.real("C", C, lo=0.0, lo_open=True)
    r = _softmax_residual(theta, X, y)
    r *= (C / np.maximum(np.abs(X).sum(axis=1) * np.abs(r).sum(axis=1), C))[:, None]
    return X.T @ r


def laplace_ldp_gradient(
    theta: np.ndarray,
    X: np.ndarray,
    y: np.ndarray,
    C: float,
    eps0: float,
    m: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """One client's report: 1/m sum of clipped gradients of its block + Lap(2C k/(eps0 m)) noise.

    eps0-LDP for the block (k = len(y) records; Prop. 3 with :func:`laplace_scale`).
    """
    v.instance("rng", rng, np.random.Generator)
    m = v.integer("m", m, lo=1)
    s = clipped_gradient_sum(theta, X, y, C) / m
    b = laplace_scale(C, eps0, m, len(y))
    return s + rng.laplace(0.0, b, size=s.shape) if b > 0 else s


def accuracy(theta: np.ndarray, X: np.ndarray, y: np.ndarray) -> float:
    """Fraction of rows whose arg-max score X theta equals the label.

    Source: the Chen et al. 2024, Sec. 5 experiments' metric.
    """
    return float(np.mean(np.argmax(X @ theta, axis=1) == y))


def _check_data(X, y, m):
    X = np.asarray(X, dtype=float)
    y = np.asarray(y)
    if X.ndim != 2 or X.shape[0] == 0 or y.shape != (X.shape[0],) or not np.all(np.isfinite(X)):
        raise ValueError(
            f"X must be a finite (n, p) array, n >= 1, and y of length n, got {X.shape} and "
            f"{y.shape}."
        )
    if not np.issubdtype(y.dtype, np.integer) or y.min() < 0:
        raise ValueError(
            f"y must hold class labels 0, 1, ..., got dtype {y.dtype} and min {y.min()!r}."
        )
    m = v.integer("m", m, lo=1, hi=X.shape[0])
    if X.shape[0] % m:
        raise ValueError(
            f"m must divide n = {X.shape[0]} (equal blocks, Alg. 1 line 1), got m={m}."
        )
    return X, y.astype(int), m


def shuffled_sgd(
    X: np.ndarray,
    y: np.ndarray,
    m: int,
    T: int,
    eps0: float,
    C: float,
    eta: float,
    seed: int | None,
    n_classes: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Chen et al. 2024, Alg. 1 on softmax regression; returns (theta, train accuracy after each
    epoch).

    Blocks S_i = records i k .. (i+1) k - 1 after one seeded permutation of [n] (line 1),
    theta_0 = 0 (line 2); each epoch a fresh permutation of the m blocks (line 5).
    X should carry a constant column for the intercept.  eps0 = inf: no noise.
    """
    X, y, m = _check_data(X, y, m)
    T = v.integer("T", T, lo=1, hi=10 ** 4)
    eta = v.real("eta", eta, lo=0.0, lo_open=True)
    C = v.real("C", C, lo=0.0, lo_open=True)
    laplace_scale(C, eps0, m)                       # validates eps0
    seed = None if seed is None else v.integer("seed", seed, lo=0, hi=2 ** 63 - 1)
    K = (
        int(y.max()) + 1
        if n_classes is None
        else v.integer("n_classes", n_classes, lo=int(y.max()) + 1)
    )
    rng = np.random.default_rng(seed)
    k = X.shape[0] // m
    blocks = rng.permutation(X.shape[0]).reshape(m, k)
    Xb, yb = X[blocks], y[blocks]                   # client i holds (Xb[i], yb[i])
    # = laplace_ldp_gradient's noise, drawn per epoch
    scale = laplace_scale(C, eps0, m, k)
    theta = np.zeros((X.shape[1], K))
    acc = []
    for _ in range(T):
        order = rng.permutation(m)
        noise = (
            rng.laplace(0.0, scale, size=(m,) + theta.shape)
            if scale > 0
            else np.zeros((m,) + theta.shape)
        )
        for s, i in enumerate(order):
            theta -= eta * (clipped_gradient_sum(theta, Xb[i], yb[i], C) / m + noise[s])
        acc.append(accuracy(theta, X, y))
    return theta, np.array(acc)


def alg1_rdp(m: int, T: int, eps0: float, lam: ArrayLike, accountant: Accountant) -> np.ndarray:
    """T * RDP of one shuffled epoch of m eps0-LDP reports, at each order lam (composition adds).

    clones: certified upper end of the exact clones-pair RDP (:func:`clone_rdp`), a valid
    bound; cor2: Chen et al. 2024, Thm 3 = T * Cor. 2 (approximate); girgis: T * eq. 5 (integer
    lam).
    """
    m = v.integer("m", m, lo=2)
    T = v.integer("T", T, lo=1)
    if accountant == "clones":
        one = np.array([b.upper for b in clone_rdp(m, eps0, lam)])
    elif accountant == "cor2":
        one = cor2_rdp(m, eps0, lam)
    elif accountant == "girgis":
        one = girgis_upper(m, eps0, lam)
    else:
        raise ValueError(f"accountant must be one of {ACCOUNTANTS}, got accountant={accountant!r}.")
    return T * one


def eps0_for_budget(
    m: int,
    T: int,
    budget: float,
    lam: ArrayLike,
    accountant: Accountant,
    lo: float = 1e-3,
    hi: float = 10.0,
    rtol: float = 1e-4,
) -> float:
    """Largest eps0 in [lo, hi] (to relative ``rtol``) with alg1_rdp <= budget * lam at every lam.

    The RDP of each accountant increases with eps0, and the log of its largest ratio to the budget
    is near linear in eps0: secant steps (:func:`shuffle_lib.core.search.secant_from_guess`) from
    the regula falsi point of the two ends; every returned eps0 was evaluated and meets the budget.
    Returns hi if hi passes; raises ValueError if even lo fails (the budget is unreachable in
    [lo, hi]).

    Source: Chen et al. 2024, Thm 3 / Alg. 1 (the budget (lam, b lam)).
    """
    m = v.integer("m", m, lo=2)
    budget = v.real("budget", budget, lo=0.0, lo_open=True)
    lam = v.reals("lam", lam, lo=1.0, lo_open=True)
    lo = v.real("lo", lo, 0.0, 700.0, lo_open=True)
    hi = v.real("hi", hi, lo, 700.0)
    rtol = v.real("rtol", rtol, 0.0, 0.5, lo_open=True)

    def excess(e: float) -> float:
        """log of the largest ratio alg1_rdp / (budget lam) over the orders: <= 0 meets."""
        with np.errstate(divide="ignore"):
            return float(np.max(np.log(alg1_rdp(m, T, e, lam, accountant) / (budget * lam))))

    g_lo, g_hi = excess(lo), excess(hi)
    if g_lo > 0:
        raise ValueError(
            f"budget={budget} is unreachable: {accountant} exceeds budget * lam already at "
            f"eps0=lo={lo} (m={m}, T={T})."
        )
    if g_hi <= 0 or hi == lo:
        return hi
    # the log-ratio is near linear in eps0 (the RDP grows like e^eps0): secant steps from the
    # regula falsi point of the two ends, in t = -eps0 so that the excess is non-increasing
    slope = (g_lo - g_hi) / (hi - lo) if math.isfinite(g_lo) and math.isfinite(g_hi) else None
    guess = lo - g_lo / (g_hi - g_lo) * (hi - lo) if slope is not None else 0.5 * (lo + hi)
    yes, _ = secant_from_guess(
        lambda t: excess(-t), -hi, -lo, -guess,
        lambda no, yes: abs(no - yes) <= rtol * abs(yes),
        slope=slope, step=0.25 * (hi - lo), tol=0.5 * rtol * abs(guess))
    return lo if yes is None else max(lo, -yes)
