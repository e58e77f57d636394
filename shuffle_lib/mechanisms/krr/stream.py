"""One round of shuffled k-RR at any n: the exact delta(eps) streamed as a sum over slices.

The exact PLDs of :mod:`.base` hold Theta(n^{3/2}) (A_w) or O(n) (A_s) atoms; one round needs
only delta(eps) = sum over views [P(v) - e^eps Q(v)]_+ (Koskela et al. 2021, Thm 5), and along one
count the likelihood ratio is monotone, so the positive part of each line of views is a prefix whose
sums are binomial CDFs.  Nothing is binned and no PLD is built:

* A_w (Koskela et al. 2021, Def. 9, App. A): given B = b and u, the ratio ((1-g)u + c_b)/((1-g)w +
  c_b) falls in w, so the views with P > e^eps Q are w <= W*(u, b); with (M1, M2) | b ~
  Multinomial(b; 1/k, 1/k) written Bin(m1; b, 1/k) Bin(m2; b - m1, 1/(k-1)), their P- and Q-masses
  are CDFs of M2.  Work O(#b x #u) per eps (about 60 n at tail 1e-24), streamed in chunks of b.
* A_s (Koskela et al. 2021, Def. 7): given A = a, loss log((a+1)/c) falls in c, and
  sum_{1 <= c <= c*} P[C = c](1 - e^eps c/(a+1)) = P[1 <= C <= c*] - e^eps/(a+1) E[C; C <= c*],
  with E[C; C <= c*] = M q P[Bin(M-1, q) <= c*-1]; work O(#a) per eps.

* A_w beyond ``BLOCK_ABOVE`` (b, u) cells (n >~ 5e5 at gamma = 0.5, k = 4; eps searches beyond
  ``EPS_BLOCK_ABOVE``, n >~ 3e3): blocks of b
  (:func:`weak_delta_blocked`).  Given b, the pair (P_b, Q_b) of (u, w) gains one independent
  uniform report from b to b + 1, a post-processing, so delta_b(eps) is non-increasing in b and
  each block's delta lies between the values at its two ends; blocks are halved until the bracket
  is ``BLOCK_RTOL`` (1e-3) wide on delta, or, in an eps search, until each end is on one side of
  the target.  Work O(#u) per evaluated b: eps(1e-8) at gamma = 0.5, k = 4 in 0.7 s at n = 1e6
  (the full stream: 75 s), 2.2 s at 1e7 (more than 10 min), 8 s at 1e8; eps(1e-6) at
  gamma = 0.853, n = 1e5 in 0.24 s (5.4 s streamed, the same bracket).

Certified: windows on b and u (on a) leave out P-mass <= ``tail``; the sum over the window is a
lower end (its terms are >= 0) and lower + tail an upper end.  Floating point (scipy's Boost
binomial CDFs and PMFs to ~1e-11 relative up to n = 1e7, checked against 40-digit sums in
tests/test_krr_lattice.py; cephes' ``bdtr`` is off by 1.6e-8 there and is not used; differences
of two CDFs cancelling by at most ~1e3 here) is covered by a relative margin ``ROUND`` on each
side.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq
from scipy.stats import binom

from shuffle_lib.core import validate as v
from shuffle_lib.core.binomial import binom_window
from shuffle_lib.core.types import Bracket
from shuffle_lib.mechanisms.krr.base import Adversary, check_params, eps0_from_gamma, krr_probs

# P-mass left out by the windows (redone at 1e-6 delta where delta < 1e-8; eps: 1e-6 delta)
STREAM_TAIL = 1e-12
ROUND = 1e-7          # relative floating-point margin on each end (1e-11 x 1e3 cancellation, x 10)
CHUNK = 1 << 20       # (b, u) cells per streamed chunk
BLOCK_ABOVE = 3 * 10 ** 7   # A_w with more (b, u) cells than this is bracketed on blocks of b
EPS_BLOCK_ABOVE = 10 ** 5   # the same for eps searches (their blocks stop once an end is decided)
# the blocked bracket's relative width on delta (delta queries; ~1e-9 streamed)
BLOCK_RTOL = 1e-3


def _windows(n, gamma, k, tail):
    """b values and their u windows [lo, hi + 1]; P-mass outside <= tail (half on b, half on u |
    b)."""
    N = n - 1
    b_lo, b_hi = binom_window(N, gamma, tail / 2)
    bs = np.arange(b_lo, b_hi + 1)
    lo, hi = binom_window(bs, 1.0 / k, tail / 2)
    return bs, lo, hi + 1


def _chunks(bs, lo, hi):
    """Ragged (b, u) cells in chunks of about CHUNK cells: ``(index into bs, b, u)``."""
    counts = hi - lo + 1
    ends = np.cumsum(counts)
    start = 0
    while start < bs.size:
        stop = max(
            int(np.searchsorted(ends, ends[start] - counts[start] + CHUNK, side="right")), start + 1
        )
        c = counts[start:stop]
        blk = np.repeat(np.arange(start, stop), c)
        first = np.cumsum(c) - c
        u = np.arange(int(c.sum())) - np.repeat(first, c) + lo[blk]
        yield blk, bs[blk], u
        start = stop


def _cdf(w, m, r):
    """P[Bin(m, r) <= w], 0 for w < 0 (r = 1 allowed: k = 2)."""
    m = np.maximum(m, 0)
    if r >= 1.0:
        return (w >= m).astype(float)
    inner = (w >= 0) & (w < m)
    f = binom.cdf(np.where(inner, w, 0), np.where(inner, m, 1), r)
    return np.where(w >= m, 1.0, np.where(inner, f, 0.0))


def _pmf(w, m, r):
    """P[Bin(m, r) = w] (0 outside 0..m; r = 1 allowed)."""
    m = np.maximum(m, 0)
    if r >= 1.0:
        return (w == m).astype(float)
    return binom.pmf(w, m, r)


def weak_delta_lower(
    n: int, gamma: float, k: int, eps: np.ndarray, tail: float, stride: int = 1
) -> np.ndarray:
    """Sum of [P - e^eps Q]_+ over the A_w views whose (b, u) lie in the windows: the lower end.

    ``stride`` > 1 samples every stride-th b and u (weight stride^2): an uncertified estimate, used
    only to locate eps(delta) before the certified passes.  Source: Koskela et al. 2021, Def. 9,
    App. A.
    """
    n, gamma, k = check_params(n, gamma, k)
    eps = v.reals("eps", eps, lo=0.0)
    tail = v.real("tail", tail, 0.0, 1.0)
    stride = v.integer("stride", stride, lo=1, hi=n)
    N = n - 1
    bs, lo, hi = _windows(n, gamma, k, tail)
    if stride > 1:
        bs, lo, hi = bs[::stride], lo[::stride], hi[::stride]
    ee = np.exp(eps)
    total = np.zeros(eps.size)
    for _, b, u in _chunks(bs, lo, hi):
        if stride > 1:
            keep = (u - lo[0]) % stride == 0
            b, u = b[keep], u[keep]
        wb = binom.pmf(b, N, gamma) * stride ** 2
        for i, cells in enumerate(_weak_cells(b, u, gamma, k, ee)):
            total[i] += float(np.sum(wb * cells))
    return total


def _weak_cells(b, u, gamma, k, ee):
    """For each e^eps in ``ee``: the sum over w of [P_b(u, w) - e^eps Q_b(u, w)]_+ at each cell (b,
    u).

    Given M1 = u (or u - 1) the ratio falls in w, so the positive part is the prefix w <= W*: CDFs
    of M2 | M1 ~ Bin(b - M1, 1/(k-1)).  Koskela et al. 2021, Def. 9, App. A."""
    p1, p2 = krr_probs(gamma, k)
    p3 = 1.0 - p1 - p2
    r = 1.0 / (k - 1)
    pu, pu1 = binom.pmf(u, b, 1.0 / k), binom.pmf(u - 1, b, 1.0 / k)
    c = gamma * (b + 1.0) / k
    m = b - u                                  # trials of M2 given M1 = u (M1 = u-1: m + 1)
    for e in ee:
        x = (((1.0 - gamma) * u + c) / e - c) / (1.0 - gamma)
        W = np.ceil(x).astype(np.int64) - 1    # largest w with ratio > e^eps
        f0 = _cdf(W, m, r)
        f1 = np.maximum(f0 - _pmf(W, m, r), 0.0)   # P[Bin(m, r) <= W - 1]
        f_up = np.where(m >= 0, (1.0 - r) * f0 + r * f1, W >= 0)   # P[Bin(m + 1, r) <= W]
        t_a, t_b, t_c = pu1 * np.where(u >= 1, f_up, 0.0), pu * f1, pu * f0
        sp_ = p1 * t_a + p2 * t_b + p3 * t_c
        sq_ = p2 * t_a + p1 * t_b + p3 * t_c
        yield np.maximum(sp_ - e * sq_, 0.0)


def _weak_rows(gamma, k, bs, lo, hi, ee):
    """``rows[j, i]``: the sum of [P_b - e^eps_i Q_b]_+ over the u-window [lo_j, hi_j] of b =
    bs[j]."""
    rows = np.zeros((bs.size, ee.size))
    for blk, b, u in _chunks(bs, lo, hi):
        for i, cells in enumerate(_weak_cells(b, u, gamma, k, ee)):
            rows[:, i] += np.bincount(blk, weights=cells, minlength=bs.size)
    return rows


def weak_delta_blocked(
    n: int,
    gamma: float,
    k: int,
    eps: np.ndarray,
    tail: float,
    rtol: float = BLOCK_RTOL,
    target: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Certified ends ``(lower, upper)`` of the one-round A_w delta(eps), from blocks of b.

    Given B = b the adversary's pair (P_b, Q_b) is the law of the counts (u, w) of reports 1 and 2
    among b uniform reports and the target's; (P_{b+1}, Q_{b+1}) adds one more independent uniform
    report to both, a post-processing, so delta_b(eps) is non-increasing in b (data processing), and
    delta(eps) = sum_b P[B = b] delta_b(eps).  On a block s..e of b, delta_b lies in
    [delta_e, delta_s]: the lower end takes each block's delta_e (its u-window sum, >= 0 terms),
    the upper end its delta_s plus the u-window's cut (<= tail / 2) and the b-window's (tail / 2).
    Blocks are halved where they widen the bracket most, until upper - lower <= rtol * lower (or
    the tail), down to single b, where it is the streamed sum of :func:`weak_delta_lower`; with a
    ``target``, an eps is also done once its bracket lies on one side of it (what a search for
    eps(target) needs to know).  Work:
    O(#u) per evaluated b instead of O(#b #u).  Koskela et al. 2021, Def. 9, App. A;
    tests/test_krr.py checks the monotonicity and the bracket against the exact PLD.
    """
    n, gamma, k = check_params(n, gamma, k)
    eps = v.reals("eps", eps, lo=0.0)
    tail = v.real("tail", tail, 0.0, 1.0)
    rtol = v.real("rtol", rtol, 0.0, 1.0, lo_open=True)
    if target is not None:
        target = v.real("target", target, 0.0, 1.0)
    ee = np.exp(eps)
    bs, lo, hi = _windows(n, gamma, k, tail)
    wb = binom.pmf(bs, n - 1, gamma)
    rows = np.full((bs.size, eps.size), np.nan)      # evaluated b only

    def at(ix):
        todo = np.unique(ix[np.isnan(rows[ix, 0])])
        if todo.size:
            rows[todo] = _weak_rows(gamma, k, bs[todo], lo[todo], hi[todo], ee)
        return rows[ix]

    starts = np.unique(np.linspace(0, bs.size, min(16, bs.size) + 1).astype(np.int64))[:-1]
    while True:
        ends = np.append(starts[1:], bs.size) - 1
        mass = np.add.reduceat(wb, starts)[:, None]
        low_j, up_j = mass * at(ends), mass * at(starts)
        low = low_j.sum(axis=0) * (1.0 - ROUND)
        up = up_j.sum(axis=0) * (1.0 + ROUND) + tail
        wide = (up - low) > np.maximum(rtol * low, 2.0 * tail)
        if target is not None:
            wide &= (low < target) & (up > target)
        if not wide.any():
            return low, np.minimum(up, 1.0)
        gap = (up_j - low_j)[:, wide].max(axis=1)
        split = (ends > starts) & (
            gap >= np.quantile(gap[ends > starts], 0.5) if (ends > starts).any() else False
        )
        if not split.any():
            return low, np.minimum(up, 1.0)
        mids = (starts[split] + ends[split] + 1) // 2
        starts = np.union1d(starts, mids)


