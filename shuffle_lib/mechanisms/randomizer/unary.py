"""The unary encodings (SUE, OUE), shuffled: a dominating pair from their bit structure.

In a unary encoding of d values each report is d bits, drawn independently given the input x:
bit x is 1 with probability p1, every other bit with probability p0 < p1 (SUE, RAPPOR's
symmetric form: p1 = e^(eps0/2) / (1 + e^(eps0/2)), p0 = 1 - p1; OUE: p1 = 1/2,
p0 = 1 / (e^eps0 + 1); Wang et al. 2017, Sec. 4.3).  For the differing pair (x0, x1) write
b0, b1 for a report's bits x0 and x1.

**The split of the others' own bit.**  A user at y not in {x0, x1} sends bits (b0, b1) with law
Bern(p0)^2 and her own bit y with law Bern(p1) = lam Bern(p0) + (1 - lam) delta_1, where
lam = (1 - p1) / (1 - p0) (the largest weight for which the rest is a law).  Draw every such
user's bit y from this mixture and tell the adversary which users drew the point mass delta_1:
a post-processing of that view gives the shuffled output, so its delta is no smaller.  A report
drawn from the point mass is independent of x: replace it by a symbol "bot".  Every other
report has all bits but (b0, b1) i.i.d. Bern(p0), independent of (b0, b1), as the differing
user's report has under both inputs: those bits are fresh noise and are dropped.  What is left
is the randomiser R' on {0, 1}^2 and bot with rows

    x0: Bern(p1) x Bern(p0),   x1: Bern(p0) x Bern(p1),   z: lam Bern(p0)^2 + (1 - lam) bot,

and every dataset of the unary encoding maps to one of R' (inputs outside {x0, x1} to z) whose
delta is at least as large.  A user at x1 is a user at z whose bot is replaced by a fresh report
Bern(p0) x delta_1 (bit x1's law Bern(p1) splits as bit y's does), and a user at x0 likewise:
given the bots of a dataset with all others at z, a post-processor assigns them to a uniformly
random set of the others (they are exchangeable) and replaces the bots of those it makes x0 or
x1 users.  So the worst dataset of R' has all n - 1 others at z, and for every dataset of the
unary encoding

    delta(eps) <= delta_{R'}(eps),  others all at z.

**The pair in closed form.**  Relative to the z row, x0's row has density lam^-1 (p1/p0)^b0
((1 - p1)/(1 - p0))^(1 - b0) on {0, 1}^2, which is e^(eps0 b0) for both encodings (and 0 on bot).
Given the number M of non-bot reports (the differing user's always, each other's with
probability lam: M = 1 + Bin(n - 1, lam) under both inputs) the M reports' bits b0 and b1 are
i.i.d. Bern(p0) but for the differing user's, and the law of the M reports under x is the
Bern(p0)^(2M) law times (lam / M) S_x, with S_x = M + (e^eps0 - 1) A_x and A_x the number of
reports with bit x_x set (the density of a uniformly placed differing report; Balle et al. 2019,
Sec. 3).  So (A0, A1) is sufficient given M, and

    delta_M(eps) = (lam / M) E[(S_0 - e^eps S_1)^+],  A0, A1 i.i.d. Bin(M, p0),
    delta(eps) = E_M[delta_M(eps)],

the hockey stick of a pair that reveals M (the same law under both inputs).  delta_M decreases
in M (one more non-bot report is independent noise), so a block [m_i, m_{i+1}) of M values is
bounded by delta at its first m (upper end) and by delta at the next block's first (lower end).

**Why the split, and not the column counts.**  The bits outside {x0, x1} have one law under
both inputs, but the shuffle keeps each report whole: the others' own bits mark their reports
(an other at y sets bit y with probability p1, the differing user with p0), so the view says
which reports are likely the differing user's.  The counts (c_x0, c_x1) of reports with bit x0,
x1 set forget the marks; their pair, (N + Bern(p1), N + Bern(p0)) times its mirror with
N ~ Bin(n - 1, p0) for the others outside {x0, x1}, is a post-processing of the view and bounds
nothing from above (OUE, eps0 = 3, n = 1e4: eps(1e-6) = 0.110 from the counts, 0.1515 exactly
for the dataset (x, y*, ..., y*) of the lower view below).  No dataset is the worst at every
eps either: in the exact oracle's cases (d = 4, 5, n <= 5, eps0 = 1, 3, 5) all others at one
third value is the worst at the larger eps, all others at x1 at small eps in some (SUE,
eps0 = 3, n = 5: delta 0.538 against 0.513 at eps = 0.1, 0.287 against 0.380 at eps = 1).
What the split gives away is the marks: it takes (1 - lam) / p1 = 1 - e^-eps0 of the others'
marked reports out as not the differing user's, where a marked report's exact weight relative
to an unmarked one is e^-eps0 (both encodings).

**Error budget** (the upper end rounds up every term):

1. M outside its window of Bin(n - 1, lam) (mass <= TAIL) and, given M, A0 or A1 outside
   their windows of Bin(M, p0) (each mass <= TAIL under the reference law; the density
   (lam / M) S_0 is at most e^eps0, so at most 2 e^eps0 TAIL under x0): added in full.
2. The sums: each term is a product of a few doubles (<= 4 u relative, u = 2^-53) and a suffix
   sum over a window of w values (sequential: <= (w - 1) u), and the terms are summed pairwise
   (numpy's sum: <= (log2 w + 19) u); all are non-negative, so the P and e^eps Q parts (in the
   region where the term is positive) are each within (2 w + 64) u of their exact values,
   relative.  A relative max(1e-12, (2 w + 64) u) of their sum covers that (1e-12, as
   :func:`shuffle_lib.mechanisms.clones.pairs.bracket_at` allows, up to w ~ 4500).
3. Blocks of M: the upper end takes each block at its first m (delta_M decreasing); composing,
   each block's pair at its first m, its losses rounded up onto a grid (rounding up dominates).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import binom

from shuffle_lib.core import budget, search
from shuffle_lib.core import validate as v
from shuffle_lib.core.binomial import binom_window
from shuffle_lib.core.constants import MAX_COMPOSITIONS
from shuffle_lib.core.pld import PLD, pld_from_losses

TAIL = 1e-30        # binomial mass left out of each window (added to the upper end)
BLOCKS = 256        # blocks of M for one round's delta
PLD_BLOCKS = 64     # blocks of M for a composed round's PLD (at most)
MIN_PLD_BLOCKS = 8  # fewer blocks: the composed route keeps the blanket pair
SUM_RTOL = 1e-12    # relative rounding allowance of the sums (error budget, item 2)
UNARY = ("sue", "oue")
MATRIX_MAX_D = 16   # unary_matrix: d 2^d entries, ~8 MB at d = 16


@dataclass(frozen=True)
class UnaryPair:
    """The dominating pair of a shuffled unary encoding (module docstring): ``n`` users, the
    others' non-bot weight ``lam``, the bit probability ``p0`` and eps0."""

    n: int
    lam: float
    p0: float
    eps0: float

    def __post_init__(self):
        object.__setattr__(self, "n", v.integer("n", self.n, lo=1, hi=10 ** 9))
        object.__setattr__(self, "lam", v.real("lam", self.lam, 0.0, 1.0, lo_open=True))
        object.__setattr__(self, "p0", v.real("p0", self.p0, 0.0, 0.5, lo_open=True))
        object.__setattr__(self, "eps0", v.real("eps0", self.eps0, 0.0, 30.0, lo_open=True))


