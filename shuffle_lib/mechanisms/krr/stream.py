"""One round of shuffled k-RR at any n: the exact delta(eps) streamed as a sum over slices.

The exact PLDs of :mod:`.base` hold Theta(n^{3/2}) (A_w) or O(n) (A_s) atoms; one round needs
only delta(eps) = sum over views [P(v) - e^eps Q(v)]_+ (seed 000 Thm 5), and along one count the
likelihood ratio is monotone, so the positive part of each line of views is a prefix whose sums
are binomial CDFs.  Nothing is binned and no PLD is built:

* A_w (000 Def. 9, App. A): given B = b and u, the ratio ((1-g)u + c_b)/((1-g)w + c_b) falls in
  w, so the views with P > e^eps Q are w <= W*(u, b); with (M1, M2) | b ~ Multinomial(b; 1/k, 1/k)
  written Bin(m1; b, 1/k) Bin(m2; b - m1, 1/(k-1)), their P- and Q-masses are CDFs of M2.  Work
  O(#b x #u) per eps (about 60 n at tail 1e-24), streamed in chunks of b.
* A_s (000 Def. 7): given A = a, loss log((a+1)/c) falls in c, and
  sum_{1 <= c <= c*} P[C = c](1 - e^eps c/(a+1)) = P[1 <= C <= c*] - e^eps/(a+1) E[C; C <= c*],
  with E[C; C <= c*] = M q P[Bin(M-1, q) <= c*-1]; work O(#a) per eps.

Certified: windows on b and u (on a) leave out P-mass <= ``tail``; the sum over the window is a
lower end (its terms are >= 0) and lower + tail an upper end.  Floating point (CDFs and PMFs to
~1e-14 relative, differences of two CDFs cancelling by at most ~1e3 here) is covered by a relative
margin ``ROUND`` on each side.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special
from scipy.optimize import brentq
from scipy.stats import binom

from shuffle_lib.core import validate as v
from shuffle_lib.core.binomial import binom_window
from shuffle_lib.core.types import Bracket
from shuffle_lib.mechanisms.krr.base import Adversary, check_params, eps0_from_gamma, krr_probs

STREAM_TAIL = 1e-12   # P-mass left out by the windows (redone at 1e-6 delta where delta < 1e-8; eps: 1e-6 delta)
ROUND = 1e-9          # relative floating-point margin on each end
CHUNK = 1 << 20       # (b, u) cells per streamed chunk


def _windows(n, gamma, k, tail):
    """b values and their u windows [lo, hi + 1]; P-mass outside <= tail (half on b, half on u | b)."""
    N = n - 1
    b_lo, b_hi = binom_window(N, gamma, tail / 2)
    bs = np.arange(b_lo, b_hi + 1)
    lo, hi = binom_window(bs, 1.0 / k, tail / 2)
    return bs, lo, hi + 1


def _chunks(bs, lo, hi):
    """Ragged (b, u) cells in chunks of about CHUNK cells."""
    counts = hi - lo + 1
    ends = np.cumsum(counts)
    start = 0
    while start < bs.size:
        stop = max(int(np.searchsorted(ends, ends[start] - counts[start] + CHUNK, side="right")), start + 1)
        c = counts[start:stop]
        blk = np.repeat(np.arange(start, stop), c)
        first = np.cumsum(c) - c
        u = np.arange(int(c.sum())) - np.repeat(first, c) + lo[blk]
        yield bs[blk], u
        start = stop


def _cdf(w, m, r):
    """P[Bin(m, r) <= w], 0 for w < 0 (r = 1 allowed: k = 2)."""
    m = np.maximum(m, 0)
    if r >= 1.0:
        return (w >= m).astype(float)
    inner = (w >= 0) & (w < m)
    f = special.bdtr(np.where(inner, w, 0), np.where(inner, m, 1), r)
    return np.where(w >= m, 1.0, np.where(inner, f, 0.0))


def _pmf(w, m, r):
    """P[Bin(m, r) = w] (0 outside 0..m; r = 1 allowed)."""
    m = np.maximum(m, 0)
    if r >= 1.0:
        return (w == m).astype(float)
    return binom.pmf(w, m, r)


def weak_delta_lower(n: int, gamma: float, k: int, eps: np.ndarray, tail: float, stride: int = 1) -> np.ndarray:
    """Sum of [P - e^eps Q]_+ over the A_w views whose (b, u) lie in the windows: the lower end.

    ``stride`` > 1 samples every stride-th b and u (weight stride^2): an uncertified estimate, used
    only to locate eps(delta) before the certified passes.  Source: seed 000 Def. 9, App. A.
    """
    n, gamma, k = check_params(n, gamma, k)
    eps = v.reals("eps", eps, lo=0.0)
    tail = v.real("tail", tail, 0.0, 1.0)
    stride = v.integer("stride", stride, lo=1, hi=n)
    N = n - 1
    p1, p2 = krr_probs(gamma, k)
    p3 = 1.0 - p1 - p2
    r = 1.0 / (k - 1)
    bs, lo, hi = _windows(n, gamma, k, tail)
    if stride > 1:
        bs, lo, hi = bs[::stride], lo[::stride], hi[::stride]
    ee = np.exp(eps)
    total = np.zeros(eps.size)
    for b, u in _chunks(bs, lo, hi):
        if stride > 1:
            keep = (u - lo[0]) % stride == 0
            b, u = b[keep], u[keep]
        wb = binom.pmf(b, N, gamma) * stride ** 2
        pu, pu1 = binom.pmf(u, b, 1.0 / k), binom.pmf(u - 1, b, 1.0 / k)
        c = gamma * (b + 1.0) / k
        m = b - u                                  # trials of M2 given M1 = u (M1 = u-1: m + 1)
        for i, e in enumerate(eps):
            x = (((1.0 - gamma) * u + c) / ee[i] - c) / (1.0 - gamma)
            W = np.ceil(x).astype(np.int64) - 1    # largest w with ratio > e^eps
            f0 = _cdf(W, m, r)
            f1 = np.maximum(f0 - _pmf(W, m, r), 0.0)   # P[Bin(m, r) <= W - 1]
            f_up = np.where(m >= 0, (1.0 - r) * f0 + r * f1, W >= 0)   # P[Bin(m + 1, r) <= W]
            t_a, t_b, t_c = pu1 * np.where(u >= 1, f_up, 0.0), pu * f1, pu * f0
            sp_ = p1 * t_a + p2 * t_b + p3 * t_c
            sq_ = p2 * t_a + p1 * t_b + p3 * t_c
            total[i] += float(np.sum(wb * np.maximum(sp_ - ee[i] * sq_, 0.0)))
    return total


def strong_delta_lower(n: int, gamma: float, k: int, eps: np.ndarray, tail: float) -> np.ndarray:
    """+inf mass plus sum over the a-window of (1-g) P[A=a] sum_c [...]_+ (A_s): the lower end.

    Source: seed 000 Def. 7 (loss log((a+1)/c), +inf at c = 0).
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
        cs = np.ceil((a + 1.0) * math.exp(-e)).astype(np.int64) - 1     # largest c with (a+1)/c > e^eps
        cs = np.minimum(cs, M)
        with np.errstate(under="ignore"):
            mass = np.where(cs >= 1, special.bdtr(np.maximum(cs, 0), M, q) - (1.0 - q) ** M, 0.0)
            mean = np.where(cs >= 1, M * q * special.bdtr(np.maximum(cs - 1, 0), np.maximum(M - 1, 0), q), 0.0)
        out[i] = inf_mass + float(np.sum(wa * np.maximum(mass - math.exp(e) / (a + 1.0) * mean, 0.0)))
    return out


