"""Shuffled numeric randomisers: each user reports x + Z for x in [0, 1], Z a noise of scale S.

**The upper end: the privacy blanket as one n-fold convolution.**  Let r_x be the density of
x + Z and nu(y) = inf_{x in [0, 1]} r_x(y) (Balle, Bell, Gascon & Nissim 2019, "The privacy
blanket of the shuffle model", Sec. 3: every local law splits as R_x = gamma omega + (1 - gamma) L_x
with gamma omega = nu, gamma = int nu).  For a unimodal noise density f, f(y - x) is unimodal in
x, so nu(y) = min(f(y), f(y - 1)) and gamma = 2 P(Z > 1/2) (Gaussian: 2 Phi(-1/(2 sigma)),
Laplace: e^{-1/(2b)}).  Each other user draws from omega with probability gamma; revealing who did
not, and their reports, is a post-processing's inverse (the same law under both neighbours), so
the view reduces to M ~ Bin(n - 1, gamma) and the multiset of {Y_diff} with M omega draws.  A
multiset of t = M + 1 items has density prod omega(y_i) S_b / t under x_b, S_b = sum_i l_b(y_i),
l_b = r_{x_b} / omega, so delta_t(eps) = E[(S_1 - e^eps S_0)_+] / t, and with
C(n-1, m) / (m + 1) = C(n, m + 1) / n:

    delta_blanket(eps) = E[(W_1 + ... + W_n)_+] / (n gamma),
    W_j = B_j V(Y_j),  V = l_1 - e^eps l_0,  B_j ~ Bern(gamma),  Y_j ~ omega.          (1)

For the pair (x_0, x_1) = (0, 1) and a symmetric noise with non-decreasing local loss
L(y) = log f(y - 1) - log f(y) (a log-concave f), V = gamma (e^{max(L, 0)} - e^{eps + max(-L, 0)})
is non-decreasing in y, and int_A V dnu = gamma (P_1(A) - e^eps P_0(A)) for every set A: the law of
W, with its partial first moments, is read off the noise's cdf at the thresholds
y_s = sup{y : V(y) <= s}.  The two directions are mirror images (y -> 1 - y).  No other pair
gives a larger bound: (1) depends on the pair only through the law of W and is monotone in its
convex order, and for a symmetric log-concave noise the law of W at (0, 1) dominates every
pair's in that order, int (r_b - e^eps r_a - s nu)_+ <= int (r_1 - e^eps r_0 - s nu)_+ for all s
(chapter 07, lemma lem-gauss-pair).  The others' data do not enter (1) at all, so the upper end
covers every pair of neighbouring datasets.

**Error budget of the upper end** (each item on a known side):

1. *Mean-preserving rounding is free.*  W is rounded onto the grid s_k = k h by sending a value in
   [s_k, s_k+1) up with probability (W - s_k)/h; the rounded sum S~ has E[S~ | W] = S, and (.)_+ is
   convex, so E[S_+] <= E[S~_+] (Jensen): no charge.  The rounded law's tail at s_k is
   nu(V > s_k) + [gamma (P_1(C) - e^eps P_0(C)) - s_{k-1} nu(C)] / h, C the cell below s_k.
2. *Computed cdfs.*  scipy's cdf/sf values are taken to carry a relative error <= ``CDF_RTOL``
   (an assumption about scipy, like ``PMF_RTOL`` for binom.pmf in the finite route); each tail value
   is raised by the propagated bound, then made non-increasing from the top, so the law used
   stochastically dominates the rounded one (the integrand is non-decreasing).
3. *Clipping below* W at -T' raises W: free.  *Capping above* at T: (S)_+ <= (S^{<=T})_+ +
   sum_j (W_j - T)_+, which adds E[(W - T)_+] / gamma <= P_1(V > T) to delta (computed, charged).
4. *The n-fold law* by one real FFT on a window [A, A + N) (the full linear support when it fits:
   no aliasing).  Mass of the sum outside the window aliases into it, which only adds to the
   non-negative integrand's sum; what lies above the window is charged by the Chernoff bound
   E[S_+ 1{S >= B}] <= e^{-theta B} M(2 theta)^n / (e theta) (x <= e^{theta x}/(e theta)),
   M the rounded law's moment generating function, computed in log space.
5. *Round-off*: the forward FFT's l2 error d <= C u log2(N) sqrt(N) l2(p) (``FFT_C`` = 10, as
   :mod:`shuffle_lib.core.grid`), raised to the n-th power entry by entry: |z^n - z~^n| <=
   n d (|z~| + d)^{n-1} plus the powering's 8 (n + 2) u (|z~| + d)^n; the inverse FFT maps spectral
   l2 error E to l1 error sqrt(2) E and adds its own C u log2(N) sqrt(N) l2(out).  The l1 error
   times the window's largest s_+ is added to E[S~_+].

**The lower end** is the exact delta of a post-processed view of a concrete dataset: the
differing user at 0 or 1, everyone else at 0, and the view T = sum_i phi(y_i) with
phi(y) = min(floor(e^{L(y)} / h'), K) on a lattice.  With others at 0 the full view's likelihood
ratio is (1/n) sum_i e^{L(y_i)}, so T is nearly sufficient.  Its laws are p_0^{*n} and
p_0^{*(n-1)} * p_1; both directions' hockey sticks are evaluated on one FFT window and lowered
by the round-off of item 5 and by the aliased P-mass (a Chernoff bound), so the result is a
certified lower end on the true shuffled delta.  That round-off bound is a priori and grows
with n (at n = 1e6 it exceeds 1e-6), so :func:`lower_delta` also takes two views that need no
FFT: the count of reports above a threshold (exact Binomials, :func:`count_delta`) and, for
Gaussian noise, the sum of the reports (the Gaussian mechanism with noise sigma sqrt(n),
:func:`gauss_sum_delta`); the largest is the lower end.  For the crowd at 0 the lattice view is
within 0.6 % of that dataset's own eps(1e-6) at n = 1e4 (certified ends of it:
:func:`~shuffle_lib.mechanisms.randomizer.noise_crowd.crowd_epsilon`): the bracket's width is
the blanket's.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import fft as _fft
from scipy import stats
from scipy.stats import binom

from shuffle_lib.core import search
from shuffle_lib.core import validate as v
from shuffle_lib.core.binomial import binom_window
from shuffle_lib.core.constants import MAX_COMPOSITIONS, TINY
from shuffle_lib.core.types import Bracket
from shuffle_lib.mechanisms.clones.pairs import boost_rtol

NOISES = ("gaussian", "laplace")
CDF_RTOL = 1e-13  # assumed relative error of a scipy cdf/sf value (item 2)
PMF_RTOL = 1e-12  # assumed relative error of a scipy binom.pmf atom (the finite route uses it too)
FFT_C = 10.0  # FFT round-off constant, as in shuffle_lib.core.grid
_U = 2.0**-53
ULP = _U  # the unit round-off, for the routes built on this module
MAX_POINTS = 2**23  # the single-user law's grid and the FFT window
MAX_N = 10**8
TOP_CHARGE = 1e-13  # the cap T of item 3 is placed where P_1(V > T) is about this
STEP = 0.03  # grid step h of W, in sd(W) (0.01: slower, and no tighter through the round-off)
WINDOW_Z = 14.0  # the sum's window: mean - z sd ... (item 4)


@dataclass(frozen=True)
class Noise:
    """A symmetric location family with non-decreasing local loss (log-concave density).

    ``dist`` is a frozen scipy.stats continuous distribution centred at 0 (its ``scale``
    already set); ``name`` names it in outputs.  Reports are x + Z for x in [0, 1].
    """

    dist: Any      # a frozen scipy.stats distribution (scipy ships no type stubs)
    name: str = "custom"

    def __post_init__(self):
        d = self.dist
        if not hasattr(d, "sf") or not hasattr(d, "logpdf"):
            raise ValueError(f"noise must be a frozen scipy.stats distribution, got {d!r:.60}.")
        y = (
            np.linspace(-20.0, 20.0, 401) * max(float(d.std()), 1e-3)
            if math.isfinite(d.std())
            else np.linspace(-50.0, 50.0, 401)
        )
        if not np.allclose(d.cdf(y), d.sf(-y), rtol=1e-9, atol=1e-15):
            raise ValueError("noise must be symmetric about 0 (cdf(y) = sf(-y)).")
        L = d.logpdf(y - 1.0) - d.logpdf(y)
        L = L[np.isfinite(L)]
        if np.any(np.diff(L) < -1e-9 * (1 + np.abs(L[1:]))):
            raise ValueError(
                "noise must have a non-decreasing local loss log f(y-1) - log f(y) "
                "(a log-concave density)."
            )
        lf = d.logpdf(y)
        lf = lf[np.isfinite(lf)]
        # every shift's loss monotone (the worst-pair lemma): log f concave on the grid
        if np.any(lf[:-2] - 2 * lf[1:-1] + lf[2:] > 1e-9 * (1 + np.abs(lf[1:-1]))):
            raise ValueError("noise must have a log-concave density (log f concave).")

    @property
    def gamma(self) -> float:
        """The blanket's mass 2 P(Z > 1/2)."""
        return 2.0 * float(self.dist.sf(0.5))

    def loss(self, y: np.ndarray) -> np.ndarray:
        """The local privacy loss L(y) = log f(y - 1) - log f(y)."""
        return self.dist.logpdf(y - 1.0) - self.dist.logpdf(y)

    def y_of_loss(self, ell: np.ndarray) -> np.ndarray:
        """sup{y : L(y) <= ell} (+-inf where L never exceeds / stays below ell)."""
        ell = np.asarray(ell, dtype=float)
        kind = self.name
        if kind == "gaussian":
            s2 = float(self.dist.std()) ** 2
            return s2 * ell + 0.5
        if kind == "laplace":
            b = float(self.dist.kwds.get("scale", self.dist.std() / math.sqrt(2)))
            out = (b * ell + 1.0) / 2.0
            out = np.where(ell >= 1.0 / b, np.inf, out)
            return np.where(ell < -1.0 / b, -np.inf, out)
        lo = np.full(ell.shape, -1.0)
        hi = np.full(ell.shape, 2.0)
        for _ in range(200):  # widen: L(lo) <= ell < L(hi)
            bad = self.loss(lo) > ell
            if not bad.any():
                break
            lo = np.where(bad, 2 * lo - 1, lo)
        for _ in range(200):
            bad = self.loss(hi) <= ell
            if not bad.any():
                break
            hi = np.where(bad, 2 * hi, hi)
        for _ in range(80):
            mid = 0.5 * (lo + hi)
            le = self.loss(mid) <= ell
            lo, hi = np.where(le, mid, lo), np.where(le, hi, mid)
        return lo

    def tail(self, t: np.ndarray, x: float) -> np.ndarray:
        """P(x + Z > t), from the accurate side."""
        return self.dist.sf(np.asarray(t, dtype=float) - x)

    def mass(self, a: np.ndarray, b: np.ndarray, x: float) -> np.ndarray:
        """P(a < x + Z <= b), a difference of sf values above the centre, of cdf values below."""
        a, b = np.asarray(a, dtype=float) - x, np.asarray(b, dtype=float) - x
        up = self.dist.sf(a) - self.dist.sf(b)
        down = self.dist.cdf(b) - self.dist.cdf(a)
        return np.maximum(np.where(a >= 0, up, down), 0.0)


