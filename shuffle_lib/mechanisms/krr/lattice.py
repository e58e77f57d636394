"""Certified lattice pairs of shuffled k-RR for large n: views grouped by loss, merged and split.

The exact PLDs of :mod:`.base` hold O(n) (A_s) and Theta(n^{3/2}) (A_w) atoms per round.  Here the
views are grouped by their loss into the bins (e_{j-1}, e_j] of a lattice e_j = j h, one row at a
time: along a row (A_s: a fixed count a of value 1; A_w: fixed b and u) the loss falls in the
other count, so a group is an interval of that count and its P- and Q-masses are binomial CDF
differences (Koskela et al. 2021, Def. 7 and eq. 4.1; Def. 9 and App. A).  From the masses
(P_g, Q_g) of each group g, whose losses lie in [lo_g, hi_g]:

* **lower** (dominated): the group merged into one atom at log(P_g / Q_g), mass P_g.  Merging
  views is post-processing; groups of one bin are merged across rows (and across b for A_w).
* **upper** (dominating): the group split onto its two lattice ends, (P_hi, Q_hi) at hi_g and the
  rest at lo_g, both masses kept: P_hi = (P_g - e^{lo} Q_g) / (1 - e^{lo - hi}).  Each view is the
  merge of its two split parts (their likelihood ratios are e^{lo} and e^{hi}), so the split pair
  is a pair the exact one is a post-processing of (Doroshenko et al. 2022, "Connect the dots",
  Sec. 3: the pessimistic PLD).

Both are second order in h: a group changes delta(eps) only where eps falls inside its bin, by at
most P_g (e^h - 1).  The lattice step is a fraction ``1 / STEPS_PER_SD`` of the loss's standard
deviation: the pair's own gap is ~1e-3 relative in one round's delta for A_s and a few 1e-3 for
A_w (mostly its b-blocks), ~1e-3 relative in a composed eps, below the accountant's grid at its
default accuracy (benchmarks/README.md, ``krr.py composed``).

A_w mixes over B ~ Bin(n-1, gamma), which the adversary sees.  The pair given b is a
post-processing of the pair given b - 1 (one more uniform report), so delta_b is non-increasing
in b: a block [b_i, b_{i+1}) of b is bounded above by the pair at b_i and below by the pair at
b_{i+1} (the blocks of the bulk are ``B_BLOCK`` b wide, relative; the tails one block each).

Error budget, per round (each term sent to the safe side):

1. windows: P-mass outside the rows' and columns' windows <= ``LATTICE_TAIL`` (Chernoff,
   :func:`shuffle_lib.core.binomial.binom_window`): +inf in the upper PLD, dropped in the lower;
2. scipy's binomial CDF, survival function and PMF (``binom.cdf``, ``binom.sf``: Boost's ibeta;
   ``special.bdtr`` is off by up to 1.6e-8 at n = 1e7): relative error <= ``CDF_RTOL`` each
   (tests/test_krr_lattice.py checks it against mpmath at n up to 1e7); a CDF difference is taken
   on the side of the median where both values are small, and carries the absolute error
   CDF_RTOL (x_a + x_b) of its two values; the masses are sums of such differences with positive
   weights, so P_g and Q_g are known within [P^-, P^+], [Q^-, Q^+];
3. the split puts P_hi^+ = (P^+ - e^{lo} Q^-) / (1 - e^{lo - hi}) (rounding margins 1e-9
   relative) at hi and P^+ - P_hi^+ at lo: its tail sums dominate the exact split's at every
   threshold (stochastic order, preserved by composition), the lower atom sits at
   log(P^- / Q^+) with mass P^-;
4. losses are evaluated in doubles (a few ulp); a group's lattice ends are floor / ceil of its
   extreme losses over h, moved out by 1e-7 h, so the float lattice ends enclose the exact losses.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache

import numpy as np
from scipy.stats import binom

from shuffle_lib.core.binomial import binom_window
from shuffle_lib.core.pld import PLD
from shuffle_lib.mechanisms.krr.base import KrrPLD, check_params, krr_probs, weak_loss

LATTICE_TAIL = 1e-20   # P-mass per round outside the windows (sent to +inf in the upper PLD)
STEPS_PER_SD = 20      # lattice steps per standard deviation of one round's loss (the bulk)
COARSE = 8             # outside the bulk, groups are COARSE lattice steps wide
BULK_SD = 5.0          # the bulk: rows and columns within this many sd of their means
CDF_RTOL = 1e-10       # relative error of one scipy binomial CDF / SF / PMF value (<= 6e-12 seen)
B_BLOCK = 3e-3         # A_w: the bulk's b-blocks are this fraction of E[B] wide
B_BULK = 4.0           # A_w: the bulk of B is its mean +- this many standard deviations
_U = 2.0 ** -53
_EDGE = 1e-7           # lattice ends moved out by this fraction of h (point 4)
_CHUNK = 1 << 19       # row boundaries evaluated per chunk (memory)


class _Sums:
    """The pair's masses as they accumulate on lattice indices base, base + 1, ...: the upper
    PLD's P-masses, and the lower one's merged (P^-, Q^+) per bin (keyed by a group's lower
    end)."""

    def __init__(self, h: float):
        self.h = h
        self.base = 0
        self.up, self.low_p, self.low_q = np.zeros(0), np.zeros(0), np.zeros(0)

    def add(self, lo_i, hi_i, p_hat, q_hat, p_err, q_err, w_up, w_low):
        """Groups with lattice ends (lo_i, hi_i) and masses P-hat +- p_err, Q-hat +- q_err, weighted
        by w_up (upper) and w_low (lower); w_up >= the exact weight >= w_low."""
        if lo_i.size == 0:
            return
        self._grow(int(lo_i.min()), int(hi_i.max()))
        size, h = self.up.size, self.h
        if w_up > 0:
            p_up = (p_hat + p_err) * w_up
            q_dn = np.maximum(q_hat - q_err, 0.0) * w_up
            lo_f, hi_f = lo_i * h, hi_i * h
            den = -np.expm1(lo_f - hi_f) * (1.0 - 1e-9)
            num = p_up - q_dn * np.exp(lo_f) * (1.0 - 4 * _U)
            with np.errstate(divide="ignore", invalid="ignore"):
                # lo_i == hi_i: a group of losses exactly 0 stays where it is
                p_hi = np.where(hi_i > lo_i, np.clip(num / den * (1.0 + 1e-9), 0.0, p_up), p_up)
            p_lo = np.maximum(p_up - p_hi, 0.0) * (1.0 + 4 * _U)
            self.up += np.bincount(lo_i - self.base, p_lo, minlength=size)
            self.up += np.bincount(hi_i - self.base, p_hi, minlength=size)
        if w_low > 0:
            p_dn = np.maximum(p_hat - p_err, 0.0) * w_low
            q_up = (q_hat + q_err) * w_low
            self.low_p += np.bincount(lo_i - self.base, p_dn, minlength=size)
            self.low_q += np.bincount(lo_i - self.base, q_up, minlength=size)

    def _grow(self, lo, hi):
        if self.up.size == 0:
            self.base = lo
            self.up, self.low_p, self.low_q = (np.zeros(hi - lo + 1) for _ in range(3))
            return
        top = self.base + self.up.size - 1
        new_lo, new_hi = min(lo, self.base), max(hi, top)
        if new_lo == self.base and new_hi == top:
            return
        s = self.base - new_lo
        grown = []
        for arr in (self.up, self.low_p, self.low_q):
            g = np.zeros(new_hi - new_lo + 1)
            g[s:s + arr.size] = arr
            grown.append(g)
        self.base, (self.up, self.low_p, self.low_q) = new_lo, grown

    def pair(self, inf_up: float, at_zero: float = 0.0, inf_low: float = 0.0) -> KrrPLD:
        """The (upper, lower) PLDs, with ``inf_up`` (``inf_low``) at +inf in the upper (lower) one
        and an exact atom of mass ``at_zero`` at loss 0 in both."""
        ku = self.up > 0
        kl = (self.low_p > 0) & (self.low_q > 0)    # Q^+ underflowed to 0: the atom is dropped
        up_l = (np.flatnonzero(ku) + self.base) * self.h
        up_p = self.up[ku]
        with np.errstate(divide="ignore"):
            ll = np.log(self.low_p[kl] / self.low_q[kl])
        ll = ll - 8 * _U * np.abs(ll) - 1e-300
        lp = self.low_p[kl]
        if at_zero > 0:
            up_l, up_p = np.append(up_l, 0.0), np.append(up_p, at_zero)
            ll, lp = np.append(ll, 0.0), np.append(lp, at_zero)
        o_u, o_l = np.argsort(up_l, kind="stable"), np.argsort(ll, kind="stable")
        upper = PLD(up_l[o_u], up_p[o_u], min(1.0, inf_up))
        lower = PLD(ll[o_l], lp[o_l], min(1.0, inf_low))
        return KrrPLD(upper, lower, inf_up, int(up_l.size))


ATOMS_STEP = 1e-4      # the lattice of :func:`pair_from_atoms`
ATOMS_RTOL = 1e-13     # relative error of an exact PLD's atom (P-mass, and Q = P e^{-loss})


def pair_from_atoms(pl: KrrPLD, h: float = ATOMS_STEP) -> KrrPLD:
    """An exact PLD's atoms grouped onto the lattice of step h, merged (lower) and split (upper)
    as in the module docstring: the pair of a large exact PLD, second order in h.

    The atoms' P-masses and Q-masses P e^{-loss} are taken within ``ATOMS_RTOL`` (point 2); the
    +inf masses of ``pl.upper`` and ``pl.lower`` are kept.  Source: Doroshenko et al. 2022, Sec. 3
    (the pessimistic PLD), applied to Koskela et al. 2021, Thm 8 / Thm 11's exact PLDs.
    """
    if not isinstance(pl, KrrPLD):
        raise ValueError(f"pl must be a KrrPLD, got {type(pl).__name__}.")
    if not (isinstance(h, float) and 0.0 < h <= 0.1):
        raise ValueError(f"h must be a float in (0, 0.1], got h={h!r}.")
    atoms = pl.lower
    losses, p = atoms.losses, atoms.probs
    if losses.size and float(np.max(np.abs(losses))) / h > 1e9:
        raise ValueError(f"h={h:g} is too fine for losses up to {np.max(np.abs(losses)):g}.")
    zero = losses == 0.0                 # P = Q exactly: one exact atom at 0 in both PLDs
    losses, p = losses[~zero], p[~zero]
    q = p * np.exp(-losses)
    lo_i, hi_i = _ends(losses, losses, h)
    sums = _Sums(h)
    sums.add(lo_i, hi_i, p, q, ATOMS_RTOL * p, ATOMS_RTOL * q, 1.0, 1.0)
    return sums.pair(pl.upper.inf_mass, at_zero=float(np.sum(atoms.probs[zero])),
                     inf_low=atoms.inf_mass)


def _ends(l_min: np.ndarray, l_max: np.ndarray, h: float) -> tuple[np.ndarray, np.ndarray]:
    """Lattice indices enclosing [l_min, l_max] (point 4); a loss computed as exactly 0 is
    exactly 0 (a + 1 = c, u = w: the ratio is 1), and keeps the lattice point 0."""
    m_lo = np.where(l_min == 0.0, 0.0, _EDGE + 1e-15 * np.abs(l_min) / h)
    m_hi = np.where(l_max == 0.0, 0.0, _EDGE + 1e-15 * np.abs(l_max) / h)
    return (np.floor(l_min / h - m_lo).astype(np.int64),
            np.ceil(l_max / h + m_hi).astype(np.int64))


def _tails(x: np.ndarray, m: np.ndarray | int, r: float) -> tuple[np.ndarray, np.ndarray]:
    """(value, side) at x of Bin(m, r): side False the CDF P[X <= x] (x below the mean), True the
    survival function P[X > x] (at or above it); r = 1 allowed (a point mass at m)."""
    m = np.broadcast_to(np.maximum(m, 0), x.shape)
    above = x >= m * r
    if r >= 1.0:
        return np.where(above, (x < m).astype(float), (x >= m).astype(float)), above
    val = np.where(above, 0.0, 1.0)             # x >= m: CDF 1, SF 0
    val[x < 0] = np.where(above[x < 0], 1.0, 0.0)   # x < 0: CDF 0, SF 1
    inner = (x >= 0) & (x < m)
    sf, cdf = inner & above, inner & ~above
    with np.errstate(under="ignore"):
        val[sf] = binom.sf(x[sf], m[sf], r)
        val[cdf] = binom.cdf(x[cdf], m[cdf], r)
    return val, above


def _diff(t: tuple[np.ndarray, np.ndarray], ia: np.ndarray, ib: np.ndarray):
    """P[x_a < X <= x_b] and its error bound from the :func:`_tails` readings ``t`` at the
    boundaries ia and ib (x_a <= x_b, so side a implies side b)."""
    val, side = t
    va, vb, sa, sb = val[ia], val[ib], side[ia], side[ib]
    d = np.where(sa, va - vb, np.where(sb, 1.0 - va - vb, vb - va))
    err = (CDF_RTOL + 4 * _U) * (va + vb) + np.where(sa != sb, 4 * _U, 0.0)
    return np.maximum(d, 0.0), err


def _ragged(j_top: np.ndarray, j_bot: np.ndarray):
    """Row index and lattice index j of each boundary: j from j_top down to j_bot - 1 per row, and
    the masks of each row's first and last boundary."""
    counts = j_top - j_bot + 2
    row = np.repeat(np.arange(counts.size), counts)
    first = np.cumsum(counts) - counts
    j = j_top[row] - (np.arange(int(counts.sum())) - first[row])
    is_first, is_last = np.zeros(j.size, dtype=bool), np.zeros(j.size, dtype=bool)
    is_first[first], is_last[first + counts - 1] = True, True
    return row, j, is_first, is_last


