"""Rényi divergence of shuffle-model pairs, the bounds of seed 003, and RDP -> (eps, delta).

D_lam(P||Q) = 1/(lam-1) log sum_o P(o)^lam Q(o)^(1-lam)  (seed 003 eq. 2; Mironov 2017),
computed in log space by log-sum-exp over the atoms, for real lam > 1.

* :func:`renyi_pmfs`: both directions of any pair of PMFs on one support (exact).
* :func:`renyi_pld`: D_lam(P||Q) = 1/(lam-1) log E_P[e^{(lam-1) L}] from a PLD.
* :func:`clone_rdp`: certified bracket of the clones pair's RDP (:mod:`shuffle_lib.clones`) for
  large n from the truncated atom set of :mod:`shuffle_lib.clone_pld`.  Both directions are
  equal for the full pairs (the map a -> s-a swaps P and Q).
* :func:`chen_pmfs`: the pair of seed 003's proof of Thm 1 (App. A.1), Delta ~ Bern(e^-eps0).
* :func:`chen_printed_logpmfs`, :func:`chen_printed_rdp`: Thm 1's pair as printed, (A, C-A+Delta)
  vs (A+Delta, C-A).
* :func:`shuffled_rr_rdp`: shuffled binary randomised response, a real mechanism (a lower bound).
* :func:`cor2_rdp`: seed 003 Cor. 2.  :func:`girgis_upper`, :func:`girgis_lower` (seed 003 eq. 5, 6) and
  :func:`girgis_upper_full` (Girgis et al. Thm 1) live in :mod:`shuffle_lib.renyi_bounds`.
* :func:`eps_from_rdp`: RDP curve -> eps(delta), Mironov's conversion or the improved one.
"""

import math

import numpy as np
from scipy.special import logsumexp
from scipy.stats import binom

from . import _validate as v
from ._logmath import binom_logpmf
from .clones import _check, _q, _shared, _top, delta_inf
from .fourier import Bracket
from .renyi_bounds import girgis_lower, girgis_upper, girgis_upper_full  # noqa: F401  (re-exported)

_LAM_MAX = 1e4
_MAX_ATOMS = 30_000_000   # clone_rdp's atoms (n = 1e6 at eps0 = 1 needs 2.3e7)


def _lams(lam):
    return v.reals("lam", lam, lo=1.0, hi=_LAM_MAX, lo_open=True)


def _logdiv(logp, logq, lam):
    """1/(lam-1) log sum exp(lam logp + (1-lam) logq) over atoms with P > 0 (inf if Q = 0 there)."""
    keep = np.isfinite(logp)
    if np.any(~np.isfinite(logq[keep])):
        return math.inf
    return float(logsumexp(lam * logp[keep] + (1 - lam) * logq[keep])) / (lam - 1)


def renyi_pmfs(p, q, lam):
    """(D_lam(P||Q), D_lam(Q||P)) for each lam in ``lam`` (arrays), PMFs on one support."""
    p, q = v.pmf("p", p), v.pmf("q", q)
    if p.shape != q.shape:
        raise ValueError(f"p and q must have the same length, got {p.size} and {q.size}.")
    with np.errstate(divide="ignore"):
        lp, lq = np.log(p), np.log(q)
    lams = _lams(lam)
    return (np.array([_logdiv(lp, lq, x) for x in lams]), np.array([_logdiv(lq, lp, x) for x in lams]))


def renyi_pld(pld, lam):
    """D_lam(P||Q) = 1/(lam-1) log E_P[e^{(lam-1)L}] from the PLD of P w.r.t. Q (inf if inf_mass > 0).

    One direction only: D_lam(Q||P) needs the PLD of Q w.r.t. P (or Q << P and E_P[e^{-lam L}]).
    """
    lams = _lams(lam)
    if pld.inf_mass > 0:
        return np.full(lams.size, math.inf)
    return _log_moments(pld, lams) / (lams - 1)