def bit_probabilities(family: str, eps0: float) -> tuple[float, float]:
    """(p0, p1): the probability that a report's bit is set, for a bit not the input's (p0) and
    for the input's own (p1), of ``family`` in ('sue', 'oue') at eps0 in (0, 30].

    SUE: p1 = e^(eps0/2) / (1 + e^(eps0/2)), p0 = 1 - p1; OUE: p1 = 1/2, p0 = 1 / (e^eps0 + 1)
    (Wang, Blocki, Li and Jha 2017, "Locally Differentially Private Protocols for Frequency
    Estimation", USENIX Security, Sec. 4.3).  p0 < 1/2 is computed directly (no cancellation at
    large eps0: 1 - p1 there is off by up to 4e-10 relative) and SUE's p1 as its complement, so
    p0 + p1 = 1 exactly.

    Raises:
        ValueError: ``family`` not 'sue' or 'oue', or ``eps0`` outside (0, 30].
    """
    v.choice("family", family, UNARY)
    eps0 = v.real("eps0", eps0, 0.0, 30.0, lo_open=True)
    if family == "sue":
        p0 = 1.0 / (1.0 + math.exp(eps0 / 2))
        return p0, 1.0 - p0
    return 1.0 / (math.exp(eps0) + 1.0), 0.5


