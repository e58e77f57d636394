"""Shuffled bit flipping and clear fake records (Zhilyaev 2020, Secs. 3-5).

Bit flipping: each of n users holds a bit and flips it with probability q
(p = 1 - q); a shuffler releases the bits, i.e. their sum.  With m ones among the
n users the sum is A_n(m) ~ Bin(m, p) + Bin(n - m, q) (Zhilyaev 2020, Sec. 3), with
PMF P_{n,m}(s).  Neighbours differ in one user's bit: with m ones among the
other n - 1 users, P = law of A_n(m + 1) (the user holds 1), Q = law of A_n(m)
(holds 0).  Zhilyaev 2020 defines the privacy ratio pi_n(s; m) = P_{n,m}(s)/P_{n,m+1}(s),
the probability ratio rho_n(s; m) = P_{n,m}(s)/P_{n,m}(s-1) and
g(x) = (q + p x)/(p + q x), with pi_n = g o rho_{n-1} (Sec. 3.2).

Clear fake records (Zhilyaev 2020, Sec. 5): n users report their value in [d] in
clear, m uniform fake records are added, a shuffler releases the histogram.
The loss depends only on the fake counts (H, H') of the two affected values,
(H, H') ~ Multinomial(m; 1/d, 1/d): L = log((H + 1)/H'), +inf if H' = 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Literal

import numpy as np

from shuffle_lib.core import evaluate, search
from shuffle_lib.core import validate as v
from shuffle_lib.core.binomial import binom_logpmf, binom_window
from shuffle_lib.core.constants import BINOMIAL_TAIL, MAX_COMPOSITIONS, MAX_SIZE
from shuffle_lib.core.fourier import DEFAULT_ACCURACY
from shuffle_lib.core.pld import PLD, delta_both
from shuffle_lib.core.registry import Mechanism, Param, register
from shuffle_lib.core.types import ArrayLike, Bracket, Method, Model, PLDPair
from shuffle_lib.mechanisms.mixnet.bitflip_worst import block_search, worst_brackets

TAIL = BINOMIAL_TAIL  # binomial mass cut from each tail (sent to +inf in certified uppers)


def _check(n, m, q, n_lo=0):
    n = v.integer("n", n, lo=n_lo, hi=MAX_SIZE)
    m = v.integer("m", m, lo=0)
    if m > n:
        raise ValueError(f"m must be an integer in [0, n] (n={n}), got m={m}.")
    q = v.real("q", q, 0.0, 0.5, lo_open=True)
    return n, m, q


def _binom_piece(N, p, tail):
    lo, hi = binom_window(N, p, tail)
    j = np.arange(lo, hi + 1)
    return lo, np.exp(binom_logpmf(j, N, p))


def _flipped_piece(N, q, tail):
    """(first index, PMF) of Bin(N, 1 - q) as Bin(N, q) reversed, so that the masses of order q^k
    survive: 1.0 - q rounds to 1.0 below q = 2^-54 (``epsilon bitflip --n 3 --q 1e-17 --m 1
    --delta 0.1`` would answer a lower end of 39.04 where delta(39.04) = 1e-18;
    tests/test_adversarial_clones.py::test_bitflip_tiny_q_keeps_the_masses_of_order_q)."""
    lo, a = _binom_piece(N, q, tail)
    return N - (lo + a.size - 1), a[::-1]


def pmf_A(n: int, m: int, q: float, tail: float = 0.0) -> np.ndarray:
    """P_{n,m}(s), s = 0..n: PMF of A_n(m) ~ Bin(m, 1-q) + Bin(n-m, q) (Zhilyaev 2020, Sec. 3).

    Direct (positive-term) convolution of the two binomial PMFs, each accurate to
    ~1e-14 relative (``binom_logpmf``); with ``tail`` > 0 each binomial is first cut
    to a window outside which its mass is <= tail, so n up to 1e6 costs
    O(sd(m) sd(n-m)) rather than O(m (n-m)).  Valid for 0 <= m <= n, 0 < q <= 1/2.
    """
    n, m, q = _check(n, m, q)
    tail = v.real("tail", tail, 0.0, 1e-3)
    a0, a = _flipped_piece(m, q, tail)
    b0, b = _binom_piece(n - m, q, tail)
    out = np.zeros(n + 1)
    c = np.convolve(a, b)
    out[a0 + b0: a0 + b0 + c.size] = c
    return out


def g(x: ArrayLike, q: float) -> float | np.ndarray:
    """g(x) = (q + p x)/(p + q x), p = 1 - q (Zhilyaev 2020, Sec. 3.2); pi_n = g(rho_{n-1})."""
    q = v.real("q", q, 0.0, 0.5, lo_open=True)
    x = v.floats("x", x, "a ratio or array of ratios in [0, inf]")
    if np.any(np.isnan(x)) or np.any(x < 0):
        raise ValueError(f"x must hold ratios in [0, inf] (no NaN), got x={x!r:.80}.")
    return (q + (1.0 - q) * x) / ((1.0 - q) + q * x)


def rho(n: int, m: int, q: float) -> np.ndarray:
    """rho_n(s; m) = P_{n,m}(s)/P_{n,m}(s-1) for s = 1..n (array of length n).

    Source: Zhilyaev 2020, Sec. 3.2.
    """
    P = pmf_A(n, m, q)
    with np.errstate(divide="ignore", invalid="ignore"):
        return P[1:] / P[:-1]


def pi_ratio(n: int, m: int, q: float) -> np.ndarray:
    """pi_n(s; m) = P_{n,m}(s)/P_{n,m+1}(s) for s = 0..n, 0 <= m <= n-1 (Zhilyaev 2020, Sec. 3)."""
    n, m, q = _check(n, m, q, n_lo=1)
    if m > n - 1:
        raise ValueError(f"m must be an integer in [0, {n - 1}], got m={m}.")
    with np.errstate(divide="ignore", invalid="ignore"):
        return pmf_A(n, m, q) / pmf_A(n, m + 1, q)


def pair_pmfs(n: int, m: int, q: float, tail: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """(P, Q) on s = 0..n for n users, m ones among the other n-1: P = A_n(m+1), Q = A_n(m).

    Built from the other users' PMF b = P_{n-1,m} by (3.1)-(3.2):
    P(s) = p b(s-1) + q b(s), Q(s) = q b(s-1) + p b(s).

    Source: Zhilyaev 2020, Sec. 3, eq. 3.1-3.2.
    """
    n = v.integer("n", n, lo=1, hi=MAX_SIZE)
    b = pmf_A(n - 1, m, q, tail)
    p = 1.0 - q
    P = np.append(q * b, 0.0) + np.append(0.0, p * b)
    Q = np.append(p * b, 0.0) + np.append(0.0, q * b)
    return P, Q


def _pld(P, Q, cut):
    """PLD of P w.r.t. Q; ``cut`` extra mass sent to +inf (certified upper)."""
    ok = (P > 0) & (Q > 0)
    losses = np.log(P[ok]) - np.log(Q[ok])
    order = np.argsort(losses, kind="stable")
    inf_mass = math.fsum(P[(P > 0) & (Q == 0)])
    return PLD(losses[order], P[ok][order], inf_mass).with_mass_at_infinity(cut)


def pair_plds(n: int, m: int, q: float, tail: float = TAIL) -> tuple[PLD, PLD]:
    """(PLD of P/Q, PLD of Q/P) of :func:`pair_pmfs`; the cut mass (<= 2 tail) sits at +inf.

    Source: Zhilyaev 2020, Sec. 3; Koskela et al. 2021, Def. 4.
    """
    P, Q = pair_pmfs(n, m, q, tail)
    cut = 2.0 * tail            # each binomial cut loses <= tail of mass
    return _pld(P, Q, cut), _pld(Q, P, cut)


def pair_plds_lower(n: int, m: int, q: float, tail: float = TAIL) -> tuple[PLD, PLD]:
    """Dominated PLDs (P/Q, Q/P) of :func:`pair_pmfs` with its binomials cut at ``tail``.

    The cut leaves every outcome short of its exact mass: the others' sum b = a * c (the two
    windowed binomials convolved) misses at s the terms with i or j outside a window, at most
    (cut of a) max c + (cut of c) max a <= 2 tail, so P(s) and Q(s) (mixtures p b(s-1) + q b(s),
    q b(s-1) + p b(s)) are each short by at most 2 tail.  A short Q can *raise* an outcome's
    P - e^eps Q (the cut PLDs of :func:`pair_plds` are an upper end only: n = 16, q = 1e-8, m = 7,
    eps = 18.0152 gives a lower end 2.33333310e-40 above the exact 2.33333309e-40).  Here each
    outcome pairs its cut mass (<= the exact) with the other law's cut mass plus 2 tail (>= the
    exact), so (P' - e^eps Q'')+ <= (P - e^eps Q)+ outcome by outcome, and for K rounds tuple by
    tuple (products of smaller and of larger factors): the hockey stick of these PLDs, composed, is
    a lower end.  ``tail=0``: the exact PLDs.

    Source: Zhilyaev 2020, Sec. 3, eq. 3.1-3.2; Koskela et al. 2021, Thm 5.
    """
    if v.real("tail", tail, 0.0, 1e-3) == 0.0:
        return pair_plds(n, m, q, 0.0)
    return _dominated(*pair_pmfs(n, m, q, tail), tail)


def _dominated(P, Q, tail):
    """:func:`pair_plds_lower` from the cut PMFs: the other law raised by its shortfall 2 tail."""
    short = 2.0 * tail
    return _pld(P, np.where(P > 0, Q + short, Q), 0.0), _pld(Q, np.where(Q > 0, P + short, P), 0.0)


def delta_pair(n: int, m: int, q: float, eps: ArrayLike, tail: float = TAIL) -> np.ndarray:
    """delta(eps) of the neighbours with m ones among the others, max of both directions.

    Source: Zhilyaev 2020, Sec. 3; Koskela et al. 2021, Thm 5.
    """
    eps = v.reals("eps", eps, lo=0.0)
    a, b = pair_plds(n, m, q, tail)
    return delta_both(a, b, eps)


def delta_worst(
    n: int, q: float, eps: ArrayLike, ms: Iterable[int] | None = None, tail: float = TAIL
) -> np.ndarray:
    """max over m of :func:`delta_pair`: the tight delta of the bit-flip shuffler.

    ``ms=None`` scans every m in 0..(n-1)//2 (the rest follow by the symmetry
    bit <-> 1-bit, which swaps the two directions); O(n) PLDs, so keep n small.

    Source: Zhilyaev 2020, Sec. 3-4.
    """
    n = v.integer("n", n, lo=1, hi=MAX_SIZE)
    ms = range((n - 1) // 2 + 1) if ms is None else ms
    return np.max([delta_pair(n, m, q, eps, tail) for m in ms], axis=0)


def q_needed(n: int, eps: float, delta: float, m: int = 0, tol: float = 1e-4) -> float:
    """Smallest q in (0, 1/2] with delta_pair(n, m, q, eps) <= delta, to relative ``tol``.

    delta is non-increasing in q (flipping with q then with r is flipping with
    q + r - 2qr: post-processing), so bisection on log q is valid.  Returns the
    upper end of the final bracket (an adequate q); ``math.inf`` if even q=1/2 fails.

    Source: Zhilyaev 2020, Sec. 4 (the q a target needs, here exactly).
    """
    eps = v.real("eps", eps, 0.0)
    delta = v.probability("delta", delta)
    # relative: below ~1e-12 the bisection on log q cannot shrink
    tol = v.real("tol", tol, 1e-12, 1.0)
    n = v.integer("n", n, lo=1, hi=MAX_SIZE)
    m = v.integer("m", m, lo=0, hi=n - 1)
    f = lambda q: float(delta_pair(n, m, q, eps)[0]) <= delta  # noqa: E731
    if f(0.5):
        lo, hi = 1e-12, 0.5
    else:
        return math.inf
    if f(lo):
        return lo
    hi, _ = search.narrow(f, hi, lo, lambda a, b: a / b <= 1.0 + tol, search.geometric)
    return hi


def seed_q_lemma45(n: int, eps: float, delta: float) -> float:
    """q demanded by Zhilyaev 2020, Lemma 4.5 / eq. (4.42): 3 ln(2/delta)/(n (1 - e^-eps)^2)."""
    n = v.integer("n", n, lo=1)
    eps = v.real("eps", eps, 0.0, lo_open=True)
    delta = v.probability("delta", delta)
    return 3.0 * math.log(2.0 / delta) / (n * (-math.expm1(-eps)) ** 2)


def seed_q_prop41(n: int, eps: float, delta: float) -> float:
    """Smallest q in (0, 1/2] satisfying Zhilyaev 2020, Prop. 4.1 / eq. (4.6), which has q on both
    sides: q >= 3 ln(2/delta)/(n [1 - e^-eps - 2(p-q)/(npq)]^2) with the bracket > 0.
    ``math.inf`` if no q in (0, 1/2] does (scanned on a fine log grid, then bisected)."""
    n = v.integer("n", n, lo=1)
    eps = v.real("eps", eps, 0.0, lo_open=True)
    delta = v.probability("delta", delta)

    def ok(q):
        p = 1.0 - q
        br = -math.expm1(-eps) - 2.0 * (p - q) / (n * p * q)
        return br > 0 and q >= 3.0 * math.log(2.0 / delta) / (n * br * br)
    grid = np.geomspace(1e-12, 0.5, 4000)
    hits = [i for i, x in enumerate(grid) if ok(x)]
    if not hits:
        return math.inf
    i = hits[0]
    if i == 0:
        return float(grid[0])
    lo, hi = float(grid[i - 1]), float(grid[i])
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return hi


def m_grid(n: int, size: int = 12) -> list[int]:
    """m = 0, 1, 2, 3 and a geometric grid up to (n-1)//2: the neighbours scanned for large n.

    Source: Zhilyaev 2020, Sec. 3 (the neighbours, indexed by m).
    """
    n = v.integer("n", n, lo=1, hi=MAX_SIZE)
    size = v.integer("size", size, lo=1, hi=10 ** 4)
    top = (n - 1) // 2
    ms = {0, 1, 2, 3, top} | {int(x) for x in np.geomspace(1, max(top, 1), size)}
    return sorted(x for x in ms if x <= top)


def q_needed_worst(
    n: int, eps: float, delta: float, ms: Iterable[int] | None = None, tol: float = 1e-4
) -> float:
    """max over m in ``ms`` of :func:`q_needed` (default: every m <= (n-1)/2, exact).

    With a subset of m (e.g. :func:`m_grid`) this is a LOWER bound on the q the
    mechanism needs.  Each further m costs one evaluation unless it needs more q.

    Source: Zhilyaev 2020, Sec. 4 (the q a target needs, here exactly).
    """
    n = v.integer("n", n, lo=1, hi=MAX_SIZE)
    eps = v.real("eps", eps, 0.0)
    delta = v.probability("delta", delta)
    tol = v.real("tol", tol, 1e-12, 1.0)
    try:
        ms = (
            list(range((n - 1) // 2 + 1))
            if ms is None
            else [v.integer("ms", m, lo=0, hi=n - 1) for m in ms]
        )
    except TypeError:
        raise ValueError(f"ms must be a list of integers in [0, n - 1], got ms={ms!r}.") from None
    if not ms:
        raise ValueError("ms must hold at least one m, got an empty list.")
    q = q_needed(n, eps, delta, ms[0], tol)
    for m in ms[1:]:
        if math.isfinite(q) and float(delta_pair(n, m, q, eps)[0]) > delta:
            q = q_needed(n, eps, delta, m, tol)
    return q


WORST_M_MAX_N = 400      # the Renyi route of --m worst builds n/2 pairs: every m in 0..(n-1)/2
# pairs composed at most by --m worst with compositions > 1 (then the blocks' bracket)
COMPOSED_MAX_PAIRS = 40
# the grid accuracy of each composed pair: 2e-3 costs 1.3 s against 10 s for the default 2e-4 at
# n = 400, K = 100, and the blocks already stop at 2e-3 relative
COMPOSED_ACCURACY = 2e-3


def _composed_worst(n: int, q: float, k: int, verb: str, targets: list[float]) -> tuple[list, dict]:
    """max over m of K composed rounds, by the blocks of ``bitflip_worst``: the post-processing
    that bounds a block of m by the pair of n - w users holds round by round, so each block's upper
    end is the K-round bracket of one smaller pair (the Fourier accountant, via ``evaluate``)."""
    t = [float(x) for x in targets]

    def ends(nn, m):
        br = evaluate.brackets(_pair_model(nn, m, q), verb, t, k, accuracy=COMPOSED_ACCURACY)
        return np.array([b.lower for b in br]), np.array([b.upper for b in br])

    return block_search(n, ends, len(t), 2e-3, 8 * k * TAIL, COMPOSED_MAX_PAIRS)


def _every_m(n: int, q: float, info: dict) -> Model:
    """Every pair m in 0..(n-1)/2 (the rest by the symmetry bit <-> 1-bit), the worst case over
    them: the Renyi route."""
    if n > WORST_M_MAX_N:
        raise ValueError(
            f"n must be <= {WORST_M_MAX_N} for the Renyi divergence of --m worst (it builds one "
            f"pair per m, (n-1)//2 + 1 = {(n - 1) // 2 + 1} of them here), got n={n}."
        )
    models = [_pair_model(n, mm, q) for mm in range((n - 1) // 2 + 1)]
    return Model(tuple(x.upper[0] for x in models), tuple(x.lower[0] for x in models),
                 info=dict(info, route="every m"))


def _m_arg(text):
    if text == "worst":
        return text
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"m must be an integer or 'worst', got m={text!r}.") from None


# the name the command line shows in its error message
_m_arg.__name__ = "m (an integer or 'worst')"


def _pair_model(n: int, m: int, q: float, info: dict | None = None) -> Model:
    """The pair of n users with m ones among the others: the cut PLDs (upper end, the cut at +inf)
    and the dominated ones of :func:`pair_plds_lower` (lower end, less the cut)."""
    # once, for both ends (as pair_plds and pair_plds_lower build them)
    P, Q = pair_pmfs(n, m, q, TAIL)
    top = _max_loss(q)
    return Model((PLDPair.of(_pld(P, Q, 2.0 * TAIL), _pld(Q, P, 2.0 * TAIL), max_loss=top),),
                 (PLDPair.of(*_dominated(P, Q, TAIL), tail_cut=2 * TAIL, max_loss=top),),
                 info=info or {})


def _max_loss(q):
    """log(p/q): no pair of the bit-flip shuffler has a larger loss (P/Q is a mediant of p/q and
    q/p)."""
    return math.log1p(-q) - math.log(q)


def bitflip_model(
    n: int, q: float, m: int | str = 0, compositions: int = 1
) -> Model:
    """The bit-flip shuffler's pair with m ones among the other n-1 users (Zhilyaev 2020, Sec. 3-4),
    or for ``m="worst"`` the max over every m, the mechanism's guarantee: one round at any n by the
    blocks of ``shuffle_lib.mechanisms.mixnet.bitflip_worst`` (a method, route "blocks");
    several rounds by the same blocks on K composed pairs (route "blocks of composed pairs", at most
    COMPOSED_MAX_PAIRS pairs, then the bracket is what the blocks give).  Tails cut to +inf (<= 2
    TAIL per round)."""
    q = v.real("q", q, 0.0, 0.5, lo_open=True)
    info = {"tail_cut": 2 * TAIL, "max_loss": _max_loss(q)}
    k_rounds = v.integer("compositions", compositions, lo=1, hi=MAX_COMPOSITIONS)
    if m == "worst":
        n = v.integer("n", n, lo=1, hi=MAX_SIZE)
        q = v.real("q", q, 0.0, 0.5, lo_open=True)
        if k_rounds == 1:
            return Model.of(Method(lambda eps: worst_brackets(n, q, "delta", eps)[0],
                                   lambda delta: worst_brackets(n, q, "epsilon", delta)[0]),
                            dict(info, route="blocks"))
        return Model.of(Method(lambda eps: _composed_worst(n, q, k_rounds, "delta", eps)[0],
                               lambda delta: _composed_worst(n, q, k_rounds, "epsilon", delta)[0],
                               k_rounds),
                        dict(info, route="blocks of composed pairs"))
    n, m, q = _check(n, m, q, n_lo=1)
    if m > n - 1:
        raise ValueError(f"m must be an integer in [0, {n - 1}], got m={m}.")
    return _pair_model(n, m, q, info)


def delta_bracket(n: int, q: float, eps: ArrayLike, m: int | str = 0, compositions: int = 1,
                  accuracy: float = DEFAULT_ACCURACY) -> list[Bracket]:
    """Certified brackets for delta(eps) of ``compositions`` rounds of the bit-flip shuffler
    (Zhilyaev 2020, Sec. 3-4), one per eps: the pair with ``m`` ones among the other n - 1 users,
    or for ``m="worst"`` the max over every m (:func:`bitflip_model`), answered by
    ``shuffle_lib.core.evaluate.answer``, the command line's path (``python -m shuffle_lib delta
    bitflip``), each bracket with ``accuracy_met`` and ``limit`` set.  ``m="worst"`` over several
    rounds keeps the blocks' own grid (``COMPOSED_ACCURACY``), as the command line does."""
    return _answer("delta", n, q, eps, m, compositions, accuracy)


