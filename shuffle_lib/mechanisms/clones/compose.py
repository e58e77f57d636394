"""Compositions of clones-pair shufflers: certified brackets through the Fourier accountant.

Non-adaptive rounds (Koskela et al. 2021, Thm 6) and adaptive ones (Koskela et al. 2022, Cor. 3: the
product of dominating pairs dominates the adaptive composition, Zhu et al. 2021 Thm 10) have the
same bound; heterogeneous rounds (n and eps0 varying, Koskela et al. 2022, Sec. 3) compose different
PLDs. Re-exported as ``clones.delta_bracket`` and ``clones.epsilon_bracket``; declares
``ldp-shuffle``.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Literal

import numpy as np

from shuffle_lib.core import evaluate
from shuffle_lib.core import validate as v
from shuffle_lib.core.constants import MAX_COMPOSITIONS
from shuffle_lib.core.fourier import DEFAULT_ACCURACY
from shuffle_lib.core.pld import PLD, pld_from_losses
from shuffle_lib.core.registry import Mechanism, Param, register
from shuffle_lib.core.types import ArrayLike, Bracket, Method, Model, PLDPair
from shuffle_lib.mechanisms.clones.pairs import (
    EPS0_PARAM,
    N_PARAM,
    PAIRS,
    check_params,
    clone_top_loss,
    delta_bracket_single,
    epsilon_bracket_single,
)
from shuffle_lib.mechanisms.clones.pld import clone_pld, clone_pld_binned, clone_pld_grid
from shuffle_lib.mechanisms.clones.renyi import clone_rdp

# above this a round's PLD is binned onto a grid (upper and lower PLDs)
EXACT_MAX_ATOMS = 10_000_000
TRUNCATION = 1e-18
"""The binomial tail mass a round's exact PLDs leave out (clones.pld.clone_pld's tau)."""


@functools.lru_cache(maxsize=1)
def _exact_plds(n, eps0, pair, tau=TRUNCATION):
    """(PLD with the dropped mass as a top atom, dominated PLD, dropped mass) of one round from
    the exact atoms of :func:`clone_pld` truncated at ``tau``; ValueError naming max_atoms above
    ``EXACT_MAX_ATOMS`` atoms.  The last one is kept: they do not depend on the accuracy, and an
    eps query refined on a finer grid builds the model again at that accuracy."""
    low, info = clone_pld(n, eps0, pair, tau, "lower", EXACT_MAX_ATOMS)
    top = pld_from_losses(np.append(low.losses, clone_top_loss(*check_params(n, eps0, pair))),
                          np.append(low.probs, info["dropped"]), low.inf_mass)
    return top, low, info["dropped"]


def _round_plds(n, eps0, pair, k, accuracy):
    """(upper PLD, lower PLD, route, upper PLD for any composition, truncated mass in the top
    atom) of one round.

    Exact atoms (one PLD serves both sides, see :mod:`shuffle_lib.mechanisms.clones.pld`) if at
    most ``EXACT_MAX_ATOMS``: the upper PLD puts the dropped mass (<= 1e-17) as a top atom at the
    largest loss, which the Fourier accountant's grid trims (its grid-free caps read the lower
    PLD); the PLD for any composition puts it at +inf.  Else the exact atoms rounded up and down
    onto a grid of step accuracy / (4 k), binned in chunks (O(#atoms)); beyond 4e8 atoms the grid
    built from binomial tails (O(#s x #bins)).
    """
    try:
        top, low, dropped = _exact_plds(n, eps0, pair)
        return top, low, "exact", low.with_mass_at_infinity(dropped), dropped
    except ValueError as err:
        if "max_atoms" not in str(err):
            raise
    h = accuracy / (4.0 * k)
    try:
        up, low = clone_pld_binned(n, eps0, h, pair)
        return up, low, "binned", up, 0.0
    except ValueError as err:
        if "max_atoms" not in str(err):
            raise
    up = clone_pld_grid(n, eps0, h, "upper", pair)[0]
    return up, clone_pld_grid(n, eps0, h, "lower", pair)[0], "grid", up, 0.0


def _checked_rounds(rounds, compositions, n, eps0, pair):
    """rounds as [(n, eps0, count), ...], each checked (the error in the caller's terms)."""
    if rounds is None:
        k = v.integer("compositions", compositions, lo=1, hi=MAX_COMPOSITIONS)
        n, eps0, _ = check_params(n, eps0, pair)
        return [(n, eps0, k)]
    if isinstance(rounds, (str, bytes)) or not isinstance(rounds, Sequence) or not rounds:
        raise ValueError(
            f"rounds must be a non-empty list of (n, eps0, count), got rounds={rounds!r}."
        )
    for r in rounds:
        if isinstance(r, (str, bytes)) or not isinstance(r, Sequence) or len(r) != 3:
            raise ValueError(f"rounds must hold (n, eps0, count) triples, got {r!r} in rounds.")
        try:                         # the error in the caller's terms: an entry of rounds
            check_params(r[0], r[1], pair)
            v.integer("count", r[2], lo=1, hi=MAX_COMPOSITIONS)
        except ValueError as err:
            raise ValueError(f"rounds: {err} (in the triple {r!r})") from None
    return list(rounds)


def clone_model(
    n: int,
    eps0: float,
    compositions: int = 1,
    pair: str = "fmt21",
    accuracy: float = DEFAULT_ACCURACY,
    rounds: Sequence[tuple[int, float, int]] | None = None,
) -> Model:
    """The model of ``compositions`` rounds of an eps0-LDP shuffler (Koskela et al. 2021, Thm 6,
    Koskela et al. 2022, Cor. 3: adaptive rounds too), evaluated at ``compositions`` (1 when
    ``rounds=[(n, eps0, count), ...]`` gives a heterogeneous composition).

    One round: :func:`delta_bracket_single` / :func:`epsilon_bracket_single` (exact to ~1e-12, any
    n), a method.  Several: one round's PLDs of :func:`_round_plds` (both directions share one
    PLD), composed by the Fourier accountant; on the exact route one composition serves both ends
    (the grid-free lower caps read the lower PLDs, so no lower end counts the truncated mass:
    tests/test_clone_pld.py::
    test_heterogeneous_rounds_never_count_the_truncated_tail_in_the_lower_end), on the binned
    routes the upper and lower PLDs are composed apart.  The full pairs cap eps at the sum of
    count x eps0 (:func:`_eps_cap`); one round composes with other events through
    :func:`clone_plds`.
    """
    accuracy = v.real("accuracy", accuracy, 0.0, 1.0, lo_open=True)   # read by the single round too
    hetero = rounds is not None
    rounds = _checked_rounds(rounds, compositions, n, eps0, pair)
    cap = _eps_cap(rounds, pair)
    n1, e1 = rounds[0][0], rounds[0][1]
    # a homogeneous model's one round, for composing with other events
    homogeneous = len(rounds) == 1 and not (hetero and rounds[0][2] > 1)
    others = (lambda k, acc: _pairs(clone_plds(n1, e1, pair, k, acc))) if homogeneous else None
    if len(rounds) == 1 and rounds[0][2] == 1:
        single = Method(lambda eps: [delta_bracket_single(n1, e1, e, pair) for e in eps],
                        lambda delta: [epsilon_bracket_single(n1, e1, d, pair) for d in delta])
        return Model.of(single, {"single_round": True}, eps_cap=cap, round_pairs=others)
    total = sum(c for _, _, c in rounds)
    per = 1 if hetero else total          # the counts the evaluator multiplies by compositions
    built = [(_round_plds(nn, e, pair, total, accuracy), c // per) for nn, e, c in rounds]
    up = tuple((b[0], c) for b, c in built)
    low = tuple((b[1], c) for b, c in built)
    routes = [b[2] for b, _ in built]
    info: dict = {"route": routes[0] if len(set(routes)) == 1 else routes}
    if any(r != "exact" for r in routes):
        info["grid"] = True
        return Model((PLDPair(up, up),), (PLDPair(low, low),), eps_cap=cap, round_pairs=others,
                     info=info)
    exact = PLDPair(up, up, caps=(low, low), truncated=max(b[4] for b, _ in built),
                    deepen=functools.partial(_exact_pair, rounds, pair, per))
    return Model.of(exact, info, eps_cap=cap, round_pairs=others)


def _exact_pair(rounds, pair, per, tau):
    """The rounds' exact PLDs truncated at ``tau`` as one pair (counts divided by ``per``, the
    rounds the evaluator multiplies by), the dominated PLDs as its caps and a deeper build on
    demand (:class:`~shuffle_lib.core.types.PLDPair`'s ``deepen``); None when a round exceeds
    ``EXACT_MAX_ATOMS`` atoms at ``tau``.

    Below the floor of the default truncation (1e-18 per round) the truncated tails decide delta:
    n = 1e4, eps0 = 4, K = 4 has delta(3) = 1.31e-24 while the top atoms of 9.1e-21 a round put
    the upper end at 2.3e-20 (tests/test_clone_pld.py).
    """
    try:
        built = [(_exact_plds(nn, e, pair, tau), c // per) for nn, e, c in rounds]
    except ValueError as err:
        if "max_atoms" not in str(err):
            raise
        return None
    up = tuple((b[0], c) for b, c in built)
    low = tuple((b[1], c) for b, c in built)
    return PLDPair(up, up, caps=(low, low), truncated=max(b[2] for b, _ in built),
                   deepen=functools.partial(_exact_pair, rounds, pair, per))


def _pairs(plds: tuple[PLD, PLD]) -> tuple[PLDPair, PLDPair]:
    return PLDPair.of(plds[0]), PLDPair.of(plds[1])


def _eps_cap(rounds, pair):
    """sum of count x eps0 over the rounds for the full pairs (fmt21, stronger), whose every loss is
    at most eps0 (Feldman et al. 2021): the composed loss is at most the sum, so delta(sum) = 0 and
    eps(delta) <= sum for every delta > 0.  inf for koskela (a loss of +inf).  Guarded by
    tests/test_extremes.py (``epsilon ldp-shuffle --n 1e9 --eps0 30 --delta 1e-300`` is finite)."""
    if not (isinstance(pair, str) and pair in PAIRS and PAIRS[pair].full):
        return float("inf")
    return float(sum(c * e for _, e, c in rounds))


def delta_bracket(n: int, eps0: float, eps: ArrayLike, compositions: int = 1, pair: str = "fmt21",
                  accuracy: float = DEFAULT_ACCURACY,
                  rounds: Sequence[tuple[int, float, int]] | None = None) -> list[Bracket]:
    """Certified Brackets for delta(eps) of `compositions` rounds (adaptive: Koskela et al. 2022,
    Cor. 3), or of the heterogeneous ``rounds``: :func:`clone_model` through
    ``shuffle_lib.core.evaluate.answer``, the command line's path (``accuracy_met`` set)."""
    return _answer("delta", n, eps0, eps, compositions, pair, accuracy, rounds)


def epsilon_bracket(n: int, eps0: float, delta: ArrayLike, compositions: int = 1,
                    pair: str = "fmt21", accuracy: float = DEFAULT_ACCURACY,
                    rounds: Sequence[tuple[int, float, int]] | None = None) -> list[Bracket]:
    """Certified Brackets for eps(delta) of `compositions` rounds; see :func:`delta_bracket` (an
    eps bracket that misses its accuracy within what the grid explains is refined on a finer
    build)."""
    return _answer("epsilon", n, eps0, delta, compositions, pair, accuracy, rounds)


def _answer(verb: Literal["delta", "epsilon"], n: int, eps0: float, targets: ArrayLike,
            compositions: int, pair: str, accuracy: float,
            rounds: Sequence[tuple[int, float, int]] | None) -> list[Bracket]:
    model = clone_model(n, eps0, compositions, pair, accuracy, rounds)
    # a heterogeneous model's parts hold their counts: evaluated at 1
    k = 1 if rounds is not None else compositions
    total = sum(c for *_, c in rounds) if rounds is not None else compositions
    return evaluate.answer(
        [(model, lambda a: clone_model(n, eps0, compositions, pair, a, rounds))], verb,
        np.atleast_1d(targets), k, accuracy, total)


def _rdp(params: dict, orders: ArrayLike) -> list[Bracket]:
    """The clones pair's own certified Renyi bracket (Chen et al. 2024, eq. 2 on the pair;
    ``koskela``: the generic route would need its +inf mass, so it is refused there as well)."""
    return clone_rdp(params["n"], params["eps0"], orders, pair=params["pair"])


register(
    Mechanism(
        name="ldp-shuffle",
        summary="general eps0-LDP randomiser, shuffled (clones pair; --n --eps0 [--pair])",
        source="Koskela, Heikkilä & Honkela 2021 Sec. 5 (eq. 5.1-5.2, Thm 6); 2022 eq. 3.1, "
               "Cor. 3; Feldman et al. 2021 Thm 3.2",
        params=(
            N_PARAM,
            EPS0_PARAM,
            Param(
                "pair",
                str,
                "dominating pair (default fmt21: valid for every eps0-LDP randomiser)",
                choices=tuple(sorted(PAIRS)),
                default="fmt21",
            ),
        ),
        build=lambda n, eps0, pair, compositions=1, accuracy=DEFAULT_ACCURACY: clone_model(
            n, eps0, compositions, pair, accuracy
        ),
        uses=("compositions", "accuracy"),
        rdp=_rdp,
        example={"n": 100, "eps0": 1.0},
    )
)


def clone_plds(n: int, eps0: float, pair: str = "fmt21", compositions: int = 1,
               accuracy: float = DEFAULT_ACCURACY) -> tuple[PLD, PLD]:
    """(dominating PLD, dominated PLD) of one round, for composing with other mechanisms.

    Both directions share each PLD (the clones pairs are symmetric).  Up to ``EXACT_MAX_ATOMS``
    atoms: the exact atoms of :func:`clone_pld` with the dropped mass (<= 1e-18 tails) at +inf
    (upper) or omitted (lower), so each side is certified in any composition, not only through the
    Fourier accountant's trimming; beyond that, the routes of :func:`clone_model` on a grid of step
    accuracy / (4 compositions), ``compositions`` being the total rounds of the composition.
    """
    k = v.integer("compositions", compositions, lo=1, hi=MAX_COMPOSITIONS)
    accuracy = v.real("accuracy", accuracy, 0.0, 1.0, lo_open=True)
    _, low, _, up, _ = _round_plds(n, eps0, pair, k, accuracy)
    return up, low