def _log_moments(pld, lams):
    """log E_P[e^{(lam-1) L}; L finite] for each lam (log-sum-exp over the finite atoms)."""
    keep = pld.probs > 0
    lp, L = np.log(pld.probs[keep]), pld.losses[keep]
    return np.array([float(logsumexp(lp + (x - 1) * L)) for x in lams])


def renyi_pld_bracket(pld, lam, max_loss):
    """(lower, upper) arrays for D_lam(P||Q) when the PLD's +inf mass stands for cut atoms whose
    loss is at most ``max_loss`` (e.g. a tail cut of an eps-LDP-bounded pair): the cut atoms add
    between 0 and inf_mass e^{(lam-1) max_loss} to E_P[e^{(lam-1)L}]."""
    lams = _lams(lam)
    max_loss = v.real("max_loss", max_loss, 0.0, 700.0)
    lo = _log_moments(pld, lams)
    hi = lo if pld.inf_mass == 0 else np.logaddexp(lo, math.log(pld.inf_mass) + (lams - 1) * max_loss)
    return np.maximum(lo, 0.0) / (lams - 1), (hi + 1e-12 * np.abs(hi) + 1e-300) / (lams - 1)   # rounding


def _log_atoms(n, eps0, pr, tau):
    """(log P, log Q) on the kept atoms (s, a) of clone_pld's truncation, and the exact dropped P-mass.

    Log space throughout (binom_logpmf), so no atom underflows.
    """
    from .clone_pld import _kept
    try:
        ss, aa, dropped = _kept(n, eps0, pr, tau, max_atoms=_MAX_ATOMS)     # memory: ~10 arrays of this size
    except ValueError as err:
        raise ValueError(f"the exact RDP is out of reach here: {str(err).split(';')[0]} "
                         "(the atom count grows like n; take a smaller n).") from None
    ps, al, be, ga = _shared(n, eps0, pr, ss)
    with np.errstate(divide="ignore"):
        base = np.log(ps) + binom_logpmf(aa, ss, 0.5)
        num = np.log(2 * al * aa + 2 * be * (ss - aa) + ga * ss) - np.log(ss)
        den = np.log(2 * al * (ss - aa) + 2 * be * aa + ga * ss) - np.log(ss)
    lp, lq = base + num, base + den
    ok = np.isfinite(lp) & np.isfinite(lq)      # P(S=s) below 1e-308: a P-mass < 1e-308 each, dropped
    return lp[ok], lq[ok], dropped + 1e-308 * int(np.count_nonzero(~ok))


def clone_rdp(n, eps0, lam, pair="fmt21", tau=None):
    """Certified Brackets for D_lam(P||Q) = D_lam(Q||P) of a clones pair, one per lam.

    S = E_P[e^{(lam-1)L}] is summed as 1 + sum P expm1((lam-1) L) over the kept atoms; the dropped
    P-mass d (exact binomial tails) adds between -d and d (e^{(lam-1) eps0} - 1) to it (the loss of
    the full pairs never exceeds eps0, FMT21), rounding 1e-12 of the summed magnitudes:
    slack (upper - lower) <= [2e-12 sum|terms| + d e^{(lam-1) eps0}] / ((lam-1) S).
    tau=None picks tau = e^{-(lam_max-1) eps0 - 45} (clipped to [1e-300, 1e-18]), so the truncation
    part of the slack is below ~1e-19 of S and rounding dominates: relative widths <= 2e-9 at
    n = 1e4 (benchmarks/renyi.py).  ``koskela`` has Q = 0 atoms: D_lam(P||Q) = inf.
    """
    n, eps0, pr = _check(n, eps0, pair)
    lams = _lams(lam)
    if not pr.full:
        if delta_inf(n, eps0, pair) > 0:
            return [Bracket(math.inf, math.inf) for _ in lams]
    if tau is None:
        tau = min(1e-18, max(1e-300, math.exp(-(lams.max() - 1) * eps0 - 45)))
    tau = v.real("tau", tau, 1e-300, 1e-3)
    lp, lq, dropped = _log_atoms(n, eps0, pr, tau)
    return [Bracket(*_bracket_one(lp, lp - lq, dropped, x, _top(n, eps0, pr))) for x in lams]