def strong_delta_lower(n: int, gamma: float, k: int, eps: np.ndarray, tail: float) -> np.ndarray:
    """+inf mass plus sum over the a-window of (1-g) P[A=a] sum_c [...]_+ (A_s): the lower end.

    Source: Koskela et al. 2021, Def. 7 (loss log((a+1)/c), +inf at c = 0).
    """
    n, gamma, k = check_params(n, gamma, k)
    eps = v.reals("eps", eps, lo=0.0)
    tail = v.real("tail", tail, 0.0, 1.0)
    N, p = n - 1, gamma / k
    q = p / (1.0 - p)
    a_lo, a_hi = binom_window(N, p, tail)
    a = np.arange(a_lo, a_hi + 1)
    M = N - a
    wa = (1.0 - gamma) * binom.pmf(a, N, p)
    inf_mass = (1.0 - gamma) * math.exp(N * math.log1p(-p))
    out = np.empty(eps.size)
    for i, e in enumerate(eps):
        # largest c with (a+1)/c > e^eps
        cs = np.ceil((a + 1.0) * math.exp(-e)).astype(np.int64) - 1
        cs = np.minimum(cs, M)
        with np.errstate(under="ignore"):
            mass = np.where(cs >= 1, binom.cdf(np.maximum(cs, 0), M, q) - (1.0 - q) ** M, 0.0)
            mean = np.where(
                cs >= 1, M * q * binom.cdf(np.maximum(cs - 1, 0), np.maximum(M - 1, 0), q), 0.0
            )
        out[i] = inf_mass + float(
            np.sum(wa * np.maximum(mass - math.exp(e) / (a + 1.0) * mean, 0.0))
        )
    return out


