"""Renyi divergence of the clones pair and of the shuffle pairs Chen et al. 2024 studies.

* :func:`clone_rdp`: certified bracket of the clones pair's RDP
  (:mod:`shuffle_lib.mechanisms.clones.pairs`) for large n from the truncated atom set of
  :mod:`shuffle_lib.mechanisms.clones.pld`.  Both directions are equal for the full pairs (the map a
  -> s-a swaps P and Q).
* :func:`chen_pmfs`: the pair of Chen et al.'s (2024) proof of Thm 1 (App. A.1), Delta ~
  Bern(e^-eps0).
* :func:`chen_printed_logpmfs`, :func:`chen_printed_rdp`: Thm 1's pair as printed, (A, C-A+Delta)
  vs (A+Delta, C-A).
* :func:`shuffled_rr_rdp`: shuffled binary randomised response, a real mechanism (a lower bound).

The generic tools (``renyi_pmfs``, ``renyi_pld``, ``eps_from_rdp``) are in
:mod:`shuffle_lib.core.renyi`; the closed-form bounds of Chen et al. 2024 (Cor. 2) and Girgis et al.
(eq. 5,
6) in
:mod:`shuffle_lib.bounds.renyi`.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import logsumexp
from scipy.stats import binom

from shuffle_lib.core import validate as v
from shuffle_lib.core.binomial import binom_logpmf
from shuffle_lib.core.renyi import check_orders, log_divergence
from shuffle_lib.core.types import ArrayLike, Bracket
from shuffle_lib.mechanisms.clones.pairs import (
    check_params,
    clone_top_loss,
    has_unmatched,
    report_probability,
    shared_weights,
)
from shuffle_lib.mechanisms.clones.pld import kept_atoms

_MAX_ATOMS = 30_000_000   # clone_rdp's atoms (n = 1e6 at eps0 = 1 needs 2.3e7)


def _log_atoms(n, eps0, pr, tau):
    """(log P, log Q) on the kept atoms (s, a) of clone_pld's truncation, and the exact dropped
    P-mass.

    Log space throughout (binom_logpmf), so no atom underflows.
    """
    try:
        # memory: ~10 arrays of this size
        ss, aa, dropped = kept_atoms(n, eps0, pr, tau, max_atoms=_MAX_ATOMS)
    except ValueError as err:
        raise ValueError(f"the exact RDP is out of reach here: {str(err).split(';')[0]} "
                         "(the atom count grows like n; take a smaller n).") from None
    ps, al, be, ga = shared_weights(n, eps0, pr, ss)
    with np.errstate(divide="ignore"):
        base = np.log(ps) + binom_logpmf(aa, ss, 0.5)
        num = np.log(2 * al * aa + 2 * be * (ss - aa) + ga * ss) - np.log(ss)
        den = np.log(2 * al * (ss - aa) + 2 * be * aa + ga * ss) - np.log(ss)
    lp, lq = base + num, base + den
    # P(S=s) below 1e-308: a P-mass < 1e-308 each, dropped
    ok = np.isfinite(lp) & np.isfinite(lq)
    return lp[ok], lq[ok], dropped + 1e-308 * int(np.count_nonzero(~ok))


def clone_rdp(
    n: int, eps0: float, lam: ArrayLike, pair: str = "fmt21", tau: float | None = None
) -> list[Bracket]:
    """Certified Brackets for D_lam(P||Q) = D_lam(Q||P) of a clones pair, one per lam.

    S = E_P[e^{(lam-1)L}] is summed as 1 + sum P expm1((lam-1) L) over the kept atoms; the dropped
    P-mass d (exact binomial tails) adds between -d and d (e^{(lam-1) eps0} - 1) to it (the loss of
    the full pairs never exceeds eps0, FMT21), rounding 1e-12 of the summed magnitudes:
    slack (upper - lower) <= [2e-12 sum|terms| + d e^{(lam-1) eps0}] / ((lam-1) S).
    tau=None picks tau = e^{-(lam_max-1) eps0 - 45} (clipped to [1e-300, 1e-18]), so the truncation
    part of the slack is below ~1e-19 of S and rounding dominates: relative widths <= 2e-9 at
    n = 1e4 (benchmarks/renyi.py).  ``koskela`` has Q = 0 atoms: D_lam(P||Q) = inf.

    Source: Chen et al. 2024, eq. 2 on the clones pair (Feldman et al. 2021 Thm 3.2).
    """
    n, eps0, pr = check_params(n, eps0, pair)
    lams = check_orders(lam)
    if has_unmatched(n, eps0, pair):      # from the definition: the mass itself may underflow
        return [Bracket(math.inf, math.inf) for _ in lams]
    if tau is None:
        tau = min(1e-18, max(1e-300, math.exp(-(lams.max() - 1) * eps0 - 45)))
    tau = v.real("tau", tau, 1e-300, 1e-3)
    lp, lq, dropped = _log_atoms(n, eps0, pr, tau)
    return [
        Bracket(*_bracket_one(lp, lp - lq, dropped, x, clone_top_loss(n, eps0, pr))) for x in lams
    ]


def _bracket_one(lp, L, d, lam, top):
    """(lower, upper) of 1/(lam-1) log S, S = sum_all P e^{(lam-1) L} = 1 + sum_all P expm1((lam-1)
    L).

    Kept atoms summed as S - 1 (no cancellation when D is small); the dropped mass d contributes
    to S - 1 between -d and d expm1((lam-1) top); rounding: 1e-12 of the summed magnitudes.
    Where (lam-1) top > 700 the log-sum-exp of the kept atoms is used instead (D is then large).
    """
    x = lam - 1
    if x * top <= 700:
        terms = np.exp(lp) * np.expm1(x * L)
        # pairwise sums
        s1, err = float(np.sum(terms)), 1e-12 * float(np.sum(np.abs(terms))) + 1e-300
        lo = math.log1p(max(s1 - err - d, -1 + 1e-300))
        hi = math.log1p(s1 + err + d * math.expm1(x * top))
        return max(lo, 0.0) / x, max(hi, 0.0) / x      # a divergence is >= 0
    s = float(logsumexp(lp + x * L))
    hi = np.logaddexp(s, math.log(d) + x * top) if d > 0 else s
    return max(0.0, s - 1e-12) / x, (float(hi) + 1e-12) / x


def chen_pmfs(n: int, eps0: float, p_delta: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Chen et al. 2024, App. A.1 (proof of Thm 1): P2 = (A+Delta, C-A+1-Delta), Q2 = (A+1-Delta,
    C-A+Delta),

    C ~ Bin(n-1, e^-eps0), A ~ Bin(C, 1/2), Delta ~ Bern(p_delta), p_delta = e^-eps0 by default
    (Chen et al.'s); FMT21 has p_delta = e^eps0/(e^eps0+1); p_delta = 1 gives P = (A+1, C-A),
    Q = (A, C-A+1). Atoms (s, a), s = C+1 in 1..n, a in 0..s, flattened as in
    clone_pld.clone_pmfs; O(n^2), n <= 3000.
    """
    n = v.integer("n", n, lo=1, hi=3000)
    eps0 = v.real("eps0", eps0, 0.0, 30.0, lo_open=True)
    pc = math.exp(-eps0)
    p = pc if p_delta is None else v.real("p_delta", p_delta, 0.0, 1.0)
    s = np.concatenate([np.full(k + 1, k) for k in range(1, n + 1)])
    a = np.concatenate([np.arange(k + 1) for k in range(1, n + 1)])
    c = binom.pmf(s - 1, n - 1, pc)
    first = binom.pmf(a - 1, s - 1, 0.5)      # the +1 on the first count: A = a-1
    second = binom.pmf(a, s - 1, 0.5)         # the +1 on the second count: A = a
    return c * (p * first + (1 - p) * second), c * (p * second + (1 - p) * first)


