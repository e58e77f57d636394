"""A ``dp_accounting`` privacy accountant that composes shuffle rounds with Google's mechanisms.

:class:`ShuffledEvent` is a ``dp_accounting`` ``DpEvent`` naming a declared mechanism of the
registry (``ShuffledEvent("rr", eps0=1.0)``, ``ShuffledEvent("ldp-shuffle", n=10_000, eps0=1.0)``).
:class:`ShuffleAccountant` implements ``dp_accounting.PrivacyAccountant`` (``supports``,
``compose(event, count)``, ``get_delta``, ``get_epsilon``; the interface of ``dp_accounting``
0.4-0.6, ``privacy_accountant.py``) and returns certified brackets:

* every round becomes a *dominating* PLD (the upper end) and a *dominated* one (the lower end),
  in both directions: a shuffle round from its mechanism's model
  (:meth:`shuffle_lib.core.types.Model.pairs_for_composing`),
  a ``dp_accounting`` event from ``dp_accounting``'s own builders with ``pessimistic_estimate=True``
  (losses rounded up, the truncated upper tail at +inf) and ``False`` (rounded down, truncated mass
  dropped), the privacy-buckets discretisation of Meiser & Mohammadi (2018) as used by
  ``dp_accounting.pld``;
* the events' parts are concatenated into one model (upper pair: the dominating parts, lower
  pair: the dominated ones, with the rounds' tail cuts added up) and evaluated by
  :mod:`shuffle_lib.core.evaluate` like any mechanism's: the certified Fourier accountant
  (Koskela, Heikkilä & Honkela 2021, 2022); the product of dominating pairs dominates the
  (adaptive) composition (Zhu, Dong and Wang 2022, Thm 10), and f(s) = (1 - e^{eps - s})_+ is
  non-decreasing, so a composition of stochastically smaller losses gives a lower bound.

``get_delta`` / ``get_epsilon`` return the upper end (what a ``dp_accounting`` user expects);
``get_delta_bracket`` / ``get_epsilon_bracket`` return the :class:`~shuffle_lib.core.types.Bracket`
with ``accuracy_met`` and ``limit``, through the command line's path
(``shuffle_lib.core.evaluate.answer``: an eps bracket that misses the accuracy contract is
refined on rounds built again at a finer accuracy).

Directions.  A mechanism's pair (P, Q) bounds the ordered neighbours one way round, (Q, P) the
other way.  Which way a neighbouring pair of datasets falls may differ between mechanisms, so for
events whose two directions differ (``histogram-krr``, ``bitflip``, ...) every relative orientation
is composed and the maximum taken (at most :data:`MAX_ASYMMETRIC` such events); symmetric ones
(``rr``, ``krr-*``, ``ldp-shuffle``, the Gaussian, ...) need no choice.  Under
``ADD_OR_REMOVE_ONE`` ``dp_accounting``'s ``remove``/``add`` PLDs have one meaning for every
event and are paired as they are.

Refused (``supports`` is False, ``compose`` raises ``UnsupportedEventError``): a shuffle round
whose model is not :attr:`~shuffle_lib.core.types.Model.composable` (a worst case over several
pairs, e.g. ``bitflip --m worst``, or a method with no pair behind it, e.g. ``randomizer``) mixed
with any other event -- the maximum over pairs of a composition is not the composition of one
pair, and no single dominating PLD is proved here; alone they are evaluated as the command line
does.  Shuffle rounds under any relation but ``REPLACE_ONE`` (every declaration here is a
substitution-neighbour analysis); ``dp_accounting`` events under the relations ``PLDAccountant``
refuses; events ``PLDAccountant`` does not support, and ``TruncatedSubsampledGaussianDpEvent``
(no optimistic builder in ``dp_accounting``).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import attr
import numpy as np
from dp_accounting import dp_event, privacy_accountant
from dp_accounting.pld import privacy_loss_distribution as dpl

from shuffle_lib import mechanisms
from shuffle_lib.core import accuracy as A
from shuffle_lib.core import evaluate, fourier
from shuffle_lib.core import validate as v
from shuffle_lib.core.constants import MAX_COMPOSITIONS
from shuffle_lib.core.pld import PLD
from shuffle_lib.core.types import Bracket, Model, PLDPair

NeighboringRelation = privacy_accountant.NeighboringRelation
CompositionErrorDetails = privacy_accountant.PrivacyAccountant.CompositionErrorDetails

# atoms of a dp_accounting PLD at most (its builders loop in Python: cost ~ 1/h)
MAX_DP_POINTS = 100_000
MAX_ASYMMETRIC = 4          # events with two different directions: 2^(m-1) orientations composed
"""At most this many events whose two directions differ (2^(m-1) relative orientations are
composed)."""


@attr.s(frozen=True, slots=True, auto_attribs=True, init=False)
class ShuffledEvent(dp_event.DpEvent):
    """One round of a declared shuffle mechanism: ``ShuffledEvent("rr", eps0=1.0)``.

    ``params`` holds the declared parameters, validated by ``mechanisms.get(mechanism).checked``
    (defaults filled in, declaration order) as ``((name, value), ...)``; a bad or missing one is a
    ValueError naming it and its range.  ``ShuffledEvent(mechanism, params=...)`` (a mapping or
    pairs) is the form ``DpEvent.from_named_tuple`` uses.  The mechanism's paper and equation:
    ``mechanisms.get(mechanism).source``.
    """

    mechanism: str
    params: tuple

    def __init__(
        self,
        mechanism: str,
        params: Mapping[str, Any] | Sequence[tuple[str, Any]] | None = None,
        **kwargs: Any,
    ) -> None:
        if isinstance(mechanism, bytes):
            mechanism = mechanism.decode()
        mech = mechanisms.get(mechanism)
        given = dict(params) if params is not None else {}
        both = set(given) & set(kwargs)
        if both:
            raise ValueError(f"parameter {sorted(both)[0]!r} is given twice.")
        given.update(kwargs)
        self.__attrs_init__(mech.name, tuple(mech.checked(given).items()))

    def to_named_tuple(self) -> dp_event.DpEventNamedTuple:
        """``DpEvent.to_named_tuple`` with the mechanism's name as bytes (class docstring)."""
        return super().to_named_tuple()._replace(mechanism=self.mechanism.encode())

    @property
    def values(self) -> dict[str, Any]:
        """The parameters as a dict (the keywords of the mechanism's build)."""
        return dict(self.params)