def unary_matrix(family: str, d: int, eps0: float) -> np.ndarray:
    """The d x 2^d matrix of ``family`` in ('sue', 'oue') on d values: row y is the law of a
    report of input y on the bit vectors, output o setting bit j iff (o >> j) & 1; the bits are
    independent, bit y set with probability p1 and every other with p0
    (:func:`bit_probabilities`; Wang et al. 2017, Sec. 4.3).

    Raises:
        ValueError: ``family`` not 'sue' or 'oue', ``eps0`` outside (0, 30], or ``d`` outside
            [1, MATRIX_MAX_D] (the matrix has d 2^d entries).
    """
    p0, p1 = bit_probabilities(family, eps0)
    d = v.integer("d", d, lo=1, hi=MATRIX_MAX_D)
    bits = (np.arange(2 ** d)[:, None] >> np.arange(d)) & 1         # [o, j]
    pj = np.where(np.eye(d, dtype=bool), p1, p0)[:, None]           # [y, ., j]
    return np.prod(np.where(bits[None], pj, 1 - pj), axis=2)


def unary_pair(family: str, eps0: float, n: int) -> UnaryPair:
    """The pair of ``family`` in ('sue', 'oue') at eps0 with n users (module docstring):
    SUE lam = p0 / p1, OUE lam = 1 / (2 (1 - p0)), p0 the probability of a bit not the input's
    (:func:`bit_probabilities`)."""
    p0, p1 = bit_probabilities(family, eps0)
    if family == "sue":
        return UnaryPair(n, p0 / p1, p0, eps0)
    return UnaryPair(n, p1 / (1.0 - p0), p0, eps0)


def _window(N: int, p: float) -> np.ndarray:
    lo, hi = binom_window(int(N), p, TAIL)
    return np.arange(int(lo), int(hi) + 1)


def _blocks(pair: UnaryPair, blocks: int) -> tuple[np.ndarray, np.ndarray, float]:
    """(first M of each block and one past the last, the blocks' masses, the mass left out)."""
    ms = _window(pair.n - 1, pair.lam) + 1
    edges = np.unique(np.linspace(ms[0], ms[-1] + 1, min(blocks, ms.size) + 1).astype(np.int64))
    pm = binom.pmf(ms - 1, pair.n - 1, pair.lam)
    mass = np.add.reduceat(pm, edges[:-1] - ms[0])
    return edges, mass, TAIL


