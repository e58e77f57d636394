"""Renyi divergences of discrete pairs and PLDs, and RDP -> (eps, delta): tools that know no
mechanism.

D_lam(P||Q) = 1/(lam-1) log sum_o P(o)^lam Q(o)^(1-lam)  (Chen et al. 2024, eq. 2; Mironov 2017),
computed in log space by log-sum-exp over the atoms, for real lam > 1.

* :func:`renyi_pmfs`: both directions of any pair of PMFs on one support (exact).
* :func:`renyi_pld`: D_lam(P||Q) = 1/(lam-1) log E_P[e^{(lam-1) L}] from a PLD;
  :func:`renyi_pld_bracket` when its +inf mass is a tail cut of bounded losses.
* :func:`gdp_rdp`: mu-GDP as an RDP curve; :func:`eps_from_rdp`: RDP curve -> eps(delta).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np
from scipy.special import logsumexp

from shuffle_lib.core import validate as v
from shuffle_lib.core.pld import PLD
from shuffle_lib.core.types import ArrayLike

LAM_MAX = 1e4


def check_orders(lam: ArrayLike) -> np.ndarray:
    """The Renyi orders as a 1-d float array, each in (1, 1e4] (ValueError naming ``lam``)."""
    return v.reals("lam", lam, lo=1.0, hi=LAM_MAX, lo_open=True)


def log_divergence(logp: np.ndarray, logq: np.ndarray, lam: float) -> float:
    """1/(lam-1) log sum exp(lam logp + (1-lam) logq) over atoms with P > 0 (inf if Q = 0 there).

    Source: Chen et al. 2024, eq. 2 (Mironov 2017), in log space.  lam in (1, 1e4].
    """
    lam = v.real("lam", lam, 1.0, LAM_MAX, lo_open=True)
    keep = np.isfinite(logp)
    if np.any(~np.isfinite(logq[keep])):
        return math.inf
    return float(logsumexp(lam * logp[keep] + (1 - lam) * logq[keep])) / (lam - 1)


def renyi_pmfs(p: Sequence[float] | np.ndarray, q: Sequence[float] | np.ndarray,
               lam: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """(D_lam(P||Q), D_lam(Q||P)) for each lam in ``lam`` (arrays), PMFs on one support.

    Source: Chen et al. 2024, eq. 2 (Mironov 2017).
    """
    p, q = v.pmf("p", p), v.pmf("q", q)
    if p.shape != q.shape:
        raise ValueError(f"p and q must have the same length, got {p.size} and {q.size}.")
    with np.errstate(divide="ignore"):
        lp, lq = np.log(p), np.log(q)
    lams = check_orders(lam)
    return (
        np.array([log_divergence(lp, lq, x) for x in lams]),
        np.array([log_divergence(lq, lp, x) for x in lams]),
    )


def renyi_pld(pld: PLD, lam: ArrayLike) -> np.ndarray:
    """D_lam(P||Q) = 1/(lam-1) log E_P[e^{(lam-1)L}] from the PLD of P w.r.t. Q (inf if inf_mass >
    0).

    One direction only: D_lam(Q||P) needs the PLD of Q w.r.t. P (or Q << P and E_P[e^{-lam L}]).

    Source: Chen et al. 2024, eq. 2 (Mironov 2017) written with the loss L.
    """
    v.instance("pld", pld, PLD)
    lams = check_orders(lam)
    if pld.inf_mass > 0:
        return np.full(lams.size, math.inf)
    return _log_moments(pld, lams) / (lams - 1)


def _log_moments(pld, lams):
    """log E_P[e^{(lam-1) L}; L finite] for each lam (log-sum-exp over the finite atoms)."""
    keep = pld.probs > 0
    lp, L = np.log(pld.probs[keep]), pld.losses[keep]
    return np.array([float(logsumexp(lp + (x - 1) * L)) for x in lams])


def renyi_pld_bracket(pld: PLD, lam: ArrayLike, max_loss: float) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) arrays for D_lam(P||Q) when the PLD's +inf mass stands for cut atoms whose
    loss is at most ``max_loss`` (e.g. a tail cut of an eps-LDP-bounded pair): the cut atoms add
    between 0 and inf_mass e^{(lam-1) max_loss} to E_P[e^{(lam-1)L}].

    Source: Chen et al. 2024, eq. 2 (Mironov 2017) with a bounded tail cut.
    """
    v.instance("pld", pld, PLD)
    lams = check_orders(lam)
    # log space below: any finite bound (bitflip at q = 1e-320: 737)
    max_loss = v.real("max_loss", max_loss, 0.0)
    lo = _log_moments(pld, lams)
    hi = (
        lo
        if pld.inf_mass == 0
        else np.logaddexp(lo, math.log(pld.inf_mass) + (lams - 1) * max_loss)
    )
    # rounding
    return np.maximum(lo, 0.0) / (lams - 1), (hi + 1e-12 * np.abs(hi) + 1e-300) / (lams - 1)


def gdp_rdp(mu: float, lam: ArrayLike) -> np.ndarray:
    """mu-GDP -> (lam, mu^2 lam / 2)-RDP (Dong, Roth, Su 2022; Chen et al. 2024 before Cor. 2)."""
    mu = v.real("mu", mu, lo=0.0)
    return 0.5 * mu ** 2 * check_orders(lam)


def eps_from_rdp(lam: ArrayLike, rdp: Sequence[float] | np.ndarray, delta: float,
                 method: Literal["standard", "improved"] = "improved") -> tuple[float, float]:
    """min over the orders of eps(delta) from an RDP curve (lam_i, rdp_i); returns (eps, lam*).

    standard (Mironov 2017, Prop. 3): eps = D + log(1/delta)/(lam-1).
    improved (Canonne, Kamath, Steinke 2020, Prop. 12; the conversion of Google dp_accounting):
    eps = D + log((lam-1)/lam) - (log delta + log lam)/(lam-1), always <= standard.
    """
    lams = check_orders(lam)
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