def noise_law(noise: str | Noise, scale: float | None = None) -> Noise:
    """A :class:`Noise` from a name ('gaussian': scale the standard deviation; 'laplace': scale
    the b of e^{-|z|/b}/(2b)) or a :class:`Noise` (``scale`` then not given)."""
    if isinstance(noise, Noise):
        if scale is not None:
            raise ValueError("scale belongs to a named noise; a Noise carries its own scale.")
        return noise
    if noise not in NOISES:
        raise ValueError(f"noise must be one of {', '.join(NOISES)} or a Noise, got {noise!r}.")
    if scale is None:
        raise ValueError(f"noise {noise!r} needs a scale.")
    scale = v.real("scale", scale, 0.0, 1e6, lo_open=True)
    return _named(noise, scale)


@functools.lru_cache(maxsize=32)
def _named(noise: str, scale: float) -> Noise:
    dist = stats.norm(0.0, scale) if noise == "gaussian" else stats.laplace(0.0, scale)
    return Noise(dist, noise)


# ---- the n-fold sum of a lattice law, on a window, with its round-off (items 4, 5) ----


def _log_mgf(logp: np.ndarray, k: np.ndarray, theta: float) -> float:
    a = logp + theta * k
    m = float(np.max(a))
    return m + math.log(float(np.sum(np.exp(a - m)))) + 1e-12 * (abs(m) + 1.0)