class _Terms:
    """The eps-free parts of delta_M for the M values ``ms``, concatenated: per M its window of
    A (:func:`_window`), S = M + (e^eps0 - 1) A, p = P[A = a] and the suffix sums of p S and of p
    (each with a trailing 0).  The windows and PMFs of all M come from one elementwise call
    each (the same values as M by M)."""

    def __init__(self, pair: UnaryPair, ms: np.ndarray):
        ms = np.asarray(ms, dtype=np.int64)
        lo, hi = binom_window(ms, pair.p0, TAIL)
        sizes = np.asarray(hi) - lo + 1
        self.ms, self.lam = [int(m) for m in ms], pair.lam
        self.ends = np.cumsum(sizes)
        self.starts = self.ends - sizes
        a = np.arange(int(self.ends[-1])) - np.repeat(self.starts - lo, sizes)
        m_of = np.repeat(ms, sizes)
        self.pa = binom.pmf(a, m_of, pair.p0)
        self.S = m_of + math.expm1(pair.eps0) * a            # increasing in a within each M
        ps = self.pa * self.S
        zero = np.zeros(1)
        sp: list[np.ndarray] = []
        s1: list[np.ndarray] = []
        for i, j in zip(self.starts, self.ends):
            sp += [np.cumsum(ps[i:j][::-1])[::-1], zero]
            s1 += [np.cumsum(self.pa[i:j][::-1])[::-1], zero]
        self.sp, self.s1 = np.concatenate(sp), np.concatenate(s1)

    def delta_ms(self, eps: float, count: int) -> list[tuple[float, float]]:
        """(value, rounding allowance) of delta_M(eps) for the first ``count`` M values."""
        E = math.exp(eps)
        # for each a1 of an M, the a0 of that M with S(a0) > e^eps S(a1) (a suffix, its sums of
        # p S and p; the suffix arrays hold one more entry per M, hence the offset i).  That
        # suffix shrinks as a1 grows, and once it is empty the a1 adds exactly 0 to both sums:
        # only the a1 before are summed
        rows, sufs, cuts = [], [], [0]
        for i, (b, c) in enumerate(zip(self.starts[:count], self.ends[:count])):
            loc = np.searchsorted(self.S[b:c], E * self.S[b:c], side="right")
            k = int(np.searchsorted(loc, c - b))
            rows.append(np.arange(b, b + k))
            sufs.append(loc[:k] + b + i)
            cuts.append(cuts[-1] + k)
        row, idx = np.concatenate(rows), np.concatenate(sufs)
        pa, S = self.pa[row], self.S[row]
        P, Q = pa * self.sp[idx], E * S * pa * self.s1[idx]
        out = []
        for m, b, c, w in zip(self.ms, cuts, cuts[1:], self.ends - self.starts):
            # pairwise sums of non-negative terms (error budget, item 2)
            sum_p, sum_q = float(np.sum(P[b:c])), float(np.sum(Q[b:c]))
            scale = self.lam / m
            rtol = max(SUM_RTOL, (2 * int(w) + 64) * 2.0 ** -53)
            out.append((max(0.0, sum_p - sum_q) * scale, rtol * (sum_p + sum_q) * scale))
        return out


@functools.lru_cache(maxsize=4)
def _block_terms(pair: UnaryPair, blocks: int) -> tuple[np.ndarray, float, _Terms]:
    """(the blocks' masses, the mass left out, the terms at every block's first M and one past
    the last) of :func:`delta` with ``blocks`` blocks."""
    edges, mass, out = _blocks(pair, blocks)
    return mass, out, _Terms(pair, edges)


def delta_m(pair: UnaryPair, m: int, eps: float) -> tuple[float, float]:
    """(value, rounding allowance) of delta_M(eps) at M = m without the windows' tails."""
    v.instance("pair", pair, UnaryPair)
    m = v.integer("m", m, lo=1, hi=10 ** 9)
    eps = v.real("eps", eps, 0.0)
    return _Terms(pair, np.array([m])).delta_ms(eps, 1)[0]


def delta(pair: UnaryPair, eps: float, blocks: int = BLOCKS) -> tuple[float, float]:
    """Certified (lower, upper) of the pair's delta(eps): the lower end is the pair's own (the
    blocks at their next block's first M) and bounds nothing about the encoding; the upper end
    bounds the shuffled encoding's delta(eps) for every dataset (module docstring)."""
    v.instance("pair", pair, UnaryPair)
    eps = v.real("eps", eps, 0.0)
    return _delta(pair, eps, v.integer("blocks", blocks, lo=1, hi=10 ** 9), True)


def _delta(pair: UnaryPair, eps: float, blocks: int, lower: bool) -> tuple[float, float]:
    """:func:`delta` on checked arguments; ``lower=False`` leaves the lower end at 0 (and the
    last block's next M unevaluated)."""
    mass, out, terms = _block_terms(pair, blocks)
    at = terms.delta_ms(eps, mass.size + 1 if lower else mass.size)
    hi = math.fsum(w * (d + err) for w, (d, err) in zip(mass, at[:-1] if lower else at))
    hi += out + 2 * math.exp(pair.eps0) * TAIL
    lo = math.fsum(w * max(0.0, d - err) for w, (d, err) in zip(mass, at[1:])) if lower else 0.0
    return max(0.0, lo * (1 - 1e-12)), min(1.0, hi * (1 + 1e-12))


