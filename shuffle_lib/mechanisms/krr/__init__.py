"""Shuffled k-randomised response, strong and weak adversaries (Koskela et al. 2021, Sec. 4, Koskela
et al. 2022, Sec. 4).

* :mod:`.base` -- the exact PLDs (A_s: Koskela et al. 2021, Def. 7, Thm 8; A_w: Koskela et al. 2021,
  Def. 9, Thm 10, App. A);
* :mod:`.lattice` -- certified lattice pairs where the exact PLD is too large: the views grouped
  by loss, merged (lower) and split onto the lattice (upper), any n;
* ``shuffle_lib.mechanisms.krr.stream`` -- one round at any n: the exact delta(eps) streamed over
  slices, no PLD (A_w beyond ~5e5 users: bracketed on blocks of b, delta_b being monotone in b);
* :mod:`.checks` -- brute-force checks of the paper's lemmas (exact enumeration, small n).

:func:`krr_route` is the one route from (adversary, n, gamma, k, compositions) to a certified
model: for one round whose exact PLD would exceed ``STREAM_ABOVE`` atoms, the streamed method of
``shuffle_lib.mechanisms.krr.stream`` (a :class:`~shuffle_lib.core.types.Method`, composed with
other events through the pair of :func:`krr_model`); otherwise the pair of
:func:`krr_model`.  The declarations ``krr-strong`` and ``krr-weak``, :func:`delta_bracket` and
:func:`epsilon_bracket` all go through it and :mod:`shuffle_lib.core.evaluate`.  Balle et al.'s
closed-form bound lives in
:mod:`shuffle_lib.bounds.closed_forms` (re-exported here, where Koskela et al. 2021 compares with
it).
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import numpy as np

from shuffle_lib.bounds.closed_forms import (  # noqa: F401  (Koskela et al. 2021, Fig. 1)
    advanced_composition,
    balle_epsilon,
    balle_epsilon_composed,
)
from shuffle_lib.bounds.closed_forms import balle_krr_delta as balle_delta  # noqa: F401
from shuffle_lib.core import evaluate
from shuffle_lib.core import validate as v
from shuffle_lib.core.binomial import binom_window
from shuffle_lib.core.constants import MAX_COMPOSITIONS
from shuffle_lib.core.fourier import DEFAULT_ACCURACY
from shuffle_lib.core.registry import Mechanism, Param, register
from shuffle_lib.core.types import ArrayLike, Bracket, Method, Model, PLDPair
from shuffle_lib.mechanisms.krr import lattice, stream
from shuffle_lib.mechanisms.krr.base import (  # noqa: F401
    MAX_ATOMS,
    TAIL,
    Adversary,
    KrrPLD,
    adversary_pld,
    check_params,
    eps0_from_gamma,
    gamma_from_eps0,
    hockey_stick_pair,
    krr_pmfs,
    krr_probs,
    strong_pld,
    weak_loss,
    weak_pld,
)

# the brackets' tail cut: K * 1e-60 off the lower end stays invisible at delta ~ 1e-38
MODEL_TAIL = 1e-60
EXACT_ABOVE = 10 ** 6   # exact PLDs with more atoms give way to the pairs of .lattice
STREAM_ABOVE = 10 ** 6   # one round with an exact PLD larger than this is streamed (.stream)


def krr_model(
    adversary: Adversary, n: int, gamma: float, k: int, tail: float = MODEL_TAIL
) -> Model:
    """The certified pair of shuffled k-RR against ``adversary``.

    Where the exact PLD fits (``MAX_ATOMS`` candidates, ``EXACT_ABOVE`` atoms) the exact PLD
    (Koskela et al. 2021, Thm 8 / Thm 11) with its binomial tails (<= ``tail``) cut to +inf, one
    PLD serving both ends; an exact PLD of more atoms grouped onto a lattice of step 1e-4
    (``lattice.pair_from_atoms``); beyond the exact PLD's size, the lattice pair of
    :mod:`.lattice` (a dominating and a dominated PLD, second order in the lattice step).  The
    PLD does not depend on x_1..x_{n-1}, so it dominates every neighbouring pair and serves
    adaptive compositions; both directions have one PLD.
    """
    if adversary not in ("strong", "weak"):
        raise ValueError(f"adversary must be 'strong' or 'weak', got adversary={adversary!r}.")
    tail = v.real("tail", tail, 0.0, 1.0)
    n, gamma, k = check_params(n, gamma, k)
    params = {"n": n, "gamma": gamma, "k": k}
    try:
        pl = adversary_pld(adversary, n, gamma, k, tail)
    except ValueError as err:
        if "too large" not in str(err):
            raise
        pl = None
    if pl is not None and pl.upper.losses.size <= EXACT_ABOVE:
        return Model.of(PLDPair.of(pl.upper, tail_cut=pl.cut), dict(params, tail_cut=pl.cut))
    if pl is not None:
        pl = lattice.pair_from_atoms(pl)
    else:
        f = lattice.weak_pld_lattice if adversary == "weak" else lattice.strong_pld_lattice
        pl = f(n, gamma, k)
    return Model((PLDPair.of(pl.upper),), (PLDPair.of(pl.lower),), info=dict(params, binned=True))


def exact_atoms(adversary: Adversary, n: int, gamma: float, k: int, tail: float = TAIL) -> int:
    """The number of candidate atoms of the exact PLD (Koskela et al. 2021, Def. 7 / Def. 9), from
    its windows only.

    A_s: sum over the a-window of the c-window sizes; A_w: sum over the b-window of (u-window +
    1)^2.
    """
    adversary = v.choice("adversary", adversary, ("strong", "weak"))
    n, gamma, k = check_params(n, gamma, k)
    tail = v.real("tail", tail, 0.0, 1.0)
    N = n - 1
    if adversary == "strong":
        p = gamma / k
        a_lo, a_hi = binom_window(N, p, tail / 2)
        c_lo, c_hi = binom_window(N - np.arange(a_lo, a_hi + 1), p / (1.0 - p), tail / 2)
        return int(np.sum(c_hi - c_lo + 1))
    b_lo, b_hi = binom_window(N, gamma, tail / 3)
    lo, hi = binom_window(np.arange(b_lo, b_hi + 1), 1.0 / k, tail / 3)
    return int(np.sum((hi - lo + 2) ** 2))


def krr_route(adversary: Adversary, n: int, gamma: float, k: int, compositions: int = 1) -> Model:
    """The cheapest certified model for ``compositions`` rounds (Koskela et al. 2021, Thm 5 / Thm
    6).

    One round whose exact PLD has more than ``STREAM_ABOVE`` candidate atoms: the streamed exact
    delta(eps) of ``shuffle_lib.mechanisms.krr.stream`` (``info["route"] = "streamed"``, any n up
    to 1e9; A_w costs O(n) per eps).  Otherwise the pair of :func:`krr_model` (``"pld"``), which
    composes.
    """
    if adversary not in ("strong", "weak"):
        raise ValueError(f"adversary must be 'strong' or 'weak', got adversary={adversary!r}.")
    n, gamma, k = check_params(n, gamma, k)
    k_rounds = v.integer("compositions", compositions, lo=1, hi=MAX_COMPOSITIONS)
    if k_rounds == 1 and exact_atoms(adversary, n, gamma, k) > STREAM_ABOVE:
        method = Method(lambda eps: stream.delta_streamed(adversary, n, gamma, k, eps),
                        lambda delta: stream.epsilon_streamed(adversary, n, gamma, k, delta))
        return Model.of(
            method, {"n": n, "gamma": gamma, "k": k, "route": "streamed", "tail_cut": 0.0},
            round_pairs=lambda rounds, accuracy: krr_model(adversary, n, gamma, k)
            .pairs_for_composing(rounds, accuracy),
        )
    model = krr_model(adversary, n, gamma, k)
    return dataclasses.replace(model, info=dict(model.info, route="pld"))


def delta_bracket(adversary: Adversary, n: int, gamma: float, k: int, eps: ArrayLike,
                  compositions: int = 1, accuracy: float = DEFAULT_ACCURACY) -> list[Bracket]:
    """Certified brackets for the tight delta(eps) of ``compositions`` rounds (Koskela et al. 2021,
    Thm 8/11, Koskela et al. 2022, Thm 2/5), one per eps.

    The model of ``krr_route`` answered by ``shuffle_lib.core.evaluate.answer``, the command
    line's path (``python -m shuffle_lib delta krr-ADVERSARY``): the same brackets, each with
    ``accuracy_met`` and ``limit`` set.  ``accuracy`` is the query's accuracy
    (:mod:`shuffle_lib.core.accuracy`).
    """
    return _answer("delta", adversary, n, gamma, k, eps, compositions, accuracy)


def epsilon_bracket(adversary: Adversary, n: int, gamma: float, k: int, delta: ArrayLike,
                    compositions: int = 1, accuracy: float = DEFAULT_ACCURACY) -> list[Bracket]:
    """Certified brackets for the tight eps(delta) of ``compositions`` rounds (Koskela et al. 2021,
    Thm 8/11, Koskela et al. 2022, Thm 2/5), one per delta; see :func:`delta_bracket`.  A bracket
    that the first grid leaves wider than the accuracy contract is evaluated again on a finer
    grid (``shuffle_lib.core.evaluate.refined_epsilon``)."""
    return _answer("epsilon", adversary, n, gamma, k, delta, compositions, accuracy)


def _answer(verb: Literal["delta", "epsilon"], adversary: Adversary, n: int, gamma: float, k: int,
            targets: ArrayLike, compositions: int, accuracy: float) -> list[Bracket]:
    """The declaration's path: its build (:func:`krr_route`, which does not depend on the accuracy:
    no rebuild) through ``evaluate.answer``."""
    accuracy = v.real("accuracy", accuracy, 0.0, 1.0, lo_open=True)
    model = krr_route(adversary, n, gamma, k, compositions)
    return evaluate.answer([(model, None)], verb, np.atleast_1d(targets), compositions, accuracy)


def _declare(adversary: Adversary, source: str) -> Mechanism:
    return register(
        Mechanism(
            name=f"krr-{adversary}",
            summary=f"shuffled k-RR, {adversary} adversary A_{adversary[0]} "
                    "(--n --gamma|--eps0 --k)",
            source=source,
            params=(
                Param(
                    "n",
                    int,
                    "number of users, the differing one included (>= 2)",
                    lo=2,
                    hi=10**9,
                    more_private="up",
                ),
                Param(
                    "gamma",
                    float,
                    "probability of a uniform report, in (0, 1]",
                    lo=0.0,
                    hi=1.0,
                    lo_open=True,
                    more_private="up",
                ),
                Param("k", int, "domain size, >= 2", lo=2, hi=10**6),
                Param(
                    "eps0",
                    float,
                    "LDP parameter of k-RR, in (0, 30], instead of --gamma: "
                    "gamma = k / (e^eps0 + k - 1)",
                    lo=0.0,
                    hi=30.0,
                    lo_open=True,
                    more_private="down",
                    derives="gamma",
                    convert=lambda eps0, values: gamma_from_eps0(eps0, values["k"]),
                ),
            ),
            build=lambda n, gamma, k, compositions=1: krr_route(
                adversary, n, gamma, k, compositions
            ),
            uses=("compositions",),
            rdp=lambda params, orders: evaluate.rdp_brackets(
                krr_model(adversary, **params), orders
            ),
            example={"n": 200, "gamma": 0.5, "k": 4},
        )
    )


_declare("strong", "Koskela, Heikkilä & Honkela 2021 Def. 7, Thm 8 (corrects eq. 4.1); 2022 Thm 2")
_declare("weak", "Koskela, Heikkilä & Honkela 2021 Def. 9, Thm 10-11, App. A; 2022 Thm 5")
