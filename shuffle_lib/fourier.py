"""The Fourier accountant with certified brackets for delta(eps) and eps(delta).

The FFT accountant of Koskela et al. (seed 000 Sec. 2.2; seed 001 Sec. 2.2)
places a PLD on an equidistant grid of step h, composes it with FFTs and reads
off delta.  Here every approximation is made on one side, so that the result is
a *bracket* [lower, upper] that contains the tight value of the composition
(seed 000 Thm 5, eq. 2.3; seed 001 Thm 5):

1. **Grid rounding.**  delta(eps) = inf-mass + E[(1 - e^{eps - S})_+] for the
   composed loss S = L_1 + ... + L_K, and (1 - e^{eps - s})_+ is
   non-decreasing in s.  So
   * ``updown`` (K small): rounding every loss up to the grid gives S_up >= S,
     hence an upper bound; rounding down gives a lower bound.
   * ``mean`` (K large): each loss is split between its two neighbouring grid
     points with the mass that keeps its mean (Gopi et al. 2021).  The rounded
     sum S~ differs from S by a sum of K independent, zero-mean increments, each
     in an interval of length h, so Hoeffding gives P[S - S~ >= t] <= c for
     t = h sqrt(K log(1/c) / 2), and with f_eps(s) = (1 - e^{eps - s})_+ in [0, 1]:
     delta_S~(eps + t) - c <= delta_S(eps) <= delta_S~(eps - t) + c.
     Every c gives a valid bracket; the best of a ladder of c is returned.
2. **Window.**  After each convolution the tails holding at most ``_TAU`` of
   mass are trimmed: the top tail is sent to +inf for the upper bound and
   dropped (to -inf) for the lower bound; the bottom tail is piled onto the
   lowest kept grid point (a rounding up, valid for the upper bound) and its
   mass, which can add at most that much to delta, is subtracted from the lower
   bound.  Convolutions are linear (zero-padded), so nothing wraps around.
3. **Floating point.**  An l1 bound on the FFT round-off is carried through
   every convolution (a Higham-type bound ``_FFT_C u log2(N) sqrt(N) |a|_2 |b|_2``
   with a generous constant, checked in the tests against exact convolution)
   and added to / subtracted from the two sides; a relative margin of 1e-12
   covers the remaining double-precision rounding (products of inf-masses,
   sums), and eps brackets come from bisection on the certified delta curves.

The grid step h follows from ``accuracy`` (the target half-width of the bracket
in eps) and K, and is coarsened if the composed support would need more than
``max_points`` grid points; the step used is reported.  Cost: O(M log M) per
convolution and about 2 log2(K) convolutions, M the number of grid points.
"""

import math
from dataclasses import dataclass

import numpy as np
from scipy import fft as _fft

from . import _validate as v
from .pld import PLD

_U = 2.0 ** -53
_FFT_C = 10.0            # constant of the FFT round-off bound (see module docstring)
_REL_MARGIN = 1e-12      # covers the remaining double rounding (inf-mass products, sums)
_TAU = 1e-16             # mass trimmed per tail per step
_C_LADDER = 10.0 ** -np.arange(3.0, 41.0)  # candidate Hoeffding failure probabilities
_UPDOWN_MAX_K = 32       # up/down rounding for K <= this, mean-preserving above
DEFAULT_ACCURACY = 2e-4  # target half-width of the bracket in eps
DEFAULT_MAX_POINTS = 2 ** 22


@dataclass(frozen=True)
class Bracket:
    """A certified interval [lower, upper] for a tight DP parameter."""

    lower: float
    upper: float


@dataclass
class _Grid:
    w: np.ndarray     # masses at losses (offset + i) * h
    offset: int
    inf: float        # exact mass at +inf
    top: float        # trimmed above: +inf for the upper bound, dropped for the lower
    bottom: float     # bound on mass piled at the bottom edge (subtracted from the lower)
    err: float        # l1 bound on the floating-point error in w


@dataclass(frozen=True)
class _Composed:
    """One direction, composed: the grids to read the two bounds from."""

    up: _Grid
    low: _Grid
    h: float
    mode: str
    K: int
    eps_slack: float  # eps shift covering loss rounding in the input (float)


def _trim_atoms(losses, probs):
    """Indices [i, j) of atoms to keep; masses trimmed below and above."""
    c_low = np.cumsum(probs)
    c_top = np.cumsum(probs[::-1])
    i = int(np.searchsorted(c_low, _TAU, side="right"))
    j = probs.size - int(np.searchsorted(c_top, _TAU, side="right"))
    if i >= j:  # everything is tail: keep it all
        return 0, probs.size
    return i, j


def _support_width(pld, count):
    """A Bernstein-type width of the support of `count` composed copies of `pld`."""
    i, j = _trim_atoms(pld.losses, pld.probs)
    s, p = pld.losses[i:j], pld.probs[i:j]
    if s.size == 0:
        return 0.0
    mass = p.sum()
    mu = float(np.dot(s, p) / mass)
    var = float(np.dot((s - mu) ** 2, p) / mass)
    b = float(max(s[-1] - mu, mu - s[0]))
    ell = math.log(2.0 / _TAU)
    t = b * ell / 3.0 + math.sqrt((b * ell / 3.0) ** 2 + 2.0 * count * var * ell)
    return min(count * (s[-1] - s[0]), 2.0 * t) + 2.0 * b


