"""The Fourier accountant, made certified: a PLD composed on a grid with one-sided errors.

The FFT accountant of Koskela et al. (seed 000 Sec. 2.2; seed 001 Sec. 2.2)
places a PLD on an equidistant grid of step h, composes it with FFTs and reads
off delta(eps) = delta(inf) + E[(1 - e^{eps - S})_+] of the composed loss
S = L_1 + ... + L_K (seed 000 Thm 5, eq. 2.3; seed 001 Thm 5).  Here every
approximation is made on a known side, so that :mod:`shuffle_lib.core.fourier`
(the public accountant) can return a bracket [lower, upper] that contains the tight value.

1. **Grid rounding.**  f_eps(s) = (1 - e^{eps - s})_+ is non-decreasing in s.

   * ``updown`` (few rounds): rounding every loss up gives S_up >= S, an upper
     bound; rounding down gives a lower bound.
   * ``mean`` (many rounds): each loss is split between its two neighbouring
     grid points keeping its mean (Gopi et al. 2021).  S~ - S is a sum of K
     independent zero-mean increments, each in an interval of length h, so by
     Hoeffding P[S - S~ >= t] <= c for t = h sqrt(K log(1/c) / 2), and since
     0 <= f_eps <= 1:  delta_S~(eps + t) - c <= delta_S(eps) <= delta_S~(eps - t) + c.

2. **Exponential tilting.**  The grid stores w_i = m_i e^{lam s_i - logscale}
   (m_i the mass at s_i, max_i w_i = 1).  Tilting commutes with convolution, and
   with lam near the Chernoff-optimal value for the eps of interest the FFT's
   round-off, which is relative to the largest stored value, becomes relative
   to delta itself instead of to 1: this is what makes delta ~ 1e-10 certifiable.
3. **Window.**  After each convolution, the top tail holding at most ``_TAU``
   of (untilted) mass is sent to +inf for the upper bound and dropped for the
   lower bound.  The bottom tail holding at most ``_TAU`` of the *tilted* mass
   is dropped; by Chernoff, mass m at s contributes to the final delta(x) at
   most m e^{lam (s - x)} E[e^{lam R}] (R the rest of the sum), which is its
   tilted mass carried through the remaining convolutions exactly like an
   error, so it joins the error term below.  Convolutions are linear
   (zero-padded): nothing wraps around.
4. **Floating point.**  ``err`` is an l1 bound, in tilted units, on the
   difference between the stored and the exact grid values plus the dropped
   bottom mass.  Each convolution adds ``_FFT_C u log2(N) sqrt(N) |a|_2 |b|_2``
   (a Higham-type bound for FFT convolution with a generous constant, checked in
   the tests against exact convolution) and propagates the inputs' bounds; at
   the end it costs at most err e^{logscale - lam x} in delta(x).

5. **Masses at +inf, without cancellation** (issue 17).  A round's P-mass splits into
   a = delta(inf) and the finite rest F (grid, trimmed tails), T = F + a.  The composed
   +inf mass is T_1...T_K - F_1...F_K; the form 1 - (1-a)(1-b) loses everything below
   an ulp of 1 (a = 1e-17, K = 2 gave 0 where the exact value is 2e-17).  Each grid
   carries instead lfin = log(F/T) = log1p(-a/T) <= 0 and ltot = log T (T - 1 summed
   exactly by ``math.fsum``, so ltot is within 2u |ltot| + u^2 of its value), and a
   composition adds them: the +inf mass is e^{ltot} (-expm1(lfin)).  Error: log1p(-a/T)
   is within 3u (relative) of log(F/T); a binary tree of additions of numbers of one sign
   adds at most u per level, 2 log2(K) + #components levels; -expm1 is within u and
   passes a relative error eta of its argument on as at most eta (|x| e^x / (1 - e^x) <= 1
   for x < 0); e^{ltot} adds u + |ltot| u.  In all, the relative error is below
   (2 log2 K + #components + 6) u, under 1e-13 for K <= 1e7 and far inside
   ``_REL_MARGIN``.  The trimmed tops compose by a union bound, top_a T_b + top_b T_a,
   rounded up by 4u: an over-estimate, used by the upper end only.  No probability is
   ever subtracted from another.

Cost: O(M log M) per convolution and about 2 log2(K) convolutions for K rounds,
M the number of grid points.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from scipy import fft as _fft

from shuffle_lib.core.pld import PLD

_U = 2.0 ** -53
_FFT_C = 10.0             # constant of the FFT round-off bound (see module docstring)
_TAU = 1e-16              # mass trimmed per tail per step
_SNAP = 16 * _U           # relative distance below which a loss counts as on the grid
_REL_MARGIN = 1e-12       # covers the remaining double rounding (inf-mass products, sums)
UPDOWN_MAX_K = 32         # up/down rounding for K <= this, mean-preserving above


@dataclass
class _Grid:
    w: np.ndarray     # tilted weights, max 1: mass at (offset + i) h is w_i e^{logscale - lam s_i}
    offset: int
    logscale: float
    lfin: float       # log(F / T) <= 0: F the finite mass (grid, trimmed tails), T the total mass
    ltot: float       # log(T) (0 for a PMF summing to exactly 1)
    top: float        # trimmed above: +inf for the upper bound, dropped for the lower
    err: float        # tilted l1 bound: round-off plus mass dropped at the bottom

    @property
    def inf(self) -> float:
        """Mass at +inf, T - F = T (1 - e^{lfin}), without cancellation (point 5)."""
        return _inf_mass(self.lfin, self.ltot)


def _inf_mass(lfin, ltot):
    return math.exp(ltot) * -math.expm1(lfin) if lfin < 0 else 0.0


def _log_masses(pld):
    """(lfin, ltot) of one PLD: log1p(-inf/T) and log T, T - 1 summed exactly (fsum) when inf > 0."""
    a = pld.inf_mass
    if a <= 0.0:
        return 0.0, 0.0
    t1 = math.fsum(np.concatenate([pld.probs, [a, -1.0]]))   # T - 1, correctly rounded
    return (math.log1p(-a / (1.0 + t1)) if a < 1.0 + t1 else -math.inf), math.log1p(t1)


@dataclass(frozen=True)
class Composed:
    """One direction of a composition on the grid: what the bracket readers need."""

    up: _Grid
    low: _Grid
    h: float
    lam: float
    mode: str
    K: int
    eps_slack: float  # eps shift covering the double rounding of the input losses
    cache: dict = field(default_factory=dict, compare=False, repr=False)


def _grid_s(g, h, start=0):
    return (g.offset + np.arange(start, g.w.size)) * h


def _untilted_log(w, logscale, lam, s):
    with np.errstate(divide="ignore"):
        return np.log(w) + logscale - lam * s


def _tilt(w_mass, offset, h, lam):
    """Normalised tilted weights and log-scale for untilted masses on a grid."""
    s = (offset + np.arange(w_mass.size)) * h
    with np.errstate(divide="ignore"):
        lw = np.log(w_mass) + lam * s
    c = float(lw.max())
    return np.exp(lw - c), c


def _trim(g, h, lam, tau_top, noise=0.0):
    """Trim both tails (module docstring, point 3).

    The top is cut only where the round-off bound's untilted cost, err e^{logscale - lam s},
    is itself below ``tau_top`` (for lam > 0), because that cost is added to ``top``.
    """
    w = g.w
    c_low = np.cumsum(w)
    # bottom: tilted mass up to _TAU of the total, or up to a tenth of this step's FFT round-off
    # bound (below that the stored values are round-off noise, and keeping them would let
    # the window grow with every convolution)
    i = min(int(np.searchsorted(c_low, max(_TAU * c_low[-1], 0.1 * noise), side="right")), w.size - 1)
    dropped = float(c_low[i - 1]) if i > 0 else 0.0
    c_top, n_top, block = np.zeros(0), 0, 1 << 14
    while True:  # untilted top-tail masses, read from the top in growing blocks
        lo = max(w.size - block, 0)
        lm = _untilted_log(w[lo:], g.logscale, lam, _grid_s(g, h, lo))
        c_top = np.cumsum(np.exp(np.minimum(lm[::-1], 700.0)))
        n_top = int(np.searchsorted(c_top, tau_top, side="right"))
        if n_top < c_top.size or lo == 0:
            break
        block *= 4
    n_top = min(n_top, w.size - 1 - i)
    if lam > 0 and g.err > 0 and n_top > 0:
        # the cut's error cost err e^{logscale - lam s} must be <= tau_top, or <= 1e-3 of the
        # error's cost at the tilted peak (where the delta of interest lives)
        s_peak = (g.offset + int(np.argmax(w))) * h
        log_allowed = max(math.log(tau_top), math.log(1e-3) + math.log(g.err) + g.logscale - lam * s_peak)
        s_b = (g.logscale + math.log(g.err) - log_allowed) / lam  # cost <= allowed above s_b
        first_ok = max(math.ceil(s_b / h) - g.offset, 0)      # first index with s >= s_b (up to rounding)
        n_top = min(n_top, max(w.size - first_ok - 1, 0))
    top, j = g.top, w.size - n_top
    if n_top > 0:
        top += float(c_top[n_top - 1]) + g.err * math.exp(min(g.logscale - lam * (g.offset + j) * h, 0.0))
    return _Grid(w[i:j].copy(), g.offset + i, g.logscale, g.lfin, g.ltot, min(top, 1.0), g.err + dropped)


def discretise(pld: PLD, h: float, rounding: Literal["up", "down", "mean"], lam: float = 0.0,
               tau_top: float = _TAU) -> _Grid:
    """Put one PLD on the grid of step h, rounding 'up', 'down' or 'mean', tilted by lam.

    Source: seed 000 Sec. 2.2 (the FFT accountant's grid); module docstring, points 1-3.
    """
    s, p = pld.losses, pld.probs
    c_top = np.cumsum(p[::-1])
    n_top = min(int(np.searchsorted(c_top, tau_top, side="right")), p.size - 1)
    top = float(c_top[n_top - 1]) if n_top > 0 else 0.0
    s, p = s[: p.size - n_top], p[: p.size - n_top]
    x = s / h
    near = np.rint(x)
    snap = np.abs(x - near) <= _SNAP * np.maximum(np.abs(x), 1.0)
    x = np.where(snap, near, x)  # on the grid up to rounding: stays there (covered by eps_slack)
    if rounding == "up":
        idx, wts = [np.ceil(x)], [p]
    elif rounding == "down":
        idx, wts = [np.floor(x)], [p]
    else:
        f = np.floor(x)
        frac = x - f
        idx, wts = [f, f + 1], [p * (1 - frac), p * frac]
    lo = int(min(a.min() for a in idx))
    hi = int(max(a.max() for a in idx))
    mass = np.zeros(hi - lo + 1)
    for a, b in zip(idx, wts):
        mass += np.bincount((a - lo).astype(np.int64), weights=b, minlength=mass.size)
    w, logscale = _tilt(mass, lo, h, lam)
    return _trim(_Grid(w, lo, logscale, *_log_masses(pld), top, 0.0), h, lam, tau_top)


def _convolve(a, b, h, lam, tau_top):
    """Linear convolution of two grids by FFT, with the bookkeeping of tails and errors."""
    n = a.w.size + b.w.size - 1
    nfft = _fft.next_fast_len(n, real=True)
    fa = _fft.rfft(a.w, nfft)
    fb = fa if b is a else _fft.rfft(b.w, nfft)
    w = _fft.irfft(fa * fb, nfft)[:n]
    np.maximum(w, 0.0, out=w)  # exact values are >= 0: clipping only reduces the error
    fft_err = _FFT_C * _U * math.log2(nfft) * math.sqrt(nfft) * np.linalg.norm(a.w) * np.linalg.norm(b.w)
    err = a.err * (b.w.sum() + b.err) + b.err * a.w.sum() + fft_err
    m = float(w.max())
    # point 5: +inf mass in log-complement form (sums of same-sign logs), the trimmed tops by a
    # union bound over the two factors (no subtraction anywhere)
    top = (a.top * math.exp(b.ltot) + b.top * math.exp(a.ltot)) * (1 + 4 * _U)
    g = _Grid(w / m, a.offset + b.offset, a.logscale + b.logscale + math.log(m), a.lfin + b.lfin,
              a.ltot + b.ltot, top, err / m)
    return _trim(g, h, lam, tau_top, fft_err / m)


def _self_compose(g, k, h, lam, tau_top):
    result, base = None, g
    while k:
        if k & 1:
            result = base if result is None else _convolve(result, base, h, lam, tau_top)
        k >>= 1
        if k:
            base = _convolve(base, base, h, lam, tau_top)
    return result


def compose_on_grid(components: Sequence[tuple[PLD, int]], h: float, lam: float,
                    mode: Literal["updown", "mean"]) -> Composed:
    """Compose [(pld, count), ...] on the grid of step h with tilt lam; returns :class:`Composed`.

    Source: seed 000 Sec. 2.2, Thm 5 / eq. 2.3; seed 001 Sec. 2.2 (module docstring).
    """
    K = sum(c for _, c in components)
    max_abs = max(float(np.max(np.abs(p.losses), initial=0.0)) for p, _ in components)
    eps_slack = K * 64 * _U * max(max_abs, h)  # input rounding + snapping

    tau_top = _TAU / K  # later cuts: their mass is counted again by every later round
    # (the first cut, of each input PLD's top atoms, keeps _TAU: callers rely on a top tail
    # of mass <= _TAU going to +inf for the upper bound and being dropped for the lower)

    def run(rounding):
        parts = [_self_compose(discretise(p, h, rounding, lam), c, h, lam, tau_top) for p, c in components]
        out = parts[0]
        for g in parts[1:]:
            out = _convolve(out, g, h, lam, tau_top)
        return out

    if mode == "updown":
        return Composed(run("up"), run("down"), h, lam, mode, K, eps_slack)
    g = run("mean")
    return Composed(g, g, h, lam, mode, K, eps_slack)


def _grid_delta(g, h, lam, x):
    """(sum_i m_i (1 - e^{x - s_i})_+ over s_i > x, its floating-point slack, err's cost at x)."""
    j = min(max(0, math.floor(x / h - g.offset) + 1), g.w.size)
    while j > 0 and (g.offset + j - 1) * h > x:
        j -= 1
    while j < g.w.size and (g.offset + j) * h <= x:
        j += 1
    s = _grid_s(g, h, j)
    lm = _untilted_log(g.w[j:], g.logscale, lam, s)
    val = float(np.sum(np.exp(np.minimum(lm, 700.0)) * -np.expm1(x - s)))
    big = abs(g.logscale) + lam * float(np.max(np.abs(s), initial=0.0)) + math.log2(max(g.w.size, 2)) + 8
    err_cost = g.err * math.exp(min(g.logscale - lam * x, 700.0))
    return val, big * _U * val, err_cost


def _suffix_sums(cg, side):
    """Cached tail sums (s, sum_{i>=j} m_i, sum_{i>=j} m_i e^{-s_i}) over s >= -1, for fast reads."""
    if side not in cg.cache:
        g = cg.up if side == "up" else cg.low
        start = min(max(math.ceil(-1.0 / cg.h) - g.offset, 0), g.w.size)
        s = _grid_s(g, cg.h, start)
        m = np.exp(np.minimum(_untilted_log(g.w[start:], g.logscale, cg.lam, s), 700.0))
        cg.cache[side] = (s, np.cumsum(m[::-1])[::-1], np.cumsum((m * np.exp(-s))[::-1])[::-1])
    return cg.cache[side]


def _fast_grid_delta(cg, side, x):
    """Approximate sum_i m_i (1 - e^{x - s_i})_+ (x >= -1) in O(log M): steers, certifies nothing."""
    s, t0, t1 = _suffix_sums(cg, side)
    j = int(np.searchsorted(s, x, side="right"))
    if j >= s.size or t0[j] <= 0.0:
        return 0.0
    return float(t0[j]) * -math.expm1(min(x + math.log(t1[j]) - math.log(t0[j]), 0.0)) if t1[j] > 0 else 0.0


def hoeffding_t(c: float, h: float, K: int) -> float:
    """eps shift t with P[S - S~ >= t] <= c for mean-preserving rounding (point 1).

    Source: Hoeffding's inequality for mean-preserving rounding (Gopi et al. 2021; module docstring).
    """
    return h * math.sqrt(K * math.log(1.0 / c) / 2.0)


def _shift(cg, c):
    return cg.eps_slack + (0.0 if cg.mode == "updown" else hoeffding_t(c, cg.h, cg.K))


def _read(cg, side, x, fast):
    g = cg.up if side == "up" else cg.low
    if fast:
        err_cost = g.err * math.exp(min(g.logscale - cg.lam * x, 700.0))
        return _fast_grid_delta(cg, side, x), 0.0, err_cost
    return _grid_delta(g, cg.h, cg.lam, x)


def delta_upper(cg: Composed, eps: float, c: float = 1.0, fast: bool = False) -> float:
    """Certified upper bound on delta_{P/Q}(eps); c is the Hoeffding level in 'mean' mode.

    ``fast=True`` reads the tail sums from cached suffix sums: approximate, for steering only.

    Source: seed 000 Thm 5, eq. 2.3 on the grid, errors on the safe side (module docstring).
    """
    g = cg.up
    val, fl, ec = _read(cg, "up", eps - _shift(cg, c), fast)
    extra = 0.0 if cg.mode == "updown" else c
    return min(1.0, (val + fl + g.inf + g.top + ec + extra) * (1 + _REL_MARGIN))


def delta_lower(cg: Composed, eps: float, c: float = 1.0, fast: bool = False) -> float:
    """Certified lower bound on delta_{P/Q}(eps) (``fast``: approximate, as in delta_upper).

    Source: seed 000 Thm 5, eq. 2.3 on the grid, errors on the safe side (module docstring).
    """
    g = cg.low
    val, fl, ec = _read(cg, "low", eps + _shift(cg, c), fast)
    extra = 0.0 if cg.mode == "updown" else c
    return max(0.0, (val - fl + g.inf - ec - extra) * (1 - _REL_MARGIN))


def top_loss(cg: Composed) -> float:
    """A loss above every grid point of both sides (delta bounds are constant beyond it)."""
    t = max((cg.up.offset + cg.up.w.size) * cg.h, (cg.low.offset + cg.low.w.size) * cg.h, 0.0)
    return t + cg.eps_slack + hoeffding_t(1e-300, cg.h, cg.K) + 1.0