def _lower(adversary, n, gamma, k, eps, tail, stride=1):
    if gamma == 1.0:
        return np.zeros(eps.size)                  # every report uniform: P = Q
    if adversary == "weak" or stride > 1:
        return weak_delta_lower(n, gamma, k, eps, tail, stride)
    return strong_delta_lower(n, gamma, k, eps, tail)


def _cut(adversary, gamma, tail):
    return 0.0 if gamma == 1.0 else (tail if adversary == "weak" else (1.0 - gamma) * tail)


def delta_streamed(
    adversary: Adversary,
    n: int,
    gamma: float,
    k: int,
    eps: np.ndarray | list[float],
    tail: float = STREAM_TAIL,
) -> list[Bracket]:
    """Certified brackets for the tight one-round delta(eps) of shuffled k-RR, streamed (Koskela et
    al. 2021 Thm 5 on Def. 7 / Def. 9).  Where the cut ``tail`` exceeds 1e-4 of a lower end, those
    eps are redone with the tail at 1e-6 of its lower end (1e-18 of the tail where that is 0), up to
    four times."""
    adversary = v.choice("adversary", adversary, ("strong", "weak"))
    n, gamma, k = check_params(n, gamma, k)
    eps = v.reals("eps", eps, lo=0.0)
    tail = v.real("tail", tail, 0.0, 1.0)
    if _blocked(adversary, n, gamma, k, tail):
        return _delta_blocked(n, gamma, k, eps, tail)
    low = _lower(adversary, n, gamma, k, eps, tail)
    tails = np.full(eps.size, tail)

    def again(i, t):
        low[i] = _lower(adversary, n, gamma, k, eps[i:i + 1], t)[0]
    _redo_tails(lambda t: _cut(adversary, gamma, t), low, tails, again)
    return [Bracket(x * (1.0 - ROUND), min(1.0, x * (1.0 + ROUND) + _cut(adversary, gamma, t)))
            for x, t in zip(low, tails)]


