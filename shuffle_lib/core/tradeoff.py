"""Trade-off functions (f-DP) of discrete pairs and of Gaussian shifts.

Chen, Cao & Ge (2024) works with trade-off functions in its appendix: Def. A.1,
Lemma A.1 (Renyi divergence from a trade-off function), Lemma A.3 (Neyman-Pearson) and
Lemma A.4 (two Gaussians).  This module gives the objects those lemmas speak of, so the
tests can check each lemma against an independent computation:

* :func:`tradeoff_segments`, :func:`tradeoff_pmfs`: the Neyman-Pearson pieces and breakpoints
  of T(P, Q) for a discrete pair;
* :func:`tradeoff_at`: T(P, Q)(alpha) by linear interpolation between them;
* :func:`renyi_from_tradeoff`: Lemma A.1, ``(1/(lam-1)) log int_0^1 |T'(x)|^{1-lam} dx``;
* :func:`gaussian_tradeoff`: Lemma A.4 / G_mu of Dong, Roth, Su (2022),
  Phi(Phi^{-1}(1-alpha) - mu);
* :func:`gdp_delta`: the hockey-stick delta(eps) of mu-GDP (Dong, Roth, Su 2022, Cor. 2.13).

Convention (Chen et al. 2024, Def. A.1): for a rejection rule phi, alpha = E_P[phi] (type I) and
beta = 1 - E_Q[phi] (type II); T(P, Q)(alpha) = inf{beta : alpha_phi <= alpha}.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.special import log_ndtr, ndtr, ndtri

from shuffle_lib.core import validate as v
from shuffle_lib.core.types import ArrayLike


def _pair(p, q):
    p, q = v.pmf("p", p), v.pmf("q", q)
    if p.shape != q.shape:
        raise ValueError(f"p and q must have the same length, got {p.size} and {q.size}.")
    return p, q


def _alphas(alpha):
    """Type I errors in [0, 1]; a rounding overshoot of 1e-12 (a sum of probabilities) is
    clipped."""
    alpha = v.array("alpha", alpha)
    if np.any(~np.isfinite(alpha)) or np.any(alpha < -1e-12) or np.any(alpha > 1 + 1e-12):
        raise ValueError(
            "alpha must lie in [0, 1], got "
            f"{alpha[(alpha < 0) | (alpha > 1) | ~np.isfinite(alpha)].flat[0]!r}."
        )
    return np.clip(alpha, 0.0, 1.0)


def tradeoff_segments(p: Sequence[float] | np.ndarray,
                      q: Sequence[float] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The linear pieces of T(P, Q) for PMFs p, q on a common support (Lemma A.3).

    The most powerful tests reject outcomes in decreasing order of Q(o)/P(o) (outcomes with
    P = 0 first, ties merged); piece j has length da_j (its P-mass) along alpha and drop db_j (its
    Q-mass) along beta.  Kept as masses, not as differences of the breakpoints, so that a tiny
    piece is not lost to rounding next to a large cumulative sum.
    """
    p, q = _pair(p, q)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(p > 0, q / np.where(p > 0, p, 1.0), np.inf)
    keep = (p > 0) | (q > 0)
    r, p, q = r[keep], p[keep], q[keep]
    ratios, group = np.unique(-r, return_inverse=True)        # decreasing Q/P
    return (np.bincount(group, weights=p, minlength=ratios.size),
            np.bincount(group, weights=q, minlength=ratios.size))


