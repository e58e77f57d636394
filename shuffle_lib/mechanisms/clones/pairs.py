"""General eps0-LDP shufflers: the Feldman-McMillan-Talwar "clones" dominating pairs.

Every pair here has the form (Koskela et al. 2021, eq. 5.1-5.2; Koskela et al. 2022, eq. 3.1)

    C ~ Bin(n-1, p_clone),  A ~ Bin(C, 1/2),  Delta ~ Bern(q),  q = e^eps0 / (e^eps0 + 1),

and differs in the clone probability and in what the differing user adds:

* ``"fmt21"`` (default): P = (A+Delta, C-A+1-Delta), Q = (A+1-Delta, C-A+Delta),
  p_clone = e^-eps0.  Feldman et al. (2021, Thm 3.2), the pair of Koskela et al. 2022, eq. 3.1.
  Valid for *every* eps0-LDP randomiser, substitution neighbours, adaptive
  randomisers included: R(x) = p/2 R(x0) + p/2 R(x1) + (1-p) LO(x) holds with
  p = e^-eps0 because R(x) >= e^-eps0 R(x') pointwise, and R(x0), R(x1) are the
  binary-RR post-processing q U0 + (1-q) U1, (1-q) U0 + q U1.
* ``"stronger"``: the same shape with p_clone = 2/(e^eps0 + 1) (Feldman et al. 2023).
  The proof needs R(x) >= (R(x0) + R(x1)) / (e^eps0 + 1) pointwise for all x, x0, x1
  (true for binary and k-ary randomised response, false for general randomisers;
  the erratum's restriction).  Opt-in only.
* ``"koskela"``: Koskela et al. 2021, eq. 5.1 as printed, P = (A+Delta, C-A), Q = (A, C-A+Delta),
  p_clone = e^-eps0.  The paper gives no derivation; it is looser than "fmt21"
  (its delta is larger in every case we computed, and at n = 1 it is not even eps0-DP).

In every pair the total count S = a+b has the same law under P and Q and, given S = s,
P_s(a) = N_s(a) (2 al a + 2 be (s-a) + ga s)/s and Q_s(a) = P_s(s-a), with
N_s = Bin(s, 1/2) (Lemmas B.1-B.3 of Koskela et al. 2021 rewritten).  The loss is increasing in
a for fixed s, so delta(eps) = sum_s P(S=s) delta_s(eps) needs only binomial tails per
s: this module's exact and fast route.  Both directions have the same PLD (a -> s-a).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy.special import _ufuncs as _scu
from scipy.stats import binom

from shuffle_lib.core import search
from shuffle_lib.core import validate as v
from shuffle_lib.core.binomial import tail_range
from shuffle_lib.core.registry import Param
from shuffle_lib.core.types import Bracket


@dataclass(frozen=True)
class Pair:
    name: str
    full: bool          # True: the differing user always adds one count (a+b = C+1)
    validity: str
    source: str
    weights: tuple[float, float, float] | None = None   # fixed (p_clone, u, w); None: from eps0


def general_pair(p: float, u: float, w: float, name: str = "general") -> Pair:
    """The general clone pair: C ~ Bin(n-1, p), A ~ Bin(C, 1/2); the differing user adds one to a
    with probability u, one to b with probability w, nothing otherwise (under Q: u and w swapped).

    Every pair of ``PAIRS`` is one (fmt21: p = e^-eps0, u = q, w = 1-q; koskela: w = 0); the
    randomiser decomposition (``shuffle_lib.mechanisms.randomizer``) gives others.  The pair is
    symmetric (Q is P with a and b swapped), so both directions have one PLD.  Needs
    0 <= p < 1, 0 <= w <= u, u + w <= 1, u > 0.

    Source: Feldman et al. 2021 Thm 3.2 and Balle et al. 2019 (the blanket), in the form of
    Koskela et al. 2021, Lemmas B.1-B.3 (module docstring).
    """
    p = v.real("p", p, 0.0, 1.0, hi_open=True)
    u = v.real("u", u, 0.0, 1.0, lo_open=True)
    w = v.real("w", w, 0.0, u)
    if u + w > 1.0:
        raise ValueError(f"u + w must be <= 1, got u={u!r}, w={w!r}.")
    return Pair(
        name, u + w == 1.0, "the decomposition it was built from", "general clone pair", (p, u, w)
    )


def _rest(eps0: float, pr: Pair) -> float:
    """1 - u - w: the probability that the differing user adds nothing; 1/(1 + e^eps0) for the
    named non-full pair (1 - q lost 3e-13 at eps0 = 8 to cancellation)."""
    if pr.weights is not None:
        return 1.0 - pr.weights[1] - pr.weights[2]
    return 0.0 if pr.full else 1.0 / (1.0 + math.exp(eps0))


def _puw(eps0: float, pr: Pair) -> tuple[float, float, float]:
    """(p_clone, u, w) of a pair: its fixed weights, or those of eps0 (module docstring).

    The full pairs' w = 1 - q is computed as 1/(1 + e^eps0): 1 - q cancelled to a relative error
    of 2^-53 e^eps0 (1e-3 at eps0 = 30: ``delta ldp-shuffle --n 1 --eps0 30 --eps 29.9`` gave
    [0.0960855, 0.0960855] where the exact delta is 0.0951626)."""
    if pr.weights is not None:
        return pr.weights
    q = report_probability(eps0)
    return clone_probability(eps0, pr.name), q, (1.0 / (1.0 + math.exp(eps0)) if pr.full else 0.0)


PAIRS = {
    "fmt21": Pair(
        "fmt21",
        True,
        "every eps0-LDP randomiser, substitution neighbours, adaptive",
        "Feldman et al. 2021 Thm 3.2; Koskela, Heikkilä & Honkela 2022 eq. 3.1",
    ),
    "stronger": Pair(
        "stronger",
        True,
        "randomisers with R(x) >= (R(x0)+R(x1))/(e^eps0+1) for all x, x0, x1 (binary and k-ary RR)",
        "Feldman et al. 2023 (stronger clones, with erratum)",
    ),
    "koskela": Pair(
        "koskela",
        False,
        "as printed in Koskela, Heikkilä & Honkela 2021 eq. 5.1 (looser than fmt21; "
        "not eps0-DP at n=1)",
        "Koskela, Heikkilä & Honkela 2021 eq. 5.1-5.2",
    ),
}
MAX_N = 10 ** 9
SUBSAMPLED = "subsampled"      # the name of subsample.SUB, whose weights come from pr.name here
# prepare's arrays: (s, P(S=s), al, be, ga, the S-mass left out, the relative error allowed P(S=s))
Prepared = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, float, float]

# the parameters every clones-pair shuffler declares (shuffle_lib.core.registry)
N_PARAM = Param(
    "n", int, "number of users, the differing one included", lo=1, hi=MAX_N, more_private="up"
)
EPS0_PARAM = Param(
    "eps0",
    float,
    "LDP parameter of the local randomiser, in (0, 30]",
    lo=0.0,
    hi=30.0,
    lo_open=True,
    more_private="down",
)


def check_params(n: int, eps0: float, pair: str | Pair) -> tuple[int, float, Pair]:
    """(n, eps0, the Pair named ``pair``) validated: n in [1, MAX_N], eps0 in (0, 30], pair a key of
    PAIRS."""
    n = v.integer("n", n, lo=1, hi=MAX_N)
    if isinstance(pair, Pair) and pair.weights is not None:   # a general pair: eps0 is not read
        return n, eps0, pair
    eps0 = v.real("eps0", eps0, 0.0, 30.0, lo_open=True)
    if pair not in PAIRS:
        raise ValueError(f"pair must be one of {sorted(PAIRS)}, got pair={pair!r}.")
    return n, eps0, PAIRS[pair]


def clone_probability(eps0: float, pair: str = "fmt21") -> float:
    """p_clone: e^-eps0 (fmt21, koskela; Koskela et al. 2021, eq. 5.2) or 2/(e^eps0+1)
    (stronger)."""
    eps0 = v.real("eps0", eps0, 0.0, 30.0, lo_open=True)
    # the subsampled pair clones as fmt21 does
    v.choice("pair", pair, sorted(PAIRS) + [SUBSAMPLED])
    return 2.0 / (math.exp(eps0) + 1.0) if pair == "stronger" else math.exp(-eps0)


def report_probability(eps0: float) -> float:
    """q = e^eps0/(e^eps0 + 1), the law of Delta (Koskela et al. 2021, eq. 5.1-5.2; Feldman et al.
    2021 Thm 3.2)."""
    eps0 = v.real("eps0", eps0, 0.0, 30.0, lo_open=True)
    return 1.0 / (1.0 + math.exp(-eps0))


def _check_kernel(n, pr, tau=None):
    """Prologue of the array kernels: n in [1, MAX_N], pr a Pair, tau in (0, 1) (eps0 is checked
    where it is read, by _puw: general pairs do not read it)."""
    v.instance("pr", pr, Pair)
    n = v.integer("n", n, lo=1, hi=MAX_N)
    if tau is not None:
        v.real("tau", tau, 0.0, 1.0, lo_open=True, hi_open=True)
    return n


def _check_weights(al, be, ga):
    """al, be, ga: probabilities, scalars or arrays (vectorised check, no Python loop)."""
    for name, x in (("al", al), ("be", be), ("ga", ga)):
        v.array(name, x, lo=0.0, hi=1.0)


def _count_pmf(k: np.ndarray, m: int, p: float) -> np.ndarray:
    """binom.pmf(k, m, p); below p = 1e-300, where Boost's kernel can raise an overflow
    (p = 1.0000045e-308, m = 2), its closed form in doubles: P(0) = (1 - p)^m rounds to 1,
    P(1) = m p (1 - p)^(m-1) rounds to m p, P(k >= 2) <= (m p)^2 underflows to 0."""
    if p >= 1e-300:
        return _in_chunks(lambda kk: binom.pmf(kk, m, p), k)
    k = np.asarray(k)
    return np.where(k == 0, 1.0, np.where(k == 1, m * p, 0.0))


def shared_weights(n: int, eps0: float, pr: Pair, s: int | np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """P(S=s) and the weights (al, be, ga) of the conditional pair at S = s (arrays).

    Binomial masses come from scipy's binom.pmf: binom.logpmf and gammaln sums lose ~1e-8
    relative at n = 1e7 (~2e-7 at 1e8) to cancellation in gammaln(n+1).

    Source: Koskela et al. 2021, Lemmas B.1-B.3 (rewritten in the module docstring), eq. B.6.
    """
    n = _check_kernel(n, pr)
    s = v.integers("s", s, 0, n)
    p, u, w0 = _puw(eps0, pr)
    c1 = _count_pmf(s - 1, n - 1, p)         # P(C = s-1)
    if pr.full:
        one = np.ones(s.shape)
        return c1, u * one, w0 * one, 0.0 * one
    rest = _rest(eps0, pr)                   # 1 - u - w, without cancellation for the named pairs
    ps = (u + w0) * c1 + rest * _count_pmf(s, n - 1, p)
    # P(the differing user added | S = s) from P(C=s)/P(C=s-1) = (n-s)/s p/(1-p) (Koskela et al.
    # 2021 eq. B.6): no underflow
    # P(C = s) / P(C = s-1) first: 0 where C cannot reach s (s = n, or p = 0), and then the odds
    # are 0 whatever rest / (u + w0) is (+inf when u + w0 underflows: a pair 1e-310 apart)
    ratio = (n - s) / np.maximum(s, 1) * (p / (1 - p))
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        odds = np.where(ratio == 0.0, 0.0, rest / (u + w0) * ratio)
        w = np.where(s == 0, 0.0, 1.0 / (1.0 + odds))
        # 1 - w as odds / (1 + odds): 1.0 - w cancels where odds is tiny (koskela atom masses
        # 3e-8 off at eps0 = 8, n = 60; tests/test_adversarial_clones.py); with s = 0, w = 0 and
        # 1 - w = 1; odds = +inf gives 1
        ga = np.where((s == 0) | np.isinf(odds), 1.0, odds / (1.0 + odds))
    if w0 == 0.0:
        return ps, w, 0.0 * w, ga
    return ps, w * (u / (u + w0)), w * (w0 / (u + w0)), ga


def loss(s: int | np.ndarray, a: int | np.ndarray, al: float | np.ndarray, be: float | np.ndarray,
         ga: float | np.ndarray) -> np.ndarray:
    """log P_s(a)/Q_s(a) = log((2 al a + 2 be (s-a) + ga s) / (2 al (s-a) + 2 be a + ga s)).

    Koskela et al. 2021, Lemma 12 / eq. 5.5 (koskela: al = w, be = 0, ga = 1-w) and its fmt21
    analogue (al = q, be = 1-q, ga = 0); +inf where the denominator vanishes.
    """
    v.integers("s", s, 0, MAX_N)
    v.integers("a", a, 0, MAX_N)
    _check_weights(al, be, ga)
    s, a = np.asarray(s, float), np.asarray(a, float)
    num = 2 * al * a + 2 * be * (s - a) + ga * s
    den = 2 * al * (s - a) + 2 * be * a + ga * s
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(s == 0, 0.0, np.log(num) - np.log(den))


def conditional_tails(
    s: int | np.ndarray,
    k: int | np.ndarray,
    al: float | np.ndarray,
    be: float | np.ndarray,
    ga: float | np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """sum_{a >= k} P_s(a) and sum_{a >= k} Q_s(a), via Bin(s-1,1/2) and Bin(s,1/2) tails.

    Source: Koskela et al. 2021, Lemmas B.1-B.3 (P_s, Q_s of the module docstring).  Any integer k
    (k <= 0: the whole mass).
    """
    v.integers("s", s, 0, MAX_N)
    v.integers("k", k, -MAX_N - 1, MAX_N + 1)
    _check_weights(al, be, ga)
    return _tails(s, k, al, be, ga)


# scipy's Boost kernels behind binom.pmf / binom.sf, called without scipy.stats' argument
# processing (most of a call's time on arrays of a few hundred s); the wrappers give the values
# binom.pmf / binom.sf give for integer arguments with n >= 0
_PMF = getattr(_scu, "_binom_pmf", None)
_SF = getattr(_scu, "_binom_sf", None)
# elements per call of a binomial kernel: one call cannot be interrupted, and Boost's kernels take
# ~10 us an element at counts near 1e9, so a query's time limit is read between pieces this size
_CHUNK = 1 << 16


def _in_chunks(kernel, *args):
    """kernel(*args) elementwise (broadcast), applied to pieces of :data:`_CHUNK` elements so the
    query's time budget (a signal, handled between calls) interrupts a long array promptly."""
    args = np.broadcast_arrays(*(np.asarray(a) for a in args))
    shape, flat = args[0].shape, [a.ravel() for a in args]
    if flat[0].size <= _CHUNK:
        return kernel(*args)
    return np.concatenate([kernel(*(a[i:i + _CHUNK] for a in flat))
                           for i in range(0, flat[0].size, _CHUNK)]).reshape(shape)