def _bracket_one(lp, L, d, lam, top):
    """(lower, upper) of 1/(lam-1) log S, S = sum_all P e^{(lam-1) L} = 1 + sum_all P expm1((lam-1) L).

    Kept atoms summed as S - 1 (no cancellation when D is small); the dropped mass d contributes
    to S - 1 between -d and d expm1((lam-1) top); rounding: 1e-12 of the summed magnitudes.
    Where (lam-1) top > 700 the log-sum-exp of the kept atoms is used instead (D is then large).
    """
    x = lam - 1
    if x * top <= 700:
        terms = np.exp(lp) * np.expm1(x * L)
        s1, err = float(np.sum(terms)), 1e-12 * float(np.sum(np.abs(terms))) + 1e-300   # pairwise sums
        lo = math.log1p(max(s1 - err - d, -1 + 1e-300))
        hi = math.log1p(s1 + err + d * math.expm1(x * top))
        return max(lo, 0.0) / x, hi / x
    s = float(logsumexp(lp + x * L))
    hi = np.logaddexp(s, math.log(d) + x * top) if d > 0 else s
    return max(0.0, s - 1e-12) / x, (float(hi) + 1e-12) / x


def chen_pmfs(n, eps0, p_delta=None):
    """Seed 003 App. A.1 (proof of Thm 1): P2 = (A+Delta, C-A+1-Delta), Q2 = (A+1-Delta, C-A+Delta),

    C ~ Bin(n-1, e^-eps0), A ~ Bin(C, 1/2), Delta ~ Bern(p_delta), p_delta = e^-eps0 by default (the
    seed's); FMT21 has p_delta = e^eps0/(e^eps0+1); p_delta = 1 gives P = (A+1, C-A), Q = (A, C-A+1).
    Atoms (s, a), s = C+1 in 1..n, a in 0..s, flattened as in clone_pld.clone_pmfs; O(n^2), n <= 3000.
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


def chen_printed_logpmfs(n, eps0, p_delta=None):
    """log PMFs of seed 003 Thm 1's pair *as printed*: P = (A, C-A+Delta), Q = (A+Delta, C-A),

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


def chen_printed_rdp(n, eps0, lam, p_delta=None):
    """(D_lam(P||Q), D_lam(Q||P)) of :func:`chen_printed_logpmfs`, arrays over lam (inf where a
    direction has mass where the other pair member has none)."""
    lp, lq = chen_printed_logpmfs(n, eps0, p_delta)
    lams = _lams(lam)
    return np.array([_logdiv(lp, lq, x) for x in lams]), np.array([_logdiv(lq, lp, x) for x in lams])


def shuffled_rr_logpmfs(n, eps0):
    """log PMFs of the shuffled binary randomised response (a real eps0-LDP shuffler), O(n).

    The other n-1 users hold 0; the differing user holds 1 (P) or 0 (Q); the shuffler's output is
    the count K of reported ones: K = Bin(n-1, 1-q) + Bern(q) under P, + Bern(1-q) under Q,
    q = e^eps0/(e^eps0+1).  Its RDP is attained by a real mechanism, so it lower-bounds the
    worst-case RDP of shuffled eps0-LDP processes (and the clones pair upper-bounds it).
    """
    n = v.integer("n", n, lo=1, hi=10 ** 8)
    eps0 = v.real("eps0", eps0, 0.0, 30.0, lo_open=True)
    k = np.arange(n + 1)
    lb0, lb1 = binom_logpmf(k, n - 1, 1 - _q(eps0)), binom_logpmf(k - 1, n - 1, 1 - _q(eps0))
    lq, l1q = -math.log1p(math.exp(-eps0)), -math.log1p(math.exp(eps0))    # log q, log(1-q)
    return np.logaddexp(lq + lb1, l1q + lb0), np.logaddexp(l1q + lb1, lq + lb0)


