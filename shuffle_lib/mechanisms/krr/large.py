"""Certified coarse PLD pairs of shuffled k-RR for large n (companion of
:mod:`shuffle_lib.mechanisms.krr`).

The exact PLDs of :mod:`shuffle_lib.mechanisms.krr` have O(n log) (A_s) and Theta(n^{3/2})
(A_w) atoms.  Beyond their size limits the views are grouped into blocks along
one count, whose probability is a binomial CDF difference, and the loss, monotone
along that count (Koskela et al. 2021, eq. 4.1 and App. A), is bounded at the block ends;
the bounds are rounded onto a grid, up for ``upper`` and down for ``lower``.  The
deltas of the two PLDs bracket the tight delta (tests/test_krr.py checks this
against the exact PLDs).  Used automatically by ``krr.delta_bracket`` /
``krr.epsilon_bracket``.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy.stats import binom

from shuffle_lib.core import validate as v
from shuffle_lib.core.binomial import binom_window
from shuffle_lib.core.pld import PLD
from shuffle_lib.mechanisms.krr import base as _krr
from shuffle_lib.mechanisms.krr.base import (
    KrrPLD,
    check_params,
    eps0_from_gamma,
    krr_probs,
    weak_loss,
)


@lru_cache(maxsize=4)
def weak_pld_binned(
    n: int, gamma: float, k: int, blocks: int = 24, h: float = 1e-5, tail: float = 1e-20
) -> KrrPLD:
    """Certified *coarse* A_w PLDs for large n, where the exact view space is too big.

    The views (u, w, b) are grouped by (m1, m2) and by blocks of b.  Unconditionally
    (M1, M2) ~ Multinomial(n-1; g/k, g/k) and B = M1 + M2 + R with
    R | m1, m2 ~ Bin(n-1-m1-m2, (g(k-2)/k)/(1-2g/k)), so P[m1, m2, B in block] is a
    binomial CDF difference.  The loss is monotone in b (Koskela et al. 2021, App. A), so its values
    at the block ends bound it; ``upper`` takes the larger, rounded up to a multiple of h,
    ``lower`` the smaller, rounded down.  Their deltas bracket the tight delta.
    """
    n, gamma, k = check_params(n, gamma, k)
    blocks = v.integer("blocks", blocks, lo=1, hi=10 ** 4)
    tail = v.real("tail", tail, 0.0, 1.0, lo_open=True)
    h = v.real("h", h, 0.0, 0.1, lo_open=True)
    N, p = n - 1, gamma / k
    p1, p2 = krr_probs(gamma, k)
    lo, hi = (int(x[0]) for x in binom_window(np.array([N]), p, tail / 4))
    if (hi - lo + 1) ** 2 > _krr.MAX_ATOMS:
        raise ValueError(f"n={n} is too large even for the binned weak-adversary PLD "
                         f"({(hi - lo + 1) ** 2:.3g} cells; the limit is {_krr.MAX_ATOMS:.3g}).")
    m = np.arange(lo, hi + 1)
    m1, m2 = m[:, None], m[None, :]
    ok = m1 + m2 <= N
    p12 = np.where(ok, binom.pmf(m1, N, p) * binom.pmf(m2, np.maximum(N - m1, 0), p / (1 - p)), 0.0)
    qr = (gamma * (k - 2) / k) / (1 - 2 * p) if k > 2 else 0.0
    b_lo, b_hi = (int(x[0]) for x in binom_window(np.array([N]), gamma, tail / 4))
    edges = np.unique(np.linspace(b_lo, b_hi + 1, blocks + 1).astype(np.int64))
    e0 = eps0_from_gamma(gamma, k)
    size = int(math.ceil(e0 / h)) + 2
    up, low = np.zeros(2 * size + 1), np.zeros(2 * size + 1)
    views = ((1, 0, p1), (0, 1, p2), (0, 0, 1.0 - p1 - p2))
    tot = np.arange(2 * lo, 2 * hi + 1)            # P[B in block | m1, m2] depends on m1 + m2 only
    idx = m1 + m2 - 2 * lo
    for s, e in zip(edges[:-1], edges[1:] - 1):
        r = np.maximum(N - tot, 0)
        pt = binom.cdf(e - tot, r, qr) - binom.cdf(s - 1 - tot, r, qr)
        pb = p12 * pt[idx]
        for du, dw, pv in views:
            if pv == 0.0:
                continue
            l_s = weak_loss(m1 + du, m2 + dw, np.maximum(s, m1 + m2), gamma, k)   # B >= m1 + m2
            l_e = weak_loss(m1 + du, m2 + dw, np.maximum(e, m1 + m2), gamma, k)
            hi_l = np.minimum(np.maximum(l_s, l_e), e0)    # true losses lie in [-eps0, eps0]
            lo_l = np.maximum(np.minimum(l_s, l_e), -e0)
            mass = (pv * pb).ravel()
            up += np.bincount(
                (np.ceil(hi_l / h).astype(np.int64) + size).ravel(), weights=mass, minlength=up.size
            )
            low += np.bincount((np.floor(lo_l / h).astype(np.int64) + size).ravel(), weights=mass,
                               minlength=low.size)
    grid = (np.arange(up.size) - size) * h
    ku, kl = up > 0, low > 0
    lower = PLD(grid[kl], np.clip(low[kl], 0.0, None), 0.0)
    upper = PLD(grid[ku], np.clip(up[ku], 0.0, None), tail)
    return KrrPLD(upper, lower, tail, int(ku.sum()))


def _grid_pld(loss, mass, h, rounder, inf_mass):
    """PLD of the atoms (loss, mass) rounded onto multiples of h by ``rounder``."""
    idx = rounder(loss / h).astype(np.int64)
    base = int(idx.min())
    w = np.bincount(idx - base, weights=mass)
    keep = w > 0
    return PLD((np.flatnonzero(keep) + base) * h, w[keep], inf_mass)


@lru_cache(maxsize=4)
def strong_pld_binned(n: int, gamma: float, k: int, cells: int = 2 * 10 ** 6, h: float = 1e-5,
                      tail: float = 1e-20) -> KrrPLD:
    """Certified *coarse* A_s PLDs for n beyond the exact PLD's size (up to n ~ 1e8).

    Groups c = count of value 2 into blocks: P[A = a, C in block] is a binomial CDF
    difference (C | A = a ~ Bin(n-1-a, q)), and log((a+1)/c) is decreasing in c, so
    the block ends bound it; ``upper`` rounds the larger up to a multiple of h,
    ``lower`` the smaller down.  Atom gamma at 0 and the +inf mass are exact.

    Source: Koskela et al. 2021, Def. 7, eq. 4.1 (the loss monotone in c).
    """
    n, gamma, k = check_params(n, gamma, k)
    cells = v.integer("cells", cells, lo=1, hi=10 ** 9)
    h = v.real("h", h, 0.0, 0.1, lo_open=True)
    tail = v.real("tail", tail, 0.0, 1.0, lo_open=True)
    N, p = n - 1, gamma / k
    q = p / (1.0 - p)
    a_lo, a_hi = (int(x) for x in binom_window(N, p, tail / 4))
    a = np.arange(a_lo, a_hi + 1)
    c_lo, c_hi = binom_window(N - a, q, tail / 4)
    c_lo, c_hi = max(int(c_lo.min()), 1), int(c_hi.max())
    nb = max(1, min(c_hi - c_lo + 1, cells // a.size))
    edges = np.unique(np.linspace(c_lo, c_hi + 1, nb + 1).astype(np.int64))
    s, e = edges[None, :-1], edges[None, 1:] - 1
    aa = a[:, None]
    with np.errstate(under="ignore"):
        mass = (
            (1.0 - gamma)
            * binom.pmf(aa, N, p)
            * (binom.cdf(e, N - aa, q) - binom.cdf(s - 1, N - aa, q))
        )
    hi_l, lo_l = np.log((aa + 1) / s), np.log((aa + 1) / e)
    loss_up = np.append(np.broadcast_to(hi_l, mass.shape).ravel(), 0.0)
    loss_low = np.append(np.broadcast_to(lo_l, mass.shape).ravel(), 0.0)
    mass = np.append(np.clip(mass, 0.0, None).ravel(), gamma)
    inf_mass = (1.0 - gamma) * math.exp(N * math.log1p(-p))
    cut = (1.0 - gamma) * tail
    return KrrPLD(_grid_pld(loss_up, mass, h, np.ceil, inf_mass).with_mass_at_infinity(cut),
                  _grid_pld(loss_low, mass, h, np.floor, inf_mass), cut, int(mass.size))



def bin_pair(pl: KrrPLD, h: float) -> KrrPLD:
    """Certified rounding of a PLD pair onto multiples of h: upper rounds up, lower down.

    Source: Koskela et al. 2021, Thm 5 (rounding losses up dominates, down is dominated).
    """
    v.instance("pl", pl, KrrPLD)
    h = v.real("h", h, 0.0, 1.0, lo_open=True)
    return KrrPLD(
        _grid_pld(pl.upper.losses, pl.upper.probs, h, np.ceil, pl.upper.inf_mass),
        _grid_pld(pl.lower.losses, pl.lower.probs, h, np.floor, pl.lower.inf_mass),
        pl.cut,
        pl.atoms,
    )