def _pmf_half(k, n):
    """binom.pmf(k, n, 0.5) for integers k and n >= 0 (0 outside 0 <= k <= n)."""
    if _PMF is None:                     # pragma: no cover - a scipy without the kernel
        return binom.pmf(k, n, 0.5)
    k, n = np.broadcast_arrays(np.asarray(k), np.asarray(n))
    inside = (k >= 0) & (k <= n)
    val = _in_chunks(_PMF, np.where(inside, k, 0).astype(float), n.astype(float), 0.5)
    return np.where(inside, val, 0.0)


def _sf_half(x, n):
    """binom.sf(x, n, 0.5) = P(Bin(n, 1/2) > x) for integers x and n >= 0."""
    if _SF is None:                      # pragma: no cover - a scipy without the kernel
        return binom.sf(x, n, 0.5)
    x, n = np.broadcast_arrays(np.asarray(x), np.asarray(n))
    inside = (x >= 0) & (x < n)
    val = _in_chunks(_SF, np.where(inside, x, 0).astype(float), n.astype(float), 0.5)
    return np.where(inside, val, np.where(x < 0, 1.0, 0.0))


# the walk of _sf_half_walk: Boost's tail directly below WALK_MIN trials (cheap there, and the
# tail changes fast from one step to the next), else a restart from it every WALK_STEPS steps
WALK_MIN = 100_000
WALK_STEPS = 256
TAIL_RTOL = 1e-12       # the least relative error allowed each of Boost's binomial values
_UNIT = 2.0 ** -53


