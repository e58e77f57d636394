"""Brackets from a model: the one code path from a mechanism's build to certified numbers.

The command line, calibration, the atlas and each mechanism's own ``delta_bracket`` /
``epsilon_bracket`` call :func:`delta_brackets` / :func:`epsilon_brackets` on the model its build
returns, so the library and the CLI cannot disagree.

* :class:`~shuffle_lib.core.types.PairModel`: the Fourier accountant on ``(pq, qp)`` composed
  ``compositions`` times (the upper end), on the dominated PLDs when given (the lower end); a
  tail cut of ``tail_cut`` per round is taken off the lower end (delta) or read at
  delta + K * tail_cut (eps).
* :class:`~shuffle_lib.core.types.WorstCase`: [max of lower ends, max of upper ends] over its pairs.
* :class:`~shuffle_lib.core.types.DirectModel`: the mechanism's own method.

:func:`rdp_brackets` is the generic Renyi route (the divergence of the build's PLDs) for
mechanisms that declare no Renyi method of their own.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np

from shuffle_lib.core import fourier
from shuffle_lib.core import validate as v
from shuffle_lib.core.constants import MAX_COMPOSITIONS
from shuffle_lib.core.renyi import renyi_pld, renyi_pld_bracket
from shuffle_lib.core.types import ArrayLike, Bracket, DirectModel, Model, PairModel, WorstCase

Verb = Literal["delta", "epsilon"]


def _pairs(model: PairModel | WorstCase) -> list[PairModel]:
    return list(model.pairs) if isinstance(model, WorstCase) else [model]


def _pair_brackets(fn, pm: PairModel, k: int, targets: list[float], **kw) -> list[Bracket]:
    """One pair; with dominated PLDs each end comes from its own PLDs."""
    up = fn([(pm.pq, k)], [(pm.qp, k)], targets, **kw)
    if pm.pq_lower is None:
        return up
    low = fn([(pm.pq_lower, k)], [(pm.qp_lower, k)], targets, **kw)
    return [Bracket(min(x.lower, y.upper), y.upper) for x, y in zip(low, up)]


def _worst(fn, model: PairModel | WorstCase, k: int, targets: list[float], **kw) -> list[Bracket]:
    per = [_pair_brackets(fn, pm, k, targets, **kw) for pm in _pairs(model)]
    return [Bracket(max(r.lower for r in col), max(r.upper for r in col)) for col in zip(*per)]


def tail_cut(model: Model) -> float:
    """The per-round mass a build sent to +inf (the largest over alternative pairs)."""
    v.instance("model", model, (PairModel, WorstCase, DirectModel))
    if isinstance(model, DirectModel):
        return 0.0
    return max(pm.tail_cut for pm in _pairs(model))


def delta_brackets(
    model: Model, eps: ArrayLike, compositions: int = 1, **kw
) -> list[Bracket]:
    """Certified brackets for the tight delta(eps) of ``compositions`` rounds, one per eps.

    Keywords (``accuracy``, ``rtol``, ...) go to :func:`shuffle_lib.core.fourier.delta_bracket`.
    """
    v.instance("model", model, (PairModel, WorstCase, DirectModel))
    eps = [float(x) for x in v.reals("eps", eps, lo=0.0)]
    if isinstance(model, DirectModel):
        return model.delta(eps)
    k = v.integer("compositions", compositions, lo=1, hi=MAX_COMPOSITIONS)
    cut = k * tail_cut(model)
    br = _worst(fourier.delta_bracket, model, k, eps, **kw)
    return [Bracket(max(0.0, b.lower - cut), b.upper) for b in br]


def epsilon_brackets(
    model: Model, delta: ArrayLike, compositions: int = 1, **kw
) -> list[Bracket]:
    """Certified brackets for the tight eps(delta) of ``compositions`` rounds, one per delta.

    With a tail cut the lower end is read at delta + K * tail_cut, where the cut PLDs' delta is no
    larger than the exact one's plus K * tail_cut (0 when that reaches 1).
    """
    v.instance("model", model, (PairModel, WorstCase, DirectModel))
    delta = [float(x) for x in v.reals("delta", delta, lo=0.0, hi=1.0, lo_open=True, hi_open=True)]
    if isinstance(model, DirectModel):
        return model.epsilon(delta)
    k = v.integer("compositions", compositions, lo=1, hi=MAX_COMPOSITIONS)
    cut = k * tail_cut(model)
    shifted = [d + cut for d in delta if d + cut < 1.0] if cut > 0 else []
    if all(x == d for x, d in zip(shifted, delta)) and len(shifted) == len(delta):
        # the cut is below the targets' rounding: nothing to read twice
        cut, shifted = 0.0, []
    both = _worst(fourier.epsilon_bracket, model, k, delta + shifted, **kw)
    br, low = both[:len(delta)], both[len(delta):]
    if cut > 0:
        low = low + [Bracket(0.0, 0.0)] * (len(delta) - len(low))
        br = [Bracket(min(b.lower, x.lower), b.upper) for b, x in zip(br, low)]
    return _fewer_rounds_lower(model, delta, k, br, **kw)


FEWER_ROUNDS_FROM = 10 ** 5
"""From this many rounds on, a lower eps end of 0 is replaced by that of K // 10 rounds."""


