"""Shuffled k-randomised response (k-RR): exact privacy loss distributions.

The protocol of Balle et al. (2019) as analysed in Koskela et al. 2021, Sec. 4 (Koskela et al. 2022
Sec. 4): each of n parties reports its value x_i in [k] truthfully with
probability 1 - gamma and a uniform value in [k] with probability gamma; a
shuffler releases the multiset.  The neighbours differ in x_n = 1 vs x'_n = 2.

* Strong adversary A_s (Koskela et al. 2021, Def. 7): knows x_1..x_{n-1} and beta in {0,1}^n.
  If beta_n = 1 (prob. gamma) both views have one law: loss 0.  Otherwise the
  view reduces to the counts (A + 1, C) under X and (A, C + 1) under X', with
  (A, C) the counts of values 1 and 2 among the randomisers of the first n-1
  parties, jointly Multinomial(n-1; gamma/k, gamma/k); the loss is
  log((A + 1)/C), +inf when C = 0 (Koskela et al. 2021, eq. 4.1 gives only the two marginals).
* Weak adversary A_w (Koskela et al. 2021, Def. 9, Thm 10, App. A): knows beta_1..beta_{n-1},
  b = sum beta.  Sufficient statistic (u, w, b) = counts of values 1, 2 left
  after removing truthful answers; loss (Koskela et al. 2021, App. A)
  log[((1-gamma) u + gamma (b+1)/k) / ((1-gamma) w + gamma (b+1)/k)].

Both PLDs are symmetric (swapping the values 1 and 2 maps the P/Q loss to the
Q/P loss), so one PLD serves both directions.  Tails are cut with Chernoff's
bound; the cut mass (<= ``tail``) is sent to +inf in ``upper`` and dropped in
``lower``, so hockey-stick values of ``upper`` are >= the exact ones and those
of ``lower`` are <=.  With ``tail=0`` nothing is cut.  Views with equal
likelihood ratio are merged into one atom (exact up to rounding).  Beyond the
exact PLDs' size limits, :mod:`shuffle_lib.mechanisms.krr.lattice` supplies certified lattice
pairs, used automatically by ``krr.delta_bracket`` and ``krr.epsilon_bracket``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import numpy as np
from scipy.stats import binom

from shuffle_lib.core import validate as v
from shuffle_lib.core.binomial import binom_window
from shuffle_lib.core.constants import BINOMIAL_TAIL
from shuffle_lib.core.pld import PLD, hockey_stick

Adversary = Literal["strong", "weak"]

TAIL = BINOMIAL_TAIL  # default mass cut from the tails of each PLD
MAX_ATOMS = 10 ** 7   # refuse PLDs needing more atoms than this (memory)


@dataclass(frozen=True)
class KrrPLD:
    """Certified pair of PLDs: hockey-stick of ``lower`` <= exact <= that of ``upper``."""

    upper: PLD
    lower: PLD
    cut: float        # bound on the P-mass cut from the tails
    atoms: int


def check_params(n: int, gamma: float, k: int) -> tuple[int, float, int]:
    """(n, gamma, k) validated: n in [2, 1e9], gamma in (0, 1], k in [2, 1e6].

    Source: the ranges of Koskela et al. 2021, Sec. 4.
    """
    n = v.integer("n", n, lo=2, hi=10 ** 9)
    gamma = v.real("gamma", gamma, 0.0, 1.0, lo_open=True)
    k = v.integer("k", k, lo=2, hi=10 ** 6)
    return n, gamma, k


def krr_probs(gamma: float, k: int) -> tuple[float, float]:
    """(P[y = x], P[y = j]) for j != x: (1 - gamma + gamma/k, gamma/k) (Koskela et al. 2021, Sec.
    4)."""
    gamma = v.real("gamma", gamma, 0.0, 1.0, lo_open=True)
    k = v.integer("k", k, lo=2, hi=10 ** 6)
    return 1.0 - gamma + gamma / k, gamma / k


def krr_pmfs(gamma: float, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Output PMFs of the local randomiser on inputs 1 and 2 (the LDP pair).

    Source: Koskela et al. 2021, Sec. 4 (the local randomiser of Balle et al. 2019).
    """
    p_true, p_other = krr_probs(gamma, k)
    p = np.full(k, p_other)
    q = np.full(k, p_other)
    p[0], q[1] = p_true, p_true
    return p, q