def _chernoff_above(logp, k, n, B, extra=None):
    """log of a bound on P(S >= B), S a sum of n draws of the lattice law (and one of ``extra``)."""
    best = 0.0
    for theta in np.geomspace(1e-6, 10.0, 60) / max(
        1.0, float(np.std(k[logp > -700])) if k.size > 1 else 1.0
    ):
        val = -theta * B + (n - (extra is not None)) * _log_mgf(logp, k, theta)
        if extra is not None:
            val += _log_mgf(extra[0], extra[1], theta)
        best = min(best, val)
    return best


def sum_on_window(
    p: np.ndarray, k0: int, n: int, q: np.ndarray | None = None, min_points: int = 0
) -> tuple[np.ndarray, int, float, int, bool]:
    """The law of the sum of n draws from p (lattice values k0 + i), or of n - 1 from p and one
    from q (same lattice), on a window: (values, first lattice value, l1 error bound, window top).
    The window is the full support when it fits, else mean -+ WINDOW_Z sd, at least ``min_points``
    wide (mass outside aliases in; see the callers for its charge)."""
    idx = np.arange(p.size)
    mean = float(np.dot(p, idx)) / max(float(p.sum()), 1e-300)
    var = max(float(np.dot(p, (idx - mean) ** 2)), 1e-12)
    full = n * (p.size - 1) + 1
    width = int(2 * WINDOW_Z * math.sqrt(n * var) + 4 * math.sqrt(var) + 64)
    N = full if full <= max(width, 2 * p.size, min_points) else max(width, min_points)
    N = _fft.next_fast_len(max(N, p.size), real=True)
    if N > MAX_POINTS:
        raise ValueError(
            f"n={n} needs an FFT of {N} points (over {MAX_POINTS}); take a coarser accuracy."
        )
    start = 0 if N >= full else math.floor(n * mean - N / 2)  # in units of the sum of indices
    fold = np.bincount(idx % N, weights=p, minlength=N)
    P = _fft.rfft(fold)
    d = FFT_C * _U * math.log2(N) * math.sqrt(N) * float(np.linalg.norm(fold))
    m = n - (q is not None)

    def powered(z, dz, k):
        mg = np.abs(z) + dz
        with np.errstate(divide="ignore", under="ignore"):
            lg = np.log(np.maximum(mg, 1e-300))
            bound = np.exp(k * lg)  # (|z~| + d)^k
            near = np.exp((k - 1) * lg) if k >= 1 else np.zeros_like(mg)
        rnd = (k * _U * (np.abs(lg) + 4.0) + 8 * _U) * bound
        return z**k, k * dz * near + rnd, bound

    Z, err, bound = (
        powered(P, d, m) if m > 0 else (np.ones_like(P), np.zeros(P.size), np.ones(P.size))
    )
    if q is not None:
        Qf = _fft.rfft(np.bincount(np.arange(q.size) % N, weights=q, minlength=N))
        dq = FFT_C * _U * math.log2(N) * math.sqrt(N) * math.sqrt(float(np.dot(q, q)))
        qb = np.abs(Qf) + dq
        err = err * qb + bound * dq + 4 * _U * bound * qb
        bound = bound * qb
        Z = Z * Qf
    # shift the circular origin to the window's start (integer phase, reduced mod N first)
    ph = (np.arange(Z.size, dtype=np.int64) * (start % N)) % N
    Z = Z * np.exp(2j * np.pi * ph / N)
    err = err + 6 * _U * bound
    out = _fft.irfft(Z, n=N)
    E = math.sqrt(2.0 * float(np.sum(err**2)))  # full-spectrum l2 error = l1 bound after irfft
    l1 = E + FFT_C * _U * math.log2(N) * math.sqrt(N) * float(np.linalg.norm(out))
    return out, start + n * k0, l1, start + N + n * k0, N >= full


# ---- the upper end ----


def dominating_exceedance(above: np.ndarray, moment: np.ndarray, cell: np.ndarray, s: np.ndarray,
                          h: float, magnitude: np.ndarray, extra: np.ndarray | float = 0.0
                          ) -> np.ndarray:
    """G_k >= P(W' >= s_k) on the lattice s_k = k h for W' the mean-preserving rounding of W
    (each cell's mass to the cell's two ends, its mean kept: a dominating law by Jensen).

    Cell (s_{k-1}, s_k] has mass ``cell`` and partial mean ``moment`` (E[W; cell]), so it puts
    (moment - s_{k-1} cell) / h on s_k; ``above`` is the mass beyond s_k (k >= 1) and ``extra``
    any further mass a caller places at or above s_k.  Each computed cdf value is raised by the
    module's CDF_RTOL allowance (``magnitude``: the summed size of moment's terms), and G is made
    non-increasing and at most 1; G_0 = 1.  The pmf is -diff(G, 0 appended).
    """
    split = (moment - s[:-1] * cell) / h
    marg = CDF_RTOL * 4 * (magnitude + np.abs(s[:-1]) * cell) / h
    split = np.minimum(np.maximum(split, 0.0) + marg, cell * (1 + CDF_RTOL) + marg)
    G = np.empty(s.size)
    G[0] = 1.0
    G[1:] = above * (1 + 4 * CDF_RTOL) + split + extra
    G[1:] = np.minimum(np.maximum.accumulate(G[1:][::-1])[::-1], 1.0)
    return G