@dataclass(frozen=True)
class _Round:
    """One distinct event of the composition: dominating and dominated PLDs per direction."""

    up_pq: PLD
    up_qp: PLD
    low_pq: PLD
    low_qp: PLD
    count: int
    cut: float = 0.0          # mass sent to +inf per round by the build (PLDPair.tail_cut)

    @classmethod
    def of(cls, up: PLDPair, low: PLDPair, count: int) -> _Round:
        """One round's dominating and dominated pairs (one PLD per direction), ``count`` times."""
        ups, lows = up.plds(), low.plds()
        if ups is None or lows is None:
            raise ValueError("a round composed with other events needs one PLD per direction.")
        return cls(*ups, *lows, count, low.tail_cut)

    @property
    def symmetric(self) -> bool:
        return _same(self.up_pq, self.up_qp) and _same(self.low_pq, self.low_qp)

    def flipped(self) -> _Round:
        return _Round(self.up_qp, self.up_pq, self.low_qp, self.low_pq, self.count, self.cut)


def _same(a: PLD, b: PLD) -> bool:
    return a is b or (a.inf_mass == b.inf_mass and np.array_equal(a.losses, b.losses)
                      and np.array_equal(a.probs, b.probs))


def _from_pmf(pmf: Any) -> PLD:
    """A ``dp_accounting`` PLDPmf (dense or sparse) as our PLD: losses k h, their masses, +inf mass.

    Reads the PMF's attributes (``dp_accounting`` 0.4-0.6 keeps them private: ``_lower_loss``,
    ``_probs``, ``_discretization``, ``_infinity_mass`` of ``pld_pmf.DensePLDPmf``).
    """
    try:
        dense = pmf.to_dense_pmf()
        k0, probs, h, inf = (
            dense._lower_loss,
            np.asarray(dense._probs, float),
            dense._discretization,
            dense._infinity_mass,
        )
    except AttributeError as err:   # pragma: no cover - a future dp_accounting layout
        raise RuntimeError(f"this dp_accounting version stores PLDs differently ({err}); "
                           "shuffle_lib.accountant supports dp-accounting 0.4-0.6.") from None
    keep = probs > 0
    losses = (k0 + np.nonzero(keep)[0]) * float(h)
    return PLD(losses.astype(float), probs[keep], float(min(max(inf, 0.0), 1.0)))