def _redo_tails(cut, low, tails, again) -> None:
    """The tail rule: where the cut ``cut(tails)`` exceeds 1e-4 of a lower end, that eps is redone
    (``again(i, tail)`` updates ``low[i]``) with the tail at 1e-6 of its lower end, or 1e-18 of its
    tail while that is 0; up to four times, each eps on its own."""
    for _ in range(4):
        redo = np.flatnonzero((cut(tails) > 1e-4 * low) & (tails > 1e-300))
        if redo.size == 0:
            return
        for i in redo:
            tails[i] = max(1e-300, 1e-6 * low[i] if low[i] > 0 else 1e-18 * tails[i])
            again(i, float(tails[i]))


def _blocked(adversary, n, gamma, k, tail, above=None):
    """A_w whose streamed sum would visit more than ``above`` (default ``BLOCK_ABOVE``) (b, u)
    cells: blocks of b."""
    if adversary != "weak" or gamma == 1.0:
        return False
    _, lo, hi = _windows(n, gamma, k, tail)
    return int(np.sum(hi - lo + 1)) > (BLOCK_ABOVE if above is None else above)


def _delta_blocked(n, gamma, k, eps, tail):
    """:func:`weak_delta_blocked` with ``delta_streamed``'s tail rule: where the cut exceeds 1e-4 of
    a lower end, that eps is redone with the tail at 1e-6 of it (1e-18 of the tail while it is 0).
    The first tail is set from the sampled estimate of delta (``_stride``), so that one pass
    usually suffices."""
    guess = weak_delta_lower(n, gamma, k, eps, tail, _stride(n, gamma, k))
    tails = np.clip(1e-6 * guess, 1e-300, tail)
    low, up = np.empty(eps.size), np.empty(eps.size)

    def again(i, t):
        lo_i, up_i = weak_delta_blocked(n, gamma, k, eps[i:i + 1], t)
        low[i], up[i] = lo_i[0], up_i[0]
    for i in range(eps.size):
        again(i, float(tails[i]))
    _redo_tails(lambda t: t, low, tails, again)     # the A_w cut is the tail itself (gamma < 1)
    return [Bracket(float(a), float(b)) for a, b in zip(low, up)]