def _groups(x_of: Callable, loss: Callable, rows: np.ndarray, c_lo: np.ndarray,
            c_hi: np.ndarray, f_lo: np.ndarray, f_hi: np.ndarray, h: float):
    """The groups of each row: boundaries x_j = the largest column with loss > e_j (clipped to the
    window [c_lo, c_hi]), group (x_j, x_{j'}] between consecutive ones.  Every lattice edge is a
    boundary where the row's columns lie in its bulk [f_lo, f_hi] (empty: none), every
    ``COARSE``-th edge elsewhere.  Yields per chunk of rows the boundaries (row positions, x) and
    the non-empty groups (ia, lo_i, hi_i): group (x[ia], x[ia + 1]] with lattice ends lo_i, hi_i.
    """
    j_top = np.ceil(loss(rows, c_lo) / h).astype(np.int64)
    j_bot = np.floor(loss(rows, c_hi) / h).astype(np.int64)
    bulk = f_lo <= f_hi
    jf_top = np.where(bulk, np.ceil(loss(rows, np.where(bulk, f_lo, c_lo)) / h), 0)
    jf_bot = np.where(bulk, np.floor(loss(rows, np.where(bulk, f_hi, c_hi)) / h), 1)
    counts = j_top - j_bot + 2
    ends = np.cumsum(counts)
    start = 0
    while start < rows.size:
        stop = max(int(np.searchsorted(ends, ends[start] - counts[start] + _CHUNK, "right")),
                   start + 1)
        sl = slice(start, stop)
        row, j, is_first, is_last = _ragged(j_top[sl], j_bot[sl])
        keep = is_first | is_last | (j % COARSE == 0) | \
            ((j <= jf_top[sl][row]) & (j >= jf_bot[sl][row]))
        row, j, is_first, is_last = row[keep], j[keep], is_first[keep], is_last[keep]
        x = np.clip(x_of(rows[sl][row], j * h), c_lo[sl][row] - 1, c_hi[sl][row])
        x = np.where(is_first, c_lo[sl][row] - 1, np.where(is_last, c_hi[sl][row], x))
        # non-decreasing along each row (a float exp could break it by one): running max per row
        off = row.astype(np.int64) << 34
        x = np.maximum.accumulate(x + off) - off
        ia = np.flatnonzero(~is_last)
        ia = ia[x[ia + 1] > x[ia]]
        r = row[ia] + start
        l_max, l_min = loss(rows[r], x[ia] + 1), loss(rows[r], x[ia + 1])
        lo_i, hi_i = _ends(l_min, l_max, h)
        yield row + start, x, ia, lo_i, hi_i
        start = stop


