"""The subsampled shuffler (Koskela et al. 2022, Sec. 3.4; Girgis et al. 2021): each round, a
uniformly random subset of m of the n users reports through an eps0-LDP randomiser and is shuffled.

A dominating pair, derived here by extending the clones coupling (Koskela et al. 2022 uses Zhu et
al. 2021, Prop. 30 instead; its symbols were lost in extraction).  With gamma = m/n, if the
differing user u is outside the subset (probability 1 - gamma), couple the subset with one
where a random member v is swapped for u: the other m-1 members are then the same uniform
(m-1)-subset in both cases, and only the "slot" of u / v differs.  Under the clone
decomposition the slot reports U0 / U1 with probabilities (q, 1-q) for x0, (1-q, q) for x1,
and (p/2, p/2) plus "something else" with probability 1-p when v fills it.  So with
(P, Q) the fmt21 pair for m users (clone counts over the m-1 others),

    P_sub = gamma P + (1-gamma) p (P + Q)/2 + (1-gamma)(1-p) L,
    Q_sub = gamma Q + (1-gamma) p (P + Q)/2 + (1-gamma)(1-p) L,

L a law on outcomes flagged "slot was something else", the same under both (loss 0).  On
the count space this is the fmt21 shape with weights al = b q + b' (1-q), be = b (1-q) + b' q,
b = gamma + b', b' = (1-gamma) p / 2, so the binomial-tail machinery of
:mod:`shuffle_lib.mechanisms.clones` applies unchanged (the loss is still increasing in a for fixed
s).
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from scipy.stats import binom

from shuffle_lib.core import budget, evaluate
from shuffle_lib.core import validate as v
from shuffle_lib.core.binomial import tail_range
from shuffle_lib.core.constants import MAX_COMPOSITIONS
from shuffle_lib.core.fourier import DEFAULT_ACCURACY
from shuffle_lib.core.pld import PLD, pld_from_losses
from shuffle_lib.core.registry import Mechanism, Param, register
from shuffle_lib.core.types import ArrayLike, Bracket, Model, PLDPair
from shuffle_lib.mechanisms.clones.pairs import (
    EPS0_PARAM,
    N_PARAM,
    Pair,
    boost_rtol,
    bracket_at,
    clone_probability,
    conditional_tails,
    loss,
    s_range,
)

SUB = Pair(
    "subsampled", True, "every eps0-LDP randomiser, fixed-size subset per round", "this module"
)

_BYTES_PER_ATOM = 160
"""Peak bytes per (s, a) atom while :func:`subsampled_pld` builds the PLD: about twenty float64 and
int64 arrays of that length live at once (the index arrays, the binomial PMFs and their
temporaries, the losses, the sort)."""


def _check(n, m, eps0):
    n = v.integer("n", n, lo=1, hi=10 ** 9)
    m = v.integer("m", m, lo=1, hi=n)
    eps0 = v.real("eps0", eps0, 0.0, 30.0, lo_open=True)
    return n, m, eps0


def _weights(n, m, eps0):
    """(al, be, mass of L): 1 - q as 1/(1 + e^eps0), 1 - gamma as (n - m)/n and 1 - p as
    -expm1(-eps0), each without cancellation (1 - q lost a relative 2^-53 e^eps0, 1e-3 at eps0 =
    30)."""
    gamma, p = m / n, clone_probability(eps0)
    q, nq = 1.0 / (1.0 + math.exp(-eps0)), 1.0 / (1.0 + math.exp(eps0))
    ng = (n - m) / n
    b2 = ng * p / 2
    b1 = gamma + b2
    return b1 * q + b2 * nq, b1 * nq + b2 * q, ng * -math.expm1(-eps0)


def _prep(n, m, eps0, tau):
    s_lo, s_hi, out = s_range(m, eps0, SUB, tau)
    s = np.arange(s_lo, s_hi + 1)
    al, be, _ = _weights(n, m, eps0)
    one = np.ones(s.shape)
    ps = binom.pmf(s - 1, m - 1, clone_probability(eps0))
    return s, ps, al * one, be * one, 0.0 * one, out, boost_rtol(m)


def subsampled_delta(n: int, m: int, eps0: float, eps: float, tau: float = 1e-30) -> Bracket:
    """Certified Bracket for the single-round delta(eps) of the subsampled shuffler (both
    directions).

    Source: Koskela et al. 2022, Sec. 3.4 (subsampled rounds); this module's pair.
    """
    n, m, eps0 = _check(n, m, eps0)
    eps = v.real("eps", eps, lo=0.0)
    return Bracket(*bracket_at(_prep(n, m, eps0, v.real("tau", tau, 1e-300, 1e-3)), eps))


def subsampled_pld(n: int, m: int, eps0: float, tau: float = 1e-18) -> tuple[PLD, dict]:
    """PLD of the subsampled pair (both directions equal): count-space atoms of the kept range,
    the loss-0 atom of L, and the dropped mass (<= 2 tau + a tails) as one atom at eps0 (see
    clone_pld 'top').  Returns (PLD, info).

    Source: Koskela et al. 2022, Sec. 3.4 (subsampled rounds); this module's pair.
    """
    n, m, eps0 = _check(n, m, eps0)
    s, ps, al, be, ga, out, _ = _prep(n, m, eps0, tau)
    lo, _ = tail_range(np.maximum(s - 1, 0), 0.5, 1e-19)
    _, hi = tail_range(s, 0.5, 1e-19)
    lo, hi = np.maximum(lo - 1, 0), np.minimum(hi + 1, s)
    atoms = float(np.sum(hi - lo + 1))
    budget.check_bytes(atoms * _BYTES_PER_ATOM, f"the subsampled pair's {atoms:.3g} atoms",
                       "take a smaller --subset")
    ss = np.repeat(s, hi - lo + 1)
    aa = np.concatenate([np.arange(x, y + 1) for x, y in zip(lo, hi)])
    idx = np.repeat(np.arange(s.size), hi - lo + 1)
    nn = ps[idx] * binom.pmf(aa, ss, 0.5)
    P = nn * (2 * al[idx] * aa + 2 * be[idx] * (ss - aa)) / ss
    keep = P > 0
    losses = loss(ss[keep], aa[keep], al[idx][keep], be[idx][keep], 0.0)
    probs = P[keep]
    w0 = _weights(n, m, eps0)[2]
    t_lo, _ = conditional_tails(s, lo, al, be, ga)
    t_hi, _ = conditional_tails(s, hi + 1, al, be, ga)
    dropped = out + math.fsum(ps * ((al + be) - t_lo + t_hi))
    if dropped > 1e-17:
        raise ValueError(f"dropped mass {dropped:.3g} exceeds 1e-17; lower tau.")
    losses = np.concatenate([losses, [0.0, eps0]])
    probs = np.concatenate([probs, [w0, dropped]])
    return pld_from_losses(losses, probs, 0.0), {"atoms": int(probs.size), "dropped": dropped}


def subsampled_epsilon(n: int, m: int, eps0: float, delta: ArrayLike, compositions: int = 1,
                       accuracy: float = 2e-3) -> list[Bracket]:
    """Certified Brackets for eps(delta) of `compositions` rounds (Koskela et al. 2022, Cor. 3 with
    this pair), one per delta: the model of :func:`subsampled_model` answered by
    ``shuffle_lib.core.evaluate.answer``, the command line's path (``python -m shuffle_lib epsilon
    ldp-shuffle-subsampled --subset m --accuracy ACCURACY``), each bracket with ``accuracy_met``
    and ``limit`` set; a bracket that misses the accuracy contract by no more than the grid
    explains is evaluated again on a finer grid.

    Source: Koskela et al. 2022, Sec. 3.4 (subsampled rounds), Cor. 3; this module's pair.
    """
    return _answer("epsilon", n, m, eps0, delta, compositions, accuracy)


def subsampled_delta_bracket(n: int, m: int, eps0: float, eps: ArrayLike, compositions: int = 1,
                             accuracy: float = DEFAULT_ACCURACY) -> list[Bracket]:
    """Certified Brackets for delta(eps) of `compositions` rounds, one per eps: the command line's
    path as :func:`subsampled_epsilon` (``python -m shuffle_lib delta ldp-shuffle-subsampled``).

    Source: Koskela et al. 2022, Sec. 3.4 (subsampled rounds), Cor. 3; this module's pair.
    """
    return _answer("delta", n, m, eps0, eps, compositions, accuracy)


def _answer(verb: Literal["delta", "epsilon"], n: int, m: int, eps0: float, targets: ArrayLike,
            compositions: int, accuracy: float) -> list[Bracket]:
    """The declaration's path: its build (:func:`subsampled_model`, which does not depend on the
    accuracy: no rebuild) through ``evaluate.answer``."""
    compositions = v.integer("compositions", compositions, lo=1, hi=MAX_COMPOSITIONS)
    accuracy = v.real("accuracy", accuracy, 0.0, 1.0, lo_open=True)
    return evaluate.answer([(subsampled_model(n, m, eps0), None)], verb, np.atleast_1d(targets),
                           compositions, accuracy)


def subsampled_model(n: int, m: int, eps0: float) -> Model:
    """The pair of :func:`subsampled_pld` (one PLD serves both directions).  Its top atom at eps0
    holds the truncated mass, a tail cut that no lower end may count (counted, n = 10, subset = 9,
    eps0 = 8, delta = 1e-30 would give an eps lower end of 7.99375 where the exact delta is 0:
    tests/test_adversarial_clones.py::
    test_subsampled_truncated_top_atom_is_not_counted_in_the_eps_lower_end), so it is declared as
    ``tail_cut``."""
    pl, info = subsampled_pld(n, m, eps0)
    return Model.of(PLDPair.of(pl, tail_cut=info["dropped"]), {"atoms": info["atoms"]})


register(
    Mechanism(
        name="ldp-shuffle-subsampled",
        summary="eps0-LDP shuffler on a random subset of --subset users per round (--n --eps0 "
                "--subset)",
        source="Koskela, Heikkilä & Honkela 2022 Sec. 3.4 (subsampled shuffler); the clones "
               "coupling extended to subsets, chapter 3",
        params=(
            N_PARAM,
            EPS0_PARAM,
            Param("subset", int, "users sampled per round, 1 <= subset <= n", lo=1, hi=10**9),
        ),
        build=lambda n, eps0, subset: subsampled_model(
            n, v.integer("subset", subset, lo=1, hi=n), eps0
        ),
        # n >= subset
        calibration_range=lambda name, fixed: (fixed["subset"], 10**9) if name == "n" else None,
        example={"n": 200, "eps0": 1.0, "subset": 50},
    )
)
