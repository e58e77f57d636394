"""Integer noise on integer inputs, shuffled: a finite randomiser once its tails are lumped.

Each user reports x + Z for x in {0, 1} and an integer-valued noise Z given as a scipy.stats
discrete distribution: the two-sided geometric ``stats.dlaplace(a)`` (P(Z = k) proportional to
e^{-a |k|}), a discrete Gaussian built with ``stats.rv_discrete(values=...)``, any other.

**The reduction.**  Lump the outputs below ``lo`` into one outcome and those above ``hi`` into
another: the lumped randomiser (two rows, hi - lo + 3 columns) is a post-processing of the true
one, so the finite route's lower end (:mod:`shuffle_lib.mechanisms.randomizer`, ``--matrix``)
is a lower end of the true shuffled delta.  Upwards, let E be the event that some report of some
round lands in a lumped outcome.  Off E the lumping is one-to-one, so for every set S of views
P'(S) - e^eps P(S) <= P'_lump(S~) - e^eps P_lump(S~) + P'(E), S~ the image of S minus E, and

    delta_true(eps) <= delta_lump(eps) + K n tau,   tau = max_x P(x + Z lumped)       (1)

(a union bound over the K n reports).  ``lo`` and ``hi`` are placed where K n tau <= ``TAIL``.
The randomiser's two rows are inputs 0 and 1, the whole input domain, so the finite route's
worst case over the differing pair and the other users' data is the worst case here.

**The upper end** is the smaller of the finite route's (its blanket pair of counts) and the
blanket sum of :mod:`~shuffle_lib.mechanisms.randomizer.noise`, eq. (1) there, for the lumped
randomiser: nu = min(M_0, M_1) over its outputs, gamma = sum nu, W = V(o) with probability
nu(o) and 0 with probability 1 - gamma, V = gamma (M_a - e^eps M_b) / nu, both directions
(a, b).  Outputs with nu = 0 (a finite support) are charged their mass under the differing
user's law (the part of that law on them adds at most that mass to the hockey stick; the rest
is a sub-probability to which eq. (1) applies unchanged).  Computed V are raised by 8 ulps (W
larger: E[S_+] larger); the lattice rounding keeps each atom's mean (Jensen: free); the n-fold
sum's window, round-off and tail are :func:`~shuffle_lib.mechanisms.randomizer.noise.
positive_part_mean`'s.  The finite route's count pair discards the within-cell likelihood ratio
and is loose when it is unbounded (the discrete Gaussian); the blanket sum keeps it.

**The lower end** (one round) is the larger of the finite route's and the exact delta of the
continuous route's lattice view (:func:`~shuffle_lib.mechanisms.randomizer.noise.view_delta`)
of the lumped randomiser: T = sum_i phi(o_i), phi = floor(rho / h') capped, rho = M_1 / M_0 the
local likelihood ratio, on the datasets (0, ..., 0) and (1, 0, ..., 0).  With everyone else at
0 the full view's likelihood ratio is (1/n) sum_i rho(o_i), so T is nearly sufficient; the
finite route's count view drops the ratio within each cell, which for the discrete Gaussian
(rho unbounded) loses most of it.

**Error budget.**  The matrix handed to the routes is computed: each pmf (and tail) value is
taken to carry a relative error <= ``PMF_RTOL`` (the finite route's assumption about scipy), so
after normalising each true entry lies within a factor 1 -+ r of the computed one, r =
2 PMF_RTOL (1 + 1e-3) + 1e-15 (the ratio (1 + t)/(1 - t) and the division's rounding).
Each of the K n reports' laws then changes by at most that factor, so for every set S,
(1 - r)^{Kn} P~(S) <= P(S) <= (1 + r)^{Kn} P~(S), and with s = K n log((1 + r)/(1 - r)):

    delta(eps) <= (1 + r)^{Kn} delta~(eps - s),   delta(eps) >= (1 - r)^{Kn} delta~(eps + s)  (2)

(no factor e^eps: the multiplicative error moves eps, not delta).  Eq. (1)'s tail term is added
to the upper end; the blanket sum caps W at T, charging the differing user's mass on {V > T}.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import stats

from shuffle_lib.core import validate as v
from shuffle_lib.core.constants import MAX_COMPOSITIONS
from shuffle_lib.core.types import Bracket
from shuffle_lib.mechanisms import randomizer as R
from shuffle_lib.mechanisms.randomizer import noise as N
from shuffle_lib.mechanisms.randomizer.decompose import check_matrix
from shuffle_lib.mechanisms.randomizer.noise import PMF_RTOL

TAIL = 1e-12  # K n tau of eq. (1): the lumped tails' charge to delta
MAX_COLUMNS = 200_000  # outputs of the lumped randomiser, at most
CAP = 1e-13  # the blanket sum's cap T: the differing user's mass on {V > T}, charged
FLOOR = 1e-16  # blanket mass of the lowest V values raised to the next one (free)


def _frozen(noise: Any) -> Any:
    """A frozen scipy.stats discrete distribution (an unfrozen one without shape parameters is
    frozen with its defaults)."""
    if isinstance(noise, stats.rv_discrete):
        try:
            noise = noise()
        except TypeError as err:
            raise ValueError(
                f"noise {noise.name} needs its shape parameters: freeze it ({err})."
            ) from None
    if not isinstance(getattr(noise, "dist", None), stats.rv_discrete):
        raise ValueError(
            f"noise must be a scipy.stats discrete distribution (frozen), got {noise!r:.60}."
        )
    return noise


def discrete_matrix(noise: Any, n: int, compositions: int = 1) -> tuple[np.ndarray, float]:
    """The lumped randomiser of the module docstring and its tail charge K n tau of eq. (1).

    Args:
      noise: a scipy.stats discrete distribution of Z (integer support).
      n: users; compositions: rounds K (the tails are cut so that K n tau <= ``TAIL``).
    Returns: (2 x (hi - lo + 3) matrix, rows inputs 0 and 1, columns: below lo, lo..hi, above hi;
      the charge K n tau).
    Raises: ValueError naming a bad argument, or if more than ``MAX_COLUMNS`` outputs are needed.
    """
    dist = _frozen(noise)
    n = v.integer("n", n, lo=1, hi=R.MAX_N)
    K = v.integer("compositions", compositions, lo=1, hi=MAX_COMPOSITIONS)
    tau = TAIL / (n * K)
    lo, hi = _cut(dist.cdf, tau / 4, -1), _cut(dist.sf, tau / 4, 1) + 1
    ys = np.arange(lo, hi + 1)
    rows, lumped = [], 0.0
    for x in (0, 1):
        below, above = float(dist.cdf(lo - 1 - x)), float(dist.sf(hi - x))
        lumped = max(lumped, (below + above) * (1 + PMF_RTOL))
        rows.append(np.concatenate(([below], dist.pmf(ys - x), [above])))
    M = np.array(rows, dtype=float)
    if np.any(~np.isfinite(M)) or np.any(np.abs(M.sum(axis=1) - 1.0) > 1e-9):
        raise ValueError("noise must be a probability law on the integers (pmf sums to 1).")
    return M / M.sum(axis=1, keepdims=True), K * n * lumped


def _cut(tail: Any, tau: float, side: int) -> int:
    """The integer k of least |k| with tail(k) <= tau (cdf going down, sf going up): doubling,
    then bisection (scipy's ppf/isf of a discrete law fail far out: dlaplace.isf(1e-17) = inf).
    ValueError if |k| would exceed ``MAX_COLUMNS``."""
    hi = 1
    while float(tail(side * hi)) > tau:
        hi *= 2
        if hi > MAX_COLUMNS:
            raise ValueError(f"noise needs more than {MAX_COLUMNS} outputs (tails too heavy).")
    lo = 0 if float(tail(0)) > tau else -1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if float(tail(side * mid)) <= tau else (mid, hi)
    return side * hi


def blanket_delta(matrix: Any, n: int, eps: float, step: float = N.STEP) -> float:
    """The blanket sum's upper end of delta(eps) for a two-row randomiser ``matrix`` (module
    docstring, the upper end), both directions; ``step`` the lattice step in sd(W).

    Raises: ValueError naming a bad argument (``matrix``: not two rows of probabilities)."""
    M = check_matrix(matrix)
    if M.shape[0] != 2:
        raise ValueError(f"matrix must have two rows (inputs 0 and 1), got {M.shape[0]}.")
    n = v.integer("n", n, lo=1, hi=N.MAX_N)
    eps = v.real("eps", eps, 0.0, 700.0)
    step = v.real("step", step, 0.0, 1.0, lo_open=True)
    nu = np.minimum(M[0], M[1])
    keep = nu > 0
    g = float(nu.sum())
    if g <= 0.0:
        return 1.0
    e, best = math.exp(eps), 0.0
    for a, b in ((1, 0), (0, 1)):
        V = g * (M[a][keep] - e * M[b][keep]) / nu[keep]
        V = V + 8 * N.ULP * np.abs(V)
        order = np.argsort(V)[::-1]  # the cap T: the differing user's mass above it <= CAP
        above = np.cumsum(M[a][keep][order])
        cut = int(np.searchsorted(above, CAP, side="right"))
        charge = float(above[cut - 1]) * (1 + 1e-12) if cut > 0 else 0.0
        if cut < V.size:
            V = np.minimum(V, V[order[cut]])
        rise = np.argsort(V)  # clipping below raises W: free (the blanket mass below <= FLOOR)
        low = int(np.searchsorted(np.cumsum(nu[keep][rise]), FLOOR, side="right"))
        top = float(V.max())
        # W below -(n - 1) top makes the sum <= 0 whatever the others draw: raising it there
        # changes no (S)_+ at all
        V = np.maximum(V, max(float(V[rise[min(low, V.size - 1)]]), -(n - 1) * max(top, 0.0)))
        if top <= 0.0:
            best = max(best, float(M[a][~keep].sum()) + charge)
            continue
        V = np.append(V, 0.0)
        w = np.append(nu[keep], max(0.0, 1.0 - g))
        mean = float(np.dot(w, V)) / float(w.sum())
        big = max(float(np.max(np.abs(V - mean))), 1e-300)  # scaled: no overflow at large eps
        h = step * big * math.sqrt(max(float(np.dot(w, ((V - mean) / big) ** 2)), 1e-48))
        h *= min(1.0, math.sqrt(n / 16.0))
        for _ in range(N.COARSER + 1):  # a window too large for memory: a 4x coarser lattice
            try:
                est = _lattice_mean(V, w, n, h)
                break
            except ValueError:
                h *= 4.0
        else:
            return 1.0
        best = max(best, est / (n * g) * (1 + 1e-12) + float(M[a][~keep].sum()) + charge)
    return min(1.0, best)


def _lattice_mean(V: np.ndarray, w: np.ndarray, n: int, h: float) -> float:
    """E[(W_1 + ... + W_n)_+] bounded above, W = V with probability w: each atom split between
    its two lattice neighbours keeping its mean (Jensen: free), then the n-fold sum's bound."""
    k = np.floor(V / h)
    frac, k0 = V / h - k, int(k.min())
    idx = (k - k0).astype(np.int64)
    size = int(idx.max()) + 2
    if size > N.MAX_POINTS:
        raise ValueError(f"the lattice needs {size} points (over {N.MAX_POINTS}).")
    p = np.bincount(idx, weights=w * (1 - frac), minlength=size)
    p += np.bincount(idx + 1, weights=w * frac, minlength=p.size)
    return N.positive_part_mean(p / max(1.0, float(p.sum())), k0, n, h)