def epsilon_bracket(n: int, q: float, delta: ArrayLike, m: int | str = 0, compositions: int = 1,
                    accuracy: float = DEFAULT_ACCURACY) -> list[Bracket]:
    """Certified brackets for eps(delta) of ``compositions`` rounds of the bit-flip shuffler
    (Zhilyaev 2020, Sec. 3-4), one per delta; see :func:`delta_bracket` (``python -m shuffle_lib
    epsilon bitflip``).  A pair's bracket that misses the accuracy contract by no more than the
    grid explains is evaluated again on a finer grid."""
    return _answer("epsilon", n, q, delta, m, compositions, accuracy)


def _answer(verb: Literal["delta", "epsilon"], n: int, q: float, targets: ArrayLike,
            m: int | str, compositions: int, accuracy: float) -> list[Bracket]:
    """The declaration's path: its build (:func:`bitflip_model`, which does not depend on the
    accuracy: no rebuild) through ``evaluate.answer``."""
    accuracy = v.real("accuracy", accuracy, 0.0, 1.0, lo_open=True)
    model = bitflip_model(n, q, m, compositions)
    return evaluate.answer([(model, None)], verb, np.atleast_1d(targets), compositions, accuracy)


register(
    Mechanism(
        name="bitflip",
        summary="shuffled bit flipping, one neighbouring pair (--n --q [--m])",
        source="Zhilyaev 2020 Sec. 3 (A_n(m), eq. 3.1), Lemma 4.5, Prop. 4.1",
        params=(
            Param("n", int, "number of users, the differing one included (>= 1)", lo=1,
                  hi=MAX_SIZE),
            Param(
                "q",
                float,
                "flip probability, in (0, 1/2]",
                lo=0.0,
                hi=0.5,
                lo_open=True,
                more_private="up",
            ),
            Param(
                "m",
                object,
                "ones among the other n-1 users (default 0), or 'worst': the max over every m "
                "in 0..n-1, the mechanism's guarantee (any n; the Renyi verb: n <= "
                f"{WORST_M_MAX_N})",
                default=0,
                parse=_m_arg,
            ),
        ),
        build=bitflip_model,
        # the every-m pairs (the builds for m="worst" are methods)
        rdp=lambda params, orders: evaluate.rdp_brackets(
            _every_m(params["n"], params["q"], {})
            if params["m"] == "worst"
            else bitflip_model(**params),
            orders,
        ),
        uses=("compositions",),
        example={"n": 12, "q": 0.1, "m": 3},
    )
)