def _directions(pld: Any) -> tuple[PLD, PLD]:
    """(remove, add) = (omega_{P/Q}, omega_{Q/P}) of a ``dp_accounting`` PrivacyLossDistribution
    (``pmf_remove`` is the PLD of M(D) w.r.t. M(D'), D' one record less; ``add`` the reverse)."""
    remove = _from_pmf(pld._pmf_remove)
    return remove, (remove if pld._symmetric else _from_pmf(pld._pmf_add))


class ShuffleAccountant(privacy_accountant.PrivacyAccountant):
    """A ``dp_accounting.PrivacyAccountant`` with certified brackets (module docstring).

    ``accuracy``: target half-width of the eps bracket of the Fourier accountant
    (:data:`shuffle_lib.core.fourier.DEFAULT_ACCURACY`); ``dp_accounting`` events are discretised
    at h = max(accuracy / (4 K), width / 1e5), K the rounds composed and width the span of the
    event's losses (measured on a coarse build), so that a build stays well under a second.
    ``neighboring_relation``: a ``dp_accounting.NeighboringRelation``; shuffle rounds need
    ``REPLACE_ONE`` (the default).
    """

    def __init__(
        self,
        accuracy: float = fourier.DEFAULT_ACCURACY,
        neighboring_relation: NeighboringRelation = NeighboringRelation.REPLACE_ONE,
    ) -> None:
        if not isinstance(neighboring_relation, NeighboringRelation):
            raise ValueError(
                "neighboring_relation must be a dp_accounting.NeighboringRelation "
                "(ADD_OR_REMOVE_ONE, REPLACE_ONE or REPLACE_SPECIAL), got "
                f"{neighboring_relation!r}."
            )
        super().__init__(neighboring_relation)
        self._accuracy = v.real("accuracy", accuracy, 0.0, 1.0, lo_open=True)
        self._events: list[list] = []     # [[leaf event, count], ...], equal events merged
        self._models: list[tuple[ShuffledEvent, Any]] = []
        # cache of the rounds built at an accuracy, keyed by (number of events, accuracy)
        self._rounds: dict[tuple[int, float], list[_Round]] = {}
        # cache of brackets, emptied by compose
        self._answers: dict[tuple[str, float], Bracket] = {}

    @property
    def accuracy(self) -> float:
        """The target half-width of the eps bracket."""
        return self._accuracy

    # ---- composition (the dp_accounting interface) ----

    def compose(self, event: dp_event.DpEvent, count: int = 1) -> ShuffleAccountant:
        """``PrivacyAccountant.compose`` with ``count`` checked (an integer in [1, 1e7])."""
        v.integer("count", count, lo=1, hi=MAX_COMPOSITIONS)
        return super().compose(event, count)

    def _maybe_compose(self, event: dp_event.DpEvent, count: int,
                       do_compose: bool) -> CompositionErrorDetails | None:
        """Flatten ``event`` into leaves, check each and the mixture, then (``do_compose``) record
        them."""
        leaves: list[list] = []
        err = self._flatten(event, count, leaves)
        if err is not None:
            return err
        merged = [list(x) for x in self._events]
        for leaf, c in leaves:
            _add(merged, leaf, c)
        err = self._check_mixture(merged)
        if err is not None:
            return err
        # (leaves of count 0 are checked, as supports() asks with count 0, not kept)
        if do_compose:
            self._events = [x for x in merged if x[1] > 0]
            self._rounds = {}
            self._answers = {}
        return None

    def _flatten(
        self, event: dp_event.DpEvent, count: int, out: list[list]
    ) -> CompositionErrorDetails | None:
        if isinstance(event, dp_event.NoOpDpEvent):
            return None
        if isinstance(event, dp_event.SelfComposedDpEvent):
            inner = v.integer("SelfComposedDpEvent.count", event.count, lo=0, hi=MAX_COMPOSITIONS)
            return self._flatten(event.event, inner * count, out)
        if isinstance(event, dp_event.ComposedDpEvent):
            for e in event.events:
                err = self._flatten(e, count, out)
                if err is not None:
                    return err
            return None
        err = self._leaf_error(event)
        if err is not None:
            return err
        if _zero_noise(event):   # as PLDAccountant: zero noise is a non-private event
            out.append([dp_event.NonPrivateDpEvent(), count])
        elif not _is_noop(event):
            out.append([event, count])
        return None

    def _leaf_error(self, event: dp_event.DpEvent) -> CompositionErrorDetails | None:
        rel = self.neighboring_relation
        if isinstance(event, ShuffledEvent):
            if rel != NeighboringRelation.REPLACE_ONE:
                return CompositionErrorDetails(event, (
                    f"ShuffledEvent({event.mechanism!r}) is analysed for substitution neighbours "
                    f"(REPLACE_ONE); this accountant uses {rel.name}."))
            # builds now: an invalid combination of parameters raises ValueError here
            self._model(event)
            return None
        if isinstance(event, dp_event.NonPrivateDpEvent):
            return None
        needs = _PLD_RELATIONS.get(_kind(event))
        if needs is None:
            return CompositionErrorDetails(event, "Unsupported event.")
        if rel not in needs:
            return CompositionErrorDetails(event, (
                f"neighboring_relation must be one of {', '.join(r.name for r in needs)} for "
                f"{_kind(event)} (as in dp_accounting's PLDAccountant); found {rel.name}."))
        return None

    def _model(self, event: ShuffledEvent, compositions: int = 1,
               accuracy: float | None = None) -> Model:
        """The mechanism's build at ``accuracy`` (default the accountant's; cached for one round
        at it); with ``compositions`` for a lone event."""
        mech = mechanisms.get(event.mechanism)
        cache = compositions == 1 and accuracy is None
        if cache:
            for e, m in self._models:
                if e == event:
                    return m
        model = mech.model(event.values, compositions,
                           self._accuracy if accuracy is None else accuracy)[1]
        if not isinstance(model, Model):
            raise TypeError(f"mechanism {event.mechanism}'s build returned {type(model).__name__}.")
        if cache:
            self._models.append((event, model))
        return model

    def _alone_only(self, event: dp_event.DpEvent) -> str | None:
        """Why ``event`` cannot be composed with other events (None if it can)."""
        if not isinstance(event, ShuffledEvent):
            return None
        if self._model(event).composable:
            return None
        return (f"ShuffledEvent({event.mechanism!r}) is not one dominating pair (a worst case over "
                "several pairs, or its own certified method): the max over pairs of a composition "
                "is not one pair's, so it composes only with itself; compose it alone, or fix the "
                "neighbouring configuration (one pair).")

    def _check_mixture(self, merged: list[list]) -> CompositionErrorDetails | None:
        private = [e for e, _ in merged if not isinstance(e, dp_event.NonPrivateDpEvent)]
        if len(private) > 1:
            for e in private:
                why = self._alone_only(e)
                if why is not None:
                    return CompositionErrorDetails(e, why)
        return None

    # ---- the numbers ----

    def _lone(self) -> tuple[ShuffledEvent, int] | None:
        if len(self._events) == 1 and isinstance(self._events[0][0], ShuffledEvent):
            return self._events[0][0], self._events[0][1]
        return None

    def _non_private(self) -> bool:
        return any(isinstance(e, dp_event.NonPrivateDpEvent) for e, _ in self._events)

    def _build_rounds(self, accuracy: float) -> list[_Round]:
        key = (len(self._events), accuracy)
        if key in self._rounds:
            return self._rounds[key]
        K = sum(_rounds_of(e, c) for e, c in self._events)
        h = accuracy / (4 * K)
        out = []
        for e, c in self._events:
            if isinstance(e, ShuffledEvent):
                out.append(_Round.of(*self._model(e).pairs_for_composing(K, accuracy), c))
            else:
                out.append(_dp_round(e, c, h, self.neighboring_relation))
        self._rounds[key] = out
        return out

    def _orientations(self, accuracy: float) -> list[list[_Round]]:
        rounds = self._build_rounds(accuracy)
        if self.neighboring_relation != NeighboringRelation.REPLACE_ONE:
            return [rounds]
        asym = [i for i, r in enumerate(rounds) if not r.symmetric]
        if len(asym) > MAX_ASYMMETRIC:
            raise ValueError(
                f"at most {MAX_ASYMMETRIC} events with two different directions can be composed "
                f"(2^(m-1) orientations each); this composition has {len(asym)}."
            )
        out = []
        for flips in itertools.product((False, True), repeat=max(len(asym) - 1, 0)):
            flip = dict(zip(asym[1:], flips))
            out.append([r.flipped() if flip.get(i) else r for i, r in enumerate(rounds)])
        return out

    def get_delta_bracket(self, target_epsilon: float) -> Bracket:
        """Certified bracket [lower, upper] for the tight delta(target_epsilon) of the
        composition, with ``accuracy_met`` and ``limit`` as the command line reports them
        (``shuffle_lib.core.accuracy.annotate``)."""
        return self._cached("delta", _target_epsilon(target_epsilon), self._delta_bracket)

    def get_epsilon_bracket(self, target_delta: float) -> Bracket:
        """Certified bracket [lower, upper] for the tight eps(target_delta) of the composition,
        refined where it misses the accuracy contract
        (``shuffle_lib.core.evaluate.refined_epsilon``), with ``accuracy_met`` and ``limit``
        as the command line reports them (``shuffle_lib.core.accuracy.annotate``)."""
        return self._cached(
            "epsilon", v.real("target_delta", target_delta, 0.0, 1.0), self._epsilon_bracket
        )

    def _delta_bracket(self, eps: float) -> Bracket:
        if self._non_private():
            return self._met("delta", eps, Bracket(1.0, 1.0))
        if not self._events:
            return self._met("delta", eps, Bracket(0.0, 0.0))
        # finite for a composition (+inf: only with no events)
        return self._composed("delta", v.real("target_epsilon", eps, 0.0))

    def _epsilon_bracket(self, target_delta: float) -> Bracket:
        delta = v.real("target_delta", target_delta, 0.0, 1.0)
        if self._non_private():
            return self._met("epsilon", delta, Bracket(math.inf, math.inf))
        if not self._events or delta == 1.0:
            return self._met("epsilon", delta, Bracket(0.0, 0.0))
        return self._composed("epsilon", v.real("target_delta", delta, 0.0, 1.0, lo_open=True))

    def _met(self, verb: evaluate.Verb, target: float, bracket: Bracket) -> Bracket:
        """A bracket with no computation behind it (equal ends): met by definition."""
        return A.annotate(verb, [target], [bracket], self._accuracy)[0]

    def _composed(self, verb: evaluate.Verb, target: float) -> Bracket:
        """A lone shuffle event: its own model at its count (built again at a finer accuracy when
        its declaration ``uses`` it), as the command line evaluates it.  Else the max over the
        orientations of the composition of every event's parts (one model each: the dominating
        parts above, the dominated ones and the rounds' tail cuts below; built again from rounds
        at the finer accuracy).  Each model's eps bracket is refined where it misses the
        accuracy contract (``shuffle_lib.core.evaluate.refined_epsilon``), and the answer
        says whether it met it (``shuffle_lib.core.accuracy.annotate``), as the command
        line's (:meth:`shuffle_lib.core.registry.Mechanism.evaluate`)."""
        acc = self._accuracy
        lone = self._lone()
        candidates: list[tuple[Model, evaluate.Rebuild]]
        if lone is not None:
            event, k = lone
            mech = mechanisms.get(event.mechanism)
            rebuild = (functools.partial(self._model, event, k) if "accuracy" in mech.uses
                       else None)
            candidates, rounds = [(self._model(event, k), rebuild)], k
        else:
            k, rounds = 1, sum(r.count for r in self._build_rounds(acc))
            candidates = [(self._orientation_model(i, acc),
                           functools.partial(self._orientation_model, i))
                          for i in range(len(self._orientations(acc)))]
        return evaluate.answer(candidates, verb, [target], k, acc, rounds)[0]

    def _orientation_model(self, index: int, accuracy: float) -> Model:
        """The model of orientation ``index`` of the rounds built at ``accuracy``."""
        rounds = self._orientations(accuracy)[index]
        up = PLDPair(tuple((r.up_pq, r.count) for r in rounds),
                     tuple((r.up_qp, r.count) for r in rounds))
        cut = sum(r.count * r.cut for r in rounds)
        if all(r.low_pq is r.up_pq and r.low_qp is r.up_qp for r in rounds):
            return Model.of(dataclasses.replace(up, tail_cut=cut))
        low = PLDPair(tuple((r.low_pq, r.count) for r in rounds),
                      tuple((r.low_qp, r.count) for r in rounds), cut)
        return Model((up,), (low,))

    def _cached(self, verb: str, target: float, fn: Any) -> Bracket:
        key = (verb, float(target))
        if key not in self._answers:
            self._answers[key] = fn(target)
        return self._answers[key]

    def get_delta(self, target_epsilon: float) -> float:
        """The upper end of :meth:`get_delta_bracket` (a certified upper bound on delta)."""
        return self.get_delta_bracket(target_epsilon).upper

    def get_epsilon(self, target_delta: float) -> float:
        """The upper end of :meth:`get_epsilon_bracket` (a certified upper bound on eps)."""
        return self.get_epsilon_bracket(target_delta).upper