def boost_rtol(m: int) -> float:
    """The relative error allowed each of scipy's (Boost's) binomial values at m trials, pmf or
    tail: rho(m) = max(TAIL_RTOL, 64 sqrt(m) u), u = 2^-53.  An envelope, not a proof: against
    40-digit mpmath, Boost's values were off by up to 4.5e-13 (p = 1/2) and 9.5e-14 (p in 1e-3 ..
    0.9) at m = 1e5, 2.8e-12 and 5.6e-13 at 1e7, 3.2e-11 and 5.2e-12 at 1e9, 7 to 40 times
    below rho (tests/test_clones_walk.py); a fixed 1e-12 is exceeded from m ~ 1e7 on."""
    return float(_rtol(v.integer("m", m, lo=0, hi=MAX_N)))


def _rtol(m):
    """:func:`boost_rtol` elementwise, on checked integer arrays."""
    return np.maximum(TAIL_RTOL, 64.0 * np.sqrt(m) * _UNIT)


def _sf_half_walk(j: np.ndarray, m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(F, err): F = P(Bin(m, 1/2) >= j) elementwise with abs(F - exact) <= err, for integer
    arrays in which m and j mostly step by (+1, 0) or (+1, +1) from one element to the next (the
    thresholds of consecutive s).  Such a step is taken by the exact identities

        P(Bin(m+1) >= j)   = P(Bin(m) >= j) + pmf(m, j-1) / 2,
        P(Bin(m+1) >= j+1) = P(Bin(m) >= j) - pmf(m, j) / 2

    (Bin(m+1) = Bin(m) + Bern(1/2)), each pmf one of Boost's (~0.06 us an element, against ~20 us
    for Boost's tail near the centre of Bin(5e8, 1/2)); every other element, and every
    ``WALK_STEPS``-th along a walk, is a restart: Boost's tail itself.

    Error (o the steps since the restart r, M = F_r + sum of abs(steps), computed as F is): Boost's
    F_r and pmfs within rho(m) = max(TAIL_RTOL, 64 sqrt(m) u) of their values (u = 2^-53; against
    40-digit mpmath, Boost's tails and pmfs of Bin(m, 1/2) were off by up to 4.5e-13 at m = 1e5,
    2.8e-12 at 1e7 and 3.2e-11 at 1e9, 5 to 8 times below rho; tests/test_clones_walk.py), so
    their errors sum to <= rho M; each of the o additions rounds by <= u M, and M itself is
    computed within o u of its value, so err = (rho + 4 (o + 1) u) M + (o + 1) 2^-1070 (a
    subnormal step half-rounded).
    """
    j, m = np.asarray(j, dtype=np.int64), np.asarray(m, dtype=np.int64)
    idx = np.arange(j.size)
    dj = np.diff(j, prepend=j[:1])
    walk = np.r_[False, (np.diff(m) == 1) & (dj[1:] >= 0) & (dj[1:] <= 1) & (m[:-1] >= WALK_MIN)]
    off = (idx - np.maximum.accumulate(np.where(walk, 0, idx))) % WALK_STEPS
    start = off == 0
    F = np.empty(j.size)
    F[start] = _sf_half(j[start] - 1, m[start])
    M = F.copy()
    prev = idx[~start] - 1
    q = _pmf_half(j[prev] - 1 + dj[~start], m[prev])
    d = np.zeros(j.size)
    d[~start] = np.where(dj[~start] == 0, 0.5 * q, -0.5 * q)
    # one vectorised addition per offset, over every walk at once (a walk's offsets are 0, 1, ...)
    order = np.argsort(off.astype(np.uint16), kind="stable")
    bounds = np.r_[0, np.cumsum(np.bincount(off, minlength=WALK_STEPS))]
    for o in range(1, WALK_STEPS):
        at = order[bounds[o]:bounds[o + 1]]
        if not at.size:
            break
        F[at] = F[at - 1] + d[at]
        M[at] = M[at - 1] + np.abs(d[at])
    err = (_rtol(m) + 4 * (off + 1) * _UNIT) * M + (off + 1) * 2.0 ** -1070
    return np.clip(F, 0.0, 1.0), err


def conditional_tails_walk(
    s: int | np.ndarray,
    k: int | np.ndarray,
    al: float | np.ndarray,
    be: float | np.ndarray,
    ga: float | np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`conditional_tails` with P(Bin(s-1, 1/2) >= k) by :func:`_sf_half_walk` (fast where
    consecutive elements are consecutive s with thresholds stepping by 0 or 1), and a bound err
    on the walk's error in each tail: abs(tail - exact) <= err + boost_rtol(s) x (Boost's other
    values, as :func:`conditional_tails`).  err = (al + be + ga) x the walk's bound, both tails
    reading P(Bin(s-1) >= k) once with weight al, be or ga.

    Source: Koskela et al. 2021, Lemmas B.1-B.3 (P_s, Q_s of the module docstring).
    """
    v.integers("s", s, 0, MAX_N)
    v.integers("k", k, -MAX_N - 1, MAX_N + 1)
    _check_weights(al, be, ga)
    s, k = np.broadcast_arrays(np.atleast_1d(s), np.atleast_1d(k))
    f0, err = _sf_half_walk(k.ravel(), np.maximum(s - 1, 0).ravel())
    f0, err = f0.reshape(s.shape), err.reshape(s.shape)
    tp, tq = _tails(s, k, al, be, ga, f0=f0)
    return tp, tq, (al + be + ga) * err


def _tails(s, k, al, be, ga, f0=None):
    """:func:`conditional_tails` on arguments already checked (the hot loop of :func:`bracket_at`
    reads arrays :func:`prepare` built); ``f0``: P(Bin(s-1, 1/2) >= k) when the caller has it.
    At s = 0 the Bin(s - 1) terms are not read."""
    if f0 is None:
        f0 = _sf_half(k - 1, np.maximum(s - 1, 0))      # P(Bin(s-1) >= k)
    pk = _pmf_half(k - 1, np.maximum(s - 1, 0))
    f1 = f0 + pk                                        # P(1 + Bin(s-1) >= k)
    # P(Bin(s) >= k) = (f0 + f1)/2, as Bin(s) = Bin(s-1) + Bern(1/2)
    fn = np.where(s == 0, (k <= 0) * 1.0, f0 + 0.5 * pk) if np.any(ga) else 0.0
    f1 = np.where(s == 0, (k <= 0) * 1.0, f1)
    f0 = np.where(s == 0, (k <= 0) * 1.0, f0)
    return al * f1 + be * f0 + ga * fn, al * f0 + be * f1 + ga * fn


def _atom(s, a, al, be, ga):
    """(P_s(a), Q_s(a)) of the conditional pair (module docstring), 0 outside 0 <= a <= s."""
    sf = np.maximum(s, 1).astype(float)
    nn = _pmf_half(a, s)
    num = np.where(s == 0, 1.0, (2 * al * a + 2 * be * (s - a) + ga * s) / sf)
    den = np.where(s == 0, 1.0, (2 * al * (s - a) + 2 * be * a + ga * s) / sf)
    return nn * num, nn * den


def loss_threshold(
    s: int | np.ndarray,
    al: float | np.ndarray,
    be: float | np.ndarray,
    ga: float | np.ndarray,
    eps: float,
    ties: Literal["closed", "count"] = "closed",
) -> np.ndarray:
    """Smallest a with loss > eps (the loss is increasing in a since al > be); near ties per
    ``ties``.

    The closed-form root x cancels when e^eps is large (its distance to the next integer is
    O(s / e^eps), below its rounding: randomiser n = 1, P0 = [1/4, 1/4, 1/2], P1 = [1/2, 1e-12, ...]
    at eps = top loss - 3e-5 dropped the top atom, delta 2e-307 for 7.5e-6), so the neighbours of
    floor(x) + 1 are re-decided by the direct comparison of num(a) and e^eps den(a) (each side
    rounded by < 10 ulp) wherever it is decisive, i.e. they differ by more than a relative 1e-14:
    an atom clearly above eps is counted, one clearly below is not.  Within that band (a tie up to
    rounding, P_s(a) - e^eps Q_s(a) of at most 1e-14 P_s(a)) ``ties="closed"`` lets the closed form
    decide (an atom left out so loses at most 1e-14 P_s(a)); ``ties="count"`` counts it,
    the safe side for a caller whose error term holds >= 1e-12 of the counted magnitudes (a counted
    tie adds at most 1.1e-14 e^eps Q_s(a)): the randomiser's upper end, where a left-out top tie
    gave [0, 2e-307] for an exact 1.6e-17 (k-RR, k = 3, eps0 = 7.8e-5, eps = eps0 (1 - 6e-13)).

    Source: Koskela et al. 2021, Lemma 12 / eq. 5.5 (the loss increasing in a).
    """
    v.integers("s", s, 0, MAX_N)
    _check_weights(al, be, ga)
    eps = v.real("eps", eps, -700.0, 700.0)
    ties = v.choice("ties", ties, ("closed", "count"))
    return _threshold(s, al, be, ga, eps, ties)


def _threshold(s, al, be, ga, eps, ties):
    """:func:`loss_threshold` on arguments already checked (as :func:`_tails`)."""
    e = math.exp(eps)
    gap = al - be
    flat = gap <= 0                      # s = 0 of the koskela pair: P_0 = Q_0, loss 0
    with np.errstate(over="ignore"):     # s e^eps beyond the double range: x = +inf, k = s + 1
        x = s * (e * (2 * al + ga) - 2 * be - ga) / (2 * np.where(flat, 1.0, gap) * (1 + e))
    x = np.where(flat, np.where(eps < 0, -1.0, s + 1.0), x)
    k = np.clip(np.floor(x) + 1, 0, s + 1).astype(np.int64)

    def side(a):                         # +1: loss(a) clearly > eps, -1: clearly < eps, 0: a tie
        num = 2 * al * a + 2 * be * (s - a) + ga * s
        den = 2 * al * (s - a) + 2 * be * a + ga * s
        ok = (a >= 0) & (a <= s)
        return np.where(
            ok & (num > e * den * (1 + 1e-14)),
            1,
            np.where(ok & (num * (1 + 1e-14) < e * den), -1, 0),
        )
    with np.errstate(over="ignore", invalid="ignore"):
        # count: a tie (side 0) is counted; closed: x keeps it
        least = 0 if ties == "count" else 1
        k = np.where(side(k - 1) >= least, k - 1, k)
        return np.where((k <= s) & (side(k) < 0), k + 1, k).astype(np.int64)


def s_range(n: int, eps0: float, pr: Pair, tau: float) -> tuple[int, int, float]:
    """Range of S kept (Chernoff range of C at tail tau, widened by 1); the exact mass left out.

    Source: the range of S of Koskela et al. 2021, eq. 5.1-5.2, cut by Chernoff tails.
    """
    n = _check_kernel(n, pr, tau)
    p, u, w = _puw(eps0, pr)
    lo, hi = (int(x[0]) for x in tail_range(n - 1, p, tau))
    lo, hi = max(lo - 1, 0), min(hi + 1, n - 1)
    if pr.full:  # S = C + 1
        out = binom.cdf(lo - 1, n - 1, p) + binom.sf(hi, n - 1, p)
        return lo + 1, hi + 1, float(out)
    q = u + w  # S = C + Delta, Delta ~ Bern(u + w): keep s in [lo, hi + 1]
    out = q * (binom.cdf(lo - 2, n - 1, p) + binom.sf(hi, n - 1, p)) + \
        _rest(eps0, pr) * (binom.cdf(lo - 1, n - 1, p) + binom.sf(hi + 1, n - 1, p))
    return lo, hi + 1, float(out)


def delta_inf(n: int, eps0: float, pair: str | Pair = "fmt21") -> float:
    """delta_{P/Q}(inf) = P-mass where Q = 0, in closed form.

    koskela: P(A + Delta = n) = q (p/2)^(n-1) = (1/2)^(n-1) e^{-(n-2) eps0}/(e^eps0+1) (Koskela et
    al. 2021, after eq. 5.9); fmt21 and stronger: 0 (every outcome has Q > 0 since 1-q > 0).
    """
    n, eps0, pr = check_params(n, eps0, pair)
    if pr.weights is not None:
        p, u, w = pr.weights
        if w > 0:
            return 0.0
        # w = 0: Q vanishes at a = s where ga = 0.  u = 1 (full): at every s, P-mass
        # sum_c P(C=c) 2^-c = (1 - p/2)^(n-1).  Else where P(C = s) = 0: s = n, or every s >= 1
        # when p = 0; the P-mass there is u P(C = n-1) 2^-(n-1), or u
        if u == 1.0:
            return (1 - p / 2) ** (n - 1)
        return u if p == 0.0 else u * (p / 2) ** (n - 1)
    if pr.full:
        return 0.0
    return math.exp(
        math.log(report_probability(eps0))
        + (n - 1) * (math.log(clone_probability(eps0, pair)) - math.log(2))
    )


def has_unmatched(n: int, eps0: float, pair: str | Pair = "fmt21") -> bool:
    """True when P has an atom where Q = 0 (delta_inf > 0 exactly), decided from the pair's
    definition, not from :func:`delta_inf`'s float: koskela's mass, about 10^-735 at n = 1000 and
    eps0 = 1, underflows to 0, and a Renyi route reading that float would return a finite D_lam
    for an infinite one.

    The weights (p, u, w) of :func:`delta_inf` give a positive mass exactly when w = 0 and the pair
    is not full: (1 - p/2)^(n-1) > 0 (p < 1), u > 0, and u (p/2)^(n-1) > 0 when p > 0.
    """
    n, eps0, pr = check_params(n, eps0, pair)
    if pr.weights is not None:
        return pr.weights[2] == 0.0 and not pr.full
    return not pr.full


def prepare(n: int, eps0: float, pr: Pair, tau: float) -> Prepared:
    """The arrays :func:`bracket_at` reads: (s, P(S=s), al, be, ga) over :func:`s_range`, the
    S-mass left out, and the relative error allowed P(S=s) (:func:`boost_rtol` of its n - 1
    trials)."""
    n = _check_kernel(n, pr, tau)
    s_lo, s_hi, out = s_range(n, eps0, pr, tau)
    s = np.arange(s_lo, s_hi + 1)
    ps, al, be, ga = shared_weights(n, eps0, pr, s)
    return s, ps, al, be, ga, out, boost_rtol(n)


def bracket_at(prep: Prepared, eps: float, slope: bool = False
               ) -> tuple[float, float] | tuple[float, float, float, float]:
    """Certified (lower, upper) of delta(eps) from prepared arrays (see delta_bracket_single).

    slope=True also returns the central value and d delta / d eps = -e^eps sum_s P(S=s)
    T^Q_s(a*_s) (the boundary terms vanish), for the Newton steps of epsilon_bracket_single.

    Source: Koskela et al. 2021, Thm 5 with Lemmas B.1-B.3 (module docstring).
    """
    if not (isinstance(prep, tuple) and len(prep) == 7):
        raise TypeError(f"prep must be the 7-tuple returned by prepare(), got prep={prep!r:.80}.")
    eps = v.real("eps", eps, -700.0, 700.0)
    s, ps, al, be, ga, out, rtol = prep
    k = _threshold(s, al, be, ga, eps, "closed")       # prepare's arrays, checked there
    tp, tq = _tails(s, k, al, be, ga)
    e = math.exp(eps)
    # The rounded threshold k can miss the true one by an atom at a tie (loss within rounding of
    # eps: n = 1, eps0 = 4, eps = 4 (1 - 2e-16) gave [0, 1e-307], exact 8.7e-16).  Since
    # T_P(k) - e^eps T_Q(k) is unimodal in k (its steps P_a - e^eps Q_a change sign once, the loss
    # increasing in a), its max over k-2..k+2 is the exact delta_s whenever the true threshold is
    # within 2 of k: the rounding of x in loss_threshold is ~u s (al + be + ga)/(al - be) atoms.
    # Each candidate d = T_P - e^eps T_Q is within rho(s) (boost_rtol: Boost's tails and atoms of
    # Bin(s, 1/2)) of its magnitude m = T_P + e^eps T_Q (plus the atoms added or removed) of its
    # exact value, so the ends take the max of d -/+ rho(s) m; the weights P(S=s) are within a
    # relative rtol (prepare), which scales both ends.
    d, m, tqs = [tp - e * tq], [tp + e * tq], [tq]
    # one binom.pmf call for the four
    pas, qas = _atom(s, np.stack([k - 1, k - 2, k, k + 1]), al, be, ga)
    # k-1, k-2 add atoms k-1, k-2; k+1, k+2 remove k, k+1
    for sign in (-1, 1):
        up, uq, mag = tp, tq, tp + e * tq
        for j in range(2):
            pa, qa = pas[j + (0 if sign < 0 else 2)], qas[j + (0 if sign < 0 else 2)]
            up, uq = (up + pa, uq + qa) if sign < 0 else (up - pa, np.maximum(uq - qa, 0.0))
            mag = mag + pa + e * qa
            d.append(up - e * uq)
            m.append(mag)
            tqs.append(uq)
    d, m = np.array(d), _rtol(np.maximum(s, 1)) * np.array(m)
    # the threshold of the max: its Q-tail gives the slope
    best = np.argmax(d, axis=0)
    val = math.fsum(ps * np.max(np.maximum(d, 0.0), axis=0))
    lo = (math.fsum(ps * np.max(np.maximum(d - m, 0.0), axis=0)) * (1 - 1e-15) * (1 - rtol)
          - s.size * 1e-307)
    hi = (math.fsum(ps * np.max(np.maximum(d + m, 0.0), axis=0)) * (1 + 1e-15) * (1 + rtol)
          + s.size * 1e-307)
    mq = math.fsum(ps * np.take_along_axis(np.array(tqs), best[None, :], axis=0)[0])
    lo, hi = max(0.0, lo), min(1.0, hi + out)
    return (lo, hi, val, -e * mq) if slope else (lo, hi)


def delta_bracket_single(
    n: int, eps0: float, eps: float, pair: str | Pair = "fmt21", tau: float | None = None
) -> Bracket:
    """Certified Bracket for the single-round delta(eps) of the pair, O(#s) binomial tails.

    delta = sum_s P(S=s) [T_P(a*_s) - e^eps T_Q(a*_s)] over the kept range of s (a*_s the first
    a with loss > eps, T the tails of the conditionals); the left-out S-mass (exact binomial
    tails, <= 2 tau) is added to the upper side; a relative ``boost_rtol`` of the summed
    magnitudes covers Boost's errors and rounding, and a*_s is taken tie-safe (the max over
    a*_s - 2 .. a*_s + 2 of the rounded threshold, :func:`bracket_at`).  Both directions
    coincide.  tau=None: 1e-30, then once more with tau = 1e-12 x (lower end) if the left-out
    mass dominates the bracket.

    Source: Koskela et al. 2021, Thm 5, eq. 5.1-5.2; Feldman et al. 2021 Thm 3.2.
    """
    n, eps0, pr = check_params(n, eps0, pair)
    eps = v.real("eps", eps, lo=0.0)
    t = 1e-30 if tau is None else v.real("tau", tau, 1e-300, 1e-3)
    lo, hi = bracket_at(prepare(n, eps0, pr, t), eps)
    if tau is None and hi - lo > 1e-9 * hi:
        lo, hi = bracket_at(prepare(n, eps0, pr, max(1e-300, 1e-12 * lo)), eps)
    return Bracket(lo, hi)


def epsilon_bracket_single(n: int, eps0: float, delta: float, pair: str | Pair = "fmt21",
                           tau: float | None = None) -> Bracket:
    """Certified Bracket for the single-round eps(delta); upper = inf if no finite eps works.

    upper: an eps verified to have delta_upper(eps) <= delta; lower: an eps verified to have
    delta_lower(eps) > delta (or 0).  The root of log delta(eps) = log delta is found by
    safeguarded Newton steps (the slope is free, see :func:`bracket_at`), then both ends are
    nudged outwards until verified: about ten evaluations of O(#s) binomial tails.

    Source: Koskela et al. 2021, Thm 5, eq. 5.1-5.2; Feldman et al. 2021 Thm 3.2.
    """
    n, eps0, pr = check_params(n, eps0, pair)
    delta = v.probability("delta", delta)
    tau = max(min(1e-30, delta * 1e-12), 1e-300) if tau is None else tau
    prep = prepare(n, eps0, pr, tau)
    top = clone_top_loss(n, eps0, pr)
    cache: dict[float, tuple] = {}

    def f(e):               # (lower, upper, central value, slope) at e, each eps evaluated once
        if e not in cache:
            cache[e] = bracket_at(prep, e, slope=True)
        return cache[e]

    big = prep[0].size > 20000            # tails at the median are slow: skip the eps = 0 probe
    if not big and f(0.0)[1] <= delta:
        return Bracket(0.0, 0.0)
    # delta below delta(inf): no finite eps
    if (not pr.full or pr.weights is not None) and f(top)[0] > delta:
        return Bracket(top, math.inf)
    x0 = 0.0
    if big:                               # a Riemann sum over every k-th s finds a starting point
        k = prep[0].size // 5000
        coarse = tuple(a[::k] for a in prep[:5]) + (0.0, prep[6])
        coarse = (coarse[0], coarse[1] * k) + coarse[2:]
        x0 = _root(lambda e: bracket_at(coarse, e, slope=True), delta, top)[0]
    x, gap = _root(f, delta, top, x0)
    # nudged outwards until verified
    lo = search.step_out(lambda e: f(e)[0] > delta, x, gap, True, 0.0)
    hi = search.step_out(lambda e: f(e)[1] <= delta, x, gap, False, top)
    return Bracket(lo, hi if f(hi)[1] <= delta else math.inf)


def _root(at, delta, top, x=0.0):
    """(eps with delta(eps) ~= delta, a first nudge): Newton on log delta in a bisection bracket;
    ``at(e)`` is :func:`bracket_at` with ``slope=True`` at e.

    The nudge is 1.5 x (half-width of the certified delta bracket) / |slope| + 1e-13 eps.
    """
    a, b, target = 0.0, top, math.log(delta)
    for _ in range(200):
        lo, hi, val, d = at(x)
        gap = 1.5 * max(hi - val, val - lo) / max(-d, 1e-300) + 1e-13 * max(x, 1e-6)
        a, b = (x, b) if val > delta else (a, x)
        newton = val > 0 and d < 0
        nxt = x - (math.log(val) - target) * val / d if newton else 0.5 * (a + b)
        # a Newton step within the tolerance is convergence, even where it lands on an end of the
        # bracket (val = delta exactly makes x that end): the bisection that followed took 15 more
        # calls at n = 1e4, eps0 = 4, delta = 1e-6 (26 bracket_at calls in all, now 11)
        if newton and abs(nxt - x) <= 1e-12 * max(x, 1e-6):
            return min(max(nxt, a), b), min(gap, top)
        if not a < nxt < b:
            nxt = 0.5 * (a + b)
        if abs(nxt - x) <= 1e-12 * max(x, 1e-6) or b - a <= 1e-14 * max(b, 1e-6):
            return nxt, min(gap, top)
        x = nxt
    return 0.5 * (a + b), 1e-12 * top


def clone_top_loss(n: int, eps0: float, pr: Pair) -> float:
    """An eps above every finite loss of the pair at n users (where the tail cut's dropped mass
    goes).

    Full pairs: eps0.  Fixed-weight pairs: the three cases below.  koskela (al = w_s, be = 0,
    ga = 1 - w_s): at S = s < n the largest finite loss is log(1 + 2 w_s/(1 - w_s)) at a = s, and
    w_s/(1 - w_s) = 1/odds_s grows with s, so s = n - 1 gives the largest; at S = n (w = 1,
    ga = 0) the finite losses are log(a/(n - a)), largest log(n - 1) at a = n - 1.  The maximum of
    the two, with a relative margin of 1e-12 for the rounding of log1p and the odds (a few ulps).
    An earlier version returned log(2 (n-1) e^eps0 (1-p)/p), which drops the 1 + and the S = n
    case and lay below the largest finite loss at every n <= 100 checked (e.g. 0.760 against 1.144
    at n = 2, eps0 = 0.5; tests/test_clones.py::test_top_loss_is_above_every_finite_loss).

    Source: Koskela et al. 2021, eq. 5.5 and eq. B.6 (the odds; koskela) and Feldman et al. 2021
    (full pairs: loss <= eps0).
    """
    n = _check_kernel(n, pr)
    if pr.weights is None:
        eps0 = v.real("eps0", eps0, 0.0, 30.0, lo_open=True)
    if pr.weights is not None:
        p, u, w = pr.weights
        if w > 0:      # the loss is a ratio of sums whose termwise ratios are u/w, w/u and 1
            return math.log(u / w) * (1 + 1e-12) + 1e-12
        if p == 0.0:   # no clones: the only finite-loss atom is s = 0 (loss 0)
            return 0.0
        if u == 1.0:   # al = 1, be = ga = 0: the loss log(a/(s-a)) is largest at a = s-1 <= n-1
            return math.log(max(n - 1, 1)) * (1 + 1e-12) + 1e-12
        # w = 0: log(1 + 2 al/ga) at a = s = n-1, or log(n-1) at S = n (al = 1, ga = 0), as koskela
        x = 2 * u / (1 - u) * max(n - 1, 1) * (1 - p) / p
        return max(math.log1p(x), math.log(max(n - 1, 1))) * (1 + 1e-12) + 1e-12
    if pr.full:
        return eps0
    # koskela: log1p(2/odds) at a = s = n-1 (odds as in shared_weights), or log(n-1) at S = n
    top = 0.0                                      # n = 1: the atoms have losses 0, -inf, +inf only
    if n >= 2:
        top = math.log(n - 1)
        p, u, w0 = _puw(eps0, pr)
        odds = _rest(eps0, pr) / (u + w0) / (n - 1) * p / (1 - p)
        top = max(top, math.log1p(2.0 / odds))
    return top * (1 + 1e-12) + 1e-12


def decomposition_holds(R: Sequence[Sequence[float]] | np.ndarray, eps0: float, pair: str = "fmt21",
                        tol: float = 1e-12) -> bool:
    """Does R(x) >= p_clone/2 (R(x0) + R(x1)) hold for all rows x and all x0 != x1 of the matrix R?

    The clone decomposition behind each pair (p_clone = e^-eps0: fmt21, koskela; 2/(e^eps0+1):
    stronger).  R[x, y] = P(R(x) = y); rows must be eps0-LDP.

    Source: Feldman et al. 2021 Thm 3.2; Feldman et al. 2023 (stronger).
    """
    R = v.stochastic_matrix("R", R)
    tol = v.real("tol", tol, 0.0, 1e-3, lo_open=True)
    p = clone_probability(eps0, pair)
    mix = 0.5 * (R[:, None, :] + R[None, :, :])
    ok = R[:, None, None, :] >= p * mix[None, :, :, :] - tol
    ok |= np.eye(R.shape[0], dtype=bool)[None, :, :, None]   # x0 = x1: no differing pair
    return bool(np.all(ok))
