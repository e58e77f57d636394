"""Any finite local randomiser, shuffled: a certified bracket on its *true* shuffled privacy.

Declares ``randomizer`` (``--matrix FILE`` or ``--family krr|sue|oue|olh|blh|hr``).  The upper
end is the blanket decomposition's pair (:mod:`.decompose`, a theorem proved there), the lower
end the exact delta of a post-processed view of a concrete worst-case dataset, so every answer
says how far it can still be from the truth.  For the unary encodings (SUE, OUE) a second upper
end, the split pair of :mod:`.unary`, and a second lower view (the dataset with all others at one
third value) join them, the least upper end and the largest lower end taken.  One round: the
clones pair's exact single-round method
(:func:`shuffle_lib.mechanisms.clones.pairs.delta_bracket_single`); several
rounds: the Fourier accountant on the pairs' PLDs (the upper PLD the full clone pair's, scaled
by beta + 2s, with the rest of the mass at loss 0).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

import numpy as np
from scipy.special import gammaln
from scipy.stats import binom

from shuffle_lib.core import budget, evaluate, search
from shuffle_lib.core import validate as v
from shuffle_lib.core.binomial import binom_window
from shuffle_lib.core.constants import MAX_COMPOSITIONS
from shuffle_lib.core.fourier import DEFAULT_ACCURACY
from shuffle_lib.core.pld import PLD, hockey_stick, pld_from_losses, pld_from_pmfs
from shuffle_lib.core.registry import Mechanism, Param, register
from shuffle_lib.core.types import ArrayLike, Bracket, Method, Model, PLDPair
from shuffle_lib.mechanisms.clones.compose import clone_plds
from shuffle_lib.mechanisms.clones.pairs import (
    MAX_N,
    Pair,
    boost_rtol,
    conditional_tails_walk,
    delta_bracket_single,
    epsilon_bracket_single,
    general_pair,
    loss_threshold,
    prepare,
    s_range,
)
from shuffle_lib.mechanisms.clones.pld import BINNED_MAX_ATOMS, grid_cost
from shuffle_lib.mechanisms.randomizer import unary
from shuffle_lib.mechanisms.randomizer.decompose import (
    FAMILIES,
    MAX_ENTRIES,
    MAX_INPUTS,
    Decomposition,
    View,
    check_matrix,
    family_decomposition,
    load_matrix,
    matrix_decompositions,
    matrix_delta,
    matrix_eps0,
    olh_g,
    why_eps0_infinite,
)
from shuffle_lib.mechanisms.randomizer.noise import NOISES, PMF_RTOL
from shuffle_lib.mechanisms.randomizer.noise_compose import noise_model

EXACT_2D_MAX = 1_000_000   # an asymmetric view is enumerated on (#T0, #T1) up to this many atoms
SCALE_RANGE = (1e-2, 1e3)   # the noise scales calibrate searches (--solve scale)
VIEW_TAIL = 1e-30          # binomial tails a 1-d view leaves out (only lowers the lower end)
UNARY_PLD_ATOMS = 4 * 10 ** 7   # the unary split pair's PLD atoms before the grid
UNARY_VIEW_ATOMS = 5 * 10 ** 7  # the unary lower view's atoms (binned onto 600^2 cells)
BLOCK_BYTES = 160               # bytes a value of s of the blocks takes (arrays, the walk)


# ---- the upper end: the three-category pair of a decomposition ----

def _revealed_pair(dec: Decomposition, n: int) -> tuple[int, Pair]:
    """(n for the clones machinery, the full pair (p = 2a, u', w')): the pair given that the
    differing user drew from D0 or D1 (:mod:`.decompose`, the case c = 0)."""
    m = dec.mass
    u = (dec.beta + dec.s) / m
    pair = general_pair(2 * dec.a, u, max(0.0, min(dec.s / m, 1.0 - u)), "randomizer-upper")
    return (n if dec.a > 0 else 1), pair      # a = 0: no clones, C = 0 as for n = 1


def _three_category(dec: Decomposition) -> bool:
    return dec.c > 0 and dec.mass + dec.r < 1.0


@functools.lru_cache(maxsize=32)
def _blocks(dec: Decomposition, n: int, blocks: int) -> _Blocks:
    return _Blocks(dec, n, blocks)


class _Blocks:
    """The three-category pair's delta as a mixture over T = 1 + C, C ~ Bin(n-1, 2a + c), of the
    general (non-full) clone pair with n' = T, p' = 2a/(2a + c), u = beta + s, w = s, bracketed
    block by block: that pair's delta decreases in n' (one more user is added noise), so a
    block [t_i, t_{i+1}) contributes at most its mass x delta(t_i) and at least its mass x
    delta(t_{i+1} - 1).  The C-mass outside the kept range (<= 1e-30) goes to the upper end."""

    def __init__(self, dec: Decomposition, n: int, blocks: int):
        N, tau = n - 1, 2 * dec.a + dec.c
        lo, hi = binom_window(N, tau, 1e-30)
        self.out = float(binom.cdf(lo - 1, N, tau) + binom.sf(hi, N, tau)) if N > 0 else 0.0
        edges = np.unique(np.linspace(lo, hi + 1, min(blocks, hi - lo + 1) + 1).astype(np.int64))
        pm = binom.pmf(np.arange(lo, hi + 1), N, tau)
        self.mass = np.add.reduceat(pm, edges[:-1] - lo)
        keep = 1.0 - dec.r                       # the differing user not in the revealed part
        u = min((dec.beta + dec.s) / keep, 1.0)
        self.keep = keep
        self.pair = general_pair(
            min(2 * dec.a / tau, 1 - 1e-16),
            u,
            max(0.0, min(dec.s / keep, 1.0 - u)),
            "randomizer-3cat",
        )
        # block i is bounded by its first n' (upper) and by the next block's first (lower: delta
        # decreases in n', and that n' is larger than every n' of block i): B + 1 evaluations
        ts = [int(t) for t in edges + 1]
        count = sum(hi - lo + 1 for lo, hi, _ in (s_range(t, 0.0, self.pair, 1e-30) for t in ts))
        budget.check_bytes(BLOCK_BYTES * count, f"the {len(ts)} blocks' {count:.3g} values of s",
                           "ask for a smaller --n")
        preps = [prepare(t, 0.0, self.pair, 1e-30) for t in ts]
        self.s, self.ps, self.al, self.be, self.ga = (
            np.concatenate([p[j] for p in preps]) for j in range(5)
        )
        self.cut = np.array([p[5] for p in preps])                  # each n''s S-mass left out
        self.rtol = boost_rtol(n)       # Boost's values at up to n trials (T's and S's)
        # what every upper end carries whatever eps is: the truncated masses
        self.floor = (math.fsum(self.mass * np.minimum(1.0, self.cut[: self.mass.size]))
                      + self.out) * keep
        sizes = np.array([p[0].size for p in preps])
        self.starts, self.sizes = np.r_[0, np.cumsum(sizes)[:-1]], sizes
        self.first = edges[:-1] + 1

    def delta(self, eps: float, lower: bool = True) -> tuple[float, float]:
        """Certified (lower, upper) of the three-category pair's delta(eps): every n' of the
        blocks in one vectorised pass of :func:`~shuffle_lib.mechanisms.clones.pairs.bracket_at`'s
        sums (a relative ``boost_rtol(n)`` of the summed magnitudes covers Boost's atoms and
        rounding, as there, and the walk's bound of
        :func:`~shuffle_lib.mechanisms.clones.pairs.conditional_tails_walk` its tails; the same
        relative allowance scales both ends for the weights of S and T).
        ``lower=False``: the upper end only (lower 0), the last n' (read by the lower end only)
        left out of the pass."""
        count = self.starts.size if lower else self.starts.size - 1
        end = self.s.size if lower else int(self.starts[-1])
        s, ps, al, be, ga = (x[:end] for x in (self.s, self.ps, self.al, self.be, self.ga))
        starts = self.starts[:count]
        # ties on the safe side
        k = loss_threshold(s, al, be, ga, eps, ties="count")
        # consecutive s of one n' have thresholds a step of 0 or 1 apart: the walk's tails
        tp, tq, walk = conditional_tails_walk(s, k, al, be, ga)
        e = math.exp(eps)
        val = np.add.reduceat(ps * np.maximum(tp - e * tq, 0.0), starts)
        err = (
            self.rtol
            * (np.add.reduceat(ps * tp, starts) + e * np.add.reduceat(ps * tq, starts))
            + (1.0 + e) * np.add.reduceat(ps * walk, starts)
            + self.sizes[:count] * 1e-307
        )
        lo_t, hi_t = np.maximum(0.0, val - err), np.minimum(1.0, val + err + self.cut[:count])
        hi = (math.fsum(self.mass * hi_t[: self.mass.size]) + self.out) * self.keep
        lo = math.fsum(self.mass * lo_t[1:]) * self.keep if lower else 0.0
        rt = max(1e-12, 2.0 * self.rtol)          # the weights of S and of T, each within rtol
        return max(0.0, lo * (1 - rt)), min(1.0, hi * (1 + rt))

    def plds(self, compositions: int, accuracy: float) -> PLD:
        """A PLD dominating the pair (T revealed, each block's pair at its smallest n'), every loss
        rounded up onto the grid accuracy / (8 compositions) (rounding up dominates; the blocks
        share one grid, so the mixture has O(grid) atoms, not O(blocks x atoms))."""
        # every block's round goes on clone_plds' grid, both sides, when its atoms exceed the
        # binned route's: estimated as the blocks times the first block's cost (the smallest n')
        atoms, cells, seconds = grid_cost(int(self.first[0]), 0.0, accuracy / (4.0 * compositions),
                                          self.pair)
        if atoms > BINNED_MAX_ATOMS:
            budget.check_seconds(
                2 * seconds * self.first.size,
                f"the {self.first.size} blocks' PLDs on {cells:.3g} grid cells each",
                "ask for fewer --compositions, a coarser --accuracy or a smaller --n")
        h = accuracy / (8.0 * compositions)
        parts = [clone_plds(int(t), 0.0, self.pair, compositions, accuracy)[0] for t in self.first]
        idx = [np.ceil(p.losses / h).astype(np.int64) for p in parts]
        k0 = min(int(i.min()) for i in idx if i.size)
        size = max(int(i.max()) for i in idx if i.size) - k0 + 1
        budget.check_bytes(24.0 * size, f"the composed round's PLD on {size:.3g} grid points",
                           "ask for fewer --compositions or a coarser --accuracy")
        probs = np.zeros(size)
        for i, p, m in zip(idx, parts, self.mass):
            probs += np.bincount(i - k0, weights=p.probs * m * self.keep, minlength=size)
        inf = (math.fsum([p.inf_mass * m for p, m in zip(parts, self.mass)]) + self.out) * self.keep
        nz = probs > 0
        losses, probs = (np.arange(size)[nz] + k0) * h, probs[nz]
        if self.keep < 1.0:                      # the revealed part: an atom at loss 0
            losses, probs = np.append(losses, 0.0), np.append(probs, 1.0 - self.keep)
            order = np.argsort(losses, kind="stable")
            losses, probs = losses[order], probs[order]
        return pld_from_losses(losses, probs, min(1.0, inf))


# blocks of T for one round's delta (relative width ~ 1/BLOCKS of the T-variation)
BLOCKS = 16
PLD_BLOCKS = 8     # blocks of T for a composed PLD


def upper_delta(dec: Decomposition, n: int, eps: float) -> float:
    """The certified upper end of delta(eps), one round (the three-category pair of
    :mod:`.decompose`; with c = 0, (beta + 2s) delta_full(eps)): the least over the splits of W."""
    n = v.integer("n", n, lo=1, hi=MAX_N)
    v.instance("dec", dec, Decomposition)
    eps = v.real("eps", eps, 0.0)
    return min(_upper_delta_one(x, n, eps) for x in dec.options())


def _upper_delta_one(dec: Decomposition, n: int, eps: float) -> float:
    if _three_category(dec):
        return _blocks(dec, n, BLOCKS).delta(eps, lower=False)[1]
    nn, pair = _revealed_pair(dec, n)
    return min(1.0, dec.mass * delta_bracket_single(nn, 0.0, eps, pair).upper)


def _upper_eps_search(f, delta: float, lo: float, hi: float) -> float:
    """An eps in [lo, hi] with f(eps) <= delta, near the smallest (f decreasing, f(hi) <= delta,
    f(lo) > delta): regula falsi on log f (Illinois), then bisection; at most 60 evaluations."""
    return search.illinois(f, delta, lo, hi, lambda a, b: b - a <= 1e-10 * max(b, 1e-9))


def upper_epsilon(dec: Decomposition, n: int, delta: float) -> float:
    """The certified upper end of eps(delta), one round: an eps whose certified delta upper
    end is <= delta (bisection between 0 and the c = 0 pair's eps, an upper bound); the least
    over the splits of W."""
    n = v.integer("n", n, lo=1, hi=MAX_N)
    v.instance("dec", dec, Decomposition)
    delta = v.real("delta", delta, 0.0, 1.0, lo_open=True, hi_open=True)
    return min(_upper_epsilon_one(x, n, delta) for x in dec.options())


def _best_option(dec: Decomposition, n: int) -> Decomposition:
    """The split of W with the smallest one-round eps at delta = 1e-6 (for composing)."""
    opts = dec.options()
    return opts[0] if len(opts) == 1 else min(opts, key=lambda x: _upper_epsilon_one(x, n, 1e-6))


@functools.lru_cache(maxsize=256)
def _upper_epsilon_one(dec: Decomposition, n: int, delta: float) -> float:
    """One split's upper end of eps(delta) (a deterministic search: its answer is kept per
    (split, n, delta), which the one-round model, the composed route's choice of split and a
    direct :func:`upper_epsilon` all ask)."""
    if delta >= dec.mass:
        return 0.0
    nn, pair = _revealed_pair(dec, n)
    cap = epsilon_bracket_single(nn, 0.0, delta / dec.mass * (1 - 1e-15), pair).upper
    if not _three_category(dec) or not math.isfinite(cap):
        return cap
    bl = _blocks(dec, n, BLOCKS)
    if bl.floor >= delta:                     # no eps brings the blocks' upper end to delta
        return cap
    seen: dict[float, float] = {}

    def f(e: float) -> float:                 # each eps evaluated once (the search asks again)
        if e not in seen:
            seen[e] = bl.delta(e, lower=False)[1]
        return seen[e]
    if f(0.0) <= delta:
        return 0.0
    # a lower bound: f(floor) > delta
    floor = max((_view_epsilon(w, n, delta) for w in dec.views), default=0.0)
    # (a finite cap: the views' inf is not this pair's)
    if not math.isfinite(floor) or f(floor) <= delta:
        floor = 0.0
    return _upper_eps_search(f, delta, floor, cap)


def upper_pld(dec: Decomposition, n: int, compositions: int, accuracy: float) -> PLD:
    """A PLD dominating one round (for composing): the three-category pair's, block by block
    (each block's pair at its smallest n'), or with c = 0 the full pair's dominating PLD scaled
    by beta + 2s plus an atom at loss 0 of mass 1 - beta - 2s (the split of W best for one
    round)."""
    n = v.integer("n", n, lo=1, hi=MAX_N)
    compositions = v.integer("compositions", compositions, lo=1, hi=MAX_COMPOSITIONS)
    accuracy = v.real("accuracy", accuracy, 0.0, 1.0, lo_open=True)
    v.instance("dec", dec, Decomposition)
    dec = _best_option(dec, n)
    if _three_category(dec):
        return _blocks(dec, n, PLD_BLOCKS).plds(compositions, accuracy)
    nn, pair = _revealed_pair(dec, n)
    up, _ = clone_plds(nn, 0.0, pair, compositions, accuracy)
    m = dec.mass
    return pld_from_losses(np.append(up.losses, 0.0), np.append(up.probs * m, max(0.0, 1.0 - m)),
                           min(1.0, up.inf_mass * m))


# ---- the lower end: exact deltas of post-processed views of one dataset ----

def _view_pair(view: View):
    return general_pair(2 * view.r0, view.u0, view.w0, "randomizer-view")


def _binom_pmf(j, N, p: float) -> np.ndarray:
    """binom.pmf(j, N, p), with a p below 1e-300 in log form: scipy gives P[Bin(3, 1e-310) = 1] = 0
    for 3e-310.  C(N, j) p^j (1 - p)^(N - j) from gammaln is within ~1e-13 relative for the
    views' N (EXACT_2D_MAX), inside PMF_RTOL."""
    if p >= 1e-300:
        return binom.pmf(j, N, p)
    j, N = np.asarray(j, dtype=float), np.asarray(N, dtype=float)
    ok = (j >= 0) & (j <= N)
    if p == 0.0:
        return np.where(ok & (j == 0), 1.0, 0.0)
    jj = np.where(ok, j, 0.0)
    lg = gammaln(N + 1) - gammaln(jj + 1) - gammaln(N - jj + 1) + jj * math.log(p) \
        + (N - jj) * math.log1p(-p)
    return np.where(ok, np.exp(lg), 0.0)