def _target_epsilon(x: Any) -> float:
    """eps >= 0 as a float; +inf is allowed here (no events: delta 0; non-private: 1)."""
    try:
        eps = float(x)
    except (TypeError, ValueError):
        raise ValueError(f"target_epsilon must be a real number in [0, inf], got {x!r}.") from None
    if not eps >= 0:
        raise ValueError(f"target_epsilon must lie in [0, inf], got target_epsilon={x!r}.")
    return eps


def _add(merged: list[list], event: dp_event.DpEvent, count: int) -> None:
    for item in merged:
        if item[0] == event:
            item[1] += count
            return
    merged.append([event, count])


# ---- dp_accounting's events: which relations PLDAccountant accepts, and their PLDs ----

_ALL = tuple(NeighboringRelation)
_ADD_SPECIAL = (NeighboringRelation.ADD_OR_REMOVE_ONE, NeighboringRelation.REPLACE_SPECIAL)
_PLD_RELATIONS = {  # dp_accounting 0.6 pld_privacy_accountant.PLDAccountant._maybe_compose
    "GaussianDpEvent": _ALL,
    "LaplaceDpEvent": _ADD_SPECIAL,
    "DiscreteLaplaceDpEvent": _ADD_SPECIAL,
    "MixtureOfGaussiansDpEvent": _ADD_SPECIAL,
    "RandomizedResponseDpEvent": (
        NeighboringRelation.REPLACE_ONE,
        NeighboringRelation.REPLACE_SPECIAL,
    ),
    "PoissonSampledDpEvent(GaussianDpEvent)": _ALL,
    "PoissonSampledDpEvent(LaplaceDpEvent)": _ADD_SPECIAL,
}


