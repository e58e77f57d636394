"""What ``accuracy`` means, and whether a bracket met it: the one place that defines it.

A query asks for brackets ``[lower, upper]`` around tight values; ``accuracy`` (``--accuracy``,
default :data:`shuffle_lib.core.fourier.DEFAULT_ACCURACY` = 2e-4) says how narrow.

* **eps brackets** (``epsilon`` queries) meet ``accuracy`` a when their half-width is at most
  :func:`eps_demand` of a and their upper end:

      (upper - lower) / 2 <= max(a / 100, min(a max(1, upper), 25 a upper)),

  relative above eps = 1 (a upper: the contract stays reachable at eps ~ 1e5, 10^6 rounds),
  absolute a on [0.04, 1], relative again below 0.04 (25 a upper: at the default a bracket is at
  most 1 % wide, a relative half-width of 0.5 %), and never asked below a / 100 (2e-6 at the
  default), so that eps -> 0 stays reachable.  The grid's step is chosen for an absolute
  half-width a (K h = 2a for up/down rounding, Hoeffding's shift a for mean-preserving
  rounding), so from eps = 0.04 on the first grid is aimed at the contract, but its tail and
  rounding allowances can leave a bracket a little wider (krr-strong, n = 1e5, gamma = 0.3,
  K = 2, delta = 1e-4: half-width 2.3e-4 at a = 2e-4).  A bracket that misses, at any eps, by no
  more than the grid explains is evaluated again at the accuracy the demand implies
  (:func:`finer_accuracy`; :func:`shuffle_lib.core.evaluate.refined_epsilon`).
* **delta brackets** (``delta`` queries) meet it when their width is at most ``rtol`` of the upper
  end: upper - lower <= rtol upper, rtol = :func:`delta_rtol` (1 % up to 100 rounds, 5 % above)
  unless given; ``accuracy`` is then the half-width in eps of the first grid, which
  :func:`shuffle_lib.core.fourier.delta_bracket` refines (accuracy / 4 at a time) until ``rtol``
  is met.  A delta bracket is met by definition when both ends are equal (exact or both 0).

A bracket that misses says why, as :data:`LIMITS` names it:

* ``"memory"``: a finer grid would exceed the grid-size cap or ``MEMORY_LIMIT``;
* ``"floating-point floor"``: the value lies below the FFT's round-off floor (delta below
  :data:`DELTA_FLOOR`, where the grid's error relative to the tilted peak is the whole value);
* ``"grid step"``: the caller fixed the grid step ``h``;
* ``"mechanism bounds"``: the mechanism's own upper and lower models (dominating and dominated
  PLDs, tail cuts, a mechanism's own method) differ by more than the accuracy: no finer grid closes
  that gap.

There is no time limit: every query runs until its accuracy or one of these limits.  The accountant
records the limit it hit for each target (:func:`note`) while a :func:`collect` block is open; the
command line and ``shuffle_lib.mechanism_brackets`` read it (:func:`annotate`).
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Iterator, Sequence
from typing import Literal

from shuffle_lib.core import validate as v
from shuffle_lib.core.types import Bracket

LIMITS = ("memory", "floating-point floor", "grid step", "mechanism bounds")
"""What can stop a query short of its accuracy (module docstring)."""

DELTA_FLOOR = 1e-10
"""delta brackets below this upper end are not refined: the FFT's round-off floor."""

Verb = Literal["delta", "epsilon"]

_NOTES: contextvars.ContextVar[dict | None] = contextvars.ContextVar("accuracy_notes", default=None)


def delta_rtol(K: int) -> float:
    """The relative width a delta bracket of K rounds is refined to by default: 1 % up to 100
    rounds, 5 % above."""
    return 0.01 if K <= 100 else 0.05


EPS_RELATIVE = 25.0
"""Below eps = 1 / EPS_RELATIVE an eps bracket's half-width is asked to be EPS_RELATIVE x accuracy
x its upper end (:func:`eps_demand`)."""

EPS_FLOOR = 0.01
"""No eps bracket is asked for a half-width below EPS_FLOOR x accuracy (:func:`eps_demand`)."""


def eps_demand(accuracy: float, upper: float) -> float:
    """The half-width an eps bracket with upper end ``upper`` must reach to meet ``accuracy`` a:
    max(a EPS_FLOOR, min(a max(1, upper), a EPS_RELATIVE upper)) (module docstring); +inf for an
    infinite ``upper``, where no half-width is asked."""
    if not math.isfinite(upper):
        return math.inf
    return max(EPS_FLOOR * accuracy,
               min(accuracy * max(1.0, upper), EPS_RELATIVE * accuracy * upper))