def _bulk(rows: np.ndarray, mean_row: float, sd_row: float, m: np.ndarray, r: float):
    """Columns within BULK_SD sd of the conditional mean of Bin(m, r), for rows within BULK_SD
    sd of the rows' mean (others: an empty range)."""
    centre, sd = m * r, np.sqrt(np.maximum(m * r * (1.0 - r), 0.0))
    inside = np.abs(rows - mean_row) <= BULK_SD * sd_row    # sd_row < 0: no bulk
    f_lo = np.where(inside, np.floor(centre - BULK_SD * sd), 1).astype(np.int64)
    f_hi = np.where(inside, np.ceil(centre + BULK_SD * sd), 0).astype(np.int64)
    return f_lo, f_hi


def _step(sd: float, eps_max: float) -> float:
    """The lattice step: sd / STEPS_PER_SD, at least eps_max / 1e7 (point 4's float margin)."""
    return max(sd / STEPS_PER_SD, eps_max / 1e7, 1e-12)


@lru_cache(maxsize=4)
def strong_pld_lattice(n: int, gamma: float, k: int) -> KrrPLD:
    """Certified (upper, lower) lattice PLDs of the strong adversary A_s (module docstring).

    Views (A + 1, C), (A, C) ~ Multinomial(n-1; gamma/k, gamma/k) of the randomisers' counts of
    values 1 and 2; loss log((a+1)/c), falling in c; C | A = a ~ Bin(n-1-a, q), q = p / (1 - p),
    so a group c in (x_a, x_b] of row a has P-mass (1-gamma) P[A=a] P[x_a < C <= x_b] and Q-mass
    (1-gamma) P[A=a] (n-1-a) q / (a+1) P[x_a - 1 < Bin(n-2-a, q) <= x_b - 1] (c P[C=c] = M q
    P[Bin(M-1, q) = c-1]).  Atoms: gamma at 0 (beta_n = 1), (1-gamma)(1-p)^{n-1} at +inf (C = 0).

    Source: Koskela et al. 2021, Def. 7, eq. 4.1 (the loss falls in c).
    """
    n, gamma, k = check_params(n, gamma, k)
    N, p = n - 1, gamma / k
    q = p / (1.0 - p)
    tail = LATTICE_TAIL
    a_lo, a_hi = (int(x) for x in binom_window(N, p, tail / 2))
    a = np.arange(a_lo, a_hi + 1)
    c_lo, c_hi = (np.asarray(x) for x in binom_window(N - a, q, tail / 2))
    c_lo = np.maximum(c_lo, 1)
    ok = c_hi >= c_lo
    a, c_lo, c_hi = a[ok], c_lo[ok], c_hi[ok]
    h = _step(math.sqrt(2.0 / max(N * p, 1.0)), math.log(n + 1.0))
    sums = _Sums(h)
    with np.errstate(under="ignore"):
        pi_a = binom.pmf(a, N, p) * (1.0 - gamma)
    loss = lambda aa, c: np.log((aa + 1.0) / np.maximum(c, 1))  # noqa: E731
    x_of = lambda aa, e: np.ceil((aa + 1.0) * np.exp(-e)).astype(np.int64) - 1  # noqa: E731
    f_lo, f_hi = _bulk(a, N * p, math.sqrt(N * p * (1 - p)), N - a, q)
    for row, x, ia, lo_i, hi_i in _groups(x_of, loss, a, c_lo, c_hi, f_lo, f_hi, h):
        m = N - a[row]
        dp, ep = _diff(_tails(x, m, q), ia, ia + 1)
        dq, eq = _diff(_tails(x - 1, m - 1, q), ia, ia + 1)
        r = row[ia]
        w = pi_a[r]
        wq = w * (N - a[r]) * q / (a[r] + 1.0)
        p_hat, q_hat = w * dp, wq * dq
        p_err = w * ep + 3 * CDF_RTOL * p_hat
        q_err = wq * eq + 4 * CDF_RTOL * q_hat
        sums.add(lo_i, hi_i, p_hat, q_hat, p_err, q_err, 1.0, 1.0)
    inf_exact = (1.0 - gamma) * math.exp(N * math.log1p(-p))
    return sums.pair(inf_exact * (1 + 1e-12) + (1.0 - gamma) * tail, at_zero=gamma,
                     inf_low=inf_exact * (1 - 1e-12))