def view_pmfs(view: View, n: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """(P, Q) of an asymmetric view: the joint counts on (T0, T1) when that has at most
    ``EXACT_2D_MAX`` atoms, else the count on T0 and the count on T1 separately (each windowed
    to all but 1e-30 of the others' binomial: leaving mass out only lowers a lower end)."""
    n = v.integer("n", n, lo=1, hi=MAX_N)
    v.instance("view", view, View)
    N = n - 1
    if (N + 2) ** 2 <= EXACT_2D_MAX:
        i = np.arange(N + 1)
        rest = 1.0 - view.r0 if view.ro is None else view.ro      # the others' mass off T0
        cond = view.r1 / rest if rest > 0 else 0.0
        # the count on T0 as N minus a Bin(N, rest) count: with r0 = 1 - 5e-300 rounded to 1,
        # Bin(N, r0) put no mass below N and the view's lower delta came out 0.1 for an exact 0.05
        # and as Bin(N, r0) itself when r0 is the smaller: for r0 = 1e-310, 1 - r0 rounds to 1 and
        # would drop the others' T0 mass, which e^700 magnifies to 1e-6 in the lower end
        first = (_binom_pmf(i, N, view.r0) if view.ro is None or view.r0 <= rest
                 else _binom_pmf(N - i, N, min(rest, 1.0)))
        M = np.zeros((N + 2, N + 2))
        M[: N + 1, : N + 1] = first[:, None] * _binom_pmf(
            i[None, :], N - i[:, None], min(cond, 1.0)
        )
        out = []
        for u, w, o in ((view.u0, view.w0, view.off0), (view.u1, view.w1, view.off1)):
            X = o * M                   # the off-cell mass summed from the row: 1 - u - w cancelled
            X[1:, :] += u * M[:-1, :]
            X[:, 1:] += w * M[:, :-1]
            out.append(np.maximum(X, 0.0).ravel())
        return [(out[0], out[1])]
    pairs = []
    # the complement of a cell's mass as the other cell's plus the off-cell mass (1 - a cancels)
    for r, (a0, a1), (c0, c1) in (
        (view.r0, (view.u0, view.u1), (view.w0 + view.off0, view.w1 + view.off1)),
        (view.r1, (view.w0, view.w1), (view.u0 + view.off0, view.u1 + view.off1)),
    ):
        lo, hi = binom_window(N, r, VIEW_TAIL)
        j = np.arange(lo, hi + 2)
        b, b1 = binom.pmf(j, N, r), binom.pmf(j - 1, N, r)
        pairs.append((a0 * b1 + c0 * b, a1 * b1 + c1 * b))
    return pairs


@functools.lru_cache(maxsize=64)
def _view_plds_exact(view: View, n: int) -> tuple[PLD, ...]:
    """Both directions of each pair of :func:`view_pmfs`, as exact PLDs."""
    return tuple(
        pl for p, q in view_pmfs(view, n) for pl in (pld_from_pmfs(p, q), pld_from_pmfs(q, p))
    )




def certified_lower(pld: PLD, eps: float, trials: int = 0) -> float:
    """A certified lower end of delta_{P/Q}(eps) for a PLD built from computed PMFs: the hockey
    stick minus r of the P-mass with loss > eps - 1e-9, the mass at +inf included.  r = 1e-12
    (``PMF_RTOL``) for PMFs computed to a relative 1e-13 (rounding only, as below); PMFs of
    binomial counts of up to ``trials`` trials are Boost's values, each within a relative rho =
    ``boost_rtol(trials)``, so P is off by rho P and L by 2 rho, and r = max(1e-12, 3 rho).  (Each
    atom's P(1 - e^(eps-L)) is off by at most P (1e-14 + abs(error of L)), and abs(error of L) <=
    1e-16 (abs(log P) + abs(log Q)), below 1e-12; an atom at +inf counts its computed P, which
    can be rounded up: the matrix row [1/16, 1e-12, 0.937499999999] against [0, 0, 1] has a cell
    of mass 1/16 + 1e-12 that rounds up by 4e-19, and at n = 1, eps = 0 that mass alone is
    the lower end, 0.062500000001 against the exact 0.0625000000009999999996)."""
    v.instance("pld", pld, PLD)
    trials = v.integer("trials", trials, lo=0, hi=MAX_N)
    r = max(PMF_RTOL, 3.0 * boost_rtol(trials)) if trials else PMF_RTOL
    j = int(np.searchsorted(pld.losses, eps - 1e-9, side="right"))
    # an allowance only (times PMF_RTOL): a pairwise sum, off by < 1e-12 relative, rounded up
    near = float(np.sum(pld.probs[j:])) * (1 + 1e-9) + pld.inf_mass
    # a cell below the normal range (2.2e-308) is off by up to ~1e-323 absolute, which e^eps
    # magnifies to 1e-19 at eps = 700: charged per atom (the Q side of each term)
    sub = pld.losses.size * 1e-323 * math.exp(min(eps, 709.0))
    return max(0.0, hockey_stick(pld, eps) - r * near - pld.losses.size * 1e-300 - sub)


def view_delta(view: View, n: int, eps: float) -> float:
    """A certified lower bound on the true delta(eps), one round, from one view."""
    n = v.integer("n", n, lo=1, hi=MAX_N)
    v.instance("view", view, View)
    if view.symmetric and 2 * view.r0 < 1:
        return delta_bracket_single(n, 0.0, eps, _view_pair(view)).lower
    return max(certified_lower(pl, eps, n) for pl in _view_plds_exact(view, n))


def view_epsilon(view: View, n: int, delta: float) -> float:
    """A certified lower bound on the true eps(delta), one round, from one view: an eps whose
    certified lower delta is still > delta (bisection), 0 if there is none."""
    n = v.integer("n", n, lo=1, hi=MAX_N)
    v.instance("view", view, View)
    return _view_epsilon(view, n, v.probability("delta", delta))


@functools.lru_cache(maxsize=256)
def _view_epsilon(view: View, n: int, delta: float) -> float:
    """:func:`view_epsilon` on checked arguments, kept per (view, n, delta): the upper end's search
    starts at the views' eps, which the lower end asks for again."""
    if view.symmetric and 2 * view.r0 < 1:
        return epsilon_bracket_single(n, 0.0, delta, _view_pair(view)).lower
    return plds_epsilon(_view_plds_exact(view, n), delta, n)


def plds_epsilon(plds: Sequence[PLD], delta: float, trials: int = 0) -> float:
    """An eps whose certified lower delta (:func:`certified_lower`, the max over ``plds``, exact
    PLDs of dominated pairs, binomial counts of up to ``trials`` trials) is still > delta
    (bisection), 0 if there is none."""
    if not plds:
        raise ValueError("plds must hold at least one PLD, got plds=[].")
    for pl in plds:
        v.instance("plds", pl, PLD)
    delta = v.probability("delta", delta)
    trials = v.integer("trials", trials, lo=0, hi=MAX_N)
    def f(e):
        return max(certified_lower(pl, e, trials) for pl in plds)
    if f(0.0) <= delta:
        return 0.0
    top = max(float(pl.losses[-1]) if pl.losses.size else 0.0 for pl in plds) + 1.0
    if f(top) > delta:                     # mass at +inf above delta: no finite eps
        return math.inf
    # f(lo) > delta >= f(hi)
    lo, _ = search.narrow(lambda e: f(e) > delta, 0.0, top,
                          lambda a, b: b - a <= 1e-12 * max(b, 1e-9), max_steps=60)
    return lo


def view_plds(view: View, n: int, compositions: int, accuracy: float) -> list[tuple[PLD, PLD]]:
    """Dominated PLDs (both directions) of a view's pair, for composing."""
    n = v.integer("n", n, lo=1, hi=MAX_N)
    compositions = v.integer("compositions", compositions, lo=1, hi=MAX_COMPOSITIONS)
    accuracy = v.real("accuracy", accuracy, 0.0, 1.0, lo_open=True)
    v.instance("view", view, View)
    if view.symmetric and 2 * view.r0 < 1:
        low = clone_plds(n, 0.0, _view_pair(view), compositions, accuracy)[1]
        return [(low, low)]
    plds = _view_plds_exact(view, n)
    return [(plds[i], plds[i + 1]) for i in range(0, len(plds), 2)]


# ---- the model ----

def decompositions(
    family: str = "matrix",
    matrix: Sequence[Sequence[float]] | np.ndarray | str | None = None,
    k: int = 0,
    d: int = 0,
    eps0: float = 0.0,
) -> tuple[list[Decomposition], float]:
    """(the decompositions to take the worst of, the randomiser's eps0) of a matrix (array or
    JSON path) or a named family (:func:`.decompose.family_decomposition`).  k, d and eps0 (0: not
    given) belong to a family, ``matrix`` to family 'matrix': a value given to the other is
    refused."""
    k = v.integer("k", k, lo=0, hi=10 ** 9)
    d = v.integer("d", d, lo=0, hi=10 ** 9)
    eps0 = v.real("eps0", eps0, 0.0, 30.0)
    if family == "matrix" and (k or d or eps0):
        raise ValueError(
            f"k, d and eps0 belong to a named family; a matrix gives its own eps0, got k={k}, "
            f"d={d}, "
            f"eps0={eps0}."
        )
    if family != "matrix" and not (matrix is None or (isinstance(matrix, str) and not matrix)):
        raise ValueError(f"matrix belongs to family='matrix', got family={family!r} and a matrix.")
    if family == "matrix":
        if matrix is None or (isinstance(matrix, str) and not matrix):
            raise ValueError("randomizer needs --matrix FILE, or --family with its parameters.")
        R = load_matrix(matrix) if isinstance(matrix, str) else check_matrix(matrix)
        decs = matrix_decompositions(R)
        return decs, matrix_eps0(R)
    if not eps0:
        raise ValueError(f"--family {family} needs --eps0 in (0, 30].")
    eps0 = v.real("eps0", eps0, 0.0, 30.0, lo_open=True)
    return [family_decomposition(family, eps0, k, d)], eps0


def randomizer_model(
    n: int,
    family: str = "matrix",
    matrix: Sequence[Sequence[float]] | np.ndarray | str | None = None,
    k: int = 0,
    d: int = 0,
    eps0: float = 0.0,
    compositions: int = 1,
    accuracy: float = DEFAULT_ACCURACY,
) -> Model:
    """The model of ``compositions`` rounds of the shuffled randomiser: the decompositions bound
    the upper end (the max over them), the views of concrete datasets the lower end.

    One round: methods (:func:`upper_delta` / :func:`upper_epsilon` per decomposition,
    :func:`view_delta` / :func:`view_epsilon` per view); several: the upper PLD of each
    decomposition (:func:`upper_pld`) and the views' dominated PLDs (:func:`view_plds`), each
    composed by the Fourier accountant.
    """
    n = v.integer("n", n, lo=1, hi=MAX_N)
    K = v.integer("compositions", compositions, lo=1, hi=MAX_COMPOSITIONS)
    accuracy = v.real("accuracy", accuracy, 0.0, 1.0, lo_open=True)
    R = load_matrix(matrix) if family == "matrix" and isinstance(matrix, str) and matrix else matrix
    decs, e0 = decompositions(family, R, k, d, eps0)
    info = {"eps0": e0 if math.isfinite(e0) else "inf", "decomposition": [
        {"pair": list(x.pair) if x.pair else "any", "beta": x.beta, "s": x.s, "a": x.a, "c": x.c,
         "splits": [list(t) for t in x.alternatives],
         "views": [w.label for w in x.views]} for x in decs]}
    if family in ("olh",):
        info["g"] = olh_g(eps0)
    if not math.isfinite(e0) and matrix is not None:
        info["eps0_infinite"] = why_eps0_infinite(
            load_matrix(matrix) if isinstance(matrix, str) else matrix)
    if not decs:          # every pair of rows equal: the output does not depend on the input
        info["route"] = "constant randomiser"
        return Model.of(Method.constant(0.0, 0.0, K), info)
    views = [w for x in decs for w in x.views]
    if K == 1:
        info["route"] = "single round: blanket pair (upper), exact view (lower)"
        # the local randomiser's own delta(eps) and eps0 cap the shuffled ones (post-processing):
        # near eps0 the blanket pair's end can be 1.0 for a matrix with masses near 1e-300.  A cap
        # of every decomposition's end caps their max (min(max a_i, c) = max min(a_i, c)).
        cap_eps = e0 * (1 + 1e-12) + 1e-300

        def cap(e: float) -> float:
            return 0.0 if e >= cap_eps else (1.0 if R is None else matrix_delta(R, e))

        ups = tuple(_upper_method(x, n, cap, cap_eps) for x in decs)
        if family in unary.UNARY:
            pair = unary.unary_pair(family, e0, n)
            info["route"] = ("single round: the least of the blanket pair and the unary "
                             "encoding's split pair (upper), exact view (lower)")
            ups = tuple(u.capped(lambda e: unary.delta(pair, e)[1],
                                 lambda d: unary.upper_epsilon(pair, d)) for u in ups)
        one = tuple(_view_method(w, n) for w in views) + tuple(
            _plds_method(pl, n) for pl in _unary_view_plds(family, e0, n))
        return Model(ups, one, info=info)
    info["route"] = ("Fourier accountant: three-category pair or, for a unary encoding, the "
                     "smaller split pair (upper), views (lower)")
    ups = [_composed_pair(u, u, K) for u in (_round_upper_pld(family, e0, x, n, K, accuracy)
                                             for x in decs)]
    lows = [_composed_pair(a, b, K) for w in views for a, b in view_plds(w, n, K, accuracy)]
    lows += [_composed_pair(*pl, K) for pl in _unary_view_plds(family, e0, n)]
    return Model(tuple(ups), tuple(lows), info=info)


def _round_upper_pld(family: str, eps0: float, dec: Decomposition, n: int, compositions: int,
                     accuracy: float) -> PLD:
    """One round's dominating PLD: the decomposition's (:func:`upper_pld`), or for a unary
    encoding the split pair's (:func:`.unary.upper_pld`) when its one-round eps at delta = 1e-6
    is the smaller and its atoms fit (UNARY_PLD_ATOMS, :func:`.unary.pld_blocks`); both dominate
    the round."""
    if family in unary.UNARY:
        pair = unary.unary_pair(family, eps0, n)
        old = _upper_epsilon_one(_best_option(dec, n), n, 1e-6)
        blocks = unary.pld_blocks(pair, UNARY_PLD_ATOMS)
        if blocks and unary.upper_epsilon(pair, 1e-6) < old:
            return unary.upper_pld(pair, compositions, accuracy, blocks)
    return upper_pld(dec, n, compositions, accuracy)


def _upper_method(dec: Decomposition, n: int, cap: Callable[[float], float],
                  cap_eps: float) -> Method:
    """One round's upper end from one decomposition (lower ends left at 0), capped by the local
    randomiser's own delta(eps) ``cap`` and its eps0 ``cap_eps`` (:meth:`Method.capped`)."""
    return Method(lambda eps: [Bracket(0.0, upper_delta(dec, n, e)) for e in eps],
                  lambda delta: [Bracket(0.0, upper_epsilon(dec, n, d)) for d in delta]
                  ).capped(cap, lambda d: cap_eps)


@functools.lru_cache(maxsize=8)
def _unary_view_plds(family: str, eps0: float, n: int) -> tuple[tuple[PLD, PLD], ...]:
    """For a unary encoding, the exact PLDs (both directions) of the lower view of the dataset
    with all others at one third value (:func:`.unary.dataset_view`), when its atoms fit
    (UNARY_VIEW_ATOMS); else none."""
    if family not in unary.UNARY or unary.view_atoms(family, eps0, n) > UNARY_VIEW_ATOMS:
        return ()
    P, Q = unary.dataset_view(family, eps0, n)
    return ((pld_from_pmfs(P, Q), pld_from_pmfs(Q, P)),)


def _plds_method(plds: tuple[PLD, PLD], n: int) -> Method:
    """One round's lower end from the exact PLDs of a view of n users (upper ends left at 1 and
    inf)."""
    return Method(lambda eps: [Bracket(max(certified_lower(p, e, n) for p in plds), 1.0)
                               for e in eps],
                  lambda delta: [Bracket(plds_epsilon(plds, d, n), math.inf) for d in delta])


def _view_method(view: View, n: int) -> Method:
    """One round's lower end from one view (upper ends left at 1 and inf)."""
    return Method(lambda eps: [Bracket(view_delta(view, n, e), 1.0) for e in eps],
                  lambda delta: [Bracket(_view_epsilon(view, n, d), math.inf) for d in delta])


def _composed_pair(pq: PLD, qp: PLD, K: int) -> PLDPair | Method:
    """A pair of PLDs to compose K times; laws with disjoint supports (all mass at +inf both
    ways) have delta = 1 at every eps."""
    if pq.inf_mass >= 1.0 and qp.inf_mass >= 1.0:
        return Method.constant(1.0, math.inf, K)
    return PLDPair.of(pq, qp)


def delta_bracket(n: int, eps: ArrayLike, compositions: int = 1, **randomiser) -> list[Bracket]:
    """Certified Brackets for delta(eps) of the shuffled randomiser (``family=``, ``matrix=``,
    ``k=``, ``d=``, ``eps0=``, ``accuracy=`` as in :func:`randomizer_model`): the model answered by
    ``shuffle_lib.core.evaluate.answer``, the command line's path (``python -m shuffle_lib delta
    randomizer``), each bracket with ``accuracy_met`` and ``limit`` set."""
    v.reals("eps", np.atleast_1d(eps), lo=0.0)
    return _brackets("delta", n, eps, compositions, randomiser)


def epsilon_bracket(n: int, delta: ArrayLike, compositions: int = 1, **randomiser) -> list[Bracket]:
    """Certified Brackets for eps(delta) of the shuffled randomiser; see :func:`delta_bracket`.  A
    bracket that misses the accuracy contract by no more than the grid explains is evaluated
    again on a model built at a finer accuracy (``shuffle_lib.core.evaluate.refined_epsilon``)."""
    v.reals("delta", np.atleast_1d(delta), lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    return _brackets("epsilon", n, delta, compositions, randomiser)


def _brackets(verb, n, targets, compositions, randomiser):
    """The declaration's path: :func:`randomizer_model` at the query's accuracy, built again at a
    finer one where an eps bracket is refined."""
    acc = v.real("accuracy", randomiser.pop("accuracy", DEFAULT_ACCURACY), 0.0, 1.0, lo_open=True)
    model = randomizer_model(n, compositions=compositions, accuracy=acc, **randomiser)

    def rebuild(a: float) -> Model:
        return randomizer_model(n, compositions=compositions, accuracy=a, **randomiser)

    return evaluate.answer([(model, rebuild)], verb, np.atleast_1d(targets), compositions, acc)


def randomizer_rdp(params: dict, orders: Sequence[float]) -> list[Bracket]:
    """Certified Renyi brackets of one round: the upper PLD of :func:`upper_pld` (its tail mass at
    +inf bounded by the pair's largest loss log((beta + s)/s)) and the views' exact PLDs."""
    orders = v.reals("orders", orders, lo=1.0, lo_open=True)
    if params.get("noise", "none") != "none":
        raise ValueError("rdp: --noise has no certified Renyi route yet.")
    decs, _ = decompositions(
        params["family"], params["matrix"] or None, params["k"], params["d"], params["eps0"]
    )
    if not decs:
        return [Bracket(0.0, 0.0) for _ in orders]
    n, ups, lows = params["n"], [], []
    for x in decs:
        up = upper_pld(x, n, 1, DEFAULT_ACCURACY)
        top = math.log((x.beta + x.s) / x.s) * (1 + 1e-12) if x.s > 0 else None
        ups.append(PLDPair.of(up, max_loss=top))
        views = [pl for w in x.views for pl in view_plds(w, n, 1, DEFAULT_ACCURACY)] or [(up, up)]
        lows += [PLDPair.of(a, b, max_loss=top) for a, b in views]
    return evaluate.rdp_brackets(Model(tuple(ups), tuple(lows)), orders)


def _build(n, family, matrix, k, d, eps0, noise="none", scale=0.0, compositions=1,
           accuracy=DEFAULT_ACCURACY):
    if noise != "none":
        if family != "matrix" or matrix or k or d or eps0:
            raise ValueError("--noise takes --scale only; --family, --matrix, --k, --d, --eps0 "
                             "are for finite randomisers.")
        if not scale > 0:
            raise ValueError(f"--noise {noise} needs --scale > 0, got {scale}.")
        return noise_model(n, noise, scale, compositions)
    if scale:
        raise ValueError("--scale belongs to --noise.")
    if family == "matrix" and (k or d or eps0):
        raise ValueError("--k, --d and --eps0 belong to --family; a --matrix gives its own eps0.")
    if family != "matrix" and matrix:
        raise ValueError("give either --matrix or --family, not both.")
    return randomizer_model(n, family, matrix or None, k, d, eps0, compositions, accuracy)


def _calibration_range(name: str, fixed: dict) -> tuple[float, float] | None:
    """The range ``calibrate`` searches for eps0 (a named family) or scale (a numeric randomiser);
    a clear refusal where the setting does not apply.

    k-RR, SUE, BLH and HR at a smaller eps0 are each a post-processing of themselves at a larger
    one (mixing with the uniform report, or flipping each bit once more), applied to every report
    alike, so their shuffled privacy is monotone in eps0; OUE's and OLH's are not by that argument
    (OUE keeps the true bit at 1/2, OLH's hash range g changes with eps0), and their upper ends
    were checked monotone on a grid (n = 200, eps0 in [0.5, 4], K = 1 and 3) instead.  The
    returned value is certified either way: each is a full query.  A larger noise scale is a
    post-processing (add independent noise), so privacy is monotone in the scale."""
    noise, family = fixed.get("noise") or "none", fixed.get("family") or "matrix"
    if name == "eps0":
        if noise != "none":
            raise ValueError("--solve eps0: a --noise randomiser has no eps0; solve for --scale.")
        if family == "matrix":
            raise ValueError("--solve eps0 needs --family (" + "|".join(FAMILIES) + "): "
                             "a --matrix randomiser fixes its own eps0.")
        return 1e-6, 30.0
    if name == "scale":
        if noise == "none":
            raise ValueError("--solve scale needs --noise (" + "|".join(NOISES) + ").")
        return SCALE_RANGE
    return None


register(
    Mechanism(
        name="randomizer",
        summary="any finite local randomiser, shuffled (--matrix FILE or --family "
                "krr|sue|oue|olh|blh|hr), or a numeric one (--noise gaussian|laplace --scale S)",
        source="Balle et al. 2019 (privacy blanket); Feldman et al. 2021 Thm 3.2; Su, Cheng, Wang "
               "2026 "
        "(general clones); this project (chapter 'Shuffling the randomisers people deploy')",
        params=(
            Param(
                "n",
                int,
                "number of users, the differing one included",
                lo=1,
                hi=MAX_N,
                more_private="up",
            ),
            Param(
                "family",
                str,
                "a named randomiser (with --eps0 and --k or --d), or 'matrix' for --matrix "
                "(the default)",
                choices=("matrix",) + FAMILIES,
                default="matrix",
                placeholder=True,
            ),
            Param(
                "matrix",
                str,
                'JSON file {"matrix": [[...], ...]}: one row per input, each a distribution '
                f"over the outputs (numbers only; at most {v.JSON_MAX_BYTES / 1e6:g} MB, "
                f"{MAX_INPUTS} rows, "
                f"{MAX_ENTRIES} entries)",
                default="",
                placeholder=True,
            ),
            Param("k", int, "--family krr: number of values (>= 2)", lo=0, hi=10**9, default=0,
                  placeholder=True),
            Param("d", int, "--family sue/oue/olh/blh/hr: domain size (>= 3)", lo=0, hi=10**9,
                  default=0, placeholder=True),
            Param(
                "eps0",
                float,
                "--family: the randomiser's LDP parameter, in (0, 30]",
                lo=0.0,
                hi=30.0,
                default=0.0,
                placeholder=True,
                more_private="down",
            ),
            Param("noise", str,
                  "a numeric randomiser x + noise on inputs in [0, 1] (sensitivity 1), with "
                  "--scale",
                  choices=("none",) + NOISES, default="none", placeholder=True),
            Param("scale", float, "--noise: the Gaussian's standard deviation / the Laplace b",
                  lo=0.0, hi=1e6, default=0.0, placeholder=True, more_private="up"),
        ),
        build=_build,
        uses=("compositions", "accuracy"),
        rdp=lambda params, orders: randomizer_rdp(params, orders),
        calibration_range=_calibration_range,
        example={"n": 100, "family": "krr", "k": 3, "eps0": 1.0},
    )
)
