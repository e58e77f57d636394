"""The certified one-dimensional searches every inversion and calibration uses.

Each search keeps a predicate's two sides apart and never returns a point it has not evaluated
on the side asked for, so a certified predicate (an upper bound <= a target, a lower bound >
it) gives a certified end:

* :func:`narrow` -- bisection between a point where the predicate holds and one where it fails,
  until the caller's stopping rule (arithmetic or geometric midpoints, integers too);
* :func:`step_out` -- doubling steps away from a guess until the predicate holds, clamped at a
  bound: the outward certification of an end found by a faster, uncertified method;
* :func:`illinois` -- regula falsi on log f (the Illinois variant) for a decreasing f, then
  bisection: the least x found with f(x) <= target;
* :func:`secant_from_guess` -- for a non-increasing g: secant steps from a guess (and an
  estimated slope) until g changes sign, then regula falsi inside the bracket, each step aimed a
  little to the side where g <= 0: the least point found with g <= 0, in few evaluations when
  the guess is good (calibration, where each evaluation is a full query).

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


def secant_from_guess(g: Callable[[float], float], lo: float, hi: float, guess: float,
                      done: Callable[[float, float], bool], slope: float | None = None,
                      step: float = 1.0, tol: float = 0.0,
                      snap: Callable[[float], float] | None = None,
                      max_steps: int = 60) -> tuple[float | None, float | None]:
    """For g non-increasing on [lo, hi]: (yes, no), ``yes`` the least point evaluated with
    g(yes) <= 0 (None if none, e.g. g(hi) > 0) and ``no`` the largest point below it evaluated
    with g(no) > 0 (None if none, e.g. g(lo) <= 0).

    Starts at ``guess``; while one side is unknown, a Newton step with ``slope`` (d g / d t, <
    0; later the secant of the two points nearest the sign change), at least ``tol`` and at most
    ``step`` long (the limit doubling each time it binds), clamped at [lo, hi]; once g has
    changed sign, the secant of the two points nearest the aim, falling back to bisection when
    it would leave the bracket or three steps have not halved the miss.  Every
    step aims at g = slope * tol / 4, a quarter of the tolerance to the g <= 0 side, so that the
    last step usually lands there.

    Stops when ``done(no, yes)``, at an end of the range, or (``tol`` > 0, no ``snap``) when the
    secant through ``yes`` and a point within 0.1 of it puts the sign change within tol / 2
    below ``yes``: an estimate, as no evaluation confirms the other side there.  ``snap`` maps a
    proposed point to one the caller can evaluate (e.g. an integer); a proposal that snaps onto
    an evaluated point is moved on (outward steps doubled, or the bracket's midpoint), and the
    search stops when no new point is left between the sides.
    """
    pts: dict[float, float] = {}

    def sides() -> tuple[float | None, float | None]:
        yes = min((t for t, x in pts.items() if x <= 0), default=None)
        no = max((t for t, x in pts.items() if x > 0 and (yes is None or t < yes)), default=None)
        return yes, no

    def secant(t0: float) -> tuple[float | None, float | None]:
        """(slope, distance to the nearest other point) at t0: the secant's when it falls."""
        near = min((t for t in pts if t != t0), key=lambda t: abs(t - t0), default=None)
        if near is None:
            return slope, None
        s = (pts[near] - pts[t0]) / (near - t0)
        return (s if s < 0 else slope), abs(near - t0)

    order: list[float] = []
    misses: list[float] = []

    def ev(t: float) -> bool:
        t = min(max(snap(t) if snap is not None else t, lo), hi)
        if t in pts:
            return False
        pts[t] = g(t)
        order.append(t)
        return True

    ev(guess)
    for _ in range(max_steps):
        yes, no = sides()
        if yes is not None and no is not None and done(no, yes):
            break
        if (yes is not None and yes <= lo) or (yes is None and no is not None and no >= hi):
            break
        t0 = yes if yes is not None else no
        assert t0 is not None
        s, gap = secant(t0)
        aim = s * tol / 4 if s is not None else 0.0
        if (yes is not None and tol > 0 and snap is None and s is not None and gap is not None
                and gap <= 0.1 and pts[yes] / s <= tol / 2):
            break
        if yes is not None and no is not None:
            # the secant of the two points nearest the aim; bisection when it would leave the
            # bracket or the last three steps have not halved the miss
            a, b = sorted(pts, key=lambda t: abs(pts[t] - aim))[:2]
            misses.append(abs(pts[a] - aim))
            p = 0.5 * (yes + no)
            if pts[a] != pts[b] and (len(misses) < 4 or misses[-1] <= 0.5 * misses[-4]):
                q = a - (pts[a] - aim) * (a - b) / (pts[a] - pts[b])
                p = q if no < q < yes else p
            if not ev(p) and not ev(0.5 * (yes + no)):
                break
            continue
        g0 = pts[t0]
        dist = (aim - g0) / s if s is not None else (step if g0 > 0 else -step)
        floor = max(tol, 1e-12)            # always a move (snapped points double it on)
        dist = max(dist, floor) if g0 > 0 else min(dist, -floor)
        for _ in range(64):
            if abs(dist) > step:
                dist, step = math.copysign(step, dist), 2 * step
            if ev(t0 + dist) or not lo < t0 + dist < hi:
                break
            dist *= 2
    return sides()