def _weak_given_b(sums: _Sums, b: int, gamma: float, k: int, tail: float, w_up: float,
                  w_low: float, fine: bool = True) -> None:
    """Add the A_w views (u, w) given B = b (weights w_up, w_low) to ``sums``; ``fine`` False:
    every group ``COARSE`` steps wide (a tail block of B).

    (M1, M2) | b: M1 ~ Bin(b, 1/k), M2 | M1 = m ~ Bin(b - m, 1/(k-1)); the n-th report adds 1 to u
    (P: p1, Q: p2), to w (P: p2, Q: p1) or to neither (p3 both).  For row u and w in (x_a, x_b]:
    S1 = P[M1 = u-1] P[x_a < M2 <= x_b | u-1], S2 = P[M1 = u] P[x_a - 1 < M2 <= x_b - 1 | u],
    S3 = P[M1 = u] P[x_a < M2 <= x_b | u]; P_g = p1 S1 + p2 S2 + p3 S3, Q_g = p2 S1 + p1 S2 + p3 S3.
    """
    p1, p2 = krr_probs(gamma, k)
    p3 = max(1.0 - p1 - p2, 0.0)
    r2 = 1.0 / (k - 1)
    lo, hi = (int(x) for x in binom_window(b, 1.0 / k, tail / 3))
    u = np.arange(lo, hi + 2)
    c_lo, c_hi = np.full(u.size, lo), np.full(u.size, hi + 1)
    alpha, cb = 1.0 - gamma, gamma * (b + 1.0) / k
    loss = lambda uu, ww: weak_loss(uu, np.clip(ww, 0, None), b, gamma, k)  # noqa: E731

    def x_of(uu, e):
        with np.errstate(over="ignore", invalid="ignore"):
            t = ((alpha * uu + cb) * np.exp(-e) - cb) / alpha
        return np.ceil(np.clip(t, -1.0, b + 2.0)).astype(np.int64) - 1

    with np.errstate(under="ignore"):
        rho_all = binom.pmf(np.arange(lo - 1, hi + 2), b, 1.0 / k)
    f_lo, f_hi = _bulk(u, b / k, math.sqrt(b / k * (1 - 1 / k)) if fine else -1.0, b - u, r2)
    for row, x, ia, lo_i, hi_i in _groups(x_of, loss, u, c_lo, c_hi, f_lo, f_hi, sums.h):
        ub = u[row]
        d1, e1 = _diff(_tails(x, b - ub + 1, r2), ia, ia + 1)
        d2, e2 = _diff(_tails(x - 1, b - ub, r2), ia, ia + 1)
        d3, e3 = _diff(_tails(x, b - ub, r2), ia, ia + 1)
        uu = ub[ia]
        r0, r1 = rho_all[uu - lo + 1], rho_all[uu - lo]         # P[M1 = u], P[M1 = u - 1]
        s1, s2, s3 = r1 * d1, r0 * d2, r0 * d3
        err = r1 * e1, r0 * e2, r0 * e3
        p_hat, q_hat = p1 * s1 + p2 * s2 + p3 * s3, p2 * s1 + p1 * s2 + p3 * s3
        p_err = p1 * err[0] + p2 * err[1] + p3 * err[2] + 3 * CDF_RTOL * p_hat
        q_err = p2 * err[0] + p1 * err[1] + p3 * err[2] + 3 * CDF_RTOL * q_hat
        sums.add(lo_i, hi_i, p_hat, q_hat, p_err, q_err, w_up, w_low)


