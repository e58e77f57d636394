"""Compositions of clones-pair shufflers: certified brackets through the Fourier accountant.

Non-adaptive rounds (Koskela et al. 2021, Thm 6) and adaptive ones (Koskela et al. 2022, Cor. 3: the
product of dominating pairs dominates the adaptive composition, Zhu et al. 2021 Thm 10) have the
same bound; heterogeneous rounds (n and eps0 varying, Koskela et al. 2022, Sec. 3) compose different
PLDs. Re-exported as ``clones.delta_bracket`` and ``clones.epsilon_bracket``; declares
``ldp-shuffle``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from shuffle_lib.core import evaluate, fourier
from shuffle_lib.core import validate as v
from shuffle_lib.core.constants import MAX_COMPOSITIONS
from shuffle_lib.core.fourier import DEFAULT_ACCURACY
from shuffle_lib.core.pld import PLD, pld_from_losses
from shuffle_lib.core.registry import Mechanism, Param, register
from shuffle_lib.core.types import ArrayLike, Bracket, DirectModel
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


def _bounding_plds(n, eps0, pair, k, accuracy):
    """(PLD for the upper side, PLD for the lower side, route) of one round.

    Exact atoms with the dropped mass (<= 1e-17) as a top atom if at most ``EXACT_MAX_ATOMS``
    (one PLD serves both sides, see :mod:`shuffle_lib.mechanisms.clones.pld`); else the exact atoms
    rounded up and down onto a grid of step accuracy / (4 k), binned in chunks (O(#atoms)); beyond
    4e8 atoms the grid built from binomial tails (O(#s x #bins)).
    """
    try:
        low, info = clone_pld(n, eps0, pair, 1e-18, "lower", EXACT_MAX_ATOMS)
        top = pld_from_losses(np.append(low.losses, clone_top_loss(*check_params(n, eps0, pair))),
                              np.append(low.probs, info["dropped"]), low.inf_mass)
        return top, low, "exact"
    except ValueError as err:
        if "max_atoms" not in str(err):
            raise
    h = accuracy / (4.0 * k)
    try:
        return (*clone_pld_binned(n, eps0, h, pair), "binned")
    except ValueError as err:
        if "max_atoms" not in str(err):
            raise
    return (
        clone_pld_grid(n, eps0, h, "upper", pair)[0],
        clone_pld_grid(n, eps0, h, "lower", pair)[0],
        "grid",
    )


def _composed(rounds, pair, accuracy):
    """rounds: [(n, eps0, count), ...] -> (upper components, lower components, routes).

    The lists are [(PLD, count), ...] for :func:`shuffle_lib.core.fourier.delta_bracket` /
    ``epsilon_bracket`` (tilted at the target, refined to the accuracy, capped by the grid-free
    bounds); on the exact route one PLD serves both ends (its top atom of truncated mass <= 1e-18
    is cut to +inf for the upper end and dropped for the lower one by the grid's first trim).
    """
    if not rounds:
        raise ValueError("rounds must hold at least one (n, eps0, count) triple.")
    total = sum(v.integer("count", c, lo=1, hi=MAX_COMPOSITIONS) for _, _, c in rounds)
    up, low, routes = [], [], []
    for n, eps0, c in rounds:
        u, lo, route = _bounding_plds(n, eps0, pair, total, accuracy)
        up.append((u, c))
        low.append((lo, c))
        routes.append(route)
    return up, low, routes


def _ends(fn, up, low, targets, accuracy, routes):
    """Brackets from the upper components, lower ends from the lower ones.

    Exact route: the upper PLD is the lower one plus the truncated mass (<= 1e-18) as a last atom
    at the largest loss, which the grid's first trim sends to +inf (upper) or drops (lower); one
    composition serves both ends, and the grid-free lower caps read the lower PLDs, so no lower
    end counts the truncated mass (tests/test_clone_pld.py::
    test_heterogeneous_rounds_never_count_the_truncated_tail_in_the_lower_end).  Binned routes
    compose both sides.
    """
    if all(r == "exact" for r in routes):
        return fn(up, up, targets, accuracy=accuracy, lower=(low, low))
    hi = fn(up, up, targets, accuracy=accuracy)
    lo = fn(low, low, targets, accuracy=accuracy)
    return [Bracket(min(a.lower, b.upper), b.upper) for a, b in zip(lo, hi)]


def clone_model(
    n: int,
    eps0: float,
    compositions: int = 1,
    pair: str = "fmt21",
    accuracy: float = DEFAULT_ACCURACY,
    rounds: Sequence[tuple[int, float, int]] | None = None,
) -> DirectModel:
    """The certified method for ``compositions`` rounds of an eps0-LDP shuffler (Koskela et al.
    2021, Thm 6, Koskela et al. 2022, Cor. 3: adaptive rounds too).

    One round: :func:`delta_bracket_single` / :func:`epsilon_bracket_single` (exact to ~1e-12, any
    n). Several: the Fourier accountant (:func:`shuffle_lib.core.fourier.delta_bracket`) on the PLDs
    of
    :func:`_bounding_plds` (both directions share one PLD).  ``rounds=[(n, eps0, count), ...]``
    gives a heterogeneous composition.
    """
    accuracy = v.real("accuracy", accuracy, 0.0, 1.0, lo_open=True)   # read by the single round too
    if rounds is None:
        k = v.integer("compositions", compositions, lo=1, hi=MAX_COMPOSITIONS)
        n, eps0, _ = check_params(n, eps0, pair)
        rounds = [(n, eps0, k)]
    elif isinstance(rounds, (str, bytes)) or not isinstance(rounds, Sequence) or not rounds:
        raise ValueError(
            f"rounds must be a non-empty list of (n, eps0, count), got rounds={rounds!r}."
        )
    else:
        for r in rounds:
            if isinstance(r, (str, bytes)) or not isinstance(r, Sequence) or len(r) != 3:
                raise ValueError(f"rounds must hold (n, eps0, count) triples, got {r!r} in rounds.")
            try:                         # the error in the caller's terms: an entry of rounds
                check_params(r[0], r[1], pair)
                v.integer("count", r[2], lo=1, hi=MAX_COMPOSITIONS)
            except ValueError as err:
                raise ValueError(f"rounds: {err} (in the triple {r!r})") from None
    cap = _eps_cap(rounds, pair)
    if len(rounds) == 1 and rounds[0][2] == 1:
        n1, e1 = rounds[0][0], rounds[0][1]
        return DirectModel(lambda eps: [delta_bracket_single(n1, e1, e, pair) for e in eps],
                           lambda delta: _capped(
                               [epsilon_bracket_single(n1, e1, d, pair) for d in delta], cap),
                           info={"single_round": True})
    up, low, routes = _composed(rounds, pair, accuracy)
    info = {"route": routes[0] if len(set(routes)) == 1 else routes}
    if any(r != "exact" for r in routes):
        info["grid"] = True
    return DirectModel(
        lambda eps: _ends(fourier.delta_bracket, up, low, list(eps), accuracy, routes),
        lambda delta: _capped(
            _ends(fourier.epsilon_bracket, up, low, list(delta), accuracy, routes), cap
        ),
        info=info,
    )


def _eps_cap(rounds, pair):
    """sum of count x eps0 over the rounds for the full pairs (fmt21, stronger), whose every loss is
    at most eps0 (Feldman et al. 2021): the composed loss is at most the sum, so delta(sum) = 0 and
    eps(delta) <= sum for every delta > 0.  inf for koskela (a loss of +inf).  Guarded by
    tests/test_extremes.py (``epsilon ldp-shuffle --n 1e9 --eps0 30 --delta 1e-300`` is finite)."""
    if not (isinstance(pair, str) and pair in PAIRS and PAIRS[pair].full):
        return float("inf")
    return float(sum(c * e for _, e, c in rounds))


def _capped(brs, cap):
    """Each eps bracket with both ends at most ``cap`` (a certified upper bound on eps)."""
    return [Bracket(min(b.lower, cap), min(b.upper, cap)) for b in brs]


def delta_bracket(n: int, eps0: float, eps: ArrayLike, compositions: int = 1, pair: str = "fmt21",
                  accuracy: float = DEFAULT_ACCURACY,
                  rounds: Sequence[tuple[int, float, int]] | None = None) -> list[Bracket]:
    """Certified Brackets for delta(eps) of `compositions` rounds (adaptive: Koskela et al. 2022,
    Cor. 3);
    :func:`clone_model` through :func:`shuffle_lib.core.evaluate.delta_brackets`."""
    eps = np.atleast_1d(eps)
    v.reals("eps", eps, lo=0.0)
    return evaluate.delta_brackets(clone_model(n, eps0, compositions, pair, accuracy, rounds), eps)


def epsilon_bracket(
    n: int,
    eps0: float,
    delta: ArrayLike,
    compositions: int = 1,
    pair: str = "fmt21",
    accuracy: float = DEFAULT_ACCURACY,
    rounds: Sequence[tuple[int, float, int]] | None = None,
) -> list[Bracket]:
    """Certified Brackets for eps(delta) of `compositions` rounds; see :func:`delta_bracket`."""
    delta = np.atleast_1d(delta)
    v.reals("delta", delta, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    return evaluate.epsilon_brackets(
        clone_model(n, eps0, compositions, pair, accuracy, rounds), delta
    )


def _rdp(params: dict, orders: Sequence[float]) -> list[Bracket]:
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
    try:
        low, info = clone_pld(n, eps0, pair, 1e-18, "lower", EXACT_MAX_ATOMS)
        return low.with_mass_at_infinity(info["dropped"]), low
    except ValueError as err:
        if "max_atoms" not in str(err):
            raise
    up, low, _ = _bounding_plds(n, eps0, pair, k, accuracy)
    return up, low
