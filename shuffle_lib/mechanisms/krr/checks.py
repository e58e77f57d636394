"""Independent checks of :mod:`shuffle_lib.mechanisms.krr`: brute force, and the paper's loose
readings.

* Brute force: enumerate every outcome of every local
  randomiser for tiny n and k (each party: truthful w.p. 1 - gamma, else one of
  k values w.p. gamma/k), form each adversary's view exactly (rational
  arithmetic) and take the tight delta of the two view distributions.  The views:
  'strong' = (beta_1..beta_n, multiset) (Koskela et al. 2021, Def. 7); 'weak' =
  (beta_1..beta_{n-1}, multiset) (Koskela et al. 2021, Def. 9); 'plain' = the multiset only, the
  shuffle model with no side information (Koskela et al. 2021, Sec. 4.1, "price of information").
* Loose readings of the paper (Koskela et al. 2021, eq. 4.1, Thm 8, Thm 10), evaluated exactly
  for one round so that the chapter can show what separates each from the tight
  delta of :mod:`shuffle_lib.mechanisms.krr`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Literal

import numpy as np
from scipy.signal import fftconvolve
from scipy.stats import binom

from shuffle_lib.core import validate as v
from shuffle_lib.core.binomial import binom_window
from shuffle_lib.core.pld import delta_exact, product_pmfs, tail_probability
from shuffle_lib.core.types import ArrayLike
from shuffle_lib.mechanisms.krr import base as krr

VIEWS = ("strong", "weak", "plain")
View = Literal["strong", "weak", "plain"]


def _view_pmf(xs, gamma, k, view):
    """Exact law (dict view -> Fraction) of one adversary's view for data ``xs``."""
    g = Fraction(gamma)
    outcomes = []
    for x in xs:   # (beta_i, y_i, probability)
        outcomes.append([(0, x, 1 - g)] + [(1, y, g / k) for y in range(k)])
    law = {}
    n = len(xs)
    for combo in itertools.product(*outcomes):
        beta = tuple(c[0] for c in combo)
        ys = tuple(sorted(c[1] for c in combo))
        key = {"strong": (beta, ys), "weak": (beta[: n - 1], ys), "plain": ys}[view]
        p = math.prod((c[2] for c in combo), start=Fraction(1))
        law[key] = law.get(key, 0) + p
    return law