def _b_points(N: int, gamma: float, tail: float) -> np.ndarray:
    """Block starts of B: the window's ends, and the bulk (mean +- B_BULK sd) in blocks of
    B_BLOCK E[B]; the last point is the window's top + 1."""
    b_lo, b_hi = (int(x) for x in binom_window(N, gamma, tail))
    mu, sd = N * gamma, math.sqrt(N * gamma * (1.0 - gamma))
    s, e = max(b_lo, int(mu - B_BULK * sd)), min(b_hi + 1, int(mu + B_BULK * sd) + 1)
    step = max(1, int(B_BLOCK * mu))
    inner = np.arange(s, e, step) if e > s else np.zeros(0, dtype=np.int64)
    return np.unique(np.concatenate([[b_lo], inner, [e], [b_hi + 1]]).astype(np.int64))


@lru_cache(maxsize=4)
def weak_pld_lattice(n: int, gamma: float, k: int) -> KrrPLD:
    """Certified (upper, lower) lattice PLDs of the weak adversary A_w (module docstring).

    Block i = [b_i, b_{i+1}) of B has weight P[b_i <= B < b_{i+1}]; the upper PLD adds the pair
    at b_i, the lower the pair at b_{i+1}, with that weight (delta_b non-increasing in b).

    Source: Koskela et al. 2021, Def. 9, Thm 10, App. A (the loss falls in w).
    """
    n, gamma, k = check_params(n, gamma, k)
    N = n - 1
    tail = LATTICE_TAIL
    pts = _b_points(N, gamma, tail / 3)
    b_mid = max(N * gamma, 1.0)
    e0 = math.log1p(k * (1.0 - gamma) / gamma)
    h = _step((1.0 - gamma) * math.sqrt(2.0 * k / b_mid), e0)
    sums = _Sums(h)
    ups, lows = [0.0] * pts.size, [0.0] * pts.size
    for i in range(pts.size - 1):
        t = _tails(np.asarray([pts[i] - 1, pts[i + 1] - 1]), N, gamma)
        w, err = _diff(t, np.asarray([0]), np.asarray([1]))
        ups[i], lows[i + 1] = float(w[0] + err[0]) * (1 + 4 * _U), max(float(w[0] - err[0]), 0.0)
    mu, sd = N * gamma, math.sqrt(N * gamma * (1.0 - gamma))
    for b, w_up, w_low in zip(pts, ups, lows):
        fine = abs(b - mu) <= B_BULK * sd + 1      # the tail blocks' pairs: coarse groups
        _weak_given_b(sums, int(b), gamma, k, tail, w_up, w_low, fine)
    return sums.pair(tail * (1 + 1e-9))
