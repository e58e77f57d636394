"""The small set of value types every layer shares.

* :class:`Bracket` -- a certified interval ``(lower, upper)`` around a tight DP parameter: the
  exact value lies in it.  Every accountant in the package returns brackets.
* :class:`PairModel`, :class:`WorstCase`, :class:`DirectModel` -- what a mechanism's declared
  build returns (:mod:`shuffle_lib.core.registry`), read by :mod:`shuffle_lib.core.evaluate`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

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

@dataclass(frozen=True)
class PairModel:
    """A dominating pair given by its privacy loss distributions in both directions.

    ``pq`` is the PLD of P w.r.t. Q and ``qp`` that of Q w.r.t. P; their hockey-stick values are
    >= the mechanism's (the upper end).  When the PLDs are not exact, ``pq_lower``/``qp_lower`` are
    dominated ones (the lower end).  ``tail_cut`` bounds the mass per round that a build moved to
    +inf (binomial tails): K rounds then overstate delta by at most K * tail_cut, which the lower
    end takes off.  ``max_loss`` says that mass at +inf is such a cut of atoms whose loss is at
    most ``max_loss`` (the Renyi route can then bound it).  ``info`` goes into the JSON params.
    """

    pq: PLD
    qp: PLD
    pq_lower: PLD | None = None
    qp_lower: PLD | None = None
    tail_cut: float = 0.0
    max_loss: float | None = None
    info: dict = field(default_factory=dict)

    @classmethod
    def from_pmfs(cls, p: Sequence[float] | np.ndarray, q: Sequence[float] | np.ndarray,
                  info: dict | None = None) -> PairModel:
        """The exact pair of two PMFs on one ordered support, both directions (Koskela et al. 2021,
        Def. 4)."""
        return cls(pld_from_pmfs(p, q), pld_from_pmfs(q, p), info={} if info is None else info)


@dataclass(frozen=True)
class WorstCase:
    """Several dominating pairs; the mechanism's guarantee is the worst, the max over them."""

    pairs: tuple[PairModel, ...]
    info: dict = field(default_factory=dict)


@dataclass(frozen=True)
class DirectModel:
    """A mechanism with its own certified method for the build's number of rounds:
    ``delta(eps_list) -> [Bracket]`` and ``epsilon(delta_list) -> [Bracket]``."""

    delta: Callable[[Sequence[float]], list[Bracket]]
    epsilon: Callable[[Sequence[float]], list[Bracket]]
    info: dict = field(default_factory=dict)


Model = PairModel | WorstCase | DirectModel   # noqa: E305
"""What a mechanism's declared build returns (read by :mod:`shuffle_lib.core.evaluate`)."""