def view_pmfs(n: int, gamma: float, k: int, view: View,
              others: Sequence[int] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The pair (P, Q) of view PMFs on one support, x_n = 0 vs x'_n = 1 (values 0..k-1).

    ``others``: x_1..x_{n-1} (default all 0).  gamma is taken as an exact fraction.

    Source: Koskela et al. 2021, Def. 7 (strong), Def. 9 (weak), Sec. 4.1 (plain).
    """
    n = v.integer("n", n, lo=2, hi=8)
    k = v.integer("k", k, lo=2, hi=5)
    gamma = v.real("gamma", gamma, 0.0, 1.0, lo_open=True)
    if view not in VIEWS:
        raise ValueError(f"view must be one of {VIEWS}, got view={view!r}.")
    if (k + 1) ** n > 200_000:
        raise ValueError(f"brute force needs (k+1)**n <= 2e5 outcomes, got {(k + 1) ** n}.")
    others = tuple([0] * (n - 1) if others is None else others)
    if len(others) != n - 1 or any(not 0 <= x < k for x in others):
        raise ValueError(f"others must be n-1={n - 1} values in [0, {k - 1}], got {others!r}.")
    lp = _view_pmf(others + (0,), gamma, k, view)
    lq = _view_pmf(others + (1,), gamma, k, view)
    keys = sorted(set(lp) | set(lq))
    return (
        np.array([float(lp.get(s, 0)) for s in keys]),
        np.array([float(lq.get(s, 0)) for s in keys]),
    )


def brute_delta(
    n: int,
    gamma: float,
    k: int,
    view: View,
    eps: ArrayLike,
    others: Sequence[int] | None = None,
    n_c: int = 1,
) -> np.ndarray:
    """Tight delta(eps) (both directions) of n_c rounds of one view, by enumeration.

    Source: Koskela et al. 2021, Thm 5 on the enumerated views.
    """
    n_c = v.integer("n_c", n_c, lo=1, hi=64)
    p, q = view_pmfs(n, gamma, k, view, others)
    if n_c > 1:
        p, q = product_pmfs(p, q, n_c)
    return delta_exact(p, q, eps)


def plain_worst_delta(n: int, gamma: float, k: int, eps: ArrayLike) -> np.ndarray:
    """Tight delta of the plain shuffle view, worst case over x_1..x_{n-1} (multisets suffice).

    Source: Koskela et al. 2021, Sec. 4.1 (the plain shuffle view).
    """
    n = v.integer("n", n, lo=2, hi=8)          # the limits of view_pmfs, checked before enumerating
    k = v.integer("k", k, lo=2, hi=5)
    eps = v.reals("eps", eps, lo=0.0)
    best = np.zeros(eps.size)
    for others in itertools.combinations_with_replacement(range(k), n - 1):
        best = np.maximum(best, brute_delta(n, gamma, k, "plain", eps, others))
    return best


# ---- loose readings of the paper, one round --------------------------------------------


def reading_independent_tail(n: int, gamma: float, k: int, eps: float) -> float:
    """Koskela et al. 2021, eq. 4.1 + Thm 8 read literally: P[log(N1/N2) >= eps], N1 = Bin(n-1, g/k)
    + 1 and N2 = Bin(n-1, g/k) *independent*, no beta_n mixture (N2 = 0 counts as +inf)."""
    n, gamma, k = krr.check_params(n, gamma, k)
    eps = v.real("eps", eps, 0.0, lo_open=True)
    a = np.arange(n)
    # (a+1)/c >= e^eps  <=>  c <= (a+1)e^-eps
    cmax = np.floor((a + 1) * math.exp(-eps) * (1 + 1e-12))
    return float(np.sum(binom.pmf(a, n - 1, gamma / k) * binom.cdf(cmax, n - 1, gamma / k)))


def reading_pmf_pair(n: int, gamma: float, k: int, eps: float) -> float:
    """Koskela et al. 2021, Sec. 4.1 read as the one-dimensional PMF pair P_s = Bin + 1, Q_s = Bin:
    tight delta."""
    n, gamma, k = krr.check_params(n, gamma, k)
    eps = v.real("eps", eps, 0.0)
    pmf = binom.pmf(np.arange(n), n - 1, gamma / k)
    p, q = np.append(0.0, pmf), np.append(pmf, 0.0)
    return float(delta_exact(p / p.sum(), q / q.sum(), eps)[0])


def strong_readings(n: int, gamma: float, k: int, eps: float) -> dict[str, float]:
    """One round, A_s: the paper's readings beside the exact value (dict of floats).

    Source: Koskela et al. 2021, eq. 4.1, Thm 8, Def. 7.
    """
    pl = krr.strong_pld(n, gamma, k)
    exact = float(krr.hockey_stick_pair(pl, eps)[0])
    tail = float(tail_probability(pl.lower, eps))
    return {
        "independent counts, tail (eq. 4.1 + Thm 8)": reading_independent_tail(n, gamma, k, eps),
        "joint counts, tail, no beta_n": tail / (1.0 - gamma),
        "joint counts, tail, with beta_n": tail,
        "PMF pair Bin+1 vs Bin, tight": reading_pmf_pair(n, gamma, k, eps),
        "exact, no beta_n": exact / (1.0 - gamma),
        "exact (tight)": exact,
    }


def reading_weak_independent_tail(n: int, gamma: float, k: int, eps: ArrayLike,
                                  tail: float = 1e-30) -> float | np.ndarray:
    """Koskela et al. 2021, Thm 10 read literally: N1|B = Bin(B,1/k) + Bern(1-g+g/k), N2|B =
    Bin(B,1/k) + Bern(g/k) *independent* given B; P[log(((1-g)N1 + g(B+1)/k)/((1-g)N2 + g(B+1)/k))
    >= eps] (vectorised over eps; tails of mass <= tail ignored)."""
    n, gamma, k = krr.check_params(n, gamma, k)
    eps = v.reals("eps", eps, lo=0.0, lo_open=True)
    tail = v.real("tail", tail, 0.0, 1.0)
    p1, p2 = krr.krr_probs(gamma, k)
    lo, hi = (int(x[0]) for x in binom_window(np.array([n - 1]), gamma, tail))
    total = np.zeros(eps.size)
    for b in range(lo, hi + 1):
        mlo, mhi = (int(x[0]) for x in binom_window(np.array([b]), 1.0 / k, tail))
        m = binom.pmf(np.arange(mlo, mhi + 1), b, 1.0 / k)
        f1 = np.append(m * (1 - p1), 0.0) + np.append(0.0, m * p1)   # law of N1 | B = b
        f2 = np.append(m * (1 - p2), 0.0) + np.append(0.0, m * p2)
        u = np.arange(mlo, mhi + 2)
        z = krr.weak_loss(u[:, None], u[None, :], b, gamma, k).ravel()
        w = np.outer(f1, f2).ravel()
        order = np.argsort(z)
        csum = np.cumsum(w[order][::-1])[::-1]                        # P[Z >= z_(i)]
        idx = np.searchsorted(z[order], eps, side="left")
        total += binom.pmf(b, n - 1, gamma) * np.where(
            idx < z.size, csum[np.minimum(idx, z.size - 1)], 0.0
        )
    return total if total.size > 1 else float(total[0])


def weak_readings(
    n: int, gamma: float, k: int, eps: ArrayLike
) -> dict[str, float] | dict[str, list[float]]:
    """One round, A_w: the paper's reading beside the exact value (dict of floats, or of
    lists when ``eps`` is a list).

    Source: Koskela et al. 2021, Thm 10, Def. 9.
    """
    pl = krr.weak_pld(n, gamma, k)
    e = v.reals("eps", eps, lo=0.0, lo_open=True)
    ind = np.atleast_1d(reading_weak_independent_tail(n, gamma, k, e))
    out = {
        "independent N1, N2 given B, tail (Thm 10)": [float(x) for x in ind],
        "joint counts, tail": [float(tail_probability(pl.lower, x)) for x in e],
        "exact (tight)": [krr.hockey_stick_pair(pl, x)[0] for x in e],
    }
    return {key: val[0] for key, val in out.items()} if np.ndim(eps) == 0 else out


# ---- the paper's Thm 8 form for compositions: tails of the summed loss -------------------


def independent_losses(
    n: int, gamma: float, k: int, tail: float = 1e-30
) -> tuple[np.ndarray, np.ndarray, float]:
    """Atoms of Z = log(N1/N2), N1 = Bin(n-1, g/k) + 1, N2 = Bin(n-1, g/k) independent
    (Koskela et al. 2021, eq. 4.1 / Thm 8 read literally): (losses, probs, mass at +inf)."""
    n, gamma, k = krr.check_params(n, gamma, k)
    tail = v.real("tail", tail, 0.0, 1.0)
    lo, hi = (int(x) for x in binom_window(n - 1, gamma / k, tail))
    x = np.arange(lo, hi + 1)
    f = binom.pmf(x, n - 1, gamma / k)
    a, c = np.meshgrid(x, x[x > 0], indexing="ij")
    pa, pc = np.meshgrid(f, f[x > 0], indexing="ij")
    return (
        np.log1p((a + 1 - c) / c).ravel(),
        (pa * pc).ravel(),
        float(binom.pmf(0, n - 1, gamma / k)),
    )


def composed_tail(
    losses: Sequence[float] | np.ndarray,
    probs: Sequence[float] | np.ndarray,
    inf_mass: float,
    n_c: int,
    eps: ArrayLike,
    h: float = 1e-3,
) -> list[tuple[float, float]]:
    """(lower, upper) for P[L_1 + ... + L_{n_c} >= eps], L_i iid (Koskela et al. 2021, Thm 8 form).

    Losses rounded down / up to multiples of h (the tail is monotone in each L_i), the
    n_c-fold convolution by FFT; accurate to ~1e-12 absolute (FFT round-off), which is
    ample for comparing with deltas >= 1e-8.
    """
    n_c = v.integer("n_c", n_c, lo=1, hi=1000)
    eps = v.reals("eps", eps)
    losses = v.array("losses", losses, ndim=1)
    probs = v.array("probs", probs, ndim=1, lo=0.0, hi=1.0)
    inf_mass = v.real("inf_mass", inf_mass, 0.0, 1.0)
    if probs.shape != losses.shape:
        raise ValueError(
            f"losses and probs must have the same length, got {losses.size} and {probs.size}."
        )
    if math.fsum(probs) + inf_mass > 1.0 + 1e-9:
        raise ValueError(
            f"probs and inf_mass must sum to at most 1, got {math.fsum(probs) + inf_mass!r}."
        )
    h = v.real("h", h, 0.0, 1.0, lo_open=True)
    out = []
    for rounder in (np.floor, np.ceil):
        idx = rounder(np.asarray(losses) / h).astype(np.int64)
        base = int(idx.min())
        w = np.bincount(idx - base, weights=probs)
        acc, power, m = None, w, n_c           # n_c-fold convolution by repeated squaring
        while m:
            if m & 1:
                acc = power if acc is None else np.clip(fftconvolve(acc, power), 0.0, None)
            m >>= 1
            if m:
                power = np.clip(fftconvolve(power, power), 0.0, None)
        s = (np.arange(acc.size) + n_c * base) * h
        fin = np.array([math.fsum(acc[s >= e - 1e-9 * h]) for e in eps])
        out.append(fin + 1.0 - (1.0 - inf_mass) ** n_c)
    return [(float(a), float(b)) for a, b in zip(out[0], out[1])]
