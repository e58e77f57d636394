"""The small set of value types every layer shares.

* :class:`Bracket` -- a certified interval ``(lower, upper)`` around a tight DP parameter: the
  exact value lies in it.  Every accountant in the package returns brackets.
* :class:`Model` -- what a mechanism's declared build returns (:mod:`shuffle_lib.core.registry`),
  read by :mod:`shuffle_lib.core.evaluate`: its upper and lower components, each a :class:`PLDPair`
  of PLDs or a certified :class:`Method`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from shuffle_lib.core import validate as v
from shuffle_lib.core.constants import MAX_COMPOSITIONS, TINY
from shuffle_lib.core.pld import PLD, pld_from_pmfs

ArrayLike = float | Sequence[float] | np.ndarray
"""A real or a 1-d collection of reals: what the functions vectorised over eps (delta, lam)
accept."""


class Bracket(tuple):
    """A certified interval (lower, upper) for a tight DP parameter: lower <= upper (ValueError
    otherwise; a NaN end is let through for the caller's own NaN check to name).

    ``accuracy_met`` says whether the bracket meets the accuracy its query asked for and ``limit``
    what stopped it when not (:mod:`shuffle_lib.core.accuracy` defines both); both are None on a
    bracket no query checked.  They ride along: equality, hashing and the repr are the pair's.
    """

    accuracy_met: bool | None = None
    limit: str | None = None

    def __new__(cls, lower, upper, *, accuracy_met: bool | None = None,
                limit: str | None = None):
        lower, upper = float(lower), float(upper)
        if lower > upper:
            raise ValueError(f"a Bracket needs lower <= upper, got lower={lower!r}, "
                             f"upper={upper!r}.")
        self = super().__new__(cls, (lower, upper))
        if accuracy_met is not None:
            self.accuracy_met = bool(accuracy_met)
        if limit is not None:
            self.limit = str(limit)
        return self

    def __getnewargs_ex__(self):
        return (self[0], self[1]), {"accuracy_met": self.accuracy_met, "limit": self.limit}

    lower = property(lambda self: self[0])
    upper = property(lambda self: self[1])

    def __repr__(self):
        return f"Bracket(lower={self[0]!r}, upper={self[1]!r})"


# ---- what a mechanism's build returns (read by core.evaluate) ----

Parts = tuple[tuple[PLD, int], ...]
"""A composition as (PLD, count) parts, each PLD composed count times (Koskela et al. 2021,
Thm 5)."""


@dataclass(frozen=True)
class PLDPair:
    """A pair of distributions given by its privacy loss distributions, one round of a model.

    ``pq`` holds the PLD of P w.r.t. Q and ``qp`` that of Q w.r.t. P (Koskela et al. 2021, Def. 4),
    each as (PLD, count) parts (a heterogeneous round composes several); the evaluator composes
    them ``compositions`` times.  As an upper component the pair dominates the mechanism (its
    hockey sticks are >=), as a lower one it is dominated (<=).  ``tail_cut`` bounds the mass per
    round a build moved to +inf (binomial tails): K rounds overstate delta by at most K tail_cut,
    which the pair's lower end takes off.  ``max_loss`` says that mass at +inf is such a cut of
    atoms whose loss is at most ``max_loss`` (the Renyi route can then bound it).  ``caps``:
    dominated parts (pq, qp) the grid-free lower caps read when these PLDs carry a truncated tail
    as a finite top atom (:func:`shuffle_lib.core.fourier.delta_bracket`'s ``lower``): one
    composition then serves both ends.  ``deepen(tau)``: the same pair built again with at most
    ``tau`` of truncated mass per round (None when that build is out of reach); the evaluator asks
    for it at targets below the floor a truncation of ``truncated`` per round leaves (K rounds
    move delta by up to K ``truncated``, :func:`shuffle_lib.core.evaluate.brackets`).
    """

    pq: Parts
    qp: Parts
    tail_cut: float = 0.0
    max_loss: float | None = None
    caps: tuple[Parts, Parts] | None = None
    deepen: Callable[[float], PLDPair | None] | None = None
    truncated: float = 0.0

    def __post_init__(self):
        for name in ("pq", "qp"):
            parts = getattr(self, name)
            if not parts or not all(isinstance(x, PLD) and c >= 1 for x, c in parts):
                raise ValueError(f"{name} must be non-empty (PLD, count >= 1) parts, got "
                                 f"{name}={parts!r:.80}.")
        object.__setattr__(self, "tail_cut", v.real("tail_cut", self.tail_cut, 0.0, 1.0))
        if self.max_loss is not None:
            object.__setattr__(self, "max_loss", v.real("max_loss", self.max_loss, 0.0))
        object.__setattr__(self, "truncated", v.real("truncated", self.truncated, 0.0, 1.0))
        if self.deepen is not None and self.tail_cut > 0.0:
            raise ValueError(f"a pair with deepen carries its truncation in truncated, not as a "
                             f"tail cut, got tail_cut={self.tail_cut!r}.")

    @classmethod
    def of(cls, pq: PLD, qp: PLD | None = None, tail_cut: float = 0.0,
           max_loss: float | None = None) -> PLDPair:
        """One PLD per direction (``qp`` omitted: a symmetric pair, one PLD for both)."""
        parts = ((pq, 1),)
        return cls(parts, parts if qp is None else ((qp, 1),), tail_cut, max_loss)

    @classmethod
    def from_pmfs(cls, p: Sequence[float] | np.ndarray, q: Sequence[float] | np.ndarray) -> PLDPair:
        """The exact pair of two PMFs on one ordered support, both directions (Koskela et al. 2021,
        Def. 4)."""
        return cls.of(pld_from_pmfs(p, q), pld_from_pmfs(q, p))

    def plds(self) -> tuple[PLD, PLD] | None:
        """(PLD of P w.r.t. Q, of Q w.r.t. P) when the round is one PLD per direction, else None."""
        if len(self.pq) == len(self.qp) == 1 and self.pq[0][1] == self.qp[0][1] == 1:
            return self.pq[0][0], self.qp[0][0]
        return None


@dataclass(frozen=True)
class Method:
    """A certified method of a mechanism for ``rounds`` rounds (a closed form, a streamed sum, a
    search over blocks): ``delta(eps_list)`` and ``epsilon(delta_list)`` return one
    :class:`Bracket` per target.  A component that serves one end only may leave the other end of
    its brackets trivial (lower 0; upper 1 or inf)."""

    delta: Callable[[list[float]], list[Bracket]]
    epsilon: Callable[[list[float]], list[Bracket]]
    rounds: int = 1

    def __post_init__(self):
        object.__setattr__(self, "rounds",
                           v.integer("rounds", self.rounds, lo=1, hi=MAX_COMPOSITIONS))

    def capped(self, delta_cap: Callable[[float], float],
               eps_cap: Callable[[float], float]) -> Method:
        """This method with its upper ends lowered to certified caps: ``delta_cap(eps)`` >= the
        tight delta(eps), ``eps_cap(delta)`` >= the tight eps(delta) (for a shuffler, its local
        randomiser's own: the shuffled view is a post-processing of the reports).  The min of two
        upper ends is one, and a cap of every candidate's end caps their max.  A delta target
        whose cap is at most the least positive double (``constants.TINY``) is not passed to the
        method: the bracket [0, cap] is as narrow as doubles allow, and its work is spared."""
        def delta(eps: list[float]) -> list[Bracket]:
            caps = [min(1.0, delta_cap(e)) for e in eps]
            todo = [e for e, c in zip(eps, caps) if c > TINY]
            got = iter(self.delta(todo) if todo else [])
            out = []
            for c in caps:
                b = next(got) if c > TINY else Bracket(0.0, c)
                out.append(Bracket(min(b.lower, b.upper, c), min(b.upper, c)))
            return out

        def epsilon(delta: list[float]) -> list[Bracket]:
            return [Bracket(min(b.lower, b.upper, c), min(b.upper, c))
                    for b, c in zip(self.epsilon(delta), (eps_cap(d) for d in delta))]
        return Method(delta, epsilon, self.rounds)

    @classmethod
    def constant(cls, delta: float, eps: float, rounds: int = 1) -> Method:
        """delta and eps the same at every target: (0, 0) for an output that does not depend on
        the input, (1, inf) for laws with disjoint supports."""
        delta = v.real("delta", delta, 0.0, 1.0)
        eps = v.real("eps", eps, 0.0, allow_inf=True)
        return cls(lambda t: [Bracket(delta, delta) for _ in t],
                   lambda t: [Bracket(eps, eps) for _ in t], rounds)


Component = PLDPair | Method
"""Where one end of a model comes from: a pair of PLDs or a certified method."""

RoundPairs = Callable[[int, float], "tuple[PLDPair, PLDPair]"]


@dataclass(frozen=True)
class Model:
    """What a mechanism's declared build returns: where each end of its brackets comes from.

    ``upper``: components whose upper ends bound the mechanism; when they are candidates for the
    worst neighbouring configuration the mechanism's upper end is the max over them.  ``lower``:
    components whose lower ends are valid (a dominated pair, the exact view of a concrete
    dataset); the model's lower end is the max over them, at most the upper end.  One component
    may serve both ends (it is evaluated once).  ``eps_cap``: a certified bound on eps at every
    delta (every composed loss is at most it), applied to both ends of an eps bracket.
    ``round_pairs(total_rounds, accuracy) -> (dominating, dominated)`` gives one round's pairs for
    composing with other events when the components are not those pairs (built only when asked);
    :meth:`pairs_for_composing` falls back on a model of one upper and one lower pair.  ``info``
    goes into the JSON params.
    """

    upper: tuple[Component, ...]
    lower: tuple[Component, ...] = ()
    eps_cap: float = math.inf
    round_pairs: RoundPairs | None = None
    info: dict = field(default_factory=dict)

    def __post_init__(self):
        parts = self.upper + self.lower
        if not self.upper or not all(isinstance(c, (PLDPair, Method)) for c in parts):
            raise ValueError("a Model needs an upper component; each is a PLDPair or a Method.")

    @classmethod
    def of(cls, component: Component, info: dict | None = None, **kw) -> Model:
        """One component serving both ends."""
        return cls((component,), (component,), info={} if info is None else info, **kw)

    @classmethod
    def from_pmfs(cls, p: Sequence[float] | np.ndarray, q: Sequence[float] | np.ndarray,
                  info: dict | None = None) -> Model:
        """The exact pair of two PMFs (:meth:`PLDPair.from_pmfs`) serving both ends."""
        return cls.of(PLDPair.from_pmfs(p, q), info)

    @property
    def composable(self) -> bool:
        """True when one round is one dominating and one dominated pair (the accountant composes
        it with other events); False for a worst case over several pairs or a method alone."""
        return self.round_pairs is not None or self._own_pairs() is not None

    def _own_pairs(self) -> tuple[PLDPair, PLDPair] | None:
        up, low = self.upper, self.lower
        if len(up) == len(low) == 1 and isinstance(up[0], PLDPair) and isinstance(low[0], PLDPair) \
                and up[0].plds() is not None and low[0].plds() is not None \
                and up[0].caps is None:      # a finite top atom is certified only with its caps
            return up[0], low[0]
        return None

    def pairs_for_composing(self, total_rounds: int, accuracy: float) -> tuple[PLDPair, PLDPair]:
        """(dominating, dominated) pair of one round, single PLDs per direction, for a
        composition of ``total_rounds`` rounds with other events built at ``accuracy``
        (ValueError when the model is not :attr:`composable`)."""
        total_rounds = v.integer("total_rounds", total_rounds, lo=1, hi=MAX_COMPOSITIONS)
        accuracy = v.real("accuracy", accuracy, 0.0, 1.0, lo_open=True)
        pairs = self.round_pairs(total_rounds, accuracy) if self.round_pairs is not None \
            else self._own_pairs()
        if pairs is None:
            raise ValueError("this model is not one dominating pair: it composes only alone.")
        return pairs