def tradeoff_pmfs(
    p: Sequence[float] | np.ndarray, q: Sequence[float] | np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Breakpoints (alpha, beta) of T(P, Q), from (0, 1) to (1, 0); T is linear in between.

    alpha_j = the P-mass and 1 - beta_j the Q-mass of the first j pieces of
    :func:`tradeoff_segments`.  When Q has mass where P = 0 the first piece is vertical (alpha
    stays 0 while beta drops by that mass).

    Source: Chen et al. 2024, Def. A.1 and Lemma A.3.
    """
    da, db = tradeoff_segments(p, q)
    alpha = np.concatenate([[0.0], np.cumsum(da)])
    beta = np.concatenate([np.cumsum(db[::-1])[::-1], [0.0]])   # suffix sums: no 1 - x cancellation
    alpha[-1] = 1.0
    return alpha, beta


def tradeoff_at(p: Sequence[float] | np.ndarray, q: Sequence[float] | np.ndarray,
                alpha: ArrayLike) -> float | np.ndarray:
    """T(P, Q)(alpha) for alpha in [0, 1], by interpolation between the breakpoints.

    Source: Chen et al. 2024, Def. A.1 and Lemma A.3.
    """
    alpha = _alphas(alpha)
    a, b = tradeoff_pmfs(p, q)
    # At alpha = 0 the curve may jump (outcomes with P = 0): take the lowest beta there.
    a0 = np.searchsorted(a, 0.0, side="right") - 1
    out = np.interp(alpha, a[a0:], b[a0:])
    return out if out.ndim else float(out)


def renyi_from_tradeoff(
    da: Sequence[float] | np.ndarray, db: Sequence[float] | np.ndarray, lam: float
) -> float:
    """Chen et al. 2024, Lemma A.1: D_lam = (1/(lam-1)) log int_0^1 |T'(x)|^{1-lam} dx, T piecewise
    linear.

    ``da``, ``db``: lengths and drops of the pieces of T (:func:`tradeoff_segments`); a piece of
    slope -db/da contributes da (db/da)^{1-lam}.  A piece of positive length and zero slope (P-mass
    where Q = 0: T reaches 0 before alpha = 1, the case the lemma's condition excludes) makes
    the divergence infinite.  lam > 1.
    """
    lam = v.real("lam", lam, 1.0, 1e4, lo_open=True)
    da, db = v.array("da", da, ndim=1, lo=0.0), v.array("db", db, ndim=1, lo=0.0)
    if da.shape != db.shape:
        raise ValueError(f"da and db must have the same length, got {da.size} and {db.size}.")
    seg = da > 0
    if np.any(db[seg] <= 0):
        return math.inf
    logs = np.log(da[seg]) + (1.0 - lam) * (np.log(db[seg]) - np.log(da[seg]))
    top = logs.max()
    return (top + math.log(math.fsum(np.exp(logs - top)))) / (lam - 1.0)


def gaussian_tradeoff(mu: float, alpha: ArrayLike) -> float | np.ndarray:
    """Chen et al. 2024, Lemma A.4 (Dong, Roth, Su 2022): T(N(m0, I), N(m1, I))(alpha) =
    Phi(Phi^{-1}(1-alpha) - mu),

    mu = ||m1 - m0||_2 >= 0, alpha in [0, 1].
    """
    mu = v.real("mu", mu, 0.0, 1e3)
    alpha = _alphas(alpha)
    out = ndtr(ndtri(1.0 - alpha) - mu)
    return out if out.ndim else float(out)


def gdp_delta(mu: float, eps: float) -> float:
    """delta(eps) of mu-GDP (Dong, Roth, Su 2022, Cor. 2.13): the Gaussian mechanism with
    sensitivity 1 and sigma = 1/mu, :func:`gaussian_delta`.  1e-6 <= mu <= 1e3."""
    mu = v.real("mu", mu, 1e-6, 1e3)
    return gaussian_delta(1.0 / mu, eps)


def log_gaussian_delta(sigma: float, eps: float, sensitivity: float = 1.0) -> float:
    """log delta(eps) of the Gaussian mechanism N(0, sigma^2) at L2 sensitivity D (Balle & Wang
    2018, Thm 8):

    delta = Phi(D/(2 sigma) - eps sigma/D) - e^eps Phi(-D/(2 sigma) - eps sigma/D), in log space
    (-inf when delta = 0).  The one implementation of the Gaussian delta in the package.
    """
    sigma = v.real("sigma", sigma, 0.0, 1e6, lo_open=True)
    eps = v.real("eps", eps, 0.0)
    sens = v.real("sensitivity", sensitivity, 0.0, lo_open=True)
    a = sens / (2 * sigma) - eps * sigma / sens
    b = -sens / (2 * sigma) - eps * sigma / sens
    la, lb = log_ndtr(a), eps + log_ndtr(b)
    return float(la + math.log(-math.expm1(lb - la))) if lb < la else -math.inf


def gaussian_delta(sigma: float, eps: float) -> float:
    """Exact delta(eps) of the (unshuffled) Gaussian mechanism with sensitivity 1
    (:func:`log_gaussian_delta` with D = 1; the n = 1 check of Koskela et al. 2022, Sec. 5)."""
    return math.exp(log_gaussian_delta(sigma, eps))