def _w_law(nz: Noise, eps: float, h: float, top_charge: float):
    """The rounded, dominating law of W on the lattice k h: (pmf, first k, charge of item 3)."""
    g = nz.gamma
    e = math.exp(eps)
    base = g * (1.0 - e)  # V at L = 0

    def y_of(s):
        s = np.asarray(s, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            ell = np.where(s >= base, np.log(s / g + e), eps - np.log1p(-s / g))
        return nz.y_of_loss(ell)

    # the cap T: P_1(V > T) <= top_charge, and the grid budget
    y_top = 1.0 + float(nz.dist.isf(top_charge))
    ell_top = float(nz.loss(np.array([y_top]))[0])
    T = g * (math.exp(min(ell_top, 700.0)) - e)
    y_bot = float(nz.dist.ppf(top_charge * 1e-3))  # clip below where P_1(y <= y_bot) is tiny
    ell_bot = float(nz.loss(np.array([y_bot]))[0])
    Tp = g * (math.exp(min(eps - ell_bot, 700.0)) - 1.0)
    kmax = math.ceil(T / h) if T > 0 else 0
    kmin = -math.ceil(Tp / h)
    if kmax - kmin + 1 > MAX_POINTS:
        kmax = min(kmax, kmin + MAX_POINTS - 1) if kmax > 0 else kmax
        if kmax - kmin + 1 > MAX_POINTS:
            kmin = kmax - MAX_POINTS + 1
    k = np.arange(kmin, kmax + 1)
    s = k * h
    ys = y_of(s)
    charge = float(nz.tail(ys[-1:], 1.0)[0]) * (1 + CDF_RTOL)
    # nu(V > s) and the cells below each point
    half = 0.5
    nu_above = np.where(
        ys >= half,
        nz.tail(ys, 0.0),
        nz.tail(np.array(half), 0.0) + nz.mass(np.minimum(ys, half), np.full(ys.shape, half), 1.0),
    )
    a, b = ys[:-1], ys[1:]
    P1 = nz.mass(a, b, 1.0)
    P0 = nz.mass(a, b, 0.0)
    nuC = nz.mass(np.maximum(a, half), np.maximum(b, half), 0.0) + nz.mass(
        np.minimum(a, half), np.minimum(b, half), 1.0
    )
    G = dominating_exceedance(nu_above[1:], g * (P1 - e * P0), nuC, s, h, g * (P1 + e * P0),
                              np.where(s[1:] <= 0.0, 1.0 - g, 0.0) * (1 + 4 * _U))
    G[-1] = max(G[-1], float(nu_above[-1]) * (1 + 4 * CDF_RTOL))  # the mass >= T sits at T
    p = -np.diff(np.append(G, 0.0))
    p = np.maximum(p, 0.0)
    return p, int(kmin), charge


def _w_sd(nz: Noise, eps: float) -> float:
    """sd of W on a coarse grid (only chooses the step h; not part of the bound)."""
    g = nz.gamma
    y = np.linspace(-12, 13, 20001) * max(float(nz.dist.std()), 1e-3) + 0.5 * 0
    L = nz.loss(y)
    w = np.minimum(nz.dist.pdf(y), nz.dist.pdf(y - 1.0))
    w = w / w.sum() * g
    with np.errstate(over="ignore", invalid="ignore"):    # inf near eps = 700: sd 1.0 below
        V = g * (np.exp(np.maximum(L, 0)) - np.exp(eps + np.maximum(-L, 0)))
        m = float(np.dot(w, V))
        var = float(np.dot(w, V**2)) - m * m
    return math.sqrt(max(var, 1e-24)) if math.isfinite(var) else 1.0


def upper_delta(
    noise: str | Noise, n: int, eps: float, scale: float | None = None, step: float = STEP
) -> float:
    """The certified upper end of the shuffled delta(eps), one round: eq. (1) of the module
    docstring with the error budget there (items 1-5).

    The cap T of item 3 trades its charge against the round-off of item 5 (which grows with the
    window, hence with T): the charges ``CAPS`` are tried in turn (short windows first) until the
    charge is below 1e-6 of the value or a pass gives no smaller value; each pass is an upper end,
    the smallest is returned.  A window too large for memory is retried on a 4x coarser grid (up
    to ``COARSER`` times) before the trivial delta <= 1.

    Args:
      noise: 'gaussian', 'laplace' or a :class:`Noise`; scale: its scale for a name.
      n: users, the differing one included; eps: the target >= 0; step: h / sd(W).
    Returns: a float in [0, 1].
    Raises: ValueError naming a bad argument.
    """
    nz = noise_law(noise, scale)
    n = v.integer("n", n, lo=1, hi=MAX_N)
    eps = v.real("eps", eps, 0.0, 700.0)
    step = v.real("step", step, 0.0, 1.0, lo_open=True)
    if nz.gamma <= 0.0:
        return 1.0
    best = prev = math.inf
    for cap in CAPS:
        if best < 1.0 and cap < 1e-6 * best:  # the charge is already negligible
            break
        val = _upper_pass(nz, n, eps, step, cap)
        best = min(best, val)
        if val >= prev:  # the round-off of the larger window dominates
            break
        prev = val
    return best


CAPS = (1e-7, 1e-9, 1e-11, 1e-13)  # the cap charges tried in turn (upper_delta)
COARSER = 3  # 4x coarser grids tried when a window does not fit


def _upper_pass(nz: Noise, n: int, eps: float, step: float, top_charge: float) -> float:
    """One certified evaluation of eq. (1) with the cap charge ``top_charge`` (items 1-5)."""
    g = nz.gamma
    h = step * _w_sd(nz, eps) * min(1.0, math.sqrt(n / 16.0))
    for _ in range(COARSER + 1):
        p, k0, charge = _w_law(nz, eps, h, top_charge)
        try:
            vals, first, l1, top, exact = sum_on_window(p, k0, n)
            break
        except ValueError:  # the window would not fit in memory: a coarser grid
            h *= 4.0
    else:
        return 1.0
    return min(1.0, positive_part_mean(p, k0, n, h, (vals, first, l1, top, exact)) / (n * g)
               * (1 + 1e-12) + charge)


def positive_part_mean(
    p: np.ndarray, k0: int, n: int, h: float, summed: tuple | None = None
) -> float:
    """A certified upper bound on E[(W_1 + ... + W_n)_+] for W_j i.i.d. on the lattice (k0 + i) h
    with pmf p (items 4 and 5): the sum's law on an FFT window (``summed``: the output of
    :func:`sum_on_window` if already computed), its l1 round-off times the window's largest
    s_+, and the Chernoff bound on the mass above the window."""
    vals, first, l1, top, exact = summed if summed is not None else sum_on_window(p, k0, n)
    j = first + np.arange(vals.size)
    pos = np.maximum(j, 0) * h
    est = float(np.dot(pos, np.maximum(vals, 0.0))) + l1 * float(pos.max(initial=0.0))
    if not exact and top > 0:  # item 4: mass above the window
        keep = p > 0
        logp, kk = np.log(p[keep]), np.arange(p.size)[keep] + k0
        best = math.inf
        for theta in np.geomspace(1e-9, 1.0, 91):
            lb = -theta * top + n * _log_mgf(logp, kk, 2 * theta) - 1.0 - math.log(theta)
            best = min(best, lb)
        est += math.exp(min(best, 700.0)) * h
    return est


# ---- the lower end: the exact delta of one view of the dataset (x, 0, ..., 0) ----

VIEW_LEVELS = 20000  # lattice values of phi = floor(e^L / h'), at most
VIEW_STEP = 0.05  # h' in units of the standard deviation of e^L under x = 0
VIEW_WINDOW = 4  # the view's FFT window: at least this many times the single law's support
# (the heavy upper tail of T aliases less: n = 1e3 Gaussian, 3.6e-6 -> 1e-22)


def _view_laws(nz: Noise, levels: int) -> tuple[np.ndarray, np.ndarray]:
    """(p_0, p_1): the laws of phi(Y) = min(floor(e^{L(Y)} / h'), K) under x = 0 and x = 1, with
    h' = VIEW_STEP sd(e^L) and K h' at most the P_1-quantile 1 - 1e-12 of e^L (K <= ``levels``).
    Any phi is a post-processing: these choices only decide how tight the lower end is."""
    y_hi = 1.0 + float(nz.dist.isf(1e-12))
    top = math.exp(min(float(nz.loss(np.array([y_hi]))[0]), 600.0))
    chi2 = math.expm1(min(float(chi2_log(nz)), 600.0))
    hp = max(VIEW_STEP * math.sqrt(chi2), top / levels)
    levels = max(2, min(levels, math.ceil(top / hp)))
    edges = np.log(np.arange(1, levels + 1) * hp)  # phi >= k  <=>  L >= log(k h')
    ys = nz.y_of_loss(edges)  # sup{L <= edge}: phi >= k iff y > ys (ties: measure 0)
    out = []
    for x in (0.0, 1.0):
        tail = nz.tail(ys, x)  # P(phi >= k), k = 1..K
        G = np.concatenate(([1.0], tail, [0.0]))
        G[1:] = np.minimum.accumulate(G[1:])
        out.append(np.maximum(-np.diff(G), 0.0))
    return out[0], out[1]


def chi2_log(nz: Noise) -> float:
    """log(1 + chi^2(r_1 || r_0)) = log E_{r_0}[e^{2L}], by quadrature: an estimate that only
    chooses lattice steps (the blanket's h', the crowd's step), never a bound."""
    sd = float(nz.dist.std())
    y = np.linspace(-12 * sd, 12 * sd + 1, 40001)
    lw = 2 * nz.dist.logpdf(y - 1.0) - nz.dist.logpdf(y)
    m = float(np.max(lw))
    return m + math.log(float(np.sum(np.exp(lw - m))) * (y[1] - y[0]))


def _log_chernoff_tail(p: np.ndarray, m: int, q: np.ndarray | None, B: float, above: bool) -> float:
    """log of a bound on P(S >= B) (``above``) or P(S < B), S = m draws of p plus one of q."""
    keep = p > 0
    lp, k = np.log(p[keep]), np.arange(p.size)[keep]
    best = 0.0
    sgn = 1.0 if above else -1.0
    for theta in np.geomspace(1e-9, 1.0, 91):
        val = -sgn * theta * B + m * _log_mgf(lp, sgn * k, theta)
        if q is not None:
            kq = q > 0
            val += _log_mgf(np.log(q[kq]), sgn * np.arange(q.size)[kq], theta)
        best = min(best, val)
    return best


@functools.lru_cache(maxsize=8)
def view_sums(
    nz: Noise, n: int, levels: int = VIEW_LEVELS
) -> tuple[np.ndarray, np.ndarray, float, float, float, float]:
    """The laws of T under (0, ..., 0) and (1, 0, ..., 0) on one FFT window, with their l1
    round-off bounds and Chernoff bounds on the mass outside the window: (a, b, l1a, l1b, out_a,
    out_b).  Two windows are tried (the default and ``VIEW_WINDOW`` times the single law's
    support: the heavy upper tail of T aliases less, the round-off bound grows with the window);
    the one with the smaller total bound is returned."""
    v.instance("nz", nz, Noise)
    n = v.integer("n", n, lo=1, hi=MAX_N)
    levels = v.integer("levels", levels, lo=2, hi=10**6)
    return _lattice_view(*_view_laws(nz, levels), n)


def _lattice_view(
    p0: np.ndarray, p1: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray, float, float, float, float]:
    """The laws of a lattice view sum_i phi(y_i) (phi's laws p0, p1 under inputs 0 and 1, on
    0, 1, 2, ...) under (0, ..., 0) and (1, 0, ..., 0), as :func:`view_sums` returns them."""
    best = None
    for mp in (0, VIEW_WINDOW * p0.size):
        a, first, l1a, top, exact = sum_on_window(p0, 0, n, min_points=mp)
        b, _, l1b, _, _ = sum_on_window(p0, 0, n, q=p1, min_points=mp)
        out = [0.0, 0.0]
        if not exact:  # mass of either law outside the window aliases in
            for i, (m, q) in enumerate(((n, None), (n - 1, p1))):
                out[i] = math.exp(_log_chernoff_tail(p0, m, q, top, True)) + math.exp(
                    _log_chernoff_tail(p0, m, q, first, False)
                )
        cand = (a, b, l1a, l1b, out[0], out[1])
        if best is None or sum(cand[2:]) < sum(best[2:]):
            best = cand
        if exact:
            break
    assert best is not None  # the first window always gives a candidate
    return best


def lattice_view_delta(p0: Any, p1: Any, n: int, eps: float) -> float:
    """A certified lower value of the exact delta(eps) of the lattice view sum_i phi(y_i) of the
    datasets (0, ..., 0) and (1, 0, ..., 0), both directions, for phi's laws ``p0``, ``p1``
    under inputs 0 and 1 (on 0, 1, 2, ...): the two n-fold laws by one FFT window
    (:func:`sum_on_window`), lowered by their l1 round-off bounds and the aliased mass (a
    Chernoff bound).  The laws' sums are cached (the eps searches call it with one pair).

    Raises: ValueError naming a bad argument (p0, p1: non-negative finite vectors of one length).
    """
    a = np.asarray(p0, dtype=float)
    b = np.asarray(p1, dtype=float)
    for name, x in (("p0", a), ("p1", b)):
        if x.ndim != 1 or x.size < 1 or not np.all(np.isfinite(x)) or np.any(x < 0):
            raise ValueError(f"{name} must be a vector of non-negative probabilities.")
    if a.size != b.size:
        raise ValueError(f"p1 must have p0's length {a.size}, got {b.size}.")
    n = v.integer("n", n, lo=1, hi=MAX_N)
    eps = v.real("eps", eps, 0.0, 700.0)
    return _view_hockey(_lattice_view_cached(a.tobytes(), b.tobytes(), n), eps)


@functools.lru_cache(maxsize=8)
def _lattice_view_cached(a: bytes, b: bytes, n: int) -> tuple:
    return _lattice_view(np.frombuffer(a), np.frombuffer(b), n)


def _view_hockey(sums: tuple, eps: float) -> float:
    """The larger direction's hockey stick of the two laws of :func:`_lattice_view`, lowered by
    their l1 round-off bounds and the aliased mass: a certified lower value."""
    a, b, l1a, l1b, out_a, out_b = sums
    e = math.exp(eps)
    alias = out_a + out_b
    d10 = float(np.sum(np.maximum(b - e * a, 0.0))) - l1b - e * l1a - alias
    d01 = float(np.sum(np.maximum(a - e * b, 0.0))) - l1a - e * l1b - e * alias
    return max(0.0, d10, d01) * (1 - 1e-12)


def view_delta(
    noise: str | Noise, n: int, eps: float, scale: float | None = None, levels: int = VIEW_LEVELS
) -> float:
    """A certified lower end of the true shuffled delta(eps), one round: the exact delta of the
    view T = sum_i phi(y_i) of the datasets (0, 0, ..., 0) and (1, 0, ..., 0), both directions
    (module docstring), lowered by the FFT round-off and the aliased mass.

    Args as :func:`upper_delta`; levels: lattice values of phi.
    """
    nz = noise_law(noise, scale)
    n = v.integer("n", n, lo=1, hi=MAX_N)
    eps = v.real("eps", eps, 0.0, 700.0)
    levels = v.integer("levels", levels, lo=2, hi=10**6)
    return _view_hockey(view_sums(nz, n, levels), eps)


# ---- two views that need no FFT: the count above a threshold, the Gaussian sum ----

COUNT_TAILS = (0.5, 0.2, 0.05, 1e-2, 2e-3, 4e-4, 1e-4)  # P(Z > t) of the thresholds t tried
COUNT_WINDOW = 1e-30  # Bin(n - 1, q) mass left outside the summed window (only lowers the end)


def count_delta(nz: Noise, n: int, eps: float, q: float) -> float:
    """A certified lower end of the true shuffled delta(eps): the exact delta of the number of
    reports above t = isf(q) on the datasets (0, ..., 0) and (1, 0, ..., 0), both directions.

    The counts are K_x = Bin(n - 1, q) + Bern(q_x), q_x = P(x + Z > t); the Binomial PMF
    (scipy's binom.pmf, relative error <= rho = max(``PMF_RTOL``, ``boost_rtol(n)``), the clones
    pairs' envelope of Boost's errors) is summed on the window outside which it has mass <=
    ``COUNT_WINDOW`` (dropped terms only lower the sum).  Charges: each computed atom within
    (rho + 8u) of its value, so the sum falls by
    that times (1 + e^eps); the computed q, q_x within CDF_RTOL (relative) of the true ones, and
    TV(Bin(m, q), Bin(m, q')) <= m |q - q'| (a coupling), so each law moves by at most
    n CDF_RTOL q_max in total variation, charged (1 + e^eps) times.
    """
    v.instance("nz", nz, Noise)
    n = v.integer("n", n, lo=1, hi=MAX_N)
    eps = v.real("eps", eps, 0.0, 700.0)
    q = v.real("q", q, 0.0, 1.0, lo_open=True, hi_open=True)
    t = float(nz.dist.isf(q))
    qs = [float(nz.tail(np.array(t), x)) for x in (0.0, 1.0)]
    q0 = qs[0]
    lo, hi = binom_window(n - 1, q0, COUNT_WINDOW)
    k = np.arange(int(lo), int(hi) + 2)
    B = binom.pmf(k, n - 1, q0)
    Bm = binom.pmf(k - 1, n - 1, q0)
    laws = [B * (1.0 - qx) + Bm * qx for qx in qs]
    e = math.exp(eps)
    charge = (1.0 + e) * ((max(PMF_RTOL, boost_rtol(n)) + 8 * _U) + n * CDF_RTOL * max(qs))
    d10 = float(np.sum(np.maximum(laws[1] - e * laws[0], 0.0)))
    d01 = float(np.sum(np.maximum(laws[0] - e * laws[1], 0.0)))
    return max(0.0, max(d10, d01) - charge)


def gauss_sum_delta(mu: float, eps: float) -> float:
    """delta(eps) of N(mu, 1) against N(0, 1) (Balle & Wang 2018, "Improving the Gaussian
    mechanism", Thm 8: Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu)), in log space and lowered
    by its round-off: a certified lower end wherever that pair is a post-processing.  Each log is
    within ``CDF_RTOL`` of its value and eps + log carries 4 ulp of their size (as
    :func:`local_delta`'s upper end): a is lowered and b - a raised by that bound, which decides
    the value where the two terms nearly cancel (large eps), not a relative margin on the
    difference."""
    mu = v.real("mu", mu, 0.0, 1e6, lo_open=True)
    eps = v.real("eps", eps, 0.0, 700.0)
    a = float(stats.norm.logcdf(mu / 2 - eps / mu))
    b = eps + float(stats.norm.logcdf(-mu / 2 - eps / mu))
    err = CDF_RTOL * (abs(a) + abs(b - eps)) + 4 * _U * (eps + abs(a))
    gap = b - a + err                          # raised: 1 - e^gap lowered
    if gap >= 0.0:
        return 0.0
    return max(0.0, math.exp(a - err) * -math.expm1(gap) * (1 - 1e-12) - 1e-300)


def local_delta(noise: str | Noise, eps: float, rounds: int = 1, scale: float | None = None
                ) -> float:
    """A certified upper end of the local randomiser's own delta(eps) over ``rounds`` rounds
    (inputs in [0, 1], the worst pair 0 and 1): every shuffled view is a post-processing of the
    reports, so it caps the shuffled delta (Balle et al. 2019, the blanket's premise).

    Gaussian (sd sigma): K rounds are the Gaussian mechanism with mu = sqrt(K) / sigma (Balle &
    Wang 2018, "Improving the Gaussian mechanism", Thm 8), delta = e^a (1 - e^(b - a)), a =
    log Phi(mu/2 - eps/mu), b = eps + log Phi(-mu/2 - eps/mu), in log space; each log within
    ``CDF_RTOL`` of its value (item 2), so a is raised and b - a lowered by their bounds, and a
    value below the double range is the least positive double (the tight delta is positive at
    every eps: an upper end stays > 0).  Laplace (scale b): every loss lies in [-1/b, 1/b], so
    delta = 0 from eps = K/b on; one round below it, delta = 1 - e^((eps - 1/b)/2) (the loss
    (1 - 2y)/b on [0, 1]).  Other noises, and Laplace below K/b at K > 1: no cap (1).
    """
    nz = noise_law(noise, scale)
    eps = v.real("eps", eps, 0.0, 700.0)
    K = v.integer("rounds", rounds, lo=1, hi=MAX_COMPOSITIONS)
    if nz.name == "gaussian":
        mu = math.sqrt(K) / float(nz.dist.std())
        a = float(stats.norm.logcdf(mu / 2 - eps / mu))
        b = eps + float(stats.norm.logcdf(-mu / 2 - eps / mu))
        err = CDF_RTOL * (abs(a) + abs(b - eps)) + 4 * _U * (eps + abs(a))
        gap = b - a - err                      # lowered: 1 - e^gap raised
        if gap >= 0.0:                          # not resolved: delta <= Phi(mu/2 - eps/mu)
            return 1.0 if a + err >= 0.0 else max(math.exp(a + err), TINY)
        return min(1.0, max(math.exp(a + err) * -math.expm1(gap) * (1 + 1e-12), TINY))
    if nz.name == "laplace":
        scale_b = float(nz.dist.kwds.get("scale", nz.dist.std() / math.sqrt(2)))
        top = K / scale_b * (1 + 1e-12)        # K/b, above its rounding (std's: a few ulp)
        if eps >= top:
            return 0.0
        if K > 1:
            return 1.0
        return min(1.0, max(-math.expm1((eps - top) / 2) * (1 + 1e-12), TINY))
    return 1.0


def local_epsilon(noise: str | Noise, delta: float, rounds: int = 1,
                  scale: float | None = None) -> float:
    """A certified upper end of the local randomiser's own eps(delta) over ``rounds`` rounds: an
    eps whose :func:`local_delta` is <= delta (bisection on it, 60 steps; +inf where none up to
    700 is found)."""
    nz = noise_law(noise, scale)
    delta = v.real("delta", delta, 0.0, 1.0, lo_open=True, hi_open=True)
    K = v.integer("rounds", rounds, lo=1, hi=MAX_COMPOSITIONS)
    f = lambda e: local_delta(nz, e, K) <= delta  # noqa: E731
    hi = 1.0
    while not f(hi):
        if hi >= 700.0:
            return math.inf
        hi = min(2 * hi, 700.0)
    if f(0.0):
        return 0.0
    return search.narrow(f, hi, 0.0, lambda y, n: y - n <= 1e-12 * max(1.0, y), max_steps=60)[0]


def lower_delta(noise: str | Noise, n: int, eps: float, scale: float | None = None) -> float:
    """The certified lower end of the true shuffled delta(eps), one round: the largest of the
    lattice view (:func:`view_delta`), the counts above the thresholds ``COUNT_TAILS``
    (:func:`count_delta`, exact Binomials, the end that stays positive at large n, where the
    lattice view's a-priori round-off bound exceeds delta) and, for Gaussian noise, the sum of
    the reports: N(1, n sigma^2) against N(0, n sigma^2) (:func:`gauss_sum_delta`, mu =
    1/(sigma sqrt n)).  Each is the exact delta of a post-processing of the datasets
    (0, ..., 0) and (1, 0, ..., 0), lowered by its computation's error bound.

    Args as :func:`upper_delta`.
    """
    nz = noise_law(noise, scale)
    n = v.integer("n", n, lo=1, hi=MAX_N)
    eps = v.real("eps", eps, 0.0, 700.0)
    best = view_delta(nz, n, eps)
    for q in COUNT_TAILS:
        best = max(best, count_delta(nz, n, eps, q))
    if nz.name == "gaussian":
        best = max(best, gauss_sum_delta(1.0 / (float(nz.dist.std()) * math.sqrt(n)), eps))
    return best


# ---- epsilon(delta), the bracket, the model ----

EPS_RTOL = 1e-3  # an eps search stops when its ends are this close (relative)
SEARCH_STEP = (
    0.1  # the upper eps search's W lattice step (3x faster than STEP; delta ~0.4 % higher)
)


def eps_search(
    f: Callable[[float], float], delta: float, want_above: bool, floor: float = 0.0,
    top: float = 700.0
) -> float:
    """For a non-increasing-in-trend f: the largest eps with f(eps) > delta found (``want_above``,
    the lower end), else the smallest eps with f(eps) <= delta found (the upper end); regula falsi
    on log f (Illinois) between ends whose values are on both sides, at most 40 evaluations.
    ``floor``: an eps believed to have f > delta, the first left end (then the right end starts
    at 1.25 floor and grows by that factor: a bracket a few evaluations wide).  ``top``: where the
    upper end's search gives up (+inf: a caller's cap, such as the local randomiser's own eps,
    then answers without evaluations beyond it).
    Each end returned is certified by its own evaluation, whatever f's shape."""
    lo, hi = floor, (1.25 * floor if floor > 0 else 0.25)
    flo = f(lo)
    if flo <= delta:
        return lo if not want_above else 0.0
    fhi = f(hi)
    while fhi > delta:
        lo, flo, hi = hi, fhi, (1.25 * hi if floor > 0 else 2 * hi + 0.5)
        if hi > top:
            return math.inf if not want_above else lo
        fhi = f(hi)

    def g(x):
        return math.log(max(x, 1e-300)) - math.log(delta)

    glo, ghi, side = g(flo), g(fhi), 0
    for i in range(40):
        if hi - lo <= EPS_RTOL * hi:
            break
        mid = hi - ghi * (hi - lo) / (ghi - glo) if ghi < glo and i < 30 else 0.5 * (lo + hi)
        if not lo + 0.01 * (hi - lo) < mid < hi - 0.01 * (hi - lo):
            mid = 0.5 * (lo + hi)
        fm = f(mid)
        gm = g(fm)
        if fm <= delta:
            hi, ghi = mid, gm
            glo = glo * 0.5 if side == 1 else glo
            side = 1
        else:
            lo, glo = mid, gm
            ghi = ghi * 0.5 if side == -1 else ghi
            side = -1
    return lo if want_above else hi


def upper_epsilon(
    noise: str | Noise, n: int, delta: float, scale: float | None = None, floor: float = 0.0,
    top: float = 700.0
) -> float:
    """The certified upper end of eps(delta), one round: an eps whose :func:`upper_delta` is
    <= delta.  ``floor``: a lower end of eps(delta) if known (the search starts there; any value
    gives a certified answer, a good one fewer evaluations); ``top``: +inf once the search passes
    it (:func:`eps_search`)."""
    nz = noise_law(noise, scale)
    n = v.integer("n", n, lo=1, hi=MAX_N)
    delta = v.real("delta", delta, 0.0, 1.0, lo_open=True, hi_open=True)
    floor = v.real("floor", floor, 0.0, 700.0)
    top = v.real("top", top, 0.0, 700.0)
    return eps_search(
        lambda e: upper_delta(nz, n, e, step=SEARCH_STEP), delta, want_above=False, floor=floor,
        top=top
    )


def view_epsilon(noise: str | Noise, n: int, delta: float, scale: float | None = None) -> float:
    """A certified lower end of eps(delta), one round: an eps whose :func:`lower_delta` is > delta
    (0 if even eps = 0 is not)."""
    nz = noise_law(noise, scale)
    n = v.integer("n", n, lo=1, hi=MAX_N)
    delta = v.real("delta", delta, 0.0, 1.0, lo_open=True, hi_open=True)
    return eps_search(lambda e: lower_delta(nz, n, e), delta, want_above=True)


def delta_bracket(noise: str | Noise, n: int, eps: float, scale: float | None = None) -> Bracket:
    """[lower_delta, upper_delta]: a certified bracket on the true shuffled delta(eps), one
    round."""
    nz = noise_law(noise, scale)
    hi = upper_delta(nz, n, eps)
    return Bracket(min(lower_delta(nz, n, eps), hi), hi)


def epsilon_bracket(
    noise: str | Noise, n: int, delta: float, scale: float | None = None
) -> Bracket:
    """[view_epsilon, upper_epsilon]: a certified bracket on the true shuffled eps(delta), one
    round (the upper search starts from the lower end), the upper end capped by the local
    randomiser's own eps(delta) (:func:`local_epsilon`), beyond which the search stops."""
    nz = noise_law(noise, scale)
    lo = view_epsilon(nz, n, delta)
    cap = local_epsilon(nz, delta)
    start = min(lo, cap) if math.isfinite(lo) else 0.0
    hi = min(upper_epsilon(nz, n, delta, floor=start, top=min(cap, 700.0)), cap)
    return Bracket(min(lo, hi), hi)