def eps0_from_gamma(gamma: float, k: int) -> float:
    """LDP level of k-RR: eps0 = log(1 + k (1 - gamma)/gamma) (Biswas et al. 2023
    parametrisation)."""
    gamma = v.real("gamma", gamma, 0.0, 1.0, lo_open=True)
    k = v.integer("k", k, lo=2, hi=10 ** 6)
    return math.log1p(k * (1.0 - gamma) / gamma)


def gamma_from_eps0(eps0: float, k: int) -> float:
    """Inverse: gamma = k / (e^eps0 + k - 1), so that P[y = x] = e^eps0/(e^eps0 + k - 1).

    Source: Biswas et al. 2023 parametrisation, inverted.
    """
    eps0 = v.real("eps0", eps0, 0.0, 700.0)
    k = v.integer("k", k, lo=2, hi=10 ** 6)
    return k / (math.expm1(eps0) + k)


def _ragged(lo, hi):
    """Index of the block and value of each element of the ranges [lo_i, hi_i]."""
    counts = np.maximum(hi - lo + 1, 0)
    total = int(counts.sum())
    if total > MAX_ATOMS:
        raise ValueError(
            f"n is too large: the PLD needs {total:.3g} atoms, more than MAX_ATOMS={MAX_ATOMS:.3g}."
        )
    block = np.repeat(np.arange(lo.size), counts)
    start = np.cumsum(counts) - counts
    return block, np.arange(total) - start[block] + lo[block]


def _merge(losses, probs, rtol=1e-13):
    """Sort, and merge atoms whose losses agree to ``rtol`` (equal up to rounding).

    Views with equal likelihood ratios are many (e.g. (a+1)/c = 2/4 = 1/2); a merged
    atom takes the largest loss of its group, so hockey-stick values never decrease.
    """
    order = np.argsort(losses, kind="stable")
    s, p = losses[order], probs[order]
    if s.size == 0:
        return s, p
    new = np.empty(s.size, dtype=bool)
    new[0] = True
    new[1:] = np.diff(s) > rtol * np.maximum(np.abs(s[1:]), 1e-300)
    starts = np.flatnonzero(new)
    ends = np.append(starts[1:], s.size) - 1
    return s[ends], np.add.reduceat(p, starts)


def _finish(losses, probs, inf_mass, cut):
    keep = probs > 0
    losses, probs = losses[keep], probs[keep]
    losses, probs = _merge(losses, probs)       # built by construction: no re-validation
    lower = PLD.trusted(losses, probs, float(inf_mass))
    if cut == 0:
        return KrrPLD(lower, lower, 0.0, int(losses.size))
    upper = lower.with_mass_at_infinity(cut)
    return KrrPLD(upper, lower, cut, int(losses.size))


@lru_cache(maxsize=16)
def strong_pld(n: int, gamma: float, k: int, tail: float = TAIL) -> KrrPLD:
    """Exact PLD of the strong adversary A_s; see :func:`_strong_pld` (underflow-safe wrapper).

    Source: Koskela et al. 2021, Def. 7, Thm 8 (corrects eq. 4.1).
    """
    with np.errstate(under="ignore"):
        return _strong_pld(n, gamma, k, tail)


def _strong_pld(n, gamma, k, tail):
    """Exact PLD of the strong adversary A_s (Koskela et al. 2021, Def. 7; corrects eq. 4.1 / Thm
    8).

    Atoms: gamma at loss 0 (beta_n = 1); (1-gamma) P[A=a, C=c] at log((a+1)/c),
    (A, C) ~ Multinomial(n-1; gamma/k, gamma/k); +inf with mass
    (1-gamma)(1 - gamma/k)^(n-1) (C = 0).  Valid for every n >= 2, 0 < gamma <= 1, k >= 2.
    """
    n, gamma, k = check_params(n, gamma, k)
    tail = v.real("tail", tail, 0.0, 1e-3)
    N, p = n - 1, gamma / k
    q = p / (1.0 - p)                       # C | A = a ~ Bin(N - a, q)
    a_lo, a_hi = binom_window(N, p, tail / 2)
    a_all = np.arange(a_lo, a_hi + 1)
    c_lo, c_hi = binom_window(N - a_all, q, tail / 2)
    blk, c = _ragged(np.maximum(c_lo, 1), c_hi)
    a = a_all[blk]
    # binom.pmf is accurate to ~1e-15 relative; binom.logpmf only to ~1e-12 (scipy 1.x)
    pmf = binom.pmf(a, N, p) * binom.pmf(c, N - a, q)
    losses = np.log1p((a + 1 - c) / c)
    probs = (1.0 - gamma) * pmf
    tail = tail + int(np.sum(pmf == 0.0)) * 1e-307     # in-window atoms that underflowed to 0
    losses, probs = np.append(losses, 0.0), np.append(probs, gamma)
    inf_mass = (1.0 - gamma) * math.exp(N * math.log1p(-p))
    cut = (1.0 - gamma) * tail
    return _finish(losses, probs, inf_mass, cut)


