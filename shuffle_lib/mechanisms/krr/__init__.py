"""Shuffled k-randomised response, strong and weak adversaries (seed 000 Sec. 4, seed 001 Sec. 4).

* :mod:`.base` -- the exact PLDs (A_s: 000 Def. 7, Thm 8; A_w: 000 Def. 9, Thm 10, App. A);
* :mod:`.large` -- certified coarse pairs beyond the exact PLDs' size limits;
* :mod:`.checks` -- brute-force checks of the seed's lemmas (exact enumeration, small n).

:func:`krr_model` is the one route from (adversary, n, gamma, k) to a certified pair; the
declarations ``krr-strong`` and ``krr-weak``, :func:`delta_bracket` and :func:`epsilon_bracket`
all go through it and :mod:`shuffle_lib.core.evaluate`.  Balle et al.'s closed-form bound lives in
:mod:`shuffle_lib.bounds.closed_forms` (re-exported here, where seed 000 compares with it).
"""

from __future__ import annotations

import numpy as np

from shuffle_lib.bounds.closed_forms import (advanced_composition, balle_epsilon,  # noqa: F401  (seed 000 Fig. 1)
                                             balle_epsilon_composed)
from shuffle_lib.bounds.closed_forms import balle_krr_delta as balle_delta  # noqa: F401
from shuffle_lib.core import evaluate
from shuffle_lib.core.registry import Mechanism, Param, register
from shuffle_lib.core.types import ArrayLike, Bracket, PairModel
from shuffle_lib.mechanisms.krr import large
from shuffle_lib.mechanisms.krr.base import (MAX_ATOMS, TAIL, Adversary, KrrPLD, adversary_pld,  # noqa: F401
                                             check_params, eps0_from_gamma, gamma_from_eps0,
                                             hockey_stick_pair, krr_pmfs, krr_probs, strong_pld, weak_loss,
                                             weak_pld)

MODEL_TAIL = 1e-60    # the brackets' tail cut: K * 1e-60 off the lower end stays invisible at delta ~ 1e-38
BIN_ABOVE = 10 ** 6   # PLDs with more atoms are rounded onto a grid before the FFT accountant
BIN_STEP = 1e-6


def krr_model(adversary: Adversary, n: int, gamma: float, k: int, tail: float = MODEL_TAIL) -> PairModel:
    """The certified pair of shuffled k-RR against ``adversary``.

    The exact PLD (000 Thm 8 / Thm 11) with its binomial tails (<= ``tail``) cut to +inf; binned onto
    a grid of step ``BIN_STEP`` above ``BIN_ABOVE`` atoms; beyond the exact PLDs' size limits the
    certified block pairs of :mod:`.large`.  The PLD does not depend on x_1..x_{n-1}, so it dominates
    every neighbouring pair and serves adaptive compositions; both directions have one PLD.
    """
    if adversary not in ("strong", "weak"):
        raise ValueError(f"adversary must be 'strong' or 'weak', got adversary={adversary!r}.")
    params = {"n": n, "gamma": gamma, "k": k}
    try:
        pl = adversary_pld(adversary, n, gamma, k, tail)
    except ValueError as err:
        if "too large" not in str(err):
            raise
        f = large.weak_pld_binned if adversary == "weak" else large.strong_pld_binned
        pl = f(*check_params(n, gamma, k))
        return PairModel(pl.upper, pl.upper, pl.lower, pl.lower, info=dict(params, binned=True))
    if pl.upper.losses.size <= BIN_ABOVE:
        return PairModel(pl.upper, pl.upper, tail_cut=pl.cut, info=dict(params, tail_cut=pl.cut))
    pl = large.bin_pair(pl, BIN_STEP)
    return PairModel(pl.upper, pl.upper, pl.lower, pl.lower, info=dict(params, binned=True))


def _rounds(compositions: int, kw: dict) -> int:
    return kw.pop("n_c", compositions)     # n_c: the seed's name, kept for old callers


def delta_bracket(adversary: Adversary, n: int, gamma: float, k: int, eps: ArrayLike,
                  compositions: int = 1, **kw) -> list[Bracket]:
    """Certified brackets for the tight delta(eps) of ``compositions`` rounds (000 Thm 8/11, 001 Thm 2/5).

    One per eps, through :func:`krr_model` and :func:`shuffle_lib.core.evaluate.delta_brackets`.
    Keywords (``accuracy``, ``rtol``, ...) go to :func:`shuffle_lib.core.fourier.delta_bracket`.
    """
    k_rounds = _rounds(compositions, kw)
    return evaluate.delta_brackets(krr_model(adversary, n, gamma, k), np.atleast_1d(eps), k_rounds, **kw)


def epsilon_bracket(adversary: Adversary, n: int, gamma: float, k: int, delta: ArrayLike,
                    compositions: int = 1, **kw) -> list[Bracket]:
    """Certified brackets for the tight eps(delta) of ``compositions`` rounds (see :func:`delta_bracket`).

    Source: seed 000 Thm 8/11, seed 001 Thm 2/5.
    """
    k_rounds = _rounds(compositions, kw)
    return evaluate.epsilon_brackets(krr_model(adversary, n, gamma, k), np.atleast_1d(delta), k_rounds, **kw)


def _declare(adversary: Adversary, source: str) -> Mechanism:
    return register(Mechanism(
        name=f"krr-{adversary}",
        summary=f"shuffled k-RR, {adversary} adversary A_{adversary[0]} (--n --gamma --k)",
        source=source,
        params=(Param("n", int, "number of users, the differing one included (>= 2)", lo=2, hi=10 ** 9,
                      more_private="up"),
                Param("gamma", float, "probability of a uniform report, in (0, 1]", lo=0.0, hi=1.0, lo_open=True,
                      more_private="up"),
                Param("k", int, "domain size, >= 2", lo=2, hi=10 ** 6)),
        build=lambda n, gamma, k: krr_model(adversary, n, gamma, k),
        example={"n": 200, "gamma": 0.5, "k": 4},
    ))


_declare("strong", "seed 000 Def. 7, Thm 8 (corrects eq. 4.1); seed 001 Thm 2")
_declare("weak", "seed 000 Def. 9, Thm 10-11, App. A; seed 001 Thm 5")