def shuffled_rr_rdp(n, eps0, lam):
    """(D_lam(P||Q), D_lam(Q||P)) of :func:`shuffled_rr_logpmfs`, arrays over lam."""
    lp, lq = shuffled_rr_logpmfs(n, eps0)
    lams = _lams(lam)
    return np.array([_logdiv(lp, lq, x) for x in lams]), np.array([_logdiv(lq, lp, x) for x in lams])


def chen_thm1_check(n, eps0, t):
    """Seed 003 Thm 1 / Lemma A.5 formulas against direct enumeration of the proof's pair, at threshold t.

    Reject when a > t b; P2 = (A+Delta, C-A+1-Delta), Q2 = (A+1-Delta, C-A+Delta), Delta ~ Bern(p),
    p = e^-eps0.  Returns alpha, beta (direct), h (Thm 1's 1 - alpha - c0 sum_v P(B1 < A <= B2 | C=v) P(C=v)
    with g(alpha) = t), and Lemma A.5's alpha_A5 = sum_v P(A > (tv+t)/(tv-1)) P(C=v) next to the direct
    alpha_0 = P(A/(C-A+1) > t) it stands for.  O(n^2), n <= 3000.
    """
    n = v.integer("n", n, lo=2, hi=3000)
    eps0 = v.real("eps0", eps0, 0.0, 30.0, lo_open=True)
    t = v.real("t", t, lo=0.0, lo_open=True)
    p = math.exp(-eps0)
    c = np.concatenate([np.full(k + 1, k) for k in range(n)])
    a = np.concatenate([np.arange(k + 1) for k in range(n)])
    w = binom.pmf(c, n - 1, p) * binom.pmf(a, c, 0.5)
    b = c - a
    rej0, rej1 = a > t * (b + 1), a + 1 > t * b              # Delta = 0: (A, C-A+1); Delta = 1: (A+1, C-A)
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


def cor2_rdp(n, eps0, lam):
    """Seed 003 Cor. 2: 2 e^{eps0} lam / (n-1) ("approximately", a normal approximation, lam >= 2)."""
    n = v.integer("n", n, lo=2)
    eps0 = v.real("eps0", eps0, lo=0.0, hi=700.0, lo_open=True)     # e^eps0 stays a double
    return 2 * math.exp(eps0) * _lams(lam) / (n - 1)


def gdp_rdp(mu, lam):
    """mu-GDP -> (lam, mu^2 lam / 2)-RDP (Dong, Roth, Su 2022; seed 003 before Cor. 2)."""
    mu = v.real("mu", mu, lo=0.0)
    return 0.5 * mu ** 2 * _lams(lam)


def eps_from_rdp(lam, rdp, delta, method="improved"):
    """min over the orders of eps(delta) from an RDP curve (lam_i, rdp_i); returns (eps, lam*).

    standard (Mironov 2017, Prop. 3): eps = D + log(1/delta)/(lam-1).
    improved (Canonne, Kamath, Steinke 2020, Prop. 12; the conversion of Google dp_accounting):
    eps = D + log((lam-1)/lam) - (log delta + log lam)/(lam-1), always <= standard.
    """
    lams = _lams(lam)
    d = np.asarray(rdp, dtype=float)
    if d.shape != lams.shape or np.any(np.isnan(d)) or np.any(d < 0):
        raise ValueError(f"rdp must be non-negative, one per order, got {rdp!r}.")
    delta = v.probability("delta", delta)
    if method == "standard":
        e = d + math.log(1 / delta) / (lams - 1)
    elif method == "improved":
        e = d + np.log1p(-1 / lams) - (math.log(delta) + np.log(lams)) / (lams - 1)
    else:
        raise ValueError(f"method must be 'standard' or 'improved', got method={method!r}.")
    e = np.maximum(e, 0.0)
    i = int(np.argmin(e))
    return float(e[i]), float(lams[i])
