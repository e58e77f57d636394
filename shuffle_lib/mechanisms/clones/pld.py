"""Privacy loss distributions of the clones pairs: exact O(n^2), truncated O(n), and on a grid.

The atoms are indexed by (s, a): s = a+b the total count (same law under P and Q), a the
first count (see :mod:`shuffle_lib.mechanisms.clones`).  Three constructions:

* :func:`clone_pmfs` / :func:`clone_pld_exact`: every atom (Koskela et al. 2021, eq. 5.9), O(n^2).
* :func:`clone_pld`: the two-level truncation of Koskela et al. 2022, Lemma 6 (s first, then a given
  s), with the ranges from exact binomial quantiles (default), or the Hoeffding ranges of
  Koskela et al. 2021, Sec. 5.2 (one level) / Koskela et al. 2022, Lemma 6 (two levels) for the term
  counts.  The mass dropped is computed from exact binomial tails and put, by ``side``: into
  ``inf_mass`` ("upper": a dominating PLD), nowhere ("lower": a dominated sub-PLD), or as one atom
  at the largest possible loss ("top", for the CLI: the Fourier accountant trims a top tail of mass
  <= 1e-16 to +inf for its upper bound and drops it for its lower bound, so one PLD serves
  both sides).
* :func:`clone_pld_grid`: for each s the loss is increasing in a, so the P-mass of the atoms
  with loss in (k h, (k+1) h] is a difference of binomial tails; placed at (k+1) h ("upper")
  or k h ("lower") it gives a PLD that dominates / is dominated by the exact one, with
  O(#s x bins) work instead of O(n) atoms.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from scipy.stats import binom

from shuffle_lib.core import progress
from shuffle_lib.core import validate as v
from shuffle_lib.core.binomial import tail_range
from shuffle_lib.core.pld import PLD, pld_from_losses, pld_from_pmfs
from shuffle_lib.mechanisms.clones.pairs import (
    Pair,
    check_params,
    clone_probability,
    clone_top_loss,
    conditional_tails,
    delta_inf,
    loss,
    s_range,
    shared_weights,
)


def atoms_at(
    n: int, eps0: float, pr: Pair, s: np.ndarray, a: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """P(s, a), Q(s, a) for arrays of atoms (Koskela et al. 2021, eq. 5.7-5.8, Lemma B.3), by
    binom.pmf.

    Atoms below the double range (< 1e-308) underflow to 0: at most #atoms x 1e-308 of mass.
    """
    v.instance("pr", pr, Pair)
    ps, al, be, ga = shared_weights(n, eps0, pr, s)
    nn = ps * binom.pmf(a, s, 0.5)
    sf = np.where(s == 0, 1.0, s)
    num = np.where(s == 0, 1.0, (2 * al * a + 2 * be * (s - a) + ga * s) / sf)
    den = np.where(s == 0, 1.0, (2 * al * (s - a) + 2 * be * a + ga * s) / sf)
    return nn * num, nn * den


def clone_pmfs(n: int, eps0: float, pair: str = "fmt21") -> tuple[np.ndarray, np.ndarray]:
    """The pair (P, Q) on all atoms (s, a), flattened in the order of s then a; O(n^2), n <= 3000.

    Source: Koskela et al. 2021, eq. 5.7-5.9.
    """
    n, eps0, pr = check_params(n, eps0, pair)
    if n > 3000:
        raise ValueError(f"n must be <= 3000 for the O(n^2) enumeration, got n={n}.")
    s0 = 1 if pr.full else 0
    s = np.concatenate([np.full(k + 1, k) for k in range(s0, n + 1)])
    a = np.concatenate([np.arange(k + 1) for k in range(s0, n + 1)])
    return atoms_at(n, eps0, pr, s, a)


def clone_pld_exact(n: int, eps0: float, pair: str = "fmt21") -> PLD:
    """The exact PLD omega_{P/Q} (= omega_{Q/P}) by full enumeration (Koskela et al. 2021, eq.
    5.9)."""
    return pld_from_pmfs(*clone_pmfs(n, eps0, pair))


def term_counts(n: int, eps0: float, tau: float, pair: str = "fmt21") -> dict[str, int]:
    """Atoms kept by the truncations: (full, one-level Hoeffding, two-level Hoeffding, quantiles).

    full: sum over s of (s+1).  One level (Koskela et al. 2021, Sec. 5.2): s in S_c = (p +- c)(n-1),
    c = sqrt(log(2/tau) / (2(n-1))), all a.  Two levels (Koskela et al. 2022, Lemma 6): also
    a in s/2 +- sqrt(s log(4/tau)/2) (tau/2 to each level).  Quantiles: this module's ranges.
    """
    n, eps0, pr = check_params(n, eps0, pair)
    tau = v.real("tau", tau, 0.0, 1.0, lo_open=True, hi_open=True)
    p = clone_probability(eps0, pair)
    full = (n + 1) * (n + 2) // 2
    c = math.sqrt(math.log(2 / tau) / (2 * max(n - 1, 1)))
    lo, hi = max(0, math.ceil((p - c) * (n - 1))), min(n - 1, math.floor((p + c) * (n - 1)))
    one = sum(k + 2 for k in range(lo, hi + 1))
    c2 = math.sqrt(math.log(4 / tau) / (2 * max(n - 1, 1)))
    lo2, hi2 = max(0, math.ceil((p - c2) * (n - 1))), min(n - 1, math.floor((p + c2) * (n - 1)))
    two = sum(
        min(k + 2, 2 * math.floor(math.sqrt(k * math.log(4 / tau) / 2)) + 3)
        for k in range(lo2, hi2 + 1)
    )
    s_lo, s_hi, _ = s_range(n, eps0, pr, tau / 2)
    s = np.arange(s_lo, s_hi + 1)
    a_lo, a_hi = _a_range(s, tau / 2)
    return {
        "full": full,
        "hoeffding1": one,
        "hoeffding2": two,
        "quantile": int(np.sum(a_hi - a_lo + 1)),
    }


def _a_range(s, tau):
    """a-range per s holding all but <= tau of each conditional (both mixture components)."""
    lo, _ = tail_range(np.maximum(s - 1, 0), 0.5, tau / 2)
    _, hi = tail_range(s, 0.5, tau / 2)
    return np.maximum(lo - 1, 0), np.minimum(hi + 1, s)


def _window(n, eps0, pr, tau):
    """Kept ranges: s in [s_lo, s_hi], a in [a_lo(s), a_hi(s)]; the pair's shared terms on s;
    and the exact P-mass outside (S tails + a tails per s), each side at most tau / 2."""
    s_lo, s_hi, out_s = s_range(n, eps0, pr, tau / 2)
    s = np.arange(s_lo, s_hi + 1)
    a_lo, a_hi = _a_range(s, tau / 2)
    ps, al, be, ga = shared_weights(n, eps0, pr, s)
    t_hi, _ = conditional_tails(s, a_hi + 1, al, be, ga)
    return (
        s,
        a_lo,
        a_hi,
        (ps, al, be, ga),
        out_s + math.fsum(ps * (_lower_tails(s, a_lo, al, be, ga) + t_hi)),
    )


def _lower_tails(s, k, al, be, ga):
    """sum_{a < k} P_s(a) from binomial CDFs (the counterpart of conditional_tails), not as 1 -
    T_P(k): that difference is noise below ~1e-16 and, with 1 - q computed without cancellation
    (al + be not exactly 1), can go negative and wipe the dropped mass (3.35e-21 -> 0 at
    n = 1500, eps0 = 3)."""
    c1 = binom.cdf(k - 2, np.maximum(s - 1, 0), 0.5)      # P(1 + Bin(s-1) < k)
    c0 = binom.cdf(k - 1, np.maximum(s - 1, 0), 0.5)      # P(Bin(s-1) < k)
    cn = binom.cdf(k - 1, s, 0.5)                         # P(Bin(s) < k)
    zero = (k > 0) * 1.0                                  # s = 0: the single atom a = 0
    return np.where(s == 0, zero * (al + be + ga), al * c1 + be * c0 + ga * cn)


def kept_atoms(n: int, eps0: float, pr: Pair, tau: float, max_atoms: int = 10 ** 9
               ) -> tuple[np.ndarray, np.ndarray, float]:
    """Kept atoms (s, a) and the exact P-mass dropped (S tails + a tails per s).

    Source: Koskela et al. 2022, Lemma 6 with exact binomial quantiles.
    """
    v.instance("pr", pr, Pair)
    tau = v.real("tau", tau, 0.0, 1.0, lo_open=True, hi_open=True)
    max_atoms = v.integer("max_atoms", max_atoms, lo=1)
    s, a_lo, a_hi, _, dropped = _window(n, eps0, pr, tau)
    counts = a_hi - a_lo + 1
    if counts.sum() > max_atoms:
        raise ValueError(
            f"n={n}, eps0={eps0:g} needs {int(counts.sum())} atoms, more than "
            f"max_atoms={max_atoms}; "
            "use clone_pld_grid or clones.delta_bracket."
        )
    ss = np.repeat(s, counts)
    aa = (
        np.concatenate([np.arange(x, y + 1) for x, y in zip(a_lo, a_hi)])
        if s.size
        else np.zeros(0, int)
    )
    return ss, aa, dropped


TINY_MASS = 1e-290
"""Finite atoms with a P- or Q-mass below this are counted as dropped (:func:`clone_pld`)."""


def clone_pld(
    n: int,
    eps0: float,
    pair: str = "fmt21",
    tau: float = 1e-18,
    side: Literal["upper", "lower", "top"] = "upper",
    max_atoms: int = 8_000_000,
) -> tuple[PLD, dict]:
    """Truncated PLD with certified dropped mass (Koskela et al. 2022, Lemma 6 with exact
    quantiles).

    side: "upper" (dropped mass -> inf_mass), "lower" (omitted) or "top" (one atom at the
    largest loss; needs dropped mass <= 1e-17, see module docstring).  Returns (PLD, info).
    """
    n, eps0, pr = check_params(n, eps0, pair)
    tau = v.real("tau", tau, 1e-300, 1e-17 if side == "top" else 1e-3)
    max_atoms = v.integer("max_atoms", max_atoms, lo=1)
    if side not in ("upper", "lower", "top"):
        raise ValueError(f"side must be 'upper', 'lower' or 'top', got side={side!r}.")
    ss, aa, dropped = kept_atoms(n, eps0, pr, tau, max_atoms)
    P, Q = atoms_at(n, eps0, pr, ss, aa)
    fin = (P > 0) & (Q > 0)
    # a mass near the bottom of the double range keeps few digits (binom.pmf times the pair's
    # weights can be subnormal), so its loss is not within the loss slack (n = 1e4, eps0 = 4,
    # tau = 1e-300: P-mass 2e-314 at loss 4.17 > eps0): such atoms join the dropped tail
    tiny = fin & (np.minimum(P, Q) < TINY_MASS)
    dropped += math.fsum(P[tiny])
    keep = fin & ~tiny
    losses, probs = np.log(P[keep]) - np.log(Q[keep]), P[keep]
    # +inf atoms the window left out were only in `dropped`, which "top" places at a finite loss and
    # "lower" omits: the accountant's grid-free upper caps then read them as finite (koskela n = 8,
    # eps0 = 10, K = 2, eps = 43: upper end 3e-36, exact delta 6.2e-33, its composed +inf mass).
    # Their total is known in closed form (delta_inf), so inf_mass holds it whatever the window.
    inf = max(math.fsum(P[(P > 0) & (Q == 0)]), delta_inf(n, eps0, pair))
    if side == "upper":
        inf += dropped
    elif side == "top":
        losses, probs = np.append(losses, clone_top_loss(n, eps0, pr)), np.append(probs, dropped)
    info = {"atoms": int(probs.size), "dropped": dropped, "tau": tau}
    return pld_from_losses(losses, probs, min(inf, 1.0)), info


def clone_pld_grid(
    n: int,
    eps0: float,
    h: float,
    side: Literal["upper", "lower"],
    pair: str = "fmt21",
    tau: float = 1e-18,
) -> tuple[PLD, dict]:
    """PLD on the grid k h: each atom's loss rounded up ("upper") or down ("lower"), by binomial
    tails.

    For each s the atoms with loss in (k h, (k+1) h] are a in [t_k, t_{k+1}), t_k the first a
    with loss > k h, so their P-mass is T_P(t_k) - T_P(t_{k+1}).  upper: put at (k+1) h, dropped
    mass -> inf_mass: dominates the exact PLD in every composition; lower: put at k h, dropped
    mass omitted: dominated.  Thresholds are shifted by 1e-9 h to the safe side against rounding.
    Returns (PLD, info).

    Source: Koskela et al. 2021, eq. 5.9 and Thm 5 (rounding up dominates, down is dominated).
    """
    n, eps0, pr = check_params(n, eps0, pair)
    h = v.real("h", h, 0.0, 1.0, lo_open=True)
    tau = v.real("tau", tau, 0.0, 1.0, lo_open=True, hi_open=True)
    if side not in ("upper", "lower"):
        raise ValueError(f"side must be 'upper' or 'lower', got side={side!r}.")
    s, a_lo, a_hi, (ps, al, be, ga), dropped = _window(n, eps0, pr, tau)
    inf = 0.0
    if not pr.full and s[-1] == n:   # koskela: (n, 0) has Q = 0 and (0, n) has P = 0
        if a_hi[-1] == n:
            inf = float(ps[-1] * al[-1] * 0.5 ** (n - 1))
            a_hi[-1] = n - 1
        a_lo[-1] = max(a_lo[-1], 1)
    k_lo, k_hi = (x.astype(np.int64) for x in _cells(s, a_lo, a_hi, al, be, ga, h))
    nb = k_hi - k_lo + 1
    if nb.sum() > 30_000_000:
        raise ValueError(
            f"h={h:g} is too fine for n={n}, eps0={eps0:g}: {int(nb.sum())} grid cells, "
            "more than 3e7; take a larger h (a lower accuracy)."
        )
    idx = np.repeat(np.arange(s.size), nb)
    k = np.concatenate([np.arange(x, y + 1) for x, y in zip(k_lo, k_hi)])
    shift = -1e-9 * h if side == "upper" else 1e-9 * h
    th = np.clip(
        _thr_vec(s[idx], al[idx], be[idx], ga[idx], k * h + shift), a_lo[idx], a_hi[idx] + 1
    )
    tp, _ = conditional_tails(s[idx], th, al[idx], be[idx], ga[idx])
    mass = np.maximum(tp - np.r_[tp[1:], 0.0], 0.0) * ps[idx]
    mass[np.cumsum(nb) - 1] = 0.0                      # no bin above the last threshold of each s
    pos = (k + 1) if side == "upper" else k
    keep = mass > 0
    losses, probs = pos[keep] * h, mass[keep]
    uk, inv = np.unique(losses, return_inverse=True)
    sums = np.bincount(inv, weights=probs, minlength=uk.size)
    info = {"atoms": int(uk.size), "dropped": dropped, "h": h}
    pl = pld_from_losses(uk, sums, min(1.0, inf))
    return (pl.with_mass_at_infinity(dropped) if side == "upper" else pl), info


def _cells(s, a_lo, a_hi, al, be, ga, h):
    """The first and last grid index of each s's losses (one cell of margin either side), as
    floats (+-inf where a loss is)."""
    l_lo, l_hi = loss(s, a_lo, al, be, ga), loss(s, a_hi, al, be, ga)
    return np.floor(l_lo / h) - 1, np.ceil(l_hi / h) + 1


BINNED_MAX_ATOMS = 400_000_000   # above it clone_plds takes the grid route
# clone_pld_grid's CPU seconds a cell, fitted to those measured on the cells of one side at
# s ~ 4e6, 4e7 and 4e8 (1.03-1.07, 1.16-1.32 and 2.06-2.13 us; this gives 1.11, 1.41, 2.05): a
# fixed part (thresholds, pmfs, sorting) and Boost's tails, whose cost near the centre of
# Bin(s, 1/2) grows as s^(1/3)
GRID_CELL_SECONDS = 8.5e-7
GRID_CENTRE_SECONDS = 1.6e-9


def grid_cost(n: int, eps0: float, h: float, pair: str | Pair = "fmt21",
              tau: float = 1e-18) -> tuple[int, int, float]:
    """(atoms kept, grid cells, an estimate of the CPU seconds) of :func:`clone_pld_grid` (one
    side) at these arguments, from the kept window alone (no tails at the cells): for refusing a
    route before it starts.

    Source: Koskela et al. 2021, eq. 5.9 (the grid of :func:`clone_pld_grid`).
    """
    n, eps0, pr = check_params(n, eps0, pair)
    h = v.real("h", h, 0.0, 1.0, lo_open=True)
    tau = v.real("tau", tau, 0.0, 1.0, lo_open=True, hi_open=True)
    s, a_lo, a_hi, (_, al, be, ga), _ = _window(n, eps0, pr, tau)
    k_lo, k_hi = _cells(s, a_lo, a_hi, al, be, ga, h)
    # an s with an infinite loss (a pair without clones, or S = n): its atoms are not on the grid
    with np.errstate(invalid="ignore"):
        nb = np.where(np.isfinite(k_lo) & np.isfinite(k_hi), k_hi - k_lo + 1, 0.0)
    seconds = float(np.sum(nb * (GRID_CELL_SECONDS + GRID_CENTRE_SECONDS * np.cbrt(s))))
    return int(np.sum(a_hi - a_lo + 1)), int(nb.sum()), seconds


def _thr_vec(s, al, be, ga, x):
    """Vectorised smallest a with loss > x (x an array)."""
    e = np.exp(x)
    gap = al - be
    flat = gap <= 0
    y = s * (e * (2 * al + ga) - 2 * be - ga) / (2 * np.where(flat, 1.0, gap) * (1 + e))
    y = np.where(flat, np.where(x < 0, -1.0, s + 1.0), y)
    return np.clip(np.floor(y) + 1, 0, s + 1).astype(np.int64)


def clone_pld_binned(n: int, eps0: float, h: float, pair: str = "fmt21", tau: float = 1e-18,
                     max_atoms: int = BINNED_MAX_ATOMS, chunk: int = 2_000_000
                     ) -> tuple[PLD, PLD]:
    """(upper, lower) PLDs on the grid k h from the exact atoms of :func:`clone_pld`, binned in
    chunks.

    The same dominating / dominated pair as :func:`clone_pld_grid` (each kept atom's loss rounded
    up to the grid for "upper", down for "lower", by 1e-9 h more to the safe side; the dropped
    mass to +inf for "upper" only), but with O(#atoms) work and O(#bins) memory instead of
    O(#s x #bins): the cheaper choice when the grid is fine and n is large (n = 1e6, h = 5e-7:
    about 2e7 atoms against 5e8 cells).  A progress bar shows on a terminal unless progress bars are
switched off (:mod:`shuffle_lib.core.progress`: ``set_progress(False)``, SHUFFLE_LIB_PROGRESS=0,
``--quiet``).

    Source: Koskela et al. 2021, eq. 5.9 and Thm 5 (rounding up dominates, down is dominated).
    """
    from tqdm import tqdm
    n, eps0, pr = check_params(n, eps0, pair)
    h = v.real("h", h, 0.0, 1.0, lo_open=True)
    tau = v.real("tau", tau, 0.0, 1.0, lo_open=True, hi_open=True)
    max_atoms = v.integer("max_atoms", max_atoms, lo=1)
    chunk = v.integer("chunk", chunk, lo=1)
    s, a_lo, a_hi, (_, al, be, ga), dropped = _window(n, eps0, pr, tau)
    counts = a_hi - a_lo + 1
    if counts.sum() > max_atoms:
        raise ValueError(
            f"n={n}, eps0={eps0:g} needs {int(counts.sum())} atoms, more than "
            f"max_atoms={max_atoms}."
        )
    with np.errstate(divide="ignore", invalid="ignore"):
        ends = np.concatenate([loss(s, a_lo, al, be, ga), loss(s, a_hi, al, be, ga)])
    ends = ends[np.isfinite(ends)]
    k0 = int(np.floor(ends.min() / h)) - 2 if ends.size else 0
    size = (int(np.ceil(ends.max() / h)) + 2 - k0 + 1) if ends.size else 1
    up, down, inf = np.zeros(size), np.zeros(size), []
    cuts = np.searchsorted(np.cumsum(counts), np.arange(chunk, int(counts.sum()), chunk))
    for rows in tqdm(
        np.split(np.arange(s.size), cuts), desc=f"clones n={n}",
        disable=None if progress.enabled() else True, leave=False
    ):
        if rows.size == 0:
            continue
        c = counts[rows]
        ss = np.repeat(s[rows], c)
        aa = np.arange(c.sum()) - np.repeat(np.cumsum(c) - c, c) + np.repeat(a_lo[rows], c)
        P, Q = atoms_at(n, eps0, pr, ss, aa)
        ok = (P > 0) & (Q > 0)
        inf.append(math.fsum(P[(P > 0) & (Q == 0)]))
        x = (np.log(P[ok]) - np.log(Q[ok])) / h
        up += np.bincount(np.ceil(x + 1e-9).astype(np.int64) - k0, weights=P[ok], minlength=size)[
            :size
        ]
        down += np.bincount(
            np.floor(x - 1e-9).astype(np.int64) - k0, weights=P[ok], minlength=size
        )[:size]
    grid = (np.arange(size) + k0) * h
    inf_mass = math.fsum(inf)
    upper = pld_from_losses(grid[up > 0], up[up > 0], min(1.0, inf_mass))
    upper = upper.with_mass_at_infinity(dropped)
    lower = pld_from_losses(grid[down > 0], down[down > 0], min(1.0, inf_mass))
    return upper, lower