def weak_loss(
    u: int | np.ndarray, w: int | np.ndarray, b: int | np.ndarray, gamma: float, k: int
) -> np.ndarray:
    """Loss of the A_w view (Koskela et al. 2021, App. A): log[((1-g)u + g(b+1)/k) / ((1-g)w +
    g(b+1)/k)].

    Vectorised over the counts u, w, b (integers in [0, 1e9]), gamma (in (0, 1]) and k (in [2,
    1e6])."""
    if np.any(v.array("gamma", gamma, lo=0.0, hi=1.0) == 0.0):
        raise ValueError(f"gamma must lie in (0, 1], got gamma={gamma!r:.80}.")
    v.integers("k", k, 2, 10 ** 6)
    u, w, b = (v.integers(name, x, 0, 10 ** 9) for name, x in (("u", u), ("w", w), ("b", b)))
    c = gamma * (np.asarray(b, dtype=float) + 1.0) / k
    u, w = np.asarray(u, dtype=float), np.asarray(w, dtype=float)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        out = np.log1p((1.0 - gamma) * (u - w) / ((1.0 - gamma) * w + c))
    if np.all(np.isfinite(out)):
        return out
    return _weak_loss_logs(u, w, np.asarray(b, dtype=float), gamma, k)


def _weak_loss_logs(u, w, b, gamma, k):
    """:func:`weak_loss` as log(num) - log(den), where the ratio overflowed: at gamma below ~1e-308
    the count term g(b+1)/k is subnormal (2.5e-321 at gamma = 1e-320, k = 4, only ~9 bits) and
    1/den overflowed, so ``epsilon krr-weak --gamma 1e-320`` saw losses of +inf (an answer of inf
    for a finite eps ~738).  A zero count's term is taken as log(gamma) + log((b+1)/k), exact to a
    few ulp given the double gamma; a positive count's term is a normal double."""
    lc = math.log(gamma) + np.log((b + 1.0) / k)

    def log_term(x):
        with np.errstate(divide="ignore"):
            inner = (1.0 - gamma) * np.maximum(x, 1.0) + np.exp(np.minimum(lc, 0.0))
            return np.where(x > 0, np.log(inner), lc)
    return log_term(u) - log_term(w)


def _weak_block(b, N, gamma, k, lo, hi):
    """Atoms of the views (u, w, b) for one b: mixture over the n-th party's report.

    Trinomial pmf of the randomisers' counts (m1, m2) of values 1, 2 given B = b,
    m1, m2 in [lo, hi], as Bin(m1; b, 1/k) Bin(m2; b - m1, 1/(k-1)).
    """
    m = np.arange(lo, hi + 1)
    m1, m2 = m[:, None], m[None, :]
    ok = m1 + m2 <= b
    t = binom.pmf(m1, b, 1.0 / k) * binom.pmf(m2, np.maximum(b - m1, 0), 1.0 / (k - 1))
    t = np.where(ok, t, 0.0)
    under = int(np.sum(ok & (t == 0.0) & ((m1 + m2 == b) | (k > 2))))   # underflowed: each < 1e-307
    view = np.zeros((m.size + 1, m.size + 1))   # indices (u - lo, w - lo)
    p1, p2 = krr_probs(gamma, k)
    view[1:, :-1] += p1 * t                        # n-th report = 1
    view[:-1, 1:] += p2 * t                        # n-th report = 2
    if k > 2:
        view[:-1, :-1] += (1.0 - p1 - p2) * t      # n-th report in 3..k
    view *= binom.pmf(b, N, gamma)
    u = np.arange(lo, hi + 2)
    return weak_loss(u[:, None], u[None, :], b, gamma, k).ravel(), view.ravel(), under


