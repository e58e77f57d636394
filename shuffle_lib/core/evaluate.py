"""Brackets from a model: the one code path from a mechanism's build to certified numbers.

The command line, the accountant and each mechanism's own ``delta_bracket`` /
``epsilon_bracket`` answer through ``answer`` (the brackets below, an eps bracket refined where it
misses the accuracy contract, then annotated with ``accuracy_met`` and ``limit``) on the
:class:`~shuffle_lib.core.types.Model` the mechanism's build returns, so they cannot disagree;
calibration reads :func:`delta_brackets` of the same model (a delta query, which ``answer`` only
annotates).

Each component of the model is evaluated once, even when it serves both ends:

* a :class:`~shuffle_lib.core.types.PLDPair`: the Fourier accountant
  (:func:`shuffle_lib.core.fourier.delta_bracket` / ``epsilon_bracket``) on its parts composed
  ``compositions`` times; a tail cut of ``tail_cut`` per round is taken off its lower end (delta)
  or its lower end is read at delta + K tail_cut (eps); a pair that truncates its PLDs and can
  build them deeper (``deepen``) is built again for targets below the 1e-10 floor where its
  truncated mass could explain the bracket's width (:func:`_deepened`);
* a :class:`~shuffle_lib.core.types.Method`: the mechanism's own certified method, built for its
  ``rounds``.

The upper end is the max over the upper components (a worst case over candidate pairs), the lower
end the max over the lower components, at most the upper end; an eps bracket is then clamped to
the model's ``eps_cap``.  :func:`rdp_brackets` is the generic Renyi route (the divergence of the
model's pairs) for mechanisms that declare no Renyi method of their own.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np

from shuffle_lib.core import accuracy as A
from shuffle_lib.core import fourier, two_atom
from shuffle_lib.core import validate as v
from shuffle_lib.core.constants import MAX_COMPOSITIONS
from shuffle_lib.core.pld import PLD
from shuffle_lib.core.renyi import renyi_pld, renyi_pld_bracket
from shuffle_lib.core.types import ArrayLike, Bracket, Component, Method, Model, Parts, PLDPair

Verb = Literal["delta", "epsilon"]


def _times(parts: Parts, k: int) -> list[tuple[PLD, int]]:
    return [(pld, c * k) for pld, c in parts]


def _shifted(pair: PLDPair, k: int, targets: list[float]) -> list[float]:
    """The eps route's second reading of a cut pair: each delta + K tail_cut (below 1), or none
    when the cut is below the targets' rounding."""
    cut = k * pair.tail_cut
    if cut == 0.0 or all(d + cut == d for d in targets):
        return []
    return [d + cut for d in targets]


def _pair(pair: PLDPair, verb: Verb, k: int, targets: list[float], kw: dict
          ) -> tuple[list[Bracket], list[Bracket]]:
    """A pair's brackets, and (eps route, cut pair) their lower ends read at delta + K tail_cut."""
    caps = None if pair.caps is None else (_times(pair.caps[0], k), _times(pair.caps[1], k))
    pq, qp = _times(pair.pq, k), _times(pair.qp, k)
    if verb == "delta":
        out = fourier.delta_bracket(pq, qp, targets, lower=caps, **kw)
        # an upper end of 0 only where no outcome of positive mass has a composed loss above eps:
        # below the double range (an atom of mass 1e-40, K = 1000) the grid can read 0
        return [Bracket(b.lower, max(two_atom.positive_floor(b.upper, pq, e),
                                     two_atom.positive_floor(b.upper, qp, e)))
                for b, e in zip(out, targets)], []
    more = _shifted(pair, k, targets)
    ok = [d for d in more if d < 1.0]
    both = fourier.epsilon_bracket(pq, qp, targets + ok, lower=caps, **kw)
    it = iter(both[len(targets):])
    return both[:len(targets)], [next(it) if d < 1.0 else Bracket(0.0, 0.0) for d in more]


def _component(comp: Component, verb: Verb, k: int, targets: list[float], kw: dict):
    if isinstance(comp, Method):
        if comp.rounds != k:
            raise ValueError(f"compositions must be {comp.rounds} for this model (its method was "
                             f"built for {comp.rounds} rounds), got compositions={k}.")
        return (comp.delta if verb == "delta" else comp.epsilon)(targets), []
    got = _pair(comp, verb, k, targets, kw)
    return _deepened(comp, verb, k, targets, got[0], kw), got[1]


DEEPEST = 1e-250
"""The smallest truncation a pair is asked to deepen to (:func:`_deepened`)."""
TRUNCATION_SHARE = 1e-3
"""A deeper pair's K-fold truncated mass is at most this share of the value it is asked for."""


