"""The Fourier accountant, made certified: a PLD composed on a grid with one-sided errors.

The FFT accountant of Koskela et al. (Koskela et al. 2021, Sec. 2.2; Koskela et al. 2022, Sec. 2.2)
places a PLD on an equidistant grid of step h, composes it with FFTs and reads
off delta(eps) = delta(inf) + E[(1 - e^{eps - S})_+] of the composed loss
S = L_1 + ... + L_K (Koskela et al. 2021, Thm 5, eq. 2.3; Koskela et al. 2022, Thm 5).  Here every
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

   **1a. One composition for both ends**.  ``updown`` rounds every loss x = L/h to
   floor(x) + 1 (``"above"``: up, and one full step up for a loss on the grid), so the down-rounded
   sum is exactly S_up - K h: the lower grid is the upper one moved K steps (same tilted weights,
   log-scale re-based by -lam K h), and one FFT serves both ends.  Losses on the grid (loss 0 of a
   symmetric pair) lose their exactness on the upper side (S_up - S <= K h still holds), so where
   they carry more than 5 % of a round's mass (lattice pairs: rr, krr) both ends are composed.

   **1b. The rounding's own MGF**.  Hoeffding's c is the worst case over the fraction
   f of each loss; the error R = S~ - S of mean-preserving rounding has, given L, the two-point law
   (1 - f) h w.p. f, -f h w.p. 1 - f, whose MGF M_a(f) = e^{-a f} (1 + f (e^a - 1)) (a = theta h)
   has log M concave in f.  Rounds being independent under P, P[R >= t] <= e^{-theta t} prod_rounds
   E_P[M_a(f(L))].  The atoms' P-masses are binned by f (1024 bins, as :func:`discretise` computes
   f, snapped atoms at f = 0) and each bin's M bounded by its maximum over the bin (an end, or the
   mode 1/a - 1/(e^a - 1) inside it); mass that is not rounded (+inf, trimmed atoms count as
   rounded: M >= 1 only adds) enters with M = 1; the log is inflated by 1e-9 relative plus 1e-15 per
   round for the float evaluation (terms of one sign but for the expm1 product, relative error <
   1e-13). t(c) is the least (psi + log 1/c) / theta over 16 thetas in [0.7, 3] x Hoeffding's, the
   larger of both signs, and never above Hoeffding's t.  For fractions spread over [0, 1) the
   exponent is about theta^2 h^2 / 12 instead of / 8: t about 0.8 x Hoeffding's, and
   :mod:`shuffle_lib.core.fourier` takes a step that much coarser.

2. **Exponential tilting.**  The grid stores w_i = m_i e^{lam s_i - logscale}
   (m_i the mass at s_i, max_i w_i = 1).  Tilting commutes with convolution, and
   with lam near the Chernoff-optimal value for the eps of interest the FFT's
   round-off, which is relative to the largest stored value, becomes relative
   to delta itself instead of to 1: this is what makes delta ~ 1e-10 certifiable.
3. **Window.**  After each convolution, the top tail holding at most ``TAU``
   of (untilted) mass (``tau`` <= ``TAU`` of :func:`compose_on_grid`) is sent to +inf for the
   upper bound and dropped for the lower bound.  The bottom tail holding at most ``TAU`` of the
   *tilted* mass is dropped; by Chernoff, mass m at s contributes to the final delta(x) at
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

5. **Masses at +inf, without cancellation**.  A round's P-mass splits into
   a = delta(inf) and the finite rest F (grid, trimmed tails), T = F + a.  The composed
   +inf mass is T_1...T_K - F_1...F_K; the form 1 - (1-a)(1-b) loses everything below
   an ulp of 1 (a = 1e-17, K = 2 gave 0 where the exact value is 2e-17).  Each grid
   carries instead lfin = log(F/T) = log1p(-a/T) <= 0 and ltot = log T (T - 1 summed
   exactly by ``pld._exact_sum``, so ltot is within 2u abs(ltot) + u^2 of its value), and a
   composition adds them: the +inf mass is e^{ltot} (-expm1(lfin)).  Error: log1p(-a/T)
   is within 3u (relative) of log(F/T); a binary tree of additions of numbers of one sign
   adds at most u per level, 2 log2(K) + #components levels; -expm1 is within u and
   passes a relative error eta of its argument on as at most eta (abs(x) e^x / (1 - e^x) <= 1
   for x < 0); e^{ltot} adds u + abs(ltot) u.  In all, the relative error is below
   (2 log2 K + #components + 6) u, under 1e-13 for K <= 1e7 and far inside
   ``REL_MARGIN``.  The trimmed tops compose by a union bound, top_a T_b + top_b T_a,
   rounded up by 4u: an over-estimate, used by the upper end only.  No probability is
   ever subtracted from another.

6. **One FFT per composition** (``method="power"``, the default).  Each
   round's grid is normalised to total 1 (b_c) and folded modulo N onto one window of N
   points [A, A + N) of the composed grid; the spectra are raised to the counts and
   multiplied, and one inverse FFT gives the circular convolution: the window's values
   plus the mass of the linear composition outside it, aliased in.  Each end of the window
   is placed where a Chernoff bound on the stored grids, P[S < A] <= e^{theta A} E[e^{-theta S}]
   and likewise above (each block of 64 points bounded by its worse end), falls to 1e-18
   (tilted, both ends) and to tau / 100 (untilted, the upper end's top): the bound at theta
   is inverted, A = (log 1e-18 - log E[e^{-theta S}]) / theta, and the best A over theta kept
   (theta searched on a log scale to 1 %; any theta gives a valid bound, and the up and down
   roundings of one composition share their thetas), then confirmed at the integer end.  The
   tilted bound 1e-18 is ``_WIN_TAIL``; the bounds at the chosen ends enter the errors below.
   Errors (l1, tilted, relative to the total 1): the tilted
   mass below the window twice (dropped and aliased), above it once (aliased; its untilted
   bound goes to ``top``); the inputs' err as prod (1 + err_c)^{k_c} - 1 (Young);
   rfft's error d_c <= ``_FFT_C`` u log2(N) sqrt(N) l2(b_c) in l2, hence entrywise,
   with every exact spectrum entry <= 1: the product's l2 error is at most
   G sum_c k_c d_c, G = prod (1 + d_c)^{k_c}; the powering's rounding at most
   4u (2K + 2 #components + 8) G per entry; irfft maps spectral l2 error E to l1 error
   <= sqrt(2) E, and adds ``_FFT_C`` u log2(N) sqrt(N) l2(out).  Negative values are
   clipped (the exact ones are >= 0).  The tests check the total against exact
   long-double convolutions.

Cost: one FFT pair of the window's length, plus O(M) per round to discretise, instead of
about 2 log2(K) convolutions (``method="squaring"``, kept for comparison); memory about
``BYTES_PER_POINT`` per point, refused above ``MEMORY_LIMIT`` before allocating.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from scipy import fft as _fft

from shuffle_lib.core import validate as v
from shuffle_lib.core.constants import LOSS_SLACK_ULPS, REL_MARGIN
from shuffle_lib.core.pld import PLD, check_components, loss_slack

_U = 2.0 ** -53
_FFT_C = 10.0             # constant of the FFT round-off bound (see module docstring)
TAU = 1e-16              # mass trimmed per tail per step
_WIN_TAIL = 1e-18            # tilted mass allowed beyond each end of the one-FFT window (point 6)
_SNAP = 16 * _U           # relative distance below which a loss counts as on the grid
UPDOWN_MAX_K = 32         # up/down rounding for K <= this, mean-preserving above
MEMORY_LIMIT = float(os.environ.get("SHUFFLE_LIB_MEMORY_LIMIT", 4e9))
"""Bytes a composition may allocate (default 4 GB; the environment variable SHUFFLE_LIB_MEMORY_LIMIT
sets it at import, or assign ``grid.MEMORY_LIMIT``): above it :func:`check_memory` refuses."""
_READ_BLOCK = 256         # grid points per block of the tail sums (_TopTail, _suffix_sums)
BYTES_PER_POINT = 64      # window, folded input, three half spectra, output and its copy (float64)


class MemoryLimitError(ValueError):
    """A grid whose estimated memory exceeds MEMORY_LIMIT (a ValueError, so callers see one kind of
    refusal; :func:`shuffle_lib.core.fourier.delta_bracket` catches it to stop refining)."""


def check_memory(points: int, what: str) -> int:
    """Refuse (:class:`MemoryLimitError`, a ValueError) a grid of ``points`` points whose estimated
    memory (BYTES_PER_POINT per point), added to what the process already holds
    (:func:`resident_bytes`), exceeds MEMORY_LIMIT, before it is allocated.
    """
    points = v.integer("points", points, lo=1)
    need = BYTES_PER_POINT * float(points)
    held = resident_bytes()
    if need + held > MEMORY_LIMIT:
        raise MemoryLimitError(
            f"{what} needs about {points:.3g} grid points, about {need / 1e9:.3g} GB beside the "
            f"{held / 1e9:.2g} GB the process holds, more than the limit of "
            f"{MEMORY_LIMIT / 1e9:.3g} GB (SHUFFLE_LIB_MEMORY_LIMIT); take a larger accuracy or "
            f"fewer compositions."
        )
    return points


def resident_bytes() -> float:
    """Bytes the process holds in memory now (its resident set, read from /proc/self/statm), or 0
    where that file does not exist: the memory limit bounds what is held plus what a grid adds."""
    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
    except (OSError, IndexError, ValueError):
        return 0.0
    return float(pages) * os.sysconf("SC_PAGE_SIZE")


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
        return inf_mass(self.lfin, self.ltot)


def dot(a: np.ndarray, b: np.ndarray) -> float:
    """sum(a * b) without BLAS: OpenBLAS's threaded dot spins its threads on a shared machine
    (profiled: 2-3x the CPU time of a composition); pairwise summation, error <= log2(n) u."""
    return float(np.sum(a * b))


def _l2(a):
    return math.sqrt(dot(a, a))


def inf_mass(lfin: float, ltot: float) -> float:
    """The mass at +inf, T (1 - exp(lfin)), from the logs :func:`log_masses` returns (point 5)."""
    return math.exp(ltot) * -math.expm1(lfin) if lfin < 0 else 0.0


def log_masses(pld: PLD) -> tuple[float, float]:
    """(lfin, ltot) of one PLD: log1p(-inf/T) and log T, T - 1 summed exactly
    (:attr:`PLD.mass_less_one`) when inf > 0."""
    a = pld.inf_mass
    if a <= 0.0:
        return 0.0, 0.0
    t1 = pld.mass_less_one   # T - 1, correctly rounded
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
    # 'mean' mode: per component (count, P-mass per bin of the rounding fraction, rest)
    fracs: tuple = ()

    def delta_upper(self, eps: float, c: float = 1.0, fast: bool = False) -> float:
        """:func:`delta_upper` on arguments the caller has checked (eps a float, 0 < c <= 1)."""
        return _bound(self, "up", eps, c, fast)

    def delta_lower(self, eps: float, c: float = 1.0, fast: bool = False) -> float:
        """:func:`delta_lower` on arguments the caller has checked (eps a float, 0 < c <= 1)."""
        return _bound(self, "low", eps, c, fast)


def _grid_s(g, h, start=0):
    return (g.offset + np.arange(start, g.w.size)) * h


def _untilted_log(w, logscale, lam, s):
    with np.errstate(divide="ignore"):
        return np.log(w) + logscale - lam * s


def _tilt(w_mass, offset, h, lam):
    """Normalised tilted weights and log-scale for untilted masses on a grid.

    The log and the exponential are taken at the points with mass only (a round's grid is mostly
    empty where its PLD has few atoms over a wide span): the same values, elementwise."""
    nz = np.flatnonzero(w_mass > 0)
    if nz.size == 0:
        s = (offset + np.arange(w_mass.size)) * h
        with np.errstate(divide="ignore"):
            lw = np.log(w_mass) + lam * s
        c = float(lw.max())
        return np.exp(lw - c), c
    lw = np.log(w_mass[nz]) + lam * ((offset + nz) * h)
    c = float(lw.max())
    w = np.zeros(w_mass.size)
    w[nz] = np.exp(lw - c)
    return w, c


def _block_log_sums(w: np.ndarray, size: int, rate: float) -> np.ndarray:
    """log sum_k w_{b size + k} e^{rate k} for each block b of ``size`` consecutive points of w (the
    last block may be short), with abs(rate) size <= 64: no transcendental per point.

    Weights lie in [0, 1]; a block whose sum is below 1e-200 is summed again scaled by its largest
    weight (its products would otherwise be subnormal); -inf for an empty block.
    """
    nfull = w.size // size
    rows = [w[: nfull * size].reshape(nfull, size)]
    if w.size > nfull * size:
        last = np.zeros((1, size))
        last[0, : w.size - nfull * size] = w[nfull * size:]
        rows.append(last)
    f = np.exp(rate * np.arange(size))
    sums = np.concatenate([np.einsum("ij,j->i", r, f) for r in rows])
    with np.errstate(divide="ignore"):
        out = np.log(sums)
        small = np.nonzero(sums < 1e-200)[0]
        if small.size:
            blocks = np.concatenate([r[small[(k0 <= small) & (small < k0 + r.shape[0])] - k0]
                                     for r, k0 in zip(rows, (0, nfull))])
            top = blocks.max(axis=1)
            scaled = np.einsum("ij,j->i", blocks / np.where(top > 0, top, 1.0)[:, None], f)
            out[small] = np.log(scaled) + np.log(top)
    return out


class _TopTail:
    """Untilted masses m_i = w_i e^{logscale - lam s_i} of a grid's top points, summed from the top.

    Blocks of B points from the top: inside one, e^{-lam s_i} is e^{-lam s} of its top point times
    one vector of B factors e^{lam h t} <= e^{64}, so a block's mass is a product of its weights
    with that vector (:func:`_block_log_sums`); the block holding a cut is summed point by point.
    Sums of positive terms: a few ulp relative, as the pointwise cumulative sum it replaces.
    """

    def __init__(self, g: _Grid, h: float, lam: float) -> None:
        self.g, self.h, self.lam = g, h, lam
        self.size = size = int(max(1, min(_READ_BLOCK, 64.0 / max(lam * h, 1e-300))))
        lb = _block_log_sums(g.w[::-1], size, lam * h)
        s0 = (g.offset + g.w.size - 1 - np.arange(lb.size) * size) * h    # each block's top loss
        lb += g.logscale - lam * s0
        self.cum = np.cumsum(np.exp(np.minimum(lb, 700.0)))    # mass of the top b + 1 blocks

    def _points(self, b: int) -> np.ndarray:
        """Cumulative masses through block b, point by point (from the top)."""
        g, size = self.g, self.size
        hi = g.w.size - b * size
        lo = max(hi - size, 0)
        s = (g.offset + np.arange(lo, hi)) * self.h
        lm = _untilted_log(g.w[lo:hi], g.logscale, self.lam, s)
        base = float(self.cum[b - 1]) if b > 0 else 0.0
        return base + np.cumsum(np.exp(np.minimum(lm[::-1], 700.0)))

    def count_within(self, tau: float) -> int:
        """The most top points whose summed mass is <= tau."""
        b = int(np.searchsorted(self.cum, tau, side="right"))
        if b >= self.cum.size:
            return self.g.w.size
        return b * self.size + int(np.searchsorted(self._points(b), tau, side="right"))

    def mass(self, n: int) -> float:
        """The summed mass of the top n >= 1 points."""
        b, r = divmod(n, self.size)
        return float(self.cum[b - 1]) if r == 0 else float(self._points(b)[r - 1])


def _trim(g, h, lam, tau_top, noise=0.0):
    """Trim both tails (module docstring, point 3).

    The top is cut only where the round-off bound's untilted cost, err e^{logscale - lam s},
    is itself below ``tau_top`` (for lam > 0), because that cost is added to ``top``.
    """
    w = g.w
    c_low = np.cumsum(w)
    # bottom: tilted mass up to TAU of the total, or up to a tenth of this step's FFT round-off
    # bound (below that the stored values are round-off noise, and keeping them would let
    # the window grow with every convolution)
    i = min(
        int(np.searchsorted(c_low, max(TAU * c_low[-1], 0.1 * noise), side="right")), w.size - 1
    )
    dropped = float(c_low[i - 1]) if i > 0 else 0.0
    tail = _TopTail(g, h, lam)
    n_top = min(tail.count_within(tau_top), w.size - 1 - i)
    if lam > 0 and g.err > 0 and n_top > 0:
        # the cut's error cost err e^{logscale - lam s} must be <= tau_top, or <= 1e-3 of the
        # error's cost at the tilted peak (where the delta of interest lives)
        s_peak = (g.offset + int(np.argmax(w))) * h
        log_allowed = max(
            math.log(tau_top), math.log(1e-3) + math.log(g.err) + g.logscale - lam * s_peak
        )
        s_b = (g.logscale + math.log(g.err) - log_allowed) / lam  # cost <= allowed above s_b
        # first index with s >= s_b (up to rounding)
        first_ok = max(math.ceil(s_b / h) - g.offset, 0)
        n_top = min(n_top, max(w.size - first_ok - 1, 0))
    top, j = g.top, w.size - n_top
    if n_top > 0:
        top += tail.mass(n_top) + g.err * math.exp(
            min(g.logscale - lam * (g.offset + j) * h, 0.0)
        )
    return _Grid(
        w[i:j].copy(), g.offset + i, g.logscale, g.lfin, g.ltot, min(top, 1.0), g.err + dropped
    )


def discretise(
    pld: PLD,
    h: float,
    rounding: Literal["up", "above", "down", "mean"],
    lam: float = 0.0,
    tau_top: float = TAU,
) -> _Grid:
    """Put one PLD on the grid of step h, rounding 'up', 'down', 'mean' or 'above' (floor + 1),
    tilted by lam.

    Source: Koskela et al. 2021, Sec. 2.2 (the FFT accountant's grid); module docstring, points 1-3.
    """
    v.instance("pld", pld, PLD)
    h = v.real("h", h, 0.0, lo_open=True)
    rounding = v.choice("rounding", rounding, ("up", "above", "down", "mean"))
    lam = v.real("lam", lam, 0.0)
    tau_top = v.real("tau_top", tau_top, 0.0, 1.0, hi_open=True)
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
    elif rounding == "above":   # floor + 1: up, and one step up for losses on the grid
        idx, wts = [np.floor(x) + 1], [p]
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
    return _trim(_Grid(w, lo, logscale, *log_masses(pld), top, 0.0), h, lam, tau_top)


def _convolve(a, b, h, lam, tau_top):
    """Linear convolution of two grids by FFT, with the bookkeeping of tails and errors."""
    n = a.w.size + b.w.size - 1
    nfft = _fft.next_fast_len(n, real=True)
    fa = _fft.rfft(a.w, nfft)
    fb = fa if b is a else _fft.rfft(b.w, nfft)
    w = _fft.irfft(fa * fb, nfft)[:n]
    np.maximum(w, 0.0, out=w)  # exact values are >= 0: clipping only reduces the error
    fft_err = _FFT_C * _U * math.log2(nfft) * math.sqrt(nfft) * _l2(a.w) * _l2(b.w)
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
                    mode: Literal["updown", "mean"], method: Literal["power", "squaring"] = "power",
                    max_points: int = 2 ** 26, tau: float = TAU) -> Composed:
    """Compose [(pld, count), ...] on the grid of step h with tilt lam; returns :class:`Composed`.

    ``method="power"``: one FFT of a window sized from Chernoff bounds, spectra raised to the
    counts (point 6); ``"squaring"``: repeated squaring with a trim after every convolution.

    Source: Koskela et al. 2021, Sec. 2.2, Thm 5 / eq. 2.3; Koskela et al. 2022, Sec. 2.2 (module
    docstring).
    """
    components = check_components(components)
    h = v.real("h", h, 0.0, lo_open=True)
    lam = v.real("lam", lam, 0.0)
    mode = v.choice("mode", mode, ("updown", "mean"))
    method = v.choice("method", method, ("power", "squaring"))
    max_points = v.integer("max_points", max_points, lo=2)
    K = sum(c for _, c in components)
    max_abs = max(float(np.max(np.abs(p.losses), initial=0.0)) for p, _ in components)
    # per round: snapping moves a loss by <= 16 u max(|L|, h); the loss itself, log P - log Q in
    # floating point, is off by a few ulp of max(1, |L| + max(-log P)) (pld.loss_slack's bound):
    # p = [1/16, ...], q = [1/16 + 2^-56, ...] has a true loss 1.1e-16 that rounds to 0, and with
    # the snapping term alone two rounds read delta(0) = 0 where the exact value is 5.2e-17
    # (loss_slack is at least 64 ulp even for a component without finite losses)
    slack = max([loss_slack(p) for p, _ in components] + [LOSS_SLACK_ULPS * 2.0 ** -52])
    eps_slack = K * (64 * _U * max(max_abs, h) + slack)

    tau = v.real("tau", tau, 0.0, TAU, lo_open=True)
    tau_top = tau / K  # later cuts: their mass is counted again by every later round
    # (the first cut, of each input PLD's top atoms, keeps TAU: callers rely on a top tail
    # of mass <= TAU going to +inf for the upper bound and being dropped for the lower)

    span = sum(float(p.losses[-1] - p.losses[0]) if p.losses.size else 0.0 for p, _ in components)
    check_memory(int(span / h) + 2, f"one round's grid of step h={h:.3g}")

    thetas: dict = {}     # the window's Chernoff thetas, shared by the up and down roundings

    def run(rounding):
        gs = [(discretise(p, h, rounding, lam, tau), c) for p, c in components]
        if method == "power":
            return _power_compose(gs, h, lam, max_points, tau, thetas)
        parts = [_self_compose(g, c, h, lam, tau_top) for g, c in gs]
        out = parts[0]
        for g in parts[1:]:
            out = _convolve(out, g, h, lam, tau_top)
        return out

    if mode == "updown":
        if all(_on_grid_share(p, h) <= 0.05 for p, _ in components):
            # rounding each loss to floor(x) + 1 (up, strictly for losses on the grid) makes S_down
            # = S_up - K h exactly: the down grid is the up grid moved K steps, one composition
            # (point
            # 1a)
            up = run("above")
            return Composed(up, _moved(up, -K, h, lam), h, lam, mode, K, eps_slack)
        if all(_on_grid_share(p, h) == 1.0 for p, _ in components):
            # every loss on the grid (a lattice pair on its lattice): both roundings are the
            # identity, so the two grids are one
            up = run("up")
            return Composed(up, up, h, lam, mode, K, eps_slack)
        return Composed(run("up"), run("down"), h, lam, mode, K, eps_slack)
    g = run("mean")
    return Composed(
        g, g, h, lam, mode, K, eps_slack, fracs=tuple((c, *_frac_hist(p, h)) for p, c in components)
    )


def _on_grid_share(pld, h):
    """The share of the finite P-mass whose loss counts as on the grid (snapped, as in
    :func:`discretise`)."""
    x = pld.losses / h
    on = np.abs(x - np.rint(x)) <= _SNAP * np.maximum(np.abs(x), 1.0)
    tot = float(np.sum(pld.probs))
    return float(np.sum(pld.probs[on])) / tot if tot > 0 else 0.0


def lattice_step(components: Sequence[tuple[PLD, int]], max_divisor: int = 8) -> float | None:
    """The largest step g with every finite loss of every round on the grid k g (as
    :func:`discretise` snaps: within 16 u max(abs(x), 1) of an integer x = L / g), or None.

    On such a grid both roundings are the identity (S_up = S_down = S up to ``eps_slack``), so
    up/down composition is exact at any number of rounds: no Hoeffding shift, no rounding width;
    what remains is the FFT's round-off (point 4) and the trimmed tails (point 3).  The candidates
    are m / j, m the smallest non-zero abs(loss), j = 1 ... ``max_divisor`` (losses 0.3 and 0.5:
    g = 0.1).  Randomised response and any pair whose likelihood ratios are powers of one number
    are lattice pairs (the 3-outcome pair (0.5, 0.3, 0.2) / (0.2, 0.3, 0.5): g = log 2.5).
    """
    components = check_components(components)
    # the smallest non-zero abs(loss): each PLD's losses are sorted, so it sits beside its zeros
    near = []
    for p, _ in components:
        i, j = np.searchsorted(p.losses, 0.0, "left"), np.searchsorted(p.losses, 0.0, "right")
        near += [abs(float(p.losses[i - 1]))] if i > 0 else []
        near += [abs(float(p.losses[j]))] if j < p.losses.size else []
    if not near:
        return None
    m = min(near)
    losses = np.concatenate([p.losses for p, _ in components])
    # a few losses first: a pair off every candidate lattice (most pairs) is rejected without a
    # pass over all its atoms; the full test below decides for the rest
    head = losses[: 64]
    for j in range(1, max_divisor + 1):
        x = head / (m / j)
        if not np.all(np.abs(x - np.rint(x)) <= _SNAP * np.maximum(np.abs(x), 1.0)):
            continue
        x = losses / (m / j)
        if np.all(np.abs(x - np.rint(x)) <= _SNAP * np.maximum(np.abs(x), 1.0)):
            return m / j
    return None


def _moved(g, k, h, lam):
    """The grid g with every mass moved k steps (tilted weights kept, log-scale re-based)."""
    return _Grid(g.w, g.offset + k, g.logscale + lam * k * h, g.lfin, g.ltot, g.top, g.err)


_FRAC_BINS = 1024


def _frac_hist(pld, h):
    """P-mass of the finite atoms per bin of their rounding fraction f = x - floor(x), x = L / h (as
    :func:`discretise` computes it: snapped atoms have f = 0), and the rest max(1, T) - finite mass
    (never rounded; T the total mass)."""
    x = pld.losses / h
    near = np.rint(x)
    x = np.where(np.abs(x - near) <= _SNAP * np.maximum(np.abs(x), 1.0), near, x)
    f = x - np.floor(x)
    b = np.minimum((f * _FRAC_BINS).astype(np.int64), _FRAC_BINS - 1)
    m = np.bincount(b, weights=pld.probs, minlength=_FRAC_BINS)
    # the rest: +inf mass and whatever makes the total max(1, T)
    fin = pld.finite_mass
    return m, max(0.0, max(1.0, fin + pld.inf_mass) - fin) * (1 + 4 * _U)


def _log_mgf_rounding(fracs, a):
    """A bound on log E[e^{a R / h}] for R = S~ - S, the mean-preserving rounding error of the whole
    composition (a = theta h, either sign): point 1b of the module docstring."""
    edges = np.arange(_FRAC_BINS + 1) / _FRAC_BINS
    lo, hi = edges[:-1], edges[1:]
    if a < 0:             # R's law at -theta is its law at theta with f -> 1 - f
        a, lo, hi = -a, 1.0 - hi, 1.0 - lo
    em1 = math.expm1(a)
    mode = 1.0 / a - 1.0 / em1               # the maximiser of the concave log M(f)
    def log_m(f):
        return -a * f + np.log1p(f * em1)
    inside = (lo <= mode) & (mode <= hi)
    lm = np.maximum(log_m(lo), log_m(hi))
    lm = np.where(inside, max(0.0, -a * mode + math.log1p(mode * em1)), lm)
    mx = np.exp(lm)
    total = 0.0
    for c, m, rest in fracs:
        total += c * math.log(float(np.sum(m * mx)) + rest)
    return total * (1 + 1e-9) + 1e-15 * sum(c for c, *_ in fracs)


def rounding_gain(components: Sequence[tuple[PLD, int]], h: float) -> float:
    """Hoeffding's t over the rounding-MGF t (point 1b) at c = 1e-15 on the grid of step h: >= 1,
    the factor by which 'mean' mode's step can grow for the same eps shift.

    Source: Hoeffding (1963) and the exact conditional MGF of mean-preserving rounding (module
    docstring).
    """
    K = sum(c for _, c in components)
    cg = Composed(
        None,
        None,
        h,
        0.0,
        "mean",
        K,
        0.0,
        fracs=tuple((c, *_frac_hist(p, h)) for p, c in components),
    )
    return hoeffding_t(1e-15, h, K) / _rounding_t(cg, 1e-15)


def _rounding_t(cg, c):
    """The smallest t on a grid of thetas with P[abs(S - S~) >= t] <= c one-sidedly (point 1b)."""
    key = ("t", c)
    if key not in cg.cache:
        t_h = hoeffding_t(c, cg.h, cg.K)
        best = t_h
        if cg.fracs:
            log_c = math.log(1.0 / c)
            a_h = 4.0 * t_h / (cg.K * cg.h)            # Hoeffding's optimal theta h
            for a in a_h * np.geomspace(0.7, 3.0, 16):
                psi = max(_log_mgf_rounding(cg.fracs, a), _log_mgf_rounding(cg.fracs, -a))
                best = min(best, cg.h * (psi + log_c) / a)
        cg.cache[key] = best
    return cg.cache[key]


def _blocks(w, offset, h, size=64):
    """Per block of ``size`` grid points: (log of its weight, its lowest loss, its highest loss)."""
    m = w.size
    pad = (-m) % size
    sums = np.concatenate([w, np.zeros(pad)]).reshape(-1, size).sum(axis=1)
    lo = (offset + np.arange(0, m, size)) * h
    hi = np.minimum(lo + (size - 1) * h, (offset + m - 1) * h)
    with np.errstate(divide="ignore"):
        return np.log(sums), lo, hi


def _log_mgf_blocks(blocks, r):
    """log of a bound on E[e^{r S}] over the blocks' weights: each block's e^{r s} bounded by its
    larger end value (hi for r >= 0, lo below); plus 1e-9 for the float rounding of the sums,
    generously."""
    tot = 1e-9
    for (lw, lo, hi), c in blocks:
        e = np.multiply(hi if r >= 0 else lo, r)
        e += lw
        mx = float(e.max())
        e -= mx
        tot += c * (mx + math.log(float(np.exp(e, out=e).sum())))
    return tot


def _chernoff_edge(blocks, log_tail, upper, rho=0.0, theta_max=400.0, theta=None):
    """(x, theta): a loss x beyond which (above if ``upper``, else below) the weight of the
    composition, each point's weight multiplied by e^{rho s}, is at most e^{log_tail} by Chernoff's
    bound at theta: log W[S >= x] <= M(theta) - theta x, M(r) = log E[e^{(r + rho) S}]
    (:func:`_log_mgf_blocks`), so x = (M(theta) - log_tail) / theta, least over theta; below,
    log W[S < x] <= M(-theta) + theta x, x = (log_tail - M(-theta)) / theta, largest over theta.
    Any theta gives a valid edge; the search only tightens it, and a ``theta`` given (the one found
    for a grid that differs only by its rounding) is taken as it is.

    blocks: [(block arrays of one grid, count), ...] (:func:`_blocks`).
    """
    sgn = 1.0 if upper else -1.0

    def edge(t):     # sgn x at theta = e^t: least is best on both sides
        theta = math.exp(t)
        return (_log_mgf_blocks(blocks, sgn * theta + rho) - log_tail) / theta

    if theta is not None:
        return sgn * edge(math.log(theta)), theta
    from scipy.optimize import minimize_scalar
    # on a log scale: theta to 1 % (the edge is flat at its optimum, to second order)
    res = minimize_scalar(edge, bounds=(math.log(1e-6), math.log(theta_max)), method="bounded",
                          options={"xatol": 1e-2})
    return sgn * float(res.fun), math.exp(float(res.x))


def _log_tail_at(blocks, x, theta, upper, rho=0.0):
    """log of Chernoff's bound at theta on the weight beyond x (:func:`_chernoff_edge`)."""
    sgn = 1.0 if upper else -1.0
    return _log_mgf_blocks(blocks, sgn * theta + rho) - sgn * theta * x


def _power_compose(gs, h, lam, max_points, tau=TAU, thetas=None):
    """Compose [(grid, count), ...] with one FFT: point 6 of the module docstring.  ``thetas``: a
    dict of the window's Chernoff thetas, filled on the first call and read by later ones (the up
    and down roundings of one composition)."""
    norm = []
    for g, c in gs:
        tot = float(np.sum(g.w))
        norm.append((g.w / tot, g.offset, g.logscale + math.log(tot), g.err / tot, c))
    # the composed tilted law's spread (grid units), for the blocks' size
    means = [dot(b, np.arange(b.size)) for b, *_ in norm]
    var = sum(c * dot(b, (np.arange(b.size) - m) ** 2) for (b, o, _, _, c), m in zip(norm, means))
    lo_all = sum(c * o for b, o, _, _, c in norm)
    hi_all = sum(c * (o + b.size - 1) for b, o, _, _, c in norm)
    sd = math.sqrt(max(var, 1.0))
    # blocks bound e^{theta s} by their larger end: K theta (size h) must stay small for the bounds
    # to be useful (theta ~ 10 / sd; 64 points at K = 1e6 gave bounds e^4000 too loose), so size <=
    # sd / (10 K)
    size = int(min(64, max(1, sd / (10 * sum(c for *_, c in norm)))))
    blocks = [(_blocks(b, o, h, size), c) for b, o, _, _, c in norm]
    ls_sum = sum(c * ls for _, _, ls, _, c in norm)
    # each end where a Chernoff bound on the stored grids puts the composition's weight beyond it
    # below the allowance (point 6): below a, tilted <= _WIN_TAIL; above e, tilted <= _WIN_TAIL
    # and untilted <= tau / 100; each end solved for directly (the best x over theta of the bound's
    # inverse), then confirmed at the integer end with the theta found
    log_win, log_top = math.log(_WIN_TAIL), math.log(tau * 1e-2)
    known = {} if thetas is None else thetas
    x_lo, th_lo = _chernoff_edge(blocks, log_win, False, theta=known.get("lo"))
    x_hi, th_hi = _chernoff_edge(blocks, log_win, True, theta=known.get("hi"))
    x_u, th_u = _chernoff_edge(blocks, log_top - ls_sum, True, -lam, theta=known.get("u"))
    known.update(lo=th_lo, hi=th_hi, u=th_u)
    a = max(lo_all, min(math.floor(x_lo / h), hi_all) if math.isfinite(x_lo) else lo_all)
    top_x = max(x_hi, x_u)
    e = min(hi_all, max(math.ceil(top_x / h) - 1, lo_all) if math.isfinite(top_x) else hi_all)
    step = 1
    while a > lo_all and _log_tail_at(blocks, a * h, th_lo, False) > log_win:
        a, step = max(a - step, lo_all), 2 * step      # float rounding at the edge: step out
    step = 1
    while e < hi_all and (
        _log_tail_at(blocks, (e + 1) * h, th_hi, True) > log_win
        or ls_sum + _log_tail_at(blocks, (e + 1) * h, th_u, True, -lam) > log_top
    ):
        e, step = min(e + step, hi_all), 2 * step
    a, e = min(a, e), max(a, e)
    b_lo = 0.0 if a <= lo_all else math.exp(_log_tail_at(blocks, a * h, th_lo, False))
    b_hi = 0.0 if e >= hi_all else math.exp(_log_tail_at(blocks, (e + 1) * h, th_hi, True))
    u_hi = (
        0.0
        if e >= hi_all
        else math.exp(min(ls_sum + _log_tail_at(blocks, (e + 1) * h, th_u, True, -lam), 0.0))
    )
    n = _fft.next_fast_len(e - a + 1, real=True)
    check_memory(n + sum(b.size for b, *_ in norm), f"the composition on a grid of step h={h:.3g}")
    if n > max_points:
        raise ValueError(
            f"the composition needs {n} grid points at h={h:g}, more than max_points={max_points}."
        )
    spec, fft_l2, log_g, log_in, k_tot = None, 0.0, 0.0, 0.0, 0
    for b, o, _, err, c in norm:
        fb = _fft.rfft(np.bincount((np.arange(b.size) + o) % n, weights=b, minlength=n), n)
        d2 = _FFT_C * _U * math.log2(n) * math.sqrt(n) * _l2(b)  # l2 of rfft's error
        fft_l2 += c * d2
        log_g += c * (1.01 * d2 + 2 * b.size * _U)      # |spectrum + error| <= 1 + this, entrywise
        log_in += c * math.log1p(err + 2 * b.size * _U)
        k_tot += c
        p = _cpow(fb, c)
        spec = p if spec is None else spec * p
    out = _fft.irfft(spec, n)
    # window position j holds grid index a + j, i.e. residue (a + j) mod n of the circular result
    r, m_out = a % n, e - a + 1
    out = out[r: r + m_out] if r + m_out <= n else np.concatenate((out[r:], out[: r + m_out - n]))
    np.maximum(out, 0.0, out=out)                  # exact values are >= 0: clipping only helps
    g_ = math.exp(log_g)
    fft_err = math.sqrt(2.0) * g_ * (
        fft_l2 + math.sqrt(n / 2 + 1) * 4 * _U * (2 * k_tot + 2 * len(norm) + 8)
    ) + _FFT_C * _U * math.log2(n) * math.sqrt(n) * _l2(out)
    err_in = math.expm1(log_in)
    err = fft_err + 2.0 * err_in + 2.0 * b_lo + b_hi
    m = float(out.max())
    if not m > 0.0:
        raise ValueError(
            "the composition left no mass on its window (h too coarse or lam too large)."
        )
    lt = sum(c * g.ltot for g, c in gs)
    top = sum(c * g.top for g, c in gs) * math.exp(max(lt, 0.0)) * (1 + 4 * _U) + u_hi
    g = _Grid(
        out / m, a, ls_sum + math.log(m), sum(c * g.lfin for g, c in gs), lt, min(top, 1.0), err / m
    )
    return _trim(g, h, lam, tau / k_tot, fft_err / m)


def _cpow(z, k):
    """z**k elementwise by binary powering (relative error below 4u per multiplication level)."""
    out, base = None, z
    while k:
        if k & 1:
            if out is None:
                out = base.copy()
            else:
                out *= base
        k >>= 1
        if k:
            base = base * base if base is z else np.multiply(base, base, out=base)
    return out


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
    big = (
        abs(g.logscale)
        + lam * float(np.max(np.abs(s), initial=0.0))
        + math.log2(max(g.w.size, 2))
        + 8
    )
    err_cost = float(g.err) * math.exp(min(g.logscale - lam * x, 700.0))
    return val, big * _U * val, err_cost


def _suffix_sums(cg, side):
    """Cached block tail sums for fast reads over s >= -1: (start, block size B, log sum_{i>=j} m_i
    and log sum_{i>=j} m_i e^{-s_i} at every block start j).

    In logs (at losses in the thousands e^{-s} underflows, and a read of 0 would steer the eps
    search of 10^6 rounds to a lower end of 0), but with no transcendental per grid point: m_i =
    e^{logscale - lam s_i} w_i, and inside a block of B points e^{-lam (s_i - s_j)} is one vector
    of B factors, so each block's sum is a product with it (:func:`_block_log_sums`, (lam + 1) h B
    <= 64); the blocks' logs are then summed from the top.  A read adds the partial block in logs.
    """
    if side not in cg.cache:
        g, h, lam = (cg.up if side == "up" else cg.low), cg.h, cg.lam
        start = min(max(math.ceil(-1.0 / h) - g.offset, 0), g.w.size)
        size = int(max(1, min(_READ_BLOCK, 64.0 / ((lam + 1.0) * h))))
        w = g.w[start:]
        s0 = (g.offset + start + np.arange(-(-w.size // size)) * size) * h   # blocks' first losses
        l0 = _block_log_sums(w, size, -lam * h) + g.logscale - lam * s0
        l1 = _block_log_sums(w, size, -(lam + 1.0) * h) + g.logscale - (lam + 1.0) * s0
        with np.errstate(invalid="ignore"):
            # logaddexp(-inf, -inf) is -inf, as wanted
            lt0 = np.logaddexp.accumulate(l0[::-1])[::-1]
            lt1 = np.logaddexp.accumulate(l1[::-1])[::-1]
        cg.cache[side] = (start, size, lt0, lt1)
    return cg.cache[side]


def _fast_grid_delta(cg, side, x):
    """Approximate sum_i m_i (1 - e^{x - s_i})_+ (x >= -1) in O(block): steers, certifies
    nothing."""
    g, h = (cg.up if side == "up" else cg.low), cg.h
    start, size, lt0, lt1 = _suffix_sums(cg, side)
    # first index j >= start with s_j > x (the grid's own products, as _grid_delta compares them)
    j = min(max(start, math.floor(x / h - g.offset) + 1), g.w.size)
    while j > start and (g.offset + j - 1) * h > x:
        j -= 1
    while j < g.w.size and (g.offset + j) * h <= x:
        j += 1
    if j >= g.w.size:
        return 0.0
    b = (j - start) // size
    # the block's log masses, and those times e^{-s}, computed once per block (the same values as
    # computed from j on: elementwise)
    seen = cg.cache.setdefault(("block", side), {})
    if b not in seen:
        lo, end = start + b * size, min(start + (b + 1) * size, g.w.size)
        s = (g.offset + np.arange(lo, end)) * h
        with np.errstate(divide="ignore"):
            lm = np.log(g.w[lo:end]) + g.logscale - cg.lam * s
        seen[b] = (lm, lm - s)
    lm0, lm1 = seen[b]
    a0 = np.logaddexp.reduce(lm0[j - start - b * size:])
    a1 = np.logaddexp.reduce(lm1[j - start - b * size:])
    if b + 1 < lt0.size:
        a0, a1 = np.logaddexp(a0, lt0[b + 1]), np.logaddexp(a1, lt1[b + 1])
    a0, a1 = float(a0), float(a1)
    if not math.isfinite(a0) or not math.isfinite(a1):
        return 0.0
    return math.exp(min(a0, 700.0)) * -math.expm1(min(x + a1 - a0, 0.0))


def hoeffding_t(c: float, h: float, K: int) -> float:
    """eps shift t with P[S - S~ >= t] <= c for mean-preserving rounding (point 1).

    Source: Hoeffding's inequality for mean-preserving rounding (Gopi et al. 2021; module
    docstring).
    """
    c = v.real("c", c, 0.0, 1.0, lo_open=True)
    h = v.real("h", h, 0.0, lo_open=True)
    K = v.integer("K", K, lo=1)
    return h * math.sqrt(K * math.log(1.0 / c) / 2.0)


def _shift(cg, c):
    return cg.eps_slack + (0.0 if cg.mode == "updown" else _rounding_t(cg, c))


def _read(cg, side, x, fast):
    g = cg.up if side == "up" else cg.low
    if fast:
        err_cost = float(g.err) * math.exp(min(g.logscale - cg.lam * x, 700.0))
        return _fast_grid_delta(cg, side, x), 0.0, err_cost
    return _grid_delta(g, cg.h, cg.lam, x)


def _bound(cg: Composed, side: str, eps: float, c: float, fast: bool) -> float:
    """The certified upper (``side="up"``) or lower (``"low"``) bound on delta_{P/Q}(eps), on
    checked arguments: the path the searches of :mod:`shuffle_lib.core.fourier` call in their
    loops, through :meth:`Composed.delta_upper` / :meth:`Composed.delta_lower`."""
    g = cg.up if side == "up" else cg.low
    sign = 1.0 if side == "up" else -1.0
    val, fl, ec = _read(cg, side, eps - sign * _shift(cg, c), fast)
    extra = 0.0 if cg.mode == "updown" else c
    if side == "up":
        return min(1.0, (val + fl + g.inf + g.top + ec + extra) * (1 + REL_MARGIN))
    return max(0.0, (val - fl + g.inf - ec - extra) * (1 - REL_MARGIN))


def _checked(cg: Composed, eps: float, c: float) -> tuple[float, float]:
    v.instance("cg", cg, Composed)
    return v.real("eps", eps, allow_inf=True), v.real("c", c, 0.0, 1.0, lo_open=True)


def delta_upper(cg: Composed, eps: float, c: float = 1.0, fast: bool = False) -> float:
    """Certified upper bound on delta_{P/Q}(eps); c is the Hoeffding level in 'mean' mode.

    ``fast=True`` reads the tail sums from cached suffix sums: approximate, for steering only.
    Arguments are checked here, once; loops call :meth:`Composed.delta_upper`.

    Source: Koskela et al. 2021, Thm 5, eq. 2.3 on the grid, errors on the safe side (module
    docstring).
    """
    return _bound(cg, "up", *_checked(cg, eps, c), fast)


def delta_lower(cg: Composed, eps: float, c: float = 1.0, fast: bool = False) -> float:
    """Certified lower bound on delta_{P/Q}(eps) (``fast``: approximate, as in delta_upper).

    Source: Koskela et al. 2021, Thm 5, eq. 2.3 on the grid, errors on the safe side (module
    docstring).
    """
    return _bound(cg, "low", *_checked(cg, eps, c), fast)


def top_loss(cg: Composed) -> float:
    """A loss above every grid point of both sides (delta bounds are constant beyond it)."""
    v.instance("cg", cg, Composed)
    t = max((cg.up.offset + cg.up.w.size) * cg.h, (cg.low.offset + cg.low.w.size) * cg.h, 0.0)
    return t + cg.eps_slack + hoeffding_t(1e-300, cg.h, cg.K) + 1.0