def _lower(adversary, n, gamma, k, eps, tail, stride=1):
    if gamma == 1.0:
        return np.zeros(eps.size)                  # every report uniform: P = Q
    if adversary == "weak" or stride > 1:
        return weak_delta_lower(n, gamma, k, eps, tail, stride)
    return strong_delta_lower(n, gamma, k, eps, tail)


def _cut(adversary, gamma, tail):
    return 0.0 if gamma == 1.0 else (tail if adversary == "weak" else (1.0 - gamma) * tail)


def delta_streamed(adversary: Adversary, n: int, gamma: float, k: int, eps: np.ndarray | list[float],
                   tail: float = STREAM_TAIL) -> list[Bracket]:
    """Certified brackets for the tight one-round delta(eps) of shuffled k-RR, streamed (seed 000 Thm 5
    on Def. 7 / Def. 9).  Where the cut ``tail`` exceeds 1e-4 of a lower end, those eps are redone
    with the tail at 1e-6 of its lower end (1e-18 of the tail where that is 0), up to four times."""
    adversary = v.choice("adversary", adversary, ("strong", "weak"))
    n, gamma, k = check_params(n, gamma, k)
    eps = v.reals("eps", eps, lo=0.0)
    tail = v.real("tail", tail, 0.0, 1.0)
    low = _lower(adversary, n, gamma, k, eps, tail)
    tails = np.full(eps.size, tail)
    for _ in range(4):   # each eps on its own: 1e-6 of its lower end, or 1e-18 of its tail while that is 0
        redo = np.flatnonzero((_cut(adversary, gamma, tails) > 1e-4 * low) & (tails > 1e-300))
        if redo.size == 0:
            break
        for i in redo:
            tails[i] = max(1e-300, 1e-6 * low[i] if low[i] > 0 else 1e-18 * tails[i])
            low[i] = _lower(adversary, n, gamma, k, eps[i:i + 1], float(tails[i]))[0]
    return [Bracket(x * (1.0 - ROUND), min(1.0, x * (1.0 + ROUND) + _cut(adversary, gamma, t)))
            for x, t in zip(low, tails)]