def _kind(event: dp_event.DpEvent) -> str:
    name = type(event).__name__
    if isinstance(event, dp_event.PoissonSampledDpEvent):
        return f"{name}({type(event.event).__name__})"
    return name


def _is_noop(event: dp_event.DpEvent) -> bool:
    """Events PLDAccountant skips (no privacy cost)."""
    if isinstance(event, dp_event.RandomizedResponseDpEvent):
        return event.num_buckets == 1
    if isinstance(event, dp_event.MixtureOfGaussiansDpEvent):
        return len(event.sensitivities) == 1 and event.sensitivities[0] == 0.0
    if isinstance(event, dp_event.PoissonSampledDpEvent):
        return event.sampling_probability == 0
    return False


def _zero_noise(event: dp_event.DpEvent) -> bool:
    """Events PLDAccountant treats as non-private (zero noise)."""
    if isinstance(event, ShuffledEvent) or _is_noop(event):
        return False
    inner = event.event if isinstance(event, dp_event.PoissonSampledDpEvent) else event
    for attr_name in ("noise_multiplier", "noise_parameter", "standard_deviation"):
        if getattr(inner, attr_name, None) == 0:
            return True
    return False


def _rounds_of(event: dp_event.DpEvent, count: int) -> int:
    """Rounds the Fourier accountant composes for an event (a Gaussian's count is one
    sigma/sqrt(count))."""
    return 1 if isinstance(event, dp_event.GaussianDpEvent) else count