def _max_loss(adversary, n, gamma, k):
    """No view has a finite loss above this: eps0 (A_w, Koskela et al. 2021, App. A), log n (A_s:
    (a+1)/c <= n)."""
    return eps0_from_gamma(gamma, k) if adversary == "weak" else math.log(n)


def _stride(n, gamma, k):
    """Sampling stride of the search estimate: about a quarter of the smaller standard deviation of
    B and of M1 | B, so the sampled sums of these smooth terms stay accurate (~1e-6 relative)."""
    sd = math.sqrt(min((n - 1) * gamma * (1.0 - gamma), (n - 1) * gamma / k * (1.0 - 1.0 / k)))
    return max(1, int(sd / 4))


def _guess(adversary, n, gamma, k, delta, tail, top):
    """eps where the (estimated) lower end of delta(eps) crosses delta; 0 or ``top`` at the ends."""
    stride = _stride(n, gamma, k) if adversary == "weak" else 1

    def f(e):
        d = float(_lower(adversary, n, gamma, k, np.array([e]), tail, stride)[0])
        return math.log(max(d, 1e-320)) - math.log(delta)
    if f(0.0) <= 0:
        return 0.0
    if f(top) >= 0:
        return top
    return brentq(f, 0.0, top, xtol=1e-15, rtol=1e-9)


def _epsilon_one(adversary, n, gamma, k, delta, rtol):
    tail = 1e-6 * delta
    cut = _cut(adversary, gamma, tail)
    top = _max_loss(adversary, n, gamma, k)

    blocked = _blocked(adversary, n, gamma, k, tail, min(BLOCK_ABOVE, EPS_BLOCK_ABOVE))

    def ends(es):        # (certified lower ends, certified upper ends) of delta at es, one pass
        if blocked:      # refined until each end is on one side of delta (or 1e-6 wide)
            return weak_delta_blocked(
                n, gamma, k, np.asarray(es, dtype=float), tail, rtol=1e-6, target=delta
            )
        x = _lower(adversary, n, gamma, k, np.asarray(es, dtype=float), tail)
        return x * (1.0 - ROUND), x * (1.0 + ROUND) + cut

    guess = _guess(adversary, n, gamma, k, delta, tail, top)
    width = rtol / 2
    # certify guess (1 -+ width); widen until both ends hold
    while 0.0 < guess < top and width < 1.0:
        e_lo, e_hi = guess * (1.0 - width), min(top, guess * (1.0 + width))
        (d_lo, _), (_, d_hi) = ends([e_lo, e_hi])
        if d_lo >= delta and d_hi <= delta:
            return Bracket(e_lo, e_hi)
        width *= 4.0
    # the ends of the range: eps = 0, or no finite eps
    (_, lo_top), (up0, up_top) = ends([0.0, top])
    if up0 <= delta:
        return Bracket(0.0, 0.0)
    if up_top > delta:                   # the +inf mass (A_s) or the cut: no finite upper end
        return Bracket(top if lo_top > delta else 0.0, math.inf)
    return Bracket(0.0, top)             # pragma: no cover  (not certified closer: never seen)


def epsilon_streamed(
    adversary: Adversary,
    n: int,
    gamma: float,
    k: int,
    delta: np.ndarray | list[float],
    rtol: float = 2e-3,
) -> list[Bracket]:
    """Certified brackets for the tight one-round eps(delta), of relative width ``rtol`` (or wider
    when the first try does not certify).

    Located on an estimate of delta(eps) (A_w: the streamed sum sampled every few b and u), then
    certified by one streamed pass at both ends: delta's lower end >= delta at the bracket's lower
    end, its upper end <= delta at the upper end (the windows' tail is 1e-6 delta).  Koskela et al.
    2021, Thm 5.
    """
    adversary = v.choice("adversary", adversary, ("strong", "weak"))
    n, gamma, k = check_params(n, gamma, k)
    delta = v.reals("delta", delta, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    rtol = v.real("rtol", rtol, 1e-9, 0.1)
    return [_epsilon_one(adversary, n, gamma, k, float(d), rtol) for d in delta]