def _deepened(pair: PLDPair, verb: Verb, k: int, targets: list[float], br: list[Bracket],
              kw: dict) -> list[Bracket]:
    """``br`` narrowed, where a target below :data:`~shuffle_lib.core.accuracy.DELTA_FLOOR` misses
    its accuracy while the pair's truncated tails could explain the width, by the pair built again
    deeper (``pair.deepen(tau)``), up to twice.

    A pair that truncates each round's PLD at mass ``truncated`` (as a finite top atom for the upper
    end, left out of its dominated caps for the lower) is within K ``truncated`` of the exact pair
    in delta at every eps, K the rounds (a K-tuple of outcomes meets a truncated atom with
    probability at most K ``truncated``, union bound); below the floor of 1e-10 that can be the
    whole bracket (clones, n = 1e4, eps0 = 4, K = 4: delta(3) = 1.31e-24 against a truncated mass
    of 9.1e-21 a round).  The deeper pair is truncated at tau = ``TRUNCATION_SHARE`` x (the delta
    asked for, or the bracket's lower end, at least 1e-6 of its upper end) / K, at least
    :data:`DEEPEST`; both brackets are certified, so their intersection is.
    """
    rounds = k * sum(c for _, c in pair.pq)
    rtol = kw.get("rtol") or A.delta_rtol(rounds)
    acc = kw.get("accuracy", fourier.DEFAULT_ACCURACY)
    out = list(br)
    for _ in range(2):
        if pair.deepen is None:
            break
        need, want = [], []
        for i, (t, b) in enumerate(zip(targets, out)):
            size = t if verb == "epsilon" else max(b.lower, 1e-6 * b.upper)
            tiny = (t if verb == "epsilon" else b.upper) < A.DELTA_FLOOR
            if tiny and not A.met(verb, b, acc, k, rtol) and rounds * pair.truncated > \
                    TRUNCATION_SHARE * size:
                need.append(i)
                want.append(TRUNCATION_SHARE * size / rounds)
        tau = max(min(want, default=0.0), DEEPEST)
        if not need or tau >= pair.truncated:
            break
        deeper = pair.deepen(tau)
        if deeper is None:
            break
        sub, _ = _pair(deeper, verb, k, [targets[i] for i in need], kw)
        for i, b in zip(need, sub):
            lo, hi = max(out[i].lower, b.lower), min(out[i].upper, b.upper)
            out[i] = Bracket(min(lo, hi), hi)
        pair = deeper
    return out


def brackets(
    model: Model, verb: Verb, targets: ArrayLike, compositions: int = 1, **kw
) -> list[Bracket]:
    """Certified brackets of ``compositions`` rounds, one per target: delta at eps
    (``verb="delta"``) or eps at delta (``"epsilon"``).

    Keywords (``accuracy``, ``rtol``, ...) go to :func:`shuffle_lib.core.fourier.delta_bracket` /
    ``epsilon_bracket`` for the model's pairs.
    """
    v.instance("model", model, Model)
    v.choice("verb", verb, ("delta", "epsilon"))
    if verb == "delta":
        t = [float(x) for x in v.reals("eps", targets, lo=0.0)]
    else:
        t = [float(x) for x in v.reals("delta", targets, lo=0.0, hi=1.0, lo_open=True,
                                       hi_open=True)]
    k = v.integer("compositions", compositions, lo=1, hi=MAX_COMPOSITIONS)
    done: dict[int, tuple[list[Bracket], list[Bracket]]] = {}
    # one dominating and one dominated pair: the dominated one's grid is tilted where the
    # dominating one's steering found eps (fourier.shared_steering; any tilt certifies)
    share = verb == "epsilon" and len(model.upper) == len(model.lower) == 1 and all(
        isinstance(c, PLDPair) for c in model.upper + model.lower)
    with fourier.shared_steering() if share else contextlib.nullcontext():
        for comp in model.upper + model.lower:
            if id(comp) not in done:
                done[id(comp)] = _component(comp, verb, k, t, kw)
    upper = [max(done[id(c)][0][i].upper for c in model.upper) for i in range(len(t))]
    if verb == "epsilon":
        upper = [min(u, model.eps_cap) for u in upper]
    out = []
    for i, u in enumerate(upper):
        low = 0.0
        for c in model.lower:
            br, shifted = done[id(c)]
            if verb == "delta":
                cut = k * c.tail_cut if isinstance(c, PLDPair) else 0.0
                low = max(low, min(br[i].lower, u) - cut)
            else:       # a cut pair's lower end is also read at delta + K tail_cut
                ends = [br[i].lower] + ([shifted[i].lower] if shifted else [])
                low = max(low, min(min(ends), u))
        out.append(Bracket(max(low, 0.0), u))
    if verb == "epsilon":
        return _fewer_rounds_lower(model, t, k, out, kw)
    return out