def _dp_round(event: dp_event.DpEvent, count: int, h: float, rel: NeighboringRelation) -> _Round:
    """Pessimistic (upper) and optimistic (lower) PLDs of a dp_accounting event, by its own builders
    (privacy buckets: ``use_connect_dots=False``, losses rounded up / down to multiples of the
    step), at step max(h, width / MAX_DP_POINTS), width the span of losses of a coarse build."""
    fast = isinstance(event, dp_event.GaussianDpEvent) and rel == NeighboringRelation.REPLACE_ONE

    def build(pessimistic: bool, h: float) -> Any:
        kw = dict(pessimistic_estimate=pessimistic, value_discretization_interval=h)
        if fast:
            return _gaussian_replace(event.noise_multiplier / math.sqrt(count), pessimistic, h)
        if isinstance(event, dp_event.GaussianDpEvent):
            return dpl.from_gaussian_mechanism(
                event.noise_multiplier / math.sqrt(count),
                use_connect_dots=False,
                neighboring_relation=rel,
                **kw,
            )
        if isinstance(event, dp_event.LaplaceDpEvent):
            return dpl.from_laplace_mechanism(event.noise_multiplier, use_connect_dots=False, **kw)
        if isinstance(event, dp_event.DiscreteLaplaceDpEvent):
            return dpl.from_discrete_laplace_mechanism(
                event.noise_parameter, sensitivity=event.sensitivity, use_connect_dots=False, **kw
            )
        if isinstance(event, dp_event.MixtureOfGaussiansDpEvent):
            return dpl.from_mixture_gaussian_mechanism(
                event.standard_deviation,
                list(event.sensitivities),
                list(event.sampling_probs),
                use_connect_dots=False,
                **kw,
            )
        if isinstance(event, dp_event.RandomizedResponseDpEvent):
            return dpl.from_randomized_response(event.noise_parameter, event.num_buckets,
                                                neighboring_relation=rel, **kw)
        inner = event.event
        if isinstance(inner, dp_event.GaussianDpEvent):
            return dpl.from_gaussian_mechanism(
                inner.noise_multiplier,
                sampling_prob=event.sampling_probability,
                use_connect_dots=False,
                neighboring_relation=rel,
                **kw,
            )
        return dpl.from_laplace_mechanism(
            inner.noise_multiplier,
            sampling_prob=event.sampling_probability,
            use_connect_dots=False,
            **kw,
        )

    read = (lambda pld: (pld, pld)) if fast else _directions
    coarse = read(build(True, 1e-2))
    width = max(float(x.losses[-1] - x.losses[0]) if x.losses.size else 0.0 for x in coarse)
    h = max(h, width / MAX_DP_POINTS)
    up_pq, up_qp = read(build(True, h))
    low_pq, low_qp = read(build(False, h))
    return _Round(up_pq, up_qp, low_pq, low_qp, _rounds_of(event, count))