def _view_laws(M: np.ndarray, levels: int = N.VIEW_LEVELS
               ) -> tuple[np.ndarray, np.ndarray, int]:
    """(p_0, p_1, m): the laws under inputs 0 and 1 of phi(o) = min(floor(rho(o) / h'), K) on
    the lumped outputs, rho = M_1 / M_0 the local likelihood ratio (+inf where M_0 = 0), h' =
    ``VIEW_STEP`` sqrt(chi^2(M_1 || M_0)) and K h' at most the M_1-quantile 1 - 1e-12 of rho
    (K <= ``levels``), as the continuous route's lattice view; m the most outputs one value of
    phi collects.  Any phi is a post-processing: these choices only decide how tight the lower
    end is."""
    pos = M[0] > 0
    rho = np.full(M.shape[1], np.inf)
    rho[pos] = M[1][pos] / M[0][pos]
    chi2 = max(float(np.sum(M[1][pos] ** 2 / M[0][pos])) - 1.0, 1e-30)
    order = np.argsort(rho)[::-1]
    above = np.cumsum(M[1][order])                 # M_1 mass of the largest ratios
    top = float(rho[order[min(int(np.searchsorted(above, 1e-12)), rho.size - 1)]])
    top = top if math.isfinite(top) else float(np.max(rho[pos]))
    hp = max(N.VIEW_STEP * math.sqrt(chi2), top / levels, 1e-300)
    K = max(1, min(levels, math.ceil(top / hp)))
    phi = np.minimum(np.floor(np.minimum(rho, 2.0 * K * hp) / hp), K).astype(np.int64)
    return (np.bincount(phi, weights=M[0], minlength=K + 1),
            np.bincount(phi, weights=M[1], minlength=K + 1),
            int(np.bincount(phi).max()))


