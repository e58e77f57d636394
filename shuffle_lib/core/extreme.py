"""Grid-free bounds for extreme targets (delta ~ 1e-300, eps near the largest loss).

The FFT accountant's round-off floor (~1e-13) leaves no finite upper end for eps(delta) at
delta = 1e-300, and its lower ends are weak far out in the tails.  Both are repaired from the
per-round PLDs alone, without a grid:

* upper (Chernoff): delta(eps) <= P[L >= eps] <= D_inf + E[e^{lam L}; L finite] e^{-lam eps} for
  every lam > 0, L the composed loss, D_inf = P[some round has L = +inf]; and delta(L_top) = 0 at
  the largest composed finite loss L_top when D_inf = 0;
* lower (top atom): the outcome where every round takes its largest finite loss has loss L_top
  and probability P_top = prod p_top^count, so delta(eps) >= P_top (1 - e^{eps - L_top}).

Both hold for the PLDs passed in (as the accountant's own brackets do).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.optimize import minimize_scalar

from shuffle_lib.core import validate as v
from shuffle_lib.core.constants import REL_MARGIN
from shuffle_lib.core.pld import PLD, check_components

_LOG_LAM = (math.log(1e-6), math.log(1e8))


def log_mgf(components: Sequence[tuple[PLD, int]], lam: float) -> float:
    """Lambda(lam) = sum over rounds of log E_P[e^{lam L}; L finite].

    Source: the cumulant generating function of the Chernoff bound (module docstring).  lam >= 0.
    """
    components = check_components(components)
    lam = v.real("lam", lam, 0.0)
    total = 0.0
    for p, c in components:
        a = np.multiply(p.losses, lam)
        a += p.log_probs
        m = float(np.max(a, initial=-np.inf))
        if not math.isfinite(m):
            return -math.inf
        a -= m
        total += c * (m + math.log(float(np.sum(np.exp(a, out=a)))))
    return total


def _log_inf_free(components):
    """log P[no round has L = +inf] = sum c log(1 - inf_mass)."""
    return sum(
        c * (math.log1p(-p.inf_mass) if p.inf_mass < 1.0 else -math.inf) for p, c in components
    )


def chernoff_eps(components: Sequence[tuple[PLD, int]], delta: float) -> float:
    """A certified upper end for eps(delta) that needs no grid: delta(eps) <= P[L >= eps] <=
    D_inf + e^{Lambda(lam) - lam eps} for every lam > 0 (Lambda over finite atoms, D_inf = P[some
    round +inf]), and delta(L_top) = 0 at the largest composed finite loss L_top when D_inf = 0.
    Where the FFT's error floor (~1e-13) leaves no finite upper end (delta = 1e-300) this still
    does; lam is searched on a log scale up to 1e8, where the bound tends to L_top.

    Source: Chernoff's bound on the composed loss (module docstring, upper end).
    """
    components = check_components(components)
    delta = v.real("delta", delta, 0.0, 1.0, lo_open=True)
    d_inf = -math.expm1(_log_inf_free(components))
    if delta <= d_inf:
        return math.inf
    if d_inf == 0.0:
        top = math.fsum(c * float(p.losses[-1]) for p, c in components)
        best = max(top, 0.0) * (1 + REL_MARGIN) + 1e-300
    else:
        best = math.inf
    log_room = math.log(delta - d_inf)
    f = lambda t: (log_mgf(components, math.exp(t)) - log_room) / math.exp(t)  # noqa: E731
    res = minimize_scalar(f, bounds=_LOG_LAM, method="bounded", options={"xatol": 1e-4})
    return min(best, max(float(res.fun), 0.0) * (1 + REL_MARGIN) + 1e-300)


def chernoff_delta(components: Sequence[tuple[PLD, int]], eps: float) -> float:
    """The same bound read the other way: delta(eps) <= D_inf + min_lam e^{Lambda(lam) - lam eps}.

    Source: Chernoff's bound on the composed loss (module docstring, upper end).
    """
    components = check_components(components)
    eps = v.real("eps", eps, allow_inf=True)
    d_inf = -math.expm1(_log_inf_free(components))
    if d_inf == 1.0:
        return 1.0
    if d_inf == 0.0 and eps >= math.fsum(c * float(p.losses[-1]) for p, c in components) * (
        1 + REL_MARGIN
    ):
        return 0.0
    f = lambda t: log_mgf(components, math.exp(t)) - math.exp(t) * eps  # noqa: E731
    res = minimize_scalar(f, bounds=_LOG_LAM, method="bounded", options={"xatol": 1e-4})
    return min(1.0, (d_inf + math.exp(min(float(res.fun), 0.0))) * (1 + REL_MARGIN))


def _log_top(components):
    """(L_top, log P_top) of the all-largest-finite-loss outcome; log P_top lowered by 1e-9
    relative, far more than the rounding of the sums, so the bounds below stay on the safe side."""
    tops = []
    for p, _ in components:
        # a zero-mass atom is no outcome (and has no log: tests/test_cli_bad_input.py)
        nz = np.flatnonzero(p.probs > 0)
        if nz.size == 0:
            return -math.inf, -math.inf        # no finite outcome: no lower end from the top atom
        tops.append((float(p.losses[nz[-1]]), float(p.probs[nz[-1]])))
    top = math.fsum(c * t for (t, _), (_, c) in zip(tops, components))
    log_p = math.fsum(c * math.log(w) for (_, w), (_, c) in zip(tops, components))
    return top, log_p - 1e-9 * max(1.0, abs(log_p))


def top_atom_eps(components: Sequence[tuple[PLD, int]], delta: float) -> float:
    """A lower end for eps(delta): L_top + log(1 - delta / P_top) when delta < P_top, else 0.

    Source: the top-atom bound of the module docstring (lower end), Koskela et al. 2021, Thm 5.
    """
    components = check_components(components)
    delta = v.real("delta", delta, 0.0, 1.0, lo_open=True)
    top, log_p = _log_top(components)
    if top <= 0 or math.log(delta) >= log_p:
        return 0.0
    e = top + math.log1p(-math.exp(math.log(delta) - log_p))
    return max(0.0, e - REL_MARGIN * max(1.0, abs(top)))


def top_atom_delta(components: Sequence[tuple[PLD, int]], eps: float) -> float:
    """A lower end for delta(eps): P_top (1 - e^{eps - L_top}) for eps < L_top, else 0.

    Source: the top-atom bound of the module docstring (lower end), Koskela et al. 2021, Thm 5.
    """
    return top_atom_deltas(components, [v.real("eps", eps, allow_inf=True)])[0]


def top_atom_deltas(components: Sequence[tuple[PLD, int]], eps: Sequence[float]) -> list[float]:
    """:func:`top_atom_delta` at each eps, the top atom found once (the accountant narrows every
    grid bracket with it, shuffle_lib.core.fourier).

    Source: the top-atom bound of the module docstring (lower end), Koskela et al. 2021, Thm 5.
    """
    components = check_components(components)
    eps = v.reals("eps", eps, allow_inf=True)
    top, log_p = _log_top(components)
    return [
        0.0 if e >= top else max(0.0, math.exp(log_p) * -math.expm1(e - top) * (1 - REL_MARGIN))
        for e in eps.tolist()
    ]