@lru_cache(maxsize=16)
def weak_pld(n: int, gamma: float, k: int, tail: float = TAIL) -> KrrPLD:
    """Exact PLD of the weak adversary A_w; see :func:`_weak_pld` (underflow-safe wrapper).

    Source: Koskela et al. 2021, Def. 9, Thm 10, App. A; Koskela et al. 2022, Thm 4.
    """
    with np.errstate(under="ignore"):
        return _weak_pld(n, gamma, k, tail)


def _weak_pld(n, gamma, k, tail):
    """Exact PLD of the weak adversary A_w (Koskela et al. 2021, Def. 9, Thm 10, App. A; Koskela et
    al. 2022, Thm 4).

    The view (u, w, b): B ~ Bin(n-1, gamma); given B = b the randomisers' counts of
    values 1, 2 are Multinomial(b; 1/k, 1/k), plus the n-th report
    (1 w.p. 1-gamma+gamma/k, 2 w.p. gamma/k).  Losses lie in [-eps0, eps0].
    Atoms below tail / (number of candidate atoms) are cut too (their mass is summed).
    """
    n, gamma, k = check_params(n, gamma, k)
    tail = v.real("tail", tail, 0.0, 1e-3)
    N = n - 1
    b_lo, b_hi = (int(x[0]) for x in binom_window(np.array([N]), gamma, tail / 3))
    bs = np.arange(b_lo, b_hi + 1)
    los, his = binom_window(bs, 1.0 / k, tail / 3)
    size = int(np.sum((his - los + 2) ** 2))
    if size > 4 * MAX_ATOMS:
        raise ValueError(f"n={n} is too large for the exact weak-adversary PLD "
                         f"({size:.3g} candidate atoms; the limit is {4 * MAX_ATOMS:.3g}).")
    floor = tail / size                      # atoms below it: total mass <= tail
    losses, probs, pruned, held = [], [], 0.0, 0
    for b, lo, hi in zip(bs, los, his):
        ls, ps, under = _weak_block(int(b), N, gamma, k, int(lo), int(hi))
        small = ps < floor
        pruned += float(np.sum(ps[small])) * (1 + 1e-9) + under * 1e-307
        losses.append(ls[~small])
        probs.append(ps[~small])
        held += losses[-1].size
        if held > MAX_ATOMS // 4:      # merge equal losses as we go, to bound memory
            merged = _merge(np.concatenate(losses), np.concatenate(probs))
            losses, probs, held = [merged[0]], [merged[1]], merged[0].size
    losses, probs = np.concatenate(losses), np.concatenate(probs)
    if losses.size > MAX_ATOMS:
        raise ValueError(
            f"n={n} is too large: the weak PLD needs {losses.size:.3g} atoms (> {MAX_ATOMS:.3g})."
        )
    return _finish(losses, probs, 0.0, tail + pruned)


def adversary_pld(adversary: Adversary, n: int, gamma: float, k: int, tail: float = TAIL) -> KrrPLD:
    """``strong_pld`` or ``weak_pld`` by name ('strong' / 'weak').

    Source: Koskela et al. 2021, Def. 7 (strong) and Def. 9 (weak).
    """
    if adversary not in ("strong", "weak"):
        raise ValueError(f"adversary must be 'strong' or 'weak', got adversary={adversary!r}.")
    f = strong_pld if adversary == "strong" else weak_pld
    return f(*check_params(n, gamma, k), v.real("tail", tail, 0.0, 1.0))


def hockey_stick_pair(pl: KrrPLD, eps: float) -> tuple[float, float]:
    """One round, exactly: (delta of ``pl.lower``, delta of ``pl.upper``) at eps (both directions).

    Source: Koskela et al. 2021, Thm 5 (both directions share the PLD).
    """
    v.instance("pl", pl, KrrPLD)
    return float(hockey_stick(pl.lower, eps)), float(hockey_stick(pl.upper, eps))