def _view(M: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, float, float]:
    """The lattice view sum_i phi(o_i) (:func:`_view_laws`) of the datasets (0, ..., 0) and
    (1, 0, ..., 0): (phi's laws, (1 - r)^n, s), eq. (2)'s factor and shift for one round, with
    r covering the pmf values' error and the summation of at most m of them into one value of
    phi (relative error <= m u each)."""
    p0, p1, m = _view_laws(M)
    r = 2 * (PMF_RTOL + m * N.ULP) * (1 + 1e-3) + 1e-15
    shift = n * (math.log1p(r) - math.log1p(-r)) * (1 + 1e-9)
    return p0, p1, math.exp(n * math.log1p(-r)), shift


def _view_lower(view: tuple[np.ndarray, np.ndarray, float, float], n: int, eps: float) -> float:
    """A certified lower end of the true shuffled delta(eps), one round: the lattice view's
    (:func:`_view`) hockey stick at eps + s, both directions, lowered by its FFT round-off and
    aliasing bounds (:func:`~shuffle_lib.mechanisms.randomizer.noise.lattice_view_delta`),
    times (1 - r)^n (eq. (2))."""
    p0, p1, lo_f, shift = view
    if eps + shift > 700.0:  # beyond the hockey stick's range: 0 is a lower end
        return 0.0
    return lo_f * N.lattice_view_delta(p0, p1, n, eps + shift)


