"""The bit-flip shuffler's guarantee, one round, at any n: the max over m without n PLDs.

The guarantee is max over m (ones among the other n-1 users) of delta_n(m), the tight delta of
the pair P = A_n(m + 1), Q = A_n(m) of ``bitflip.pair_pmfs`` (Zhilyaev 2020, Sec. 3-4); by the
symmetry bit <-> 1-bit, m <= (n-1)/2 suffices (both directions).  Two facts give a certified
bracket with O(n / w) pairs instead of n/2:

* lower end: delta_n(m) at any m (exact, windowed binomials; the cut mass off);
* upper end, Lemma 4.4 of chapter 5 generalised: for m in [s, s+w] (s + w <= (n-1)/2), removing
  m - s of the ones and w - (m - s) of the zeros among the others leaves the pair of n - w users
  with s ones among the others, and the removed users' flipped bits are independent of the rest,
  so the released sum on n users is a post-processing (add an independent count) of the sum on
  n - w users: delta_n(m) <= delta_{n-w}(s) for every m in the block.

Blocks whose upper end exceeds (1 + rtol) x the best lower end are halved until every block is
below it or single (w = 0: exact).  The same holds for eps(delta) (delta dominated pointwise).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy.optimize import brentq

from shuffle_lib.core import validate as v
from shuffle_lib.core.binomial import binom_logpmf, binom_window
from shuffle_lib.core.constants import BINOMIAL_TAIL, MAX_SIZE
from shuffle_lib.core.types import Bracket

ROUND = 1e-9        # relative floating-point margin on each end
MAX_PAIRS = 20_000  # pairs evaluated at most per call (then the bracket is what the blocks give)
TAIL = BINOMIAL_TAIL  # binomial mass cut from each of the two binomials (as bitflip.TAIL)


def _piece(N, p, tail):
    """(first index, PMF) of Bin(N, p) on the window outside which its mass is <= tail."""
    lo, hi = binom_window(N, p, tail)
    return lo, np.exp(binom_logpmf(np.arange(lo, hi + 1), N, p))


def _pair(n, m, q, tail):
    """(P, Q) on the window of the sum, P = A_n(m + 1), Q = A_n(m) (Zhilyaev 2020, eq. 3.1-3.2);
    each of the two binomials of the other users cut to mass <= tail (P-mass lost <= 2 tail)."""
    a = _piece(m, q, tail)[1][::-1]          # Bin(m, 1-q) as Bin(m, q) reversed: 1.0 - q rounds
    b = _piece(n - 1 - m, q, tail)[1]
    s = np.convolve(a, b)
    p = 1.0 - q
    return np.append(q * s, 0.0) + np.append(0.0, p * s), np.append(p * s, 0.0) + np.append(
        0.0, q * s
    )


def _delta(P, Q, eps):
    """max of both directions of sum [P - e^eps Q]_+ on the window, for each eps."""
    ee = np.exp(np.asarray(eps, dtype=float))[:, None]
    return np.maximum(
        np.sum(np.maximum(P - ee * Q, 0.0), axis=1), np.sum(np.maximum(Q - ee * P, 0.0), axis=1)
    )


def _delta_ends(P, Q, eps, cut):
    """Certified (lower, upper) of the pair's delta at each eps: the window's cut mass 2 tail moves
    delta by at most cut (P side) and e^eps cut (Q side)."""
    d = _delta(P, Q, eps)
    return np.maximum(d * (1.0 - ROUND) - np.exp(eps) * cut, 0.0), np.minimum(
        d * (1.0 + ROUND) + cut, 1.0
    )


def _eps_ends(P, Q, delta, cut, top):
    """Certified (lower, upper) of the pair's eps(delta), for each delta: roots of the certified
    delta ends, stepped outward until the ends verify."""
    lo, up = np.zeros(delta.size), np.zeros(delta.size)
    for i, d in enumerate(delta):
        # the lambdas below are called within this iteration only
        for j, f in ((0, lambda e: _delta_ends(P, Q, np.array([e]), cut)[0][0] - d),  # noqa: B023
                     (1, lambda e: _delta_ends(P, Q, np.array([e]), cut)[1][0] - d)):  # noqa: B023
            if f(0.0) <= 0:
                r = 0.0
            elif f(top) > 0:
                r = math.inf if j == 1 else top
            else:
                r = brentq(f, 0.0, top, xtol=1e-14, rtol=1e-12)
                step = 1e-12 * max(r, 1e-3)
                while (f(r) < 0) if j == 0 else (f(r) > 0):
                    r = r - step if j == 0 else r + step
                    step *= 2
            (lo if j == 0 else up)[i] = max(r, 0.0)
    return lo, up


def worst_brackets(n: int, q: float, verb: str, targets: list[float], rtol: float = 2e-3,
                   tail: float = TAIL) -> tuple[list[Bracket], dict]:
    """Certified brackets for max over m of the one-round delta(eps) (``verb="delta"``) or
    eps(delta) (``"epsilon"``) of shuffled bit flipping, and a dict of what was evaluated.

    Blocks [s, s+w] of m are bounded by delta_{n-w}(s) (module docstring) and halved while their
    upper end exceeds (1 + rtol) x the best lower end (or 4 tail above it: delta = 0 there);
    exact pairs at the block starts give the lower end.  Source: Zhilyaev 2020, Sec. 3-4, Lemma 4.4.
    """
    n = v.integer("n", n, lo=1, hi=MAX_SIZE)
    q = v.real("q", q, 0.0, 0.5, lo_open=True)
    verb = v.choice("verb", verb, ("delta", "epsilon"))
    rtol = v.real("rtol", rtol, 0.0, 1.0, lo_open=True)
    tail = v.real("tail", tail, 0.0, 1e-3)
    t = np.asarray([float(x) for x in targets])
    top = math.log1p(-q) - math.log(q)      # log(p/q): no pair has a larger finite loss

    def ends(nn, m):
        P, Q = _pair(nn, m, q, tail)
        return (
            _delta_ends(P, Q, t, 2 * tail) if verb == "delta" else _eps_ends(P, Q, t, 2 * tail, top)
        )

    return block_search(n, ends, t.size, rtol, 4 * tail, MAX_PAIRS)


def block_search(
    n: int,
    ends: Callable[[int, int], tuple[np.ndarray, np.ndarray]],
    size: int,
    rtol: float,
    floor: float,
    max_pairs: int,
) -> tuple[list[Bracket], dict]:
    """The max over m in 0..(n-1)/2 of a quantity that ``ends(nn, m)`` brackets (arrays of ``size``
    lower and upper ends) for the pair of ``nn`` users with ``m`` ones among the others, certified
    by the blocks of the module docstring: block [s, s+w] is bounded above by ``ends(n - w, s)``.

    Blocks are halved while their upper end exceeds max((1 + rtol) x best lower end, best + floor),
    at most ``max_pairs`` evaluations; then the bracket is what the blocks give (the info says how
    wide the widest block stayed).  The post-processing argument holds round by round, so ``ends``
    may bracket K composed rounds (``bitflip.bitflip_model`` with m = "worst", compositions > 1).
    Source: Zhilyaev 2020, Sec. 3-4, Lemma 4.4 (chapter 5's generalisation).
    """
    n = v.integer("n", n, lo=1, hi=MAX_SIZE)
    size = v.integer("size", size, lo=1, hi=10 ** 6)
    rtol = v.real("rtol", rtol, 0.0, 1.0, lo_open=True)
    floor = v.real("floor", floor, 0.0, 1.0)
    max_pairs = v.integer("max_pairs", max_pairs, lo=1, hi=MAX_SIZE)
    if not callable(ends):
        raise TypeError(
            f"ends must be a function (nn, m) -> (lower ends, upper ends), got ends={ends!r}."
        )
    memo: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
    raw = ends

    def ends(nn, m):                    # each pair once (a block start is also a lower end)
        if (nn, m) not in memo:
            memo[nn, m] = raw(nn, m)
        return memo[nn, m]

    M = (n - 1) // 2
    best = np.zeros(size)
    width = max(1, (M + 1) // 16)
    blocks = []
    for s in range(0, M + 1, width):
        w = min(width, M + 1 - s) - 1
        best = np.maximum(best, ends(n, s)[0])
        blocks.append((s, w, ends(n - w, s)[1] if w else ends(n, s)[1]))
    pairs = len(memo)
    while pairs < max_pairs:
        slack = np.maximum(best * (1.0 + rtol), best + floor)
        open_ = [b for b in blocks if b[1] > 0 and np.any(b[2] > slack)]
        if not open_:
            break
        blocks = [b for b in blocks if not (b[1] > 0 and np.any(b[2] > slack))]
        for s, w, _ in open_:
            h = (w + 1) // 2
            for s2, w2 in ((s, h - 1), (s + h, w - h)):
                if s2 != s:
                    best = np.maximum(best, ends(n, s2)[0])
                blocks.append((s2, w2, ends(n - w2, s2)[1]))
        pairs = len(memo)
    upper = np.max([b[2] for b in blocks], axis=0)
    info = {
        "route": "blocks",
        "pairs": pairs,
        "blocks": len(blocks),
        "widest_block": max(b[1] for b in blocks) + 1,
    }
    return [Bracket(a, b) for a, b in zip(best, upper)], info