def upper_epsilon(pair: UnaryPair, target: float) -> float:
    """An eps whose certified delta upper end is <= ``target``, near the least (Illinois on
    [0, eps0]; eps0 itself holds: the pair is eps0-DP, a post-processing of one report)."""
    v.instance("pair", pair, UnaryPair)
    target = v.real("target", target, 0.0, 1.0, lo_open=True, hi_open=True)
    return _upper_epsilon(pair, target)


@functools.lru_cache(maxsize=256)
def _upper_epsilon(pair: UnaryPair, target: float) -> float:
    """:func:`upper_epsilon` on checked arguments (a deterministic search: its answer is kept
    per (pair, target), which the one-round model and the composed route's choice both ask)."""
    seen: dict[float, float] = {}

    def f(e: float) -> float:                 # each eps evaluated once (the search asks again)
        if e not in seen:
            seen[e] = _delta(pair, e, BLOCKS, False)[1]
        return seen[e]
    if f(0.0) <= target:
        return 0.0
    if f(pair.eps0) > target:
        return pair.eps0
    return search.illinois(f, target, 0.0, pair.eps0,
                           lambda a, b: b - a <= 1e-10 * max(b, 1e-9))


def pld_blocks(pair: UnaryPair, max_atoms: float) -> int:
    """The most blocks of M, up to PLD_BLOCKS, whose atoms (blocks x window^2, the largest
    window) stay within ``max_atoms``; 0 when not even MIN_PLD_BLOCKS do."""
    v.instance("pair", pair, UnaryPair)
    max_atoms = v.real("max_atoms", max_atoms, 0.0, lo_open=True)
    ms = _window(pair.n - 1, pair.lam) + 1
    per = _window(int(ms[-1]), pair.p0).size ** 2
    b = min(PLD_BLOCKS, int(max_atoms // per))
    return b if b >= MIN_PLD_BLOCKS else 0


def upper_pld(pair: UnaryPair, compositions: int, accuracy: float,
              blocks: int = PLD_BLOCKS) -> PLD:
    """A PLD dominating one round (for composing): M revealed, each block's pair at its first M,
    the loss log(S_0 / S_1) rounded up onto the grid accuracy / (8 compositions); the windows'
    tails (module docstring, item 1) at +inf."""
    v.instance("pair", pair, UnaryPair)
    compositions = v.integer("compositions", compositions, lo=1, hi=MAX_COMPOSITIONS)
    h = v.real("accuracy", accuracy, 0.0, 1.0, lo_open=True) / (8.0 * compositions)
    edges, mass, out = _blocks(pair, v.integer("blocks", blocks, lo=1, hi=10 ** 6))
    terms = _Terms(pair, edges[:-1])
    sizes = terms.ends - terms.starts
    for m, size in zip(terms.ms, sizes):
        budget.check_bytes(16.0 * size ** 2, f"the unary pair's {size}^2 atoms at M = {m}",
                           "ask for fewer users")
    ends = np.cumsum(sizes.astype(np.int64) ** 2)
    idx, wts = np.empty(int(ends[-1]), dtype=np.int64), np.empty(int(ends[-1]))
    for m, w, b, c, end in zip(terms.ms, mass, terms.starts, terms.ends, ends):
        log_s, pa = np.log(terms.S[b:c]), terms.pa[b:c]
        # every block's atoms in order into one array (the histogram below sums in that order)
        loss = np.subtract.outer(log_s, log_s)
        # the logs are within 1e-15 absolute: 1e-12 more rounds every loss up
        loss += 1e-12
        loss /= h
        idx[end - loss.size: end] = np.ceil(loss, out=loss).astype(np.int64).ravel()
        p = np.multiply.outer(pa * terms.S[b:c], pa)
        p *= pair.lam / m
        p *= w
        wts[end - p.size: end] = p.ravel()
    k0 = int(idx.min())
    idx -= k0
    probs = np.bincount(idx, weights=wts)
    nz = probs > 0
    inf = out + 2 * math.exp(pair.eps0) * TAIL
    return pld_from_losses((np.nonzero(nz)[0] + k0) * h, probs[nz], min(1.0, inf))


# ---- the lower end: one concrete dataset, the others all at a third value ----

VIEW_TAIL = 1e-13   # reference mass each window of the lower view leaves out (lowers it only)
VIEW_BINS = 400     # bins of S_0 and of S_1 (the view is the pair of bins: a post-processing)


def _range(N: int, p: float) -> np.ndarray:
    lo, hi = binom_window(int(N), p, VIEW_TAIL)
    return np.arange(int(lo), int(hi) + 1)


def _windows(family: str, eps0: float, n: int):
    """(p0, p1, N values, their U windows' (lo, hi), their V windows' (lo, hi))."""
    p0, p1 = bit_probabilities(family, eps0)
    n = v.integer("n", n, lo=1, hi=10 ** 9)
    Ns = _range(n, p1)
    return p0, p1, Ns, binom_window(n - Ns, p0, VIEW_TAIL), binom_window(Ns, 1 - p0, VIEW_TAIL)


def view_atoms(family: str, eps0: float, n: int) -> int:
    """The atoms :func:`dataset_view` visits (sum over N of the two windows' product)."""
    _, _, _, (ul, uh), (wl, wh) = _windows(family, eps0, n)
    return int(np.sum((np.asarray(uh) - ul + 1) * (np.asarray(wh) - wl + 1)))


@functools.lru_cache(maxsize=16)
def dataset_view(family: str, eps0: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(P, Q): the laws under x0 and x1 of a post-processing of the shuffled output of the
    dataset (x, y*, ..., y*), y* outside {x0, x1}, so their hockey sticks bound the encoding's
    delta from below.

    Relative to the others' law the differing user's report has density
    e^(eps0 t_x), t_x = [b_x = 1, b* = 0] - [b_x = 0, b* = 1] (b* the report's bit y*), for SUE
    and OUE alike, so the output's law under x is the law of n i.i.d. reports of y* times
    S_x / n, S_x = n + (e^eps0 - 1) U_x - (1 - e^-eps0) V_x, with U_x (V_x) the reports with
    b_x = 1 and b* = 0 (b_x = 0 and b* = 1): given the number N of reports with b* = 1,
    U_0, U_1 ~ Bin(n - N, p0) and V_0, V_1 ~ Bin(N, 1 - p0), all independent.  The view is
    (S_0, S_1) binned onto VIEW_BINS cells each; windows of VIEW_TAIL per binomial are left out
    (the hockey stick of what is left is no larger)."""
    p0, p1, Ns, (ul, uh), (wl, wh) = _windows(family, eps0, n)
    e = math.exp(eps0)
    pN = binom.pmf(Ns, n, p1)
    laws = []
    for i, N in enumerate(int(x) for x in Ns):
        u, w = np.arange(ul[i], uh[i] + 1), np.arange(wl[i], wh[i] + 1)
        X = ((e - 1) * u[:, None] - (1 - 1 / e) * w[None, :]).ravel()
        px = binom.pmf(u, n - N, p0)[:, None] * binom.pmf(w, N, 1 - p0)[None, :]
        laws.append((n + X, px.ravel()))
    lo = min(float(S.min()) for S, _ in laws)
    hi = max(float(S.max()) for S, _ in laws)
    width = (hi - lo) / VIEW_BINS * (1 + 1e-12) or 1.0
    m = np.zeros((len(laws), VIEW_BINS))
    ms = np.zeros((len(laws), VIEW_BINS))
    for i, (S, px) in enumerate(laws):
        b = np.minimum(((S - lo) / width).astype(np.int64), VIEW_BINS - 1)
        m[i] = np.bincount(b, weights=px, minlength=VIEW_BINS)
        ms[i] = np.bincount(b, weights=px * S, minlength=VIEW_BINS)
    # sum over N of P(N) (E[S_0 1{bin}] / n) x P(bin): the law under x0; Q with S on the other
    P = (ms * (pN / n)[:, None]).T @ m
    Q = P.T.copy()
    keep = (P > 0) | (Q > 0)
    return P[keep], Q[keep]
