"""Binary randomised response: the pair, and its k-fold tight delta in closed form.

RR with parameter eps0 reports the true bit with probability e^eps0/(1+e^eps0).
For neighbouring inputs 0 and 1 the output PMFs are
P = (a, 1-a), Q = (1-a, a), a = e^eps0/(1+e^eps0), and the privacy loss of one
report is +-eps0.  After k compositions the loss is eps0 (2J - k) with
J ~ Bin(k, a) under P, so by Koskela et al. 2021, Thm 5 / eq. 2.3 (delta(inf) = 0)

    delta(eps) = sum_{j : eps0 (2j-k) > eps} C(k,j) a^j (1-a)^(k-j) (1 - e^{eps - eps0 (2j-k)}),

the same in both directions by symmetry.  Evaluated in log space, so that
delta down to 1e-300 and k up to 1e7 are exact to double precision.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import logsumexp

from shuffle_lib.core import validate as v
from shuffle_lib.core.binomial import binom_logpmf
from shuffle_lib.core.constants import MAX_SIZE
from shuffle_lib.core.pld import PLD, pld_from_losses
from shuffle_lib.core.registry import Mechanism, Param, register
from shuffle_lib.core.types import ArrayLike, Model


def rr_pmfs(eps0: float) -> tuple[np.ndarray, np.ndarray]:
    """The pair (P, Q) of binary randomised response with parameter eps0 > 0.

    Source: Warner (1965); the worked example of Koskela et al. 2021, Sec. 2.
    """
    eps0 = v.real("eps0", eps0, 0.0, 50.0, lo_open=True)
    a, b = 1.0 / (1.0 + math.exp(-eps0)), 1.0 / (1.0 + math.exp(eps0))  # b, not 1 - a: no underflow
    return np.array([a, b]), np.array([b, a])


def rr_delta_exact(eps0: float, eps: ArrayLike, k: int = 1) -> float | np.ndarray:
    """Tight delta(eps) of k-fold binary randomised response (binomial sum above).

    Vectorised over ``eps``; eps0 in (0, 50], eps >= 0, k in [1, 1e7].

    Source: Koskela et al. 2021, Thm 5 / eq. 2.3 with delta(inf) = 0 (module docstring).
    """
    eps0 = v.real("eps0", eps0, 0.0, 50.0, lo_open=True)
    eps_arr = v.reals("eps", eps, lo=0.0)
    k = v.integer("k", k, lo=1, hi=MAX_SIZE)
    j = np.arange(k + 1, dtype=float)
    logp = binom_logpmf(j, k, 1.0 / (1.0 + math.exp(-eps0)))
    loss = eps0 * (2 * j - k)
    out = np.empty(eps_arr.size)
    for i, e in enumerate(eps_arr):
        m = loss > e
        if not np.any(m):
            out[i] = 0.0
            continue
        # <= 1 up to rounding
        out[i] = min(1.0, math.exp(logsumexp(logp[m] + np.log(-np.expm1(e - loss[m])))))
    return out if np.ndim(eps) else float(out[0])


def rr_composed_pld(eps0: float, k: int = 1) -> PLD:
    """The exact PLD of k-fold randomised response: mass Bin(k, a) at losses eps0 (2j - k).

    Source: Koskela et al. 2021, Def. 4, eq. 2.2 (module docstring).
    """
    eps0 = v.real("eps0", eps0, 0.0, 50.0, lo_open=True)
    k = v.integer("k", k, lo=1, hi=MAX_SIZE)
    j = np.arange(k + 1, dtype=float)
    probs = np.exp(binom_logpmf(j, k, 1.0 / (1.0 + math.exp(-eps0))))
    return pld_from_losses(eps0 * (2 * j - k), probs)


def rr_model(eps0: float) -> Model:
    """The exact pair of binary randomised response, both directions."""
    return Model.from_pmfs(*rr_pmfs(eps0))


register(
    Mechanism(
        name="rr",
        summary="binary randomised response (--eps0)",
        source="Warner (1965); the worked example of chapter 1 (Koskela, Heikkilä & Honkela "
               "2021 Sec. 2)",
        params=(
            Param(
                "eps0",
                float,
                "LDP parameter of randomised response, in (0, 50]",
                lo=0.0,
                hi=50.0,
                lo_open=True,
                more_private="down",
            ),
        ),
        build=rr_model,
        example={"eps0": 1.0},
    )
)