def _max_loss(adversary, n, gamma, k):
    """No view has a finite loss above this: eps0 (A_w, 000 App. A), log n (A_s: (a+1)/c <= n)."""
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

    def ends(es):        # (certified lower ends, certified upper ends) of delta at es, one pass
        x = _lower(adversary, n, gamma, k, np.asarray(es, dtype=float), tail)
        return x * (1.0 - ROUND), x * (1.0 + ROUND) + cut

    guess = _guess(adversary, n, gamma, k, delta, tail, top)
    width = rtol / 2
    while 0.0 < guess < top and width < 1.0:    # certify guess (1 -+ width); widen until both ends hold
        e_lo, e_hi = guess * (1.0 - width), min(top, guess * (1.0 + width))
        (d_lo, _), (_, d_hi) = ends([e_lo, e_hi])
        if d_lo >= delta and d_hi <= delta:
            return Bracket(e_lo, e_hi)
        width *= 4.0
    (_, lo_top), (up0, up_top) = ends([0.0, top])   # the ends of the range: eps = 0, or no finite eps
    if up0 <= delta:
        return Bracket(0.0, 0.0)
    if up_top > delta:                   # the +inf mass (A_s) or the cut: no finite upper end
        return Bracket(top if lo_top > delta else 0.0, math.inf)
    return Bracket(0.0, top)             # pragma: no cover  (not certified closer: never seen)


def epsilon_streamed(adversary: Adversary, n: int, gamma: float, k: int, delta: np.ndarray | list[float],
                     rtol: float = 2e-3) -> list[Bracket]:
    """Certified brackets for the tight one-round eps(delta), of relative width ``rtol`` (or wider
    when the first try does not certify).

    Located on an estimate of delta(eps) (A_w: the streamed sum sampled every few b and u), then
    certified by one streamed pass at both ends: delta's lower end >= delta at the bracket's lower
    end, its upper end <= delta at the upper end (the windows' tail is 1e-6 delta).  Seed 000 Thm 5.
    """
    adversary = v.choice("adversary", adversary, ("strong", "weak"))
    n, gamma, k = check_params(n, gamma, k)
    delta = v.reals("delta", delta, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    rtol = v.real("rtol", rtol, 1e-9, 0.1)
    return [_epsilon_one(adversary, n, gamma, k, float(d), rtol) for d in delta]