GRID_SHARE = 2.0
"""A first grid at ``accuracy`` a accounts for an eps half-width of about a (its step is chosen
for it); a half-width above GRID_SHARE x a is the mechanism's own bounds
(:func:`finer_accuracy`)."""


def finer_accuracy(bracket: Bracket, accuracy: float) -> float | None:
    """The accuracy to evaluate an eps bracket (of a first grid at ``accuracy``) again at, or None.

    For a finite bracket that misses the demand (:func:`eps_demand`): that demand.  None where
    the bracket meets it, or where the half-width exceeds :data:`GRID_SHARE` x ``accuracy``: more
    than the grid's rounding explains, so the mechanism's own bounds, which a finer grid does not
    close (OUE, d = 100, eps0 = 1, n = 1e5, K = 2: 19 % wide, 17 % on a 3x finer grid)."""
    lo, hi = float(bracket[0]), float(bracket[1])
    want = eps_demand(accuracy, hi)
    if lo == hi or hi - lo <= 2.0 * want or hi - lo > 2.0 * GRID_SHARE * accuracy:
        return None
    return want


def met(verb: Verb, bracket: Bracket, accuracy: float, compositions: int = 1,
        rtol: float | None = None) -> bool:
    """True when ``bracket`` meets ``accuracy`` (eps brackets, ``verb="epsilon"``) or ``rtol``
    (delta brackets, default :func:`delta_rtol` of ``compositions``): module docstring.

    Raises:
        ValueError: for a verb other than "delta" / "epsilon", or accuracy / rtol outside (0, 1].
    """
    v.choice("verb", verb, ("delta", "epsilon"))
    accuracy = v.real("accuracy", accuracy, 0.0, 1.0, lo_open=True)
    lo, hi = float(bracket[0]), float(bracket[1])
    if lo == hi:
        return True
    if verb == "epsilon":
        return math.isfinite(hi) and hi - lo <= 2.0 * eps_demand(accuracy, hi)
    tol = (
        delta_rtol(v.integer("compositions", compositions, lo=1))
        if rtol is None
        else v.real("rtol", rtol, 0.0, 1.0, lo_open=True)
    )
    return hi - lo <= tol * hi


def half_width(bracket: Bracket) -> float:
    """(upper - lower) / 2, +inf for an infinite upper end over a finite lower one, 0 when equal."""
    lo, hi = float(bracket[0]), float(bracket[1])
    return 0.0 if lo == hi else (hi - lo) / 2.0


def note(verb: Verb, targets: Sequence[float], limit: str) -> None:
    """Record that ``limit`` (one of :data:`LIMITS`) stopped the refinement of these targets, for
    the open :func:`collect` block (nothing happens outside one).  The first limit noted for a
    target is kept."""
    notes = _NOTES.get()
    if notes is None:
        return
    for t in targets:
        notes.setdefault((verb, float(t)), limit)


@contextlib.contextmanager
def collect() -> Iterator[dict]:
    """A block whose accountant calls record their limits (:func:`note`) in the dict yielded,
    keyed by (verb, target)."""
    notes: dict = {}
    token = _NOTES.set(notes)
    try:
        yield notes
    finally:
        _NOTES.reset(token)


def limit_of(verb: Verb, target: float, bracket: Bracket, notes: dict) -> str:
    """Why a bracket missed its accuracy: the limit the accountant noted for the target, else the
    floating-point floor for a delta (or a delta target) below :data:`DELTA_FLOOR`, else the
    mechanism's own bounds."""
    noted = notes.get((verb, float(target)))
    if noted is not None:
        return noted
    tiny = bracket[1] if verb == "delta" else target
    return "floating-point floor" if tiny < DELTA_FLOOR else "mechanism bounds"


def annotate(verb: Verb, targets: Sequence[float], brackets: Sequence[Bracket], accuracy: float,
             compositions: int = 1, notes: dict | None = None) -> list[Bracket]:
    """The brackets with ``accuracy_met`` (bool) and ``limit`` (None, or what stopped a missed
    one: :data:`LIMITS`) set, as ``shuffle_lib.mechanism_brackets`` returns them."""
    out = []
    for t, br in zip(targets, brackets):
        ok = met(verb, br, accuracy, compositions)
        out.append(Bracket(br[0], br[1], accuracy_met=ok,
                           limit=None if ok else limit_of(verb, t, br, notes or {})))
    return out