def _gaussian_replace(sigma: float, pessimistic: bool, h: float) -> PLD:
    """The PLD ``dp_accounting`` builds for a Gaussian of standard deviation ``sigma`` (sensitivity
    1, ``REPLACE_ONE``, no sampling) by privacy buckets (``use_connect_dots=False``), the same atoms
    to the last bit, with its one Python loop (one inverse privacy loss per bucket, ~4e5 at the
    accuracy of chapter 9) done on arrays.

    Source: Meiser & Mohammadi (2018), privacy buckets; ``dp_accounting`` 0.4-0.6,
    ``privacy_loss_distribution._create_pld_pmf_from_monotone_privacy_loss`` with
    ``GaussianPrivacyLoss(sigma, adjacency_type=REPLACE)``, whose tails (``privacy_loss_tail``) and
    CDF (``mu_upper_cdf``) are called as they are.  Mass in [x_j, x_{j+1}) of the noise has its loss
    in [k h, (k + 1) h]: rounded up to (k + 1) h (pessimistic) or down to k h; the truncated tails
    (2 x 0.5 e^-50) go to +inf and to the top loss (pessimistic) or to the bottom loss
    (optimistic), as there.  ``tests/test_accountant.py`` holds it equal to dp_accounting's builder.
    """
    from dp_accounting.pld import privacy_loss_mechanism as plm

    loss = plm.GaussianPrivacyLoss(sigma, pessimistic_estimate=pessimistic,
                                   adjacency_type=plm.AdjacencyType.REPLACE)
    tail = loss.privacy_loss_tail()
    lower_x, upper_x = tail.lower_x_truncation, tail.upper_x_truncation
    rnd = math.ceil if pessimistic else math.floor
    pmf: dict[int, float] = {}
    inf_mass = tail.tail_probability_mass_function.get(math.inf, 0)
    for value, mass in tail.tail_probability_mass_function.items():
        if value != math.inf:
            pmf[rnd(value / h)] = pmf.get(rnd(value / h), 0) + mass
    # the buckets' bottom losses k h, k = k0, k0 - 1, ...: x = the inverse loss at k h while
    # k h > the loss at upper_x, then upper_x (dp_accounting's loop, stopped where x >= upper_x)
    k0 = math.floor(loss.privacy_loss(lower_x) / h)
    top_loss = loss.privacy_loss(upper_x)
    n = max(k0 - math.floor(top_loss / h), 0) + 2
    ks = k0 - np.arange(n, dtype=np.int64)
    at = h * ks
    s2, sens = loss._standard_deviation ** 2, loss.sensitivity
    with np.errstate(all="ignore"):
        xs = np.where(at == 0, 0.0, -at * s2 / sens / 2)   # its inverse_privacy_loss, q = 1
    xs = np.where(at <= top_loss, upper_x, xs)
    stop = int(np.argmax(xs >= upper_x)) if np.any(xs >= upper_x) else n - 1
    xs, ks = np.concatenate([[lower_x], xs[: stop + 1]]), ks[: stop + 1]
    cdf = np.asarray(loss.mu_upper_cdf(list(xs)), float)
    probs = cdf[1:] - cdf[:-1]
    keys = ks + 1 if pessimistic else ks
    for key in set(pmf) & set(keys.tolist()):      # a tail atom in a bucket: added, as there
        i = int(np.nonzero(keys == key)[0][0])
        pmf[key] = pmf[key] + probs[i]
        probs[i] = 0.0
    keys = np.concatenate([keys[::-1], np.array(sorted(pmf), dtype=np.int64)])
    probs = np.concatenate([probs[::-1], [pmf[k] for k in sorted(pmf)]])
    order = np.argsort(keys, kind="stable")
    keys, probs = keys[order], probs[order]
    keep = probs > 0
    return PLD(keys[keep] * float(h), probs[keep], float(min(max(inf_mass, 0.0), 1.0)))


__all__ = ["ShuffledEvent", "ShuffleAccountant", "MAX_DP_POINTS", "MAX_ASYMMETRIC"]