def _discretise(pld, h, rounding):
    """Put one PLD on the grid of step h, rounding 'up', 'down' or 'mean'."""
    i, j = _trim_atoms(pld.losses, pld.probs)
    s, p = pld.losses[i:j], pld.probs[i:j]
    bottom = float(pld.probs[:i].sum())
    top = float(pld.probs[j:].sum())
    x = s / h
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
    w = np.zeros(hi - lo + 1)
    for a, b in zip(idx, wts):
        w += np.bincount((a - lo).astype(np.int64), weights=b, minlength=w.size)
    w[0] += bottom  # bottom tail rounded up onto the lowest grid point
    return _Grid(w, lo, pld.inf_mass, top, bottom, 0.0)


def _trim(g):
    """Trim tails of mass <= _TAU (see module docstring, point 2)."""
    c_low = np.cumsum(g.w)
    i = int(np.searchsorted(c_low, _TAU, side="right"))
    c_top = np.cumsum(g.w[::-1])
    n_top = int(np.searchsorted(c_top, _TAU, side="right"))
    j = g.w.size - n_top
    if i >= j:
        return g
    w = g.w[i:j].copy()
    low_mass = float(c_low[i - 1]) if i > 0 else 0.0
    top_mass = float(c_top[n_top - 1]) if n_top > 0 else 0.0
    w[0] += low_mass
    return _Grid(w, g.offset + i, g.inf, g.top + top_mass, g.bottom + low_mass, g.err)


def _convolve(a, b):
    """Linear convolution of two grids by FFT, with the bookkeeping of the tails."""
    n = a.w.size + b.w.size - 1
    nfft = _fft.next_fast_len(n, real=True)
    w = _fft.irfft(_fft.rfft(a.w, nfft) * _fft.rfft(b.w, nfft), nfft)[:n]
    np.maximum(w, 0.0, out=w)  # the exact values are >= 0: clipping only reduces the error
    ma, mb = a.w.sum(), b.w.sum()
    fft_err = _FFT_C * _U * math.log2(nfft) * math.sqrt(nfft) * np.linalg.norm(a.w) * np.linalg.norm(b.w)
    err = a.err * mb + b.err * ma + a.err * b.err + fft_err
    inf = 1.0 - (1.0 - a.inf) * (1.0 - b.inf)
    inf_up = 1.0 - (1.0 - a.inf - a.top) * (1.0 - b.inf - b.top)
    top = max(inf_up - inf, 0.0)
    return _trim(_Grid(w, a.offset + b.offset, inf, top, a.bottom + b.bottom, err))


def _self_compose(g, k):
    result, base = None, g
    while k:
        if k & 1:
            result = base if result is None else _convolve(result, base)
        k >>= 1
        if k:
            base = _convolve(base, base)
    return result


def _check_plds(components):
    if isinstance(components, PLD):
        components = [(components, 1)]
    out = []
    for item in components:
        pld, count = item
        if not isinstance(pld, PLD):
            raise ValueError(f"components must be PLDs with counts, got {type(pld).__name__}.")
        out.append((pld, v.integer("compositions", count, lo=1, hi=10 ** 7)))
    if not out:
        raise ValueError("components must hold at least one (PLD, count) pair.")
    return out


def compose(components, accuracy=DEFAULT_ACCURACY, h=None, max_points=DEFAULT_MAX_POINTS):
    """Compose [(pld, count), ...] (or one PLD) on a grid; the object the readers use.

    ``accuracy``: target half-width of the eps bracket; ``h``: grid step, overriding
    ``accuracy``; ``max_points``: cap on grid points (h is coarsened to meet it).
    """
    components = _check_plds(components)
    accuracy = v.real("accuracy", accuracy, 0.0, 1.0, lo_open=True)
    max_points = v.integer("max_points", max_points, lo=64, hi=2 ** 27)
    K = sum(c for _, c in components)
    mode = "updown" if K <= _UPDOWN_MAX_K else "mean"
    width = sum(_support_width(p, c) for p, c in components)
    if h is None:
        h = 2 * accuracy / K if mode == "updown" else accuracy / math.sqrt(K * math.log(1e15) / 2)
        h = max(h, width / max_points)
    else:
        h = v.real("h", h, 0.0, 1.0, lo_open=True)
        if width / h > 4 * max_points:
            raise ValueError(f"h={h:g} is too small: the composed support needs {width / h:.3g} grid points, "
                             f"more than 4*max_points={4 * max_points}; take h >= {width / (4 * max_points):.3g}.")
    max_abs = max(float(np.max(np.abs(p.losses), initial=0.0)) for p, _ in components)
    eps_slack = K * 8 * _U * max(max_abs, h)

    def run(rounding):
        parts = [_self_compose(_discretise(p, h, rounding), c) for p, c in components]
        out = parts[0]
        for g in parts[1:]:
            out = _convolve(out, g)
        return out

    if mode == "updown":
        return _Composed(run("up"), run("down"), h, mode, K, eps_slack)
    g = run("mean")
    return _Composed(g, g, h, mode, K, eps_slack)