FEWER_ROUNDS_FROM = 10 ** 5
"""From this many rounds on, a lower eps end of 0 is replaced by that of K // 10 rounds."""


def _fewer_rounds_lower(model: Model, delta: list[float], k: int, br: list[Bracket],
                        kw: dict) -> list[Bracket]:
    """Where K rounds gave a lower eps end of 0 (the grid's round-off at K = 1e7), the lower end
    of K // 10 rounds, recursively: dropping rounds is post-processing, so delta_m(eps) <=
    delta_K(eps) for m <= K identical rounds and eps_K(delta) >= eps_m(delta) (Dwork & Roth 2014,
    Prop. 2.1).  Only for models whose lower components are PLD pairs (a method is built for its
    own number of rounds)."""
    need = [i for i, b in enumerate(br) if b.lower == 0.0 and b.upper > 0.0]
    if k < FEWER_ROUNDS_FROM or not need or not all(isinstance(c, PLDPair) for c in model.lower):
        return br
    sub = brackets(model, "epsilon", [delta[i] for i in need], k // 10, **kw)
    out = list(br)
    for i, b in zip(need, sub):
        out[i] = Bracket(min(b.lower, br[i].upper), br[i].upper)
    return out


REFINEMENTS = 2
"""The most times :func:`refined_epsilon` evaluates a target again."""
STEP_MARGIN = 0.8
""":func:`refined_epsilon` asks for this share of the accuracy that would just meet the demand."""


def refined_epsilon(model: Model, delta: ArrayLike, compositions: int, accuracy: float,
                    first: Sequence[Bracket],
                    rebuild: Callable[[float], Model] | None = None) -> list[Bracket]:
    """``first`` (the eps brackets of ``model`` at ``delta``, ``compositions`` rounds, at
    ``accuracy``) narrowed where they miss the contract
    (:func:`shuffle_lib.core.accuracy.eps_demand`) by no more than the grid explains.

    Such targets are evaluated again at the accuracy the demand implies: the grid's half-width
    is taken to scale with its accuracy, so the accuracy is scaled by the least ratio of the
    demand (:func:`shuffle_lib.core.accuracy.finer_accuracy`) to the half-width reached, times
    :data:`STEP_MARGIN`; then once more, the same way, for the targets still missing whose bracket
    that halved (a grid-bound width; one that did not halve is held by the mechanism's own bounds,
    which a finer grid does not close).  ``rebuild(accuracy)`` builds the model again at the
    finer accuracy, for a model whose PLDs are placed on the accuracy's grid (None: ``model``
    serves every accuracy).  A model without PLD pairs (a method only) is returned as it is.
    Each bracket is the intersection of certified brackets, so it is certified.  A finer build or
    grid that the limits refuse (ValueError) is noted as the ``"memory"`` limit, the brackets so
    far kept.
    """
    if not any(isinstance(c, PLDPair) for c in model.upper + model.lower):
        return list(first)
    targets = [float(d) for d in np.atleast_1d(np.asarray(delta, dtype=float))]
    out, before, acc = list(first), list(first), accuracy
    for step in range(REFINEMENTS):
        need = [i for i, b in enumerate(out) if A.finer_accuracy(b, accuracy) is not None
                and (step == 0 or _halved(b, before[i]))]
        if not need:
            break
        # a grid-bound half-width scales with the accuracy: ask for the demand's share of it
        acc *= STEP_MARGIN * min((A.finer_accuracy(out[i], accuracy) or accuracy)
                                 / (0.5 * (out[i].upper - out[i].lower)) for i in need)
        try:
            at = model if rebuild is None else rebuild(acc)
            sub = epsilon_brackets(at, [targets[i] for i in need], compositions, accuracy=acc)
        except ValueError:
            A.note("epsilon", [targets[i] for i in need], "memory")
            break
        before = list(out)
        for i, b in zip(need, sub):
            lo, hi = max(out[i].lower, b.lower), min(out[i].upper, b.upper)
            out[i] = Bracket(min(lo, hi), hi)
    return out


def _halved(now: Bracket, before: Bracket) -> bool:
    """True when a refinement at least halved a bracket's width."""
    return now.upper - now.lower <= 0.5 * (before.upper - before.lower)


Rebuild = Callable[[float], Model] | None
"""Builds a model again at a finer accuracy (None: the model serves every accuracy)."""


def answer(candidates: Sequence[tuple[Model, Rebuild]], verb: Verb, targets: ArrayLike,
           compositions: int = 1, accuracy: float = fourier.DEFAULT_ACCURACY,
           rounds: int | None = None) -> list[Bracket]:
    """The brackets a query answers under the accuracy contract, one per target: for each
    candidate (model, rebuild) its :func:`brackets` of ``compositions`` rounds at ``accuracy``, an
    eps bracket refined where it misses the contract (:func:`refined_epsilon`, the model built
    again by ``rebuild``); the max over the candidates (a worst case over models, e.g. the
    accountant's orientations), annotated with ``accuracy_met`` and ``limit``
    (:func:`shuffle_lib.core.accuracy.annotate`, delta brackets at the ``rtol`` of ``rounds``,
    default ``compositions``, rounds).  The one path from models to answers: the command line,
    ``mechanism_brackets``, the mechanisms' own functions and the accountant take it.
    """
    goals = [float(x) for x in v.reals("eps" if verb == "delta" else "delta", targets)]
    per: list[list[Bracket]] = []
    with A.collect() as notes:
        for model, rebuild in candidates:
            got = brackets(model, verb, goals, compositions, accuracy=accuracy)
            if verb == "epsilon":
                got = refined_epsilon(model, goals, compositions, accuracy, got, rebuild)
            per.append(got)
    out = [Bracket(max(b[i].lower for b in per), max(b[i].upper for b in per))
           for i in range(len(goals))]
    return A.annotate(verb, goals, out, accuracy, compositions if rounds is None else rounds,
                      notes)


def delta_brackets(model: Model, eps: ArrayLike, compositions: int = 1, **kw) -> list[Bracket]:
    """Certified brackets for the tight delta(eps) of ``compositions`` rounds, one per eps
    (:func:`brackets`)."""
    return brackets(model, "delta", eps, compositions, **kw)


def epsilon_brackets(model: Model, delta: ArrayLike, compositions: int = 1, **kw) -> list[Bracket]:
    """Certified brackets for the tight eps(delta) of ``compositions`` rounds, one per delta
    (:func:`brackets`); a cut pair's lower end is read at delta + K tail_cut, where the cut PLDs'
    delta is no larger than the exact one's plus K tail_cut (0 when that reaches 1)."""
    return brackets(model, "epsilon", delta, compositions, **kw)


def rdp_brackets(model: Model, orders: ArrayLike) -> list[Bracket]:
    """Certified brackets for max(D_a(P||Q), D_a(Q||P)) of one round, one per order a: the max
    over the upper pairs of their divergence's upper end, over the lower pairs of its lower end.

    Exact for exact PLDs; +inf when a PLD carries mass at +inf, unless the pair reports
    ``max_loss`` (then that mass is a tail cut and bounded, :func:`renyi_pld_bracket`).
    """
    v.instance("model", model, Model)
    ups = [c for c in model.upper if isinstance(c, PLDPair)]
    if len(ups) < len(model.upper):
        raise ValueError("this mechanism builds no PLD and declares no Renyi method.")
    lams = np.asarray(v.reals("orders", orders, lo=1.0, lo_open=True), dtype=float)
    hi = np.max([_divergence(c, lams, 0) for c in ups], axis=0)
    lows = [_divergence(c, lams, 1) for c in model.lower if isinstance(c, PLDPair)]
    lo = np.max(lows, axis=0) if lows else np.zeros_like(lams)
    return [Bracket(min(a, b), b) for a, b in zip(lo, hi)]


def _divergence(pair: PLDPair, lams: np.ndarray, end: int) -> np.ndarray:
    """Upper (``end`` 0) or lower (1) end of the pair's divergence, max over both directions; a
    part of count c adds c times its divergence (Renyi divergence adds up over rounds).  The upper
    end adds the rounding of each moment's pairwise sum, per round; the lower end takes it off."""
    def one(x: PLD) -> np.ndarray:
        if pair.max_loss is not None:
            return renyi_pld_bracket(x, lams, pair.max_loss)[1 - end]
        return renyi_pld(x, lams)

    d = np.maximum(np.sum([c * one(x) for x, c in pair.pq], axis=0),
                   np.sum([c * one(x) for x, c in pair.qp], axis=0))
    # rounding of the moment's pairwise sum and of its atoms (a few ulp each, lam-th powers),
    # charged to each end, per round: a divergence of 7e-7 (k-RR, eps0 = 1e-3, order 1.5) is a
    # moment of 1 + 3.5e-7, whose last digits the sum does not hold; an infinite end keeps none
    plds = [x for parts in (pair.pq, pair.qp) for x, _ in parts]
    rounds = max(sum(c for _, c in parts) for parts in (pair.pq, pair.qp))
    atoms = max(max(x.probs.size for x in plds), 1)
    rnd = 1e-13 * np.abs(np.where(np.isfinite(d), d, 0.0)) + rounds * (
        (math.log2(atoms) + 4) * 2.3e-16 + 16 * 2.3e-16 * np.minimum(lams, 1e3)) / (lams - 1)
    if end == 0:
        d = d + rnd + rounds * max(_mass_deficit(x) for x in plds) / (lams - 1)
    else:
        d = d - rnd
    return np.maximum(d, 0.0)


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
