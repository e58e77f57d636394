"""The datasets (x, 0, ..., 0), x = 1 against x = 0: their exact delta, with certified ends.

With every other user at 0 the shuffled view's likelihood ratio is R = (1/n) sum_i Z_i,
Z_i = e^{L(Y_i)}, L = log f(. - 1) - log f the local loss and Y_i ~ r_0 i.i.d. under the
all-at-0 dataset (each term of the symmetrised density divides by prod_i r_0(y_i)).  So

    delta_10(eps) = E[(R - e^eps)_+] = E[(W_1 + ... + W_n)_+] / n,        W = Z - e^eps,
    delta_01(eps) = E[(1 - e^eps R)_+] = e^eps E[(W'_1 + ... + W'_n)_+] / n, W' = e^-eps - Z,  (1)

one n-fold sum each (for Gaussian noise of sd sigma, Z is lognormal: log Z ~ N(-1/(2 sigma^2),
1/sigma^2)).  The crowd at 1 is the mirror image (y -> 1 - y): it swaps the two directions.
Whether these datasets are the least private ones: proved for two users and Gaussian noise
(chapter 07, lemma lem-gauss-crowd2), conjectured for Gaussian noise at every n (con-gauss-crowd),
and false for Laplace noise (at n = 3 the datasets (x, 0, 1) have a larger delta(0)): the upper
end here bounds this dataset's delta, not the mechanism's.

**Error budget of the upper end** (each item on a known side; Z is non-decreasing in y for a
log-concave noise, so every cell of W is an interval of y):

1. *Mean-preserving rounding is free* (Jensen, as the blanket's item 1 in
   :mod:`~shuffle_lib.mechanisms.randomizer.noise`): a cell's partial mean is read off the
   cdfs, E_0[Z; C] = P_1(C) (r_0 e^L = r_1), so E[W; C] = P_1(C) - e^eps P_0(C), and
   E[W'; C] = e^-eps P_0(C) - P_1(C).
2. *Computed cdfs* within ``CDF_RTOL`` (the module's assumption about scipy): each tail value
   raised by the propagated bound and made non-increasing from the top (a dominating law).
3. *The cap* Z -> min(Z, T): in W it lowers the sum, and (a + b - c)_+ <= (a - c)_+ + b gives
   delta_10 <= E[(sum min(Z_i, T) - n e^eps)_+] / n + E[(Z - T)_+], charged
   E[Z 1{Z > T}] = P_1(Y > y_T); in W' it raises every term: free.
4-5. *The n-fold sum* by :func:`~shuffle_lib.mechanisms.randomizer.noise.positive_part_mean`
   (the blanket's window, its Chernoff tail and FFT round-off bound, items 4-5 there).

**The lower end** of the same datasets is the exact delta of the lattice view
(:func:`~shuffle_lib.mechanisms.randomizer.noise.lower_delta`): a post-processing of them.
"""

from __future__ import annotations

import math

import numpy as np

from shuffle_lib.core import validate as v
from shuffle_lib.core.types import Bracket
from shuffle_lib.mechanisms.randomizer import noise as N

CROWD_STEP = 0.02  # the lattice step of W, in sd(Z) under r_0 (times min(1, sqrt(n / 16)))
CROWD_CAPS = (1e-5, 1e-7, 1e-9, 1e-11, 1e-13)  # P_1(Z > T) of the caps tried in turn
CROWD_WINDOWS = (2, 4)  # the sum's FFT window, in single-law supports (both tried)
CROWD_POINTS = 2**21  # the single law's lattice points, at most (a coarser step beyond)


def _z_to_y(nz: N.Noise, z: np.ndarray) -> np.ndarray:
    """sup{y : e^{L(y)} <= z}, -inf where z <= 0 (no y)."""
    z = np.asarray(z, dtype=float)
    out = np.full(z.shape, -np.inf)
    pos = z > 0
    out[pos] = nz.y_of_loss(np.log(z[pos]))
    return out


def _rounded_law(nz: N.Noise, eps: float, h: float, T: float, up: bool):
    """The dominating law (pmf on (k0 + i) h, k0) of the mean-preserving rounding of W =
    min(Z, T) - e^eps (``up``) or W' = e^-eps - min(Z, T): items 1-3."""
    e = math.exp(eps)
    b = -e if up else 1.0 / e
    lo, hi = (b, T + b) if up else (b - T, b)
    k = np.arange(math.floor(lo / h), math.ceil(hi / h) + 1)
    s = k * h
    # y at the lattice values: W <= s iff y <= ys (up); W >= s iff y <= ys (down)
    ys = _z_to_y(nz, (s - b) if up else (b - s))
    if not up:
        ys[0] = _z_to_y(nz, np.array([T]))[0]  # the capped atom sits at s[0]
    a_, c_ = (ys[:-1], ys[1:]) if up else (ys[1:], ys[:-1])
    P0, P1 = nz.mass(a_, c_, 0.0), nz.mass(a_, c_, 1.0)
    moment = (P1 - e * P0) if up else (P0 / e - P1)  # E[W; cell], cell (s_{k-1}, s_k]
    if up:  # P(W > s_k) = P_0(Y > ys_k); the cap puts the mass above s[-1] at s[-1]
        beyond = nz.tail(ys[1:], 0.0)
        beyond[-1] = 0.0
    else:  # P(W >= s_k) = P_0(Y <= ys_k)
        beyond = nz.dist.cdf(ys[1:])
    G = N.dominating_exceedance(beyond, moment, P0, s, h, P1 + e * P0)
    p = np.maximum(-np.diff(np.append(G, 0.0)), 0.0)
    return p, int(k[0])