def _grid_delta(g, h, x):
    """sum_i w_i (1 - e^{x - s_i})_+ over s_i > x, evaluated directly (x scalar)."""
    j = max(0, math.floor(x / h - g.offset) + 1)
    while j > 0 and (g.offset + j - 1) * h > x:
        j -= 1
    while j < g.w.size and (g.offset + j) * h <= x:
        j += 1
    s = (g.offset + np.arange(j, g.w.size)) * h
    val = float(np.sum(g.w[j:] * -np.expm1(x - s)))
    return val, (math.log2(max(g.w.size, 2)) + 4) * _U * val


def _hoeffding_t(c, h, K):
    return h * math.sqrt(K * math.log(1.0 / c) / 2.0)


def _upper(cg, eps, c):
    g = cg.up
    shift = cg.eps_slack + (0.0 if cg.mode == "updown" else _hoeffding_t(c, cg.h, cg.K))
    val, fl = _grid_delta(g, cg.h, eps - shift)
    extra = 0.0 if cg.mode == "updown" else c
    return min(1.0, (val + fl + g.inf + g.top + g.err + extra) * (1 + _REL_MARGIN))


def _lower(cg, eps, c):
    g = cg.low
    shift = cg.eps_slack + (0.0 if cg.mode == "updown" else _hoeffding_t(c, cg.h, cg.K))
    val, fl = _grid_delta(g, cg.h, eps + shift)
    extra = 0.0 if cg.mode == "updown" else c
    return max(0.0, (val - fl + g.inf - g.bottom - g.err - extra) * (1 - _REL_MARGIN))


def _ladder(cg):
    return [1.0] if cg.mode == "updown" else list(_C_LADDER)


def delta_bracket_one(cg, eps):
    """Certified [lower, upper] for delta_{P/Q}(eps) of one composed direction."""
    eps = v.real("eps", eps)
    up = min(_upper(cg, eps, c) for c in _ladder(cg))
    low = max(_lower(cg, eps, c) for c in _ladder(cg))
    return Bracket(low, up)


def _bisect(f, delta, top):
    """For non-increasing f: (lo, hi) with f(lo) > delta >= f(hi), hi - lo tiny.

    lo = 0 when f(0) <= delta already; hi = inf when f never drops to delta
    (f(top) is f's limit, since top lies above the grid).
    """
    if f(0.0) <= delta:
        return 0.0, 0.0
    if f(top) > delta:  # f's limit stays above delta: no finite eps
        return math.inf, math.inf
    lo, hi = 0.0, top
    while hi - lo > 1e-12 * max(1.0, hi):
        mid = 0.5 * (lo + hi)
        if f(mid) > delta:
            lo = mid
        else:
            hi = mid
    return lo, hi


def epsilon_bracket_one(cg, delta):
    """Certified [lower, upper] for eps_{P/Q}(delta) of one composed direction.

    upper: an eps with delta_upper(eps) <= delta, so the tight eps is <= it;
    lower: an eps with delta_lower(eps) > delta, so the tight eps is >= it.
    """
    delta = v.probability("delta", delta)
    top = max((cg.up.offset + cg.up.w.size) * cg.h, (cg.low.offset + cg.low.w.size) * cg.h, 0.0)
    top += cg.eps_slack + _hoeffding_t(1e-300, cg.h, cg.K) + 1.0
    ladder = [1.0] if cg.mode == "updown" else [delta * 10.0 ** -j for j in range(1, 9)]
    eps_up = min(_bisect(lambda x: _upper(cg, x, c), delta, top)[1] for c in ladder)
    eps_low = max(_bisect(lambda x: _lower(cg, x, c), delta, top)[0] for c in ladder)
    return Bracket(eps_low, eps_up)


def delta_bracket(plds_pq, plds_qp, eps, **kw):
    """Certified bracket for the tight delta(eps) of a composition, both directions.

    ``plds_pq``, ``plds_qp``: a PLD or a list [(pld, count), ...] for each direction
    (heterogeneous composition when the list is longer than one).  Returns a list of
    Brackets, one per eps.  Keywords go to :func:`compose`.
    """
    eps = v.reals("eps", eps, lo=0.0)
    a, b = compose(plds_pq, **kw), compose(plds_qp, **kw)
    out = []
    for e in eps:
        x, y = delta_bracket_one(a, e), delta_bracket_one(b, e)
        out.append(Bracket(max(x.lower, y.lower), max(x.upper, y.upper)))
    return out


def epsilon_bracket(plds_pq, plds_qp, delta, **kw):
    """Certified bracket for the tight eps(delta) of a composition, both directions."""
    delta = v.reals("delta", delta, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    a, b = compose(plds_pq, **kw), compose(plds_qp, **kw)
    out = []
    for d in delta:
        x, y = epsilon_bracket_one(a, d), epsilon_bracket_one(b, d)
        out.append(Bracket(max(x.lower, y.lower), max(x.upper, y.upper)))
    return out