def _moved(n: int, K: int) -> tuple[float, float, float]:
    """(1 + r)^{Kn}, (1 - r)^{Kn} and the eps shift s of eq. (2)."""
    r, m = 2 * PMF_RTOL * (1 + 1e-3) + 1e-15, K * n  # (1 + t)/(1 - t) - 1 for t = PMF_RTOL
    return math.exp(m * math.log1p(r)), math.exp(m * math.log1p(-r)), m * (
        math.log1p(r) - math.log1p(-r)) * (1 + 1e-9)


def _upper(M: np.ndarray, n: int, K: int, eps: float) -> float:
    """The computed lumped randomiser's upper end: the smaller route (one round), the finite
    route's (K rounds)."""
    fin = R.delta_bracket(n, [eps], K, matrix=M)[0].upper
    return fin if K > 1 else min(fin, blanket_delta(M, n, eps))


def delta_bracket(
    noise: Any, n: int, eps: float | Sequence[float] | np.ndarray, compositions: int = 1
) -> list[Bracket]:
    """Certified brackets on delta(eps) of K shuffled rounds of x + Z, x in {0, 1}: the routes on
    the lumped randomiser, moved by eq. (2), the upper end raised by eq. (1)'s tail term."""
    M, tail = discrete_matrix(noise, n, compositions)
    eps = v.reals("eps", eps, lo=0.0)
    K = int(compositions)
    up_f, lo_f, shift = _moved(n, K)
    out, view = [], None
    for e in eps:
        low = R.delta_bracket(n, [float(e) + shift], K, matrix=M)[0].lower * lo_f
        if K == 1:
            view = view if view is not None else _view(M, n)
            low = max(low, _view_lower(view, n, float(e)))
        eu = float(e) - shift  # below 0: delta~(eu) <= delta~(0) + (1 - e^eu) <= delta~(0) - eu
        up = min(1.0, up_f * (_upper(M, n, K, max(0.0, eu)) + max(0.0, -eu)) + tail)
        out.append(Bracket(min(low, up), up))
    return out


def epsilon_bracket(
    noise: Any, n: int, delta: float | Sequence[float] | np.ndarray, compositions: int = 1
) -> list[Bracket]:
    """Certified brackets on eps(delta), eq. (2) read the other way: the lower end is the finite
    route's lower end at delta / (1 - r)^{Kn} minus s, the upper end the smallest eps found whose
    computed upper end is <= (delta - tail) / (1 + r)^{Kn}, plus s."""
    M, tail = discrete_matrix(noise, n, compositions)
    delta = v.reals("delta", delta, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    K = int(compositions)
    up_f, lo_f, shift = _moved(n, K)
    out, view = [], None
    for d in delta:
        dl = d / lo_f
        lo = R.epsilon_bracket(n, [dl], K, matrix=M)[0].lower if dl < 1 else 0.0
        lo = max(0.0, lo - shift)
        if K == 1:
            view = view if view is not None else _view(M, n)
            lo = max(lo, N.eps_search(functools.partial(_view_lower, view, n), d,
                                      want_above=True, floor=lo))
        du = (d - tail) / up_f
        if du <= 0:
            hi = math.inf
        elif K > 1:
            hi = R.epsilon_bracket(n, [du], K, matrix=M)[0].upper + shift
        else:
            hi = N.eps_search(lambda e: _upper(M, n, 1, e), du, want_above=False, floor=lo) + shift
        out.append(Bracket(min(lo, hi), hi))
    return out