def chen_printed_logpmfs(
    n: int, eps0: float, p_delta: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """log PMFs of Chen et al. 2024, Thm 1's pair *as printed*: P = (A, C-A+Delta), Q = (A+Delta,
    C-A),

    C ~ Bin(n-1, e^-eps0), A ~ Bin(C, 1/2), Delta ~ Bern(p_delta) independent, p_delta = e^-eps0 by
    default.  Atoms (s, a) with s = C + Delta in 0..n and first count a in 0..s, s-major (s = 0
    first).  Delta = 0 gives (A, C-A) under both; Delta = 1 gives (A, C-A+1) under P, (A+1, C-A)
    under Q.  Log space (binom_logpmf), so no atom underflows; O(n^2), n <= 3000.
    """
    n = v.integer("n", n, lo=1, hi=3000)
    eps0 = v.real("eps0", eps0, 0.0, 30.0, lo_open=True)
    pc = math.exp(-eps0)
    pd = pc if p_delta is None else v.real("p_delta", p_delta, 0.0, 1.0)
    s = np.concatenate([np.full(k + 1, k) for k in range(n + 1)])
    a = np.concatenate([np.arange(k + 1) for k in range(n + 1)])
    with np.errstate(divide="ignore"):
        l0, l1 = np.log1p(-pd), np.log(pd)
    both = l0 + binom_logpmf(s, n - 1, pc) + binom_logpmf(a, s, 0.5)     # Delta = 0: C = s, A = a
    m = s >= 1                                                           # Delta = 1: C = s - 1
    lp, lq = np.full(s.size, -np.inf), np.full(s.size, -np.inf)
    c1 = l1 + binom_logpmf(s[m] - 1, n - 1, pc)
    lp[m] = c1 + binom_logpmf(a[m], s[m] - 1, 0.5)                        # P: A = a
    lq[m] = c1 + binom_logpmf(a[m] - 1, s[m] - 1, 0.5)                    # Q: A = a - 1
    return np.logaddexp(both, lp), np.logaddexp(both, lq)


def chen_printed_rdp(n: int, eps0: float, lam: ArrayLike,
                     p_delta: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(D_lam(P||Q), D_lam(Q||P)) of :func:`chen_printed_logpmfs`, arrays over lam (inf where a
    direction has mass where the other pair member has none)."""
    lp, lq = chen_printed_logpmfs(n, eps0, p_delta)
    lams = check_orders(lam)
    return np.array([log_divergence(lp, lq, x) for x in lams]), np.array(
        [log_divergence(lq, lp, x) for x in lams]
    )


def shuffled_rr_logpmfs(n: int, eps0: float) -> tuple[np.ndarray, np.ndarray]:
    """log PMFs of the shuffled binary randomised response (a real eps0-LDP shuffler), O(n).

    The other n-1 users hold 0; the differing user holds 1 (P) or 0 (Q); the shuffler's output is
    the count K of reported ones: K = Bin(n-1, 1-q) + Bern(q) under P, + Bern(1-q) under Q,
    q = e^eps0/(e^eps0+1).  Its RDP is attained by a real mechanism, so it lower-bounds the
    worst-case RDP of shuffled eps0-LDP processes (and the clones pair upper-bounds it).

    Source: binary randomised response (Warner 1965), shuffled; the lower-bound mechanism of
    Chen, Cao & Ge's (2024) comparisons.
    """
    n = v.integer("n", n, lo=1, hi=10 ** 8)
    eps0 = v.real("eps0", eps0, 0.0, 30.0, lo_open=True)
    k = np.arange(n + 1)
    lb0, lb1 = (
        binom_logpmf(k, n - 1, 1 - report_probability(eps0)),
        binom_logpmf(k - 1, n - 1, 1 - report_probability(eps0)),
    )
    lq, l1q = -math.log1p(math.exp(-eps0)), -math.log1p(math.exp(eps0))    # log q, log(1-q)
    return np.logaddexp(lq + lb1, l1q + lb0), np.logaddexp(l1q + lb1, lq + lb0)


def shuffled_rr_rdp(n: int, eps0: float, lam: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """(D_lam(P||Q), D_lam(Q||P)) of :func:`shuffled_rr_logpmfs`, arrays over lam.

    Source: Chen et al. 2024, eq. 2 on :func:`shuffled_rr_logpmfs`.
    """
    lp, lq = shuffled_rr_logpmfs(n, eps0)
    lams = check_orders(lam)
    return np.array([log_divergence(lp, lq, x) for x in lams]), np.array(
        [log_divergence(lq, lp, x) for x in lams]
    )


def chen_thm1_check(n: int, eps0: float, t: float) -> dict[str, float]:
    """Chen et al. 2024, Thm 1 / Lemma A.5 formulas against direct enumeration of the proof's pair,
    at threshold t.

    Reject when a > t b; P2 = (A+Delta, C-A+1-Delta), Q2 = (A+1-Delta, C-A+Delta), Delta ~ Bern(p),
    p = e^-eps0.  Returns alpha, beta (direct), h (Thm 1's 1 - alpha - c0 sum_v P(B1 < A <= B2 |
    C=v) P(C=v) with g(alpha) = t), and Lemma A.5's alpha_A5 = sum_v P(A > (tv+t)/(tv-1)) P(C=v)
    next to the direct alpha_0 = P(A/(C-A+1) > t) it stands for.  O(n^2), n <= 3000.
    """
    n = v.integer("n", n, lo=2, hi=3000)
    eps0 = v.real("eps0", eps0, 0.0, 30.0, lo_open=True)
    t = v.real("t", t, lo=0.0, lo_open=True)
    p = math.exp(-eps0)
    c = np.concatenate([np.full(k + 1, k) for k in range(n)])
    a = np.concatenate([np.arange(k + 1) for k in range(n)])
    w = binom.pmf(c, n - 1, p) * binom.pmf(a, c, 0.5)
    b = c - a
    # Delta = 0: (A, C-A+1); Delta = 1: (A+1, C-A)
    rej0, rej1 = a > t * (b + 1), a + 1 > t * b
    alpha = math.fsum(w * ((1 - p) * rej0 + p * rej1))
    beta = math.fsum(w * ((1 - p) * (a + 1 <= t * b) + p * (a <= t * (b + 1))))
    vv = np.arange(1, n)
    k = np.floor((t * vv - 1) / (t + 1)) + 1                 # the one integer in (B1, B1 + 1]
    mid = math.fsum(binom.pmf(vv, n - 1, p) * binom.pmf(k, vv, 0.5))
    c0 = (p - 1) / (p + 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        thr = np.where(t * vv > 1, (t * vv + t) / (t * vv - 1), np.inf)
    alpha_a5 = math.fsum(binom.pmf(vv, n - 1, p) * binom.sf(np.floor(thr), vv, 0.5))
    return {"alpha": alpha, "beta": beta, "h": 1 - alpha - c0 * mid,
            "alpha_A5": alpha_a5, "alpha_0": math.fsum(w * rej0)}
