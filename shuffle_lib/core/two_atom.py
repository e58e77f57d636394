"""Exact composition of PLDs with at most two finite atoms, for where the grid is out of reach.

A round whose PLD has finite losses l0 < l1 with P-masses p0, p1 (and mass a at +inf) composed K
times is a binomial: mass C(K, j) p1^j p0^(K-j) at the loss j l1 + (K - j) l0, j = 0..K, and
1 - (1 - a)^K at +inf (Koskela, Heikkilä & Honkela 2021, Def. 4 and Thm 5: the composition's PLD
is the convolution of the rounds' PLDs).  Several such components add independent binomial losses:
prod_i (K_i + 1) atoms, enumerated here when there are at most :data:`MAX_ATOMS`.  Binary
randomised response at eps0 = 36.7 and K = 1000, or a user's pair p = [1 - 1e-16, 1e-16], needs a
grid of ~1e9 points at the default accuracy (minutes); here it is 1001 atoms.

Error budget, each term charged to the side of the end it serves (u = 2^-53):

1. log masses: log C(K, j) from ``gammaln`` (within 8 ulp of each of its three values, at most
   (K + 1) log(K + 2) in size), j log p1 + (K - j) log p0 (two roundings per product and sum, and
   one per log), and the final exp: together at most
   E = u [48 (K + 1) log(K + 2) + 6 K (|log p0| + |log p1| + 1) + 4] per component, summed over
   components.  The dominating PLD takes the masses times e^E, plus the least positive double
   (so no positive mass underflows to 0, and a subnormal's rounding is covered); the dominated one
   times e^-E.
2. losses: j l1 + (K - j) l0 is within 4 u K max|l| of the exact combination of the double
   losses, which are within ``loss_slack`` of the pair's (:func:`shuffle_lib.core.pld.loss_slack`):
   eta = sum_i K_i (loss_slack_i + 4 u max|l_i|); the dominating PLD's losses are raised by eta,
   the dominated one's lowered.
3. the mass at +inf: :func:`shuffle_lib.core.fourier.composed_inf_mass`, times 1 +- REL_MARGIN.

The two composed PLDs are then read by the one-round path of :mod:`shuffle_lib.core.fourier`, which
adds its own loss slack and relative margin.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.special import gammaln

from shuffle_lib.core import budget
from shuffle_lib.core.constants import REL_MARGIN, TINY
from shuffle_lib.core.pld import PLD, loss_slack

MAX_ATOMS = 2 ** 22
"""The most atoms the exact route enumerates (a 1e6-round binomial has 1e6 + 1)."""
_U = 2.0 ** -53
_BYTES_PER_ATOM = 96      # losses, log masses, order, two PLDs' losses and masses, temporaries


def applies(components: Sequence[tuple[PLD, int]]) -> bool:
    """Every round has at most two finite atoms, and the composition at most MAX_ATOMS."""
    if any(p.losses.size == 0 or p.losses.size > 2 for p, _ in components):
        return False
    atoms = 1.0
    for p, c in components:
        atoms *= c + 1 if p.losses.size == 2 else 1
    return atoms <= MAX_ATOMS


def _component(p: PLD, k: int) -> tuple[np.ndarray, np.ndarray, float, float]:
    """(losses, log masses, log-mass error E, loss error eta) of one component's k rounds."""
    u = _U
    lp = np.log(p.probs)            # -inf for a zero mass: its atoms get mass 0
    lmax = float(np.max(np.abs(p.losses)))
    eta = k * (loss_slack(p) + 4 * u * lmax)
    if p.losses.size == 1:
        return p.losses * k, lp * k, u * (6 * k * (abs(float(lp[0])) + 1) + 8 * k + 4), eta
    j = np.arange(k + 1, dtype=float)
    logc = gammaln(k + 1.0) - gammaln(j + 1.0) - gammaln(k - j + 1.0)
    with np.errstate(invalid="ignore"):     # 0 * -inf: the j = 0 (or K) term of a zero mass
        lm = logc + np.where(j > 0, j * lp[1], 0.0) + np.where(j < k, (k - j) * lp[0], 0.0)
    finite = np.abs(lp[np.isfinite(lp)])
    err = u * (48 * (k + 1) * math.log(k + 2) + 6 * k * (float(finite.sum()) + 1) + 8 * k + 4)
    return j * p.losses[1] + (k - j) * p.losses[0], lm, err, eta


def composed(components: Sequence[tuple[PLD, int]], inf_mass: float) -> tuple[PLD, PLD, float]:
    """(dominating PLD, dominated PLD, eta) of the composition (module docstring); ``inf_mass``
    is the composition's exact mass at +inf."""
    atoms = math.prod(c + 1 for _, c in components)
    budget.check_work(atoms, MAX_ATOMS, "the exact two-atom composition",
                      "ask for fewer compositions")
    budget.check_bytes(_BYTES_PER_ATOM * atoms, "the exact two-atom composition",
                       "ask for fewer compositions")
    losses, logm, err, eta = np.zeros(1), np.zeros(1), 0.0, 0.0
    for p, c in components:
        l_c, m_c, e_c, s_c = _component(p, c)
        losses = (losses[:, None] + l_c[None, :]).ravel()
        logm = (logm[:, None] + m_c[None, :]).ravel()
        err, eta = err + e_c, eta + s_c
    order = np.argsort(losses, kind="stable")
    losses, logm = losses[order], logm[order]
    up = np.exp(logm + err)
    up = np.where(np.isfinite(logm), up + TINY, 0.0)
    low = np.exp(logm - err)
    return (PLD.trusted(losses + eta, up, min(1.0, inf_mass * (1 + REL_MARGIN))),
            PLD.trusted(losses - eta, low, inf_mass * (1 - REL_MARGIN)), eta)


def positive_floor(upper: float, components: Sequence[tuple[PLD, int]], eps: float) -> float:
    """``upper``, or the least positive double when it is 0 though the exact delta(eps) may be
    positive: some outcome with positive mass has a loss above eps (the rounded composed top
    loss plus K loss_slack, Koskela et al. 2021, Thm 5: delta(eps) > 0 iff P[L > eps] > 0)."""
    if upper > 0.0:
        return upper
    top = 0.0
    for p, c in components:
        pos = np.flatnonzero(p.probs > 0)
        if pos.size == 0:
            return upper
        t = float(p.losses[pos[-1]])
        top += c * (t + loss_slack(p) + 4 * _U * abs(t))
    return TINY if top > eps else upper
