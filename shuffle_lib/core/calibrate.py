"""Calibration: the least private parameter value that still meets a target (eps, delta).

:func:`calibrate_mechanism` solves for one declared privacy setting of a mechanism (the range,
direction and kind come from its declaration); :func:`search` knows no parameter name: the
caller gives the range, the direction in which the mechanism gets more private and whether the
parameter is an integer.

"Meets" is judged by the certified *upper* bound on delta, so the value returned is safe:
the tight delta at that value is at most the target.  The search assumes the upper bound
is monotone in the parameter (more noise, more users or fewer LDP bits never cost privacy),
and checks the end points: a target no value in the range meets is an error.

* continuous parameters (eps0, gamma, q): bisection to a relative tolerance, returning the
  side that meets the target;
* integer parameters (n, m): doubling from the lower end, then integer bisection.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from shuffle_lib.core import evaluate
from shuffle_lib.core import search as one_d
from shuffle_lib.core import validate as v
from shuffle_lib.core.fourier import DEFAULT_ACCURACY
from shuffle_lib.core.registry import Mechanism, Param


def search(
    meets: Callable[[float], bool],
    lo: float,
    hi: float,
    direction: str,
    integer: bool = False,
    rtol: float = 1e-4,
    name: str = "value",
) -> float:
    """Least private value in [lo, hi] for which ``meets(value)`` is True.

    ``meets`` must be monotone: True from some point on in ``direction`` ("up": larger values are
    more private; "down": smaller ones are).  Continuous values: bisection (geometric when both
    ends are positive) to relative tolerance ``rtol``, returning the side that meets.  Integers:
    doubling from the less private end, then integer bisection.  ValueError if even the most
    private end fails.
    """
    if not callable(meets):
        raise TypeError(
            f"meets must be a function of one value returning a bool, got meets={meets!r:.80}."
        )
    direction = v.choice("direction", direction, ("up", "down"))
    lo = v.real("lo", lo)
    hi = v.real("hi", hi, lo)
    rtol = v.real("rtol", rtol, 0.0, 0.5, lo_open=True)
    if integer:
        return _integer_search(meets, int(lo), int(hi), name, direction)
    safe, risky = (hi, lo) if direction == "up" else (lo, hi)
    if not meets(safe):
        raise ValueError(
            f"no {name} in [{lo:g}, {hi:g}] meets the target (not even {name}={safe:g})."
        )
    if meets(risky):
        return risky
    # geometric midpoints when both ends are positive
    mid = one_d.geometric if safe > 0 and risky > 0 else one_d.arithmetic
    return one_d.narrow(meets, safe, risky, lambda a, b: abs(a - b) <= rtol * abs(a), mid)[0]


def _integer_search(meets, lo, hi, name, direction):
    if direction == "down":        # mirror: more private downwards
        return -_integer_search(lambda x: meets(-x), -hi, -lo, name, "up")
    if meets(lo):
        return lo
    bad, good = lo, None
    step = max(abs(lo), 1)
    while good is None:
        cand = min(bad + step, hi)
        if meets(cand):
            good = cand
        elif cand == hi:
            raise ValueError(f"no {name} in [{lo}, {hi}] meets the target.")
        else:
            bad, step = cand, step * 2
    return one_d.narrow(meets, good, bad, lambda a, b: a - b <= 1, one_d.integer_mid)[0]


def _search_range(mech: Mechanism, param: Param, fixed: dict) -> tuple[float, float]:
    """The range searched for ``param`` given the fixed values: the declaration's
    ``calibration_range`` when it narrows it, else the declared range (an open end searched from
    just inside it)."""
    narrowed = (mech.calibration_range(param.name, fixed)
                if mech.calibration_range is not None else None)
    if narrowed is not None:
        return narrowed
    lo = -math.inf if param.lo is None else param.lo
    hi = math.inf if param.hi is None else param.hi
    if param.kind is float and param.lo_open:  # an open end is searched from just inside it
        lo = (1e-9 if hi <= 1.0 else 1e-6) if lo == 0.0 else lo + 1e-9 * max(1.0, abs(lo))
    if param.kind is float and param.hi_open:
        hi = hi - 1e-9 * max(1.0, abs(hi))
    return lo, hi


def calibrate_mechanism(mech: Mechanism, solve: str, eps: float, delta: float, fixed: dict,
                        compositions: int = 1,
                        accuracy: float = DEFAULT_ACCURACY) -> tuple[dict, float, float]:
    """(parameters, value, delta_upper): the least private value of the privacy setting
    ``solve`` whose certified upper delta at ``eps`` after ``compositions`` rounds is <= ``delta``,
    the other parameters ``fixed``; the parameters are those the model reports at that value."""
    v.instance("mech", mech, Mechanism)
    param = mech.param(v.choice("solve", solve, [p.name for p in mech.params]))
    if param.more_private is None:
        allowed = ", ".join(mech.privacy_settings) or "none"
        raise ValueError(f"--solve {param.name.replace('_', '-')}: {param.option} of {mech.name} "
                         f"is not a privacy setting (calibrate solves for one of: {allowed}).")
    eps = v.real("eps", eps, 0.0)
    delta = v.probability("delta", delta)
    last: dict = {}

    def upper(value):
        params, model = mech.model(dict(fixed, **{param.name: value}), compositions, accuracy)
        br = evaluate.delta_brackets(model, [eps], compositions, accuracy=accuracy)[0]
        last[value] = (params, br.upper)
        return br.upper

    lo, hi = _search_range(mech, param, fixed)
    value = search(lambda x: upper(int(x) if param.kind is int else x) <= delta, lo, hi,
                   param.more_private, param.kind is int, name=param.name)
    value = int(value) if param.kind is int else value
    if value not in last:
        upper(value)
    params, d_up = last[value]
    return params, value, d_up
