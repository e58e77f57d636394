"""The certified one-dimensional searches every inversion and calibration uses.

Each search keeps a predicate's two sides apart and never returns a point it has not evaluated
on the side asked for, so a certified predicate (an upper bound <= a target, a lower bound >
it) gives a certified end:

* :func:`narrow` -- bisection between a point where the predicate holds and one where it fails,
  until the caller's stopping rule (arithmetic or geometric midpoints, integers too);
* :func:`step_out` -- doubling steps away from a guess until the predicate holds, clamped at a
  bound: the outward certification of an end found by a faster, uncertified method;
* :func:`illinois` -- regula falsi on log f (the Illinois variant) for a decreasing f, then
  bisection: the least x found with f(x) <= target.

The stopping rules stay with the callers (each is part of what a test or a printed number
pins); the searches only loop.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TypeVar

import numpy as np

T = TypeVar("T", int, float)


def arithmetic(a: float, b: float) -> float:
    """The midpoint 0.5 (a + b)."""
    return 0.5 * (a + b)


def geometric(a: float, b: float) -> float:
    """The midpoint sqrt(a b) of two positive ends."""
    return math.sqrt(a * b)


def integer_mid(a: int, b: int) -> int:
    """The integer midpoint floor((a + b) / 2)."""
    return (a + b) // 2


def narrow(holds: Callable[[T], bool], yes: T, no: T, done: Callable[[T, T], bool],
           mid: Callable[[T, T], T] = arithmetic,  # type: ignore[assignment]
           max_steps: int | None = None) -> tuple[T, T]:
    """Bisection: (yes, no) with ``holds(yes)`` and not ``holds(no)`` (as given; either may be the
    larger) narrowed until ``done(yes, no)`` or ``max_steps`` evaluations.  Each midpoint
    replaces the end on its side, so both ends keep their sides."""
    steps = 0
    while not done(yes, no) and (max_steps is None or steps < max_steps):
        m = mid(yes, no)
        if holds(m):
            yes = m
        else:
            no = m
        steps += 1
    return yes, no


def step_out(holds: Callable[[float], bool], x: float, step: float, down: bool,
             bound: float) -> float:
    """``x`` moved away by steps that double (down or up, clamped at ``bound``) until
    ``holds(x)`` or ``x`` reaches ``bound``; the bound itself is returned unevaluated."""
    while (x > bound if down else x < bound) and not holds(x):
        x = max(x - step, bound) if down else min(x + step, bound)
        step *= 2
    return x


def illinois(f: Callable[[float], float], target: float, lo: float, hi: float,
             done: Callable[[float, float], bool], max_steps: int = 60,
             falsi_steps: int = 40) -> float:
    """For f decreasing with f(lo) > target >= f(hi): an x in [lo, hi] with f(x) <= target, near
    the least one.  Regula falsi on log f - log target with the Illinois halving for the first
    ``falsi_steps`` steps (a step outside the bracket bisects), bisection after; stops when
    ``done(lo, hi)`` or after ``max_steps`` evaluations and returns the end with f <= target."""
    log_t = math.log(target)
    glo, ghi = math.log(f(lo)) - log_t, math.log(max(f(hi), 1e-300)) - log_t
    side = 0
    for i in range(max_steps):
        if done(lo, hi):
            break
        mid = (
            hi - ghi * (hi - lo) / (ghi - glo)
            if i < falsi_steps and math.isfinite(ghi) and ghi < glo
            else 0.5 * (lo + hi)
        )
        if not lo < mid < hi:
            mid = 0.5 * (lo + hi)
        fm = f(mid)
        gm = math.log(max(fm, 1e-300)) - log_t
        if fm <= target:
            hi, ghi = mid, gm
            if side == 1:
                glo *= 0.5
            side = 1
        else:
            lo, glo = mid, gm
            if side == -1:
                ghi *= 0.5
            side = -1
    return hi


def narrow_arrays(holds: Callable[[np.ndarray], np.ndarray], yes: np.ndarray, no: np.ndarray,
                  steps: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`narrow` elementwise on arrays of brackets, a fixed number of arithmetic steps."""
    for _ in range(steps):
        m = 0.5 * (yes + no)
        h = holds(m)
        yes, no = np.where(h, m, yes), np.where(h, no, m)
    return yes, no