def _fewer_rounds_lower(model, delta, k, br, **kw):
    """Where K rounds gave a lower eps end of 0 (the grid's round-off at K = 1e7), the lower end
    of K // 10 rounds, recursively: dropping rounds is post-processing, so delta_m(eps) <=
    delta_K(eps) for m <= K identical rounds and eps_K(delta) >= eps_m(delta) (Dwork & Roth 2014,
    Prop. 2.1)."""
    need = [i for i, b in enumerate(br) if b.lower == 0.0 and b.upper > 0.0]
    if k < FEWER_ROUNDS_FROM or not need:
        return br
    sub = epsilon_brackets(model, [delta[i] for i in need], k // 10, **kw)
    out = list(br)
    for i, b in zip(need, sub):
        out[i] = Bracket(min(b.lower, br[i].upper), br[i].upper)
    return out


def brackets(
    model: Model, verb: Verb, targets: ArrayLike, compositions: int = 1, **kw
) -> list[Bracket]:
    """:func:`delta_brackets` for ``verb="delta"`` (targets are eps), else
    :func:`epsilon_brackets`."""
    v.instance("model", model, (PairModel, WorstCase, DirectModel))
    if verb == "delta":
        return delta_brackets(model, targets, compositions, **kw)
    if verb == "epsilon":
        return epsilon_brackets(model, targets, compositions, **kw)
    raise ValueError(f"verb must be 'delta' or 'epsilon', got {verb!r}.")


def rdp_brackets(model: Model, orders: ArrayLike) -> list[Bracket]:
    """Certified brackets for max(D_a(P||Q), D_a(Q||P)) of the build's PLDs, one per order a.

    Exact for exact PLDs; +inf when a PLD carries mass at +inf, unless the model reports
    ``max_loss`` (then that mass is a tail cut and bounded, :func:`renyi_pld_bracket`).
    """
    v.instance("model", model, (PairModel, WorstCase, DirectModel))
    if isinstance(model, DirectModel):
        raise ValueError("this mechanism builds no PLD and declares no Renyi method.")
    lams = np.asarray(v.reals("orders", orders, lo=1.0, lo_open=True), dtype=float)

    def div(pm: PairModel, end: int) -> np.ndarray:   # end 0: upper PLDs, 1: lower (dominated) PLDs
        x, y = pm.pq, pm.qp
        if end == 1 and pm.pq_lower is not None and pm.qp_lower is not None:
            x, y = pm.pq_lower, pm.qp_lower
        if pm.max_loss is not None:
            d = np.maximum(renyi_pld_bracket(x, lams, pm.max_loss)[1 - end],
                           renyi_pld_bracket(y, lams, pm.max_loss)[1 - end])
        else:
            d = np.maximum(renyi_pld(x, lams), renyi_pld(y, lams))
        # rounding of the moment's pairwise sum and of its atoms (a few ulp each, lam-th powers),
        # charged to each end: a divergence of 7e-7 (k-RR, eps0 = 1e-3, order 1.5) is a moment of
        # 1 + 3.5e-7, whose last digits the sum does not hold
        atoms = max(x.probs.size, y.probs.size, 1)
        rnd = 1e-13 * np.abs(np.where(np.isfinite(d), d, 0.0)) + ((math.log2(atoms) + 4) * 2.3e-16
                                   + 16 * 2.3e-16 * np.minimum(lams, 1e3)) / (lams - 1)
        if end == 0:
            d = d + rnd + max(_mass_deficit(x), _mass_deficit(y)) / (lams - 1)
        else:
            d = d - rnd
        return np.maximum(d, 0.0)

    pairs = _pairs(model)
    lo = np.max([div(pm, 1) for pm in pairs], axis=0)
    hi = np.max([div(pm, 0) for pm in pairs], axis=0)
    return [Bracket(a, b) for a, b in zip(lo, hi)]


def _mass_deficit(pld) -> float:
    """-log of a PLD's total mass when rounding left it below 1 (else 0): the upper end's allowance.

    A PLD built in doubles can sum to 1 - 2e-16; log E_P[e^{(lam-1)L}] then came out at -4.4e-16
    where the divergence is >= 0 (``rdp ldp-shuffle-subsampled --eps0 1e-320``).  Dividing the
    moment by the total mass can only raise it, so the upper end adds this term; both ends are then
    clamped to the divergence's range [0, inf].
    """
    total = math.fsum(pld.probs) + pld.inf_mass
    return -math.log(total) if 0.0 < total < 1.0 else 0.0


def finite_or_none(x: float | None) -> float | None:
    """JSON's spelling of a number: ``None`` for +-inf (and for None)."""
    return None if x is None or not math.isfinite(x) else float(x)
