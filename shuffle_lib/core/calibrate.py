"""Calibration: the least private parameter value that still meets a target (eps, delta).

:func:`search` knows no parameter name: the caller gives the range, the direction in which the
mechanism gets more private and whether the parameter is an integer (the command line takes them
from the registry's declarations).

"Meets" is judged by the certified *upper* bound on delta, so the value returned is safe:
the tight delta at that value is at most the target.  The search assumes the upper bound
is monotone in the parameter (more noise, more users or fewer LDP bits never cost privacy),
and checks the end points: a target no value in the range meets is an error.

* continuous parameters (eps0, gamma, q): bisection to a relative tolerance, returning the
  side that meets the target;
* integer parameters (n, m): doubling from the lower end, then integer bisection.
"""

from __future__ import annotations

from collections.abc import Callable

from shuffle_lib.core import search as one_d
from shuffle_lib.core import validate as v


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