def _one_side(nz: N.Noise, n: int, eps: float, h: float, cap: float, up: bool) -> float:
    """A certified upper value of one direction of eq. (1) with the cap P_1(Z > T) = ``cap``."""
    y_top = 1.0 + float(nz.dist.isf(cap))
    T = math.exp(min(float(nz.loss(np.array([y_top]))[0]), 700.0))
    span = T + math.exp(eps) + 1.0
    h = max(h, span / CROWD_POINTS)  # the single law's lattice fits (memory)
    ppm = math.inf
    for _ in range(N.COARSER + 1):
        p, k0 = _rounded_law(nz, eps, h, T, up)
        try:  # a wider window: a smaller tail charge, a larger round-off bound
            for wide in CROWD_WINDOWS:
                summed = N.sum_on_window(p, k0, n, min_points=wide * p.size)
                ppm = min(ppm, N.positive_part_mean(p, k0, n, h, summed) * (1 + 1e-12) / n)
            break
        except ValueError:  # the window would not fit in memory: a coarser lattice
            if math.isfinite(ppm):
                break
            h *= 4.0
    else:
        return 1.0
    if up:
        return min(1.0, ppm + float(nz.tail(np.array([y_top]), 1.0)[0]) * (1 + N.CDF_RTOL))
    return min(1.0, ppm * math.exp(eps))


def crowd_upper_delta(noise: str | N.Noise, n: int, eps: float, scale: float | None = None,
                      step: float = CROWD_STEP) -> float:
    """A certified upper value of the exact delta(eps) of the datasets (x, 0, ..., 0), x = 1
    against x = 0, both directions (eq. (1) and the error budget of the module docstring); each
    cap of ``CROWD_CAPS`` is tried in turn (until a cap's value no longer improves and its
    charge is below 1e-4 of the value) and the smallest value returned.

    Args: as :func:`~shuffle_lib.mechanisms.randomizer.noise.upper_delta`; step: h / sd(Z).
    Returns: a float in [0, 1].
    Raises: ValueError naming a bad argument.
    """
    nz = N.noise_law(noise, scale)
    n = v.integer("n", n, lo=1, hi=N.MAX_N)
    eps = v.real("eps", eps, 0.0, 700.0)
    step = v.real("step", step, 0.0, 1.0, lo_open=True)
    sd = math.sqrt(max(math.expm1(min(N.chi2_log(nz), 700.0)), 1e-24))
    h = step * sd * min(1.0, math.sqrt(n / 16.0))
    out = 0.0
    for up in (True, False):
        best = prev = 1.0
        for cap in CROWD_CAPS:  # a larger T: a smaller charge, a coarser or longer lattice
            val = _one_side(nz, n, eps, h, cap, up)
            best = min(best, val)
            if val >= prev and cap < 1e-4 * best:  # no longer improving
                break
            prev = val
        out = max(out, best)
    return out


def crowd_delta(noise: str | N.Noise, n: int, eps: float, scale: float | None = None) -> Bracket:
    """[lower, upper]: certified ends of the exact delta(eps) of the datasets (x, 0, ..., 0),
    both directions: the lower end the mechanism's (views of these datasets), the upper end
    :func:`crowd_upper_delta`."""
    hi = crowd_upper_delta(noise, n, eps, scale)
    return Bracket(min(N.lower_delta(noise, n, eps, scale), hi), hi)


def crowd_epsilon(noise: str | N.Noise, n: int, delta: float, scale: float | None = None
                  ) -> Bracket:
    """Certified ends of the exact eps(delta) of the datasets (x, 0, ..., 0): the mechanism's
    lower end (:func:`~shuffle_lib.mechanisms.randomizer.noise.view_epsilon`) and an eps whose
    :func:`crowd_upper_delta` is <= delta (the search of
    :func:`~shuffle_lib.mechanisms.randomizer.noise.eps_search`)."""
    nz = N.noise_law(noise, scale)
    n = v.integer("n", n, lo=1, hi=N.MAX_N)
    delta = v.real("delta", delta, 0.0, 1.0, lo_open=True, hi_open=True)
    lo = N.view_epsilon(nz, n, delta)
    hi = N.eps_search(lambda e: crowd_upper_delta(nz, n, e), delta, want_above=False,
                      floor=lo if math.isfinite(lo) else 0.0)
    return Bracket(min(lo, hi), hi)
