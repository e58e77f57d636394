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

from scipy.optimize import brentq

from shuffle_lib.core import evaluate
from shuffle_lib.core import search as one_d
from shuffle_lib.core import validate as v
from shuffle_lib.core.constants import MAX_COMPOSITIONS
from shuffle_lib.core.fourier import DEFAULT_ACCURACY
from shuffle_lib.core.registry import Mechanism, Param
from shuffle_lib.core.tradeoff import log_gaussian_delta


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


def _log_mu(log_delta: float, eps: float) -> float:
    """log mu of the mu-Gaussian DP curve through (eps, e^log_delta) (Dong, Roth & Su 2022,
    Cor. 2.13), clamped to mu in [MU_MIN, MU_MAX]: increasing in delta."""
    def gap(log_mu: float) -> float:
        return log_gaussian_delta(math.exp(-log_mu), eps) - log_delta
    lo, hi = math.log(MU_MIN), math.log(MU_MAX)
    if gap(lo) >= 0:
        return lo
    if gap(hi) <= 0:
        return hi
    return float(brentq(gap, lo, hi, xtol=1e-12))


MU_MIN, MU_MAX = 1e-6, 1e3
"""The mu range of :func:`_log_mu` (mu = 1e3 is delta ~ 1 at every eps below 1e5)."""


def _objective(mech: Mechanism, name: str, fixed: dict, eps: float, delta: float,
               compositions: int, accuracy: float, cache: dict) -> Callable[[float], float]:
    """value -> the distance from the target in mu-Gaussian coordinates: |log mu(delta_upper) -
    log mu(delta)|, signed as log delta_upper - log delta (so its sign is exactly whether the
    certified upper delta at eps meets the target), each value evaluated once
    (``cache[value] = (params, delta_upper)``).

    mu-GDP coordinates, as the composition theorem of Dong, Roth & Su 2022 (Cor. 3.3, mu_K =
    sqrt(K) mu_1) makes them nearly linear in the log of a privacy setting where log delta is
    not (log delta ~ -eps^2 / (2 mu^2)): secant steps land in few evaluations, and a slope
    measured on one round carries over to K rounds."""
    target = _log_mu(math.log(delta), eps)

    def f(value: float) -> float:
        if value not in cache:
            params, model = mech.model(dict(fixed, **{name: value}), compositions, accuracy)
            br = evaluate.delta_brackets(model, [eps], compositions, accuracy=accuracy)[0]
            cache[value] = (params, br.upper)
        ld = math.log(max(cache[value][1], 1e-300))
        if ld == math.log(delta):
            return 0.0
        return math.copysign(max(abs(_log_mu(ld, eps) - target), 1e-15), ld - math.log(delta))
    return f


def _solve(mech: Mechanism, param: Param, eps: float, delta: float, fixed: dict,
           compositions: int, accuracy: float, rtol: float,
           guess: tuple[float, float | None] | None, cache: dict
           ) -> tuple[float | None, float, float | None]:
    """(the least private value found meeting the target, or None; its range's most private
    end; the slope d g / d t near the answer, or None) by
    :func:`shuffle_lib.core.search.secant_from_guess` on g (:func:`_objective`) of t, the log of
    the value (or the value, for a range reaching 0) signed so that t grows where the mechanism
    gets more private; ``guess`` is (value, d g / d t or None) or None (then the range's
    middle, with first steps of a quarter of the range: a privacy setting's range spans orders
    of magnitude)."""
    lo, hi = _search_range(mech, param, fixed)
    sign = 1.0 if param.more_private == "up" else -1.0
    positive = lo > 0
    integer = param.kind is int

    def to_t(x: float) -> float:
        return sign * (math.log(x) if positive else x)

    def to_x(t: float) -> float:
        x = math.exp(sign * t) if positive else sign * t
        x = min(max(x, lo), hi)
        return float(round(x)) if integer else x

    f = _objective(mech, param.name, fixed, eps, delta, compositions, accuracy, cache)
    t_lo, t_hi = sorted((to_t(lo), to_t(hi)))
    if guess is None:
        start, slope, step = 0.5 * (t_lo + t_hi), None, max(1.0, 0.25 * (t_hi - t_lo))
    else:
        start, slope, step = to_t(guess[0]), guess[1], 0.05

    def done(no: float, yes: float) -> bool:
        if integer:
            return abs(to_x(yes) - to_x(no)) <= 1
        return yes - no <= rtol

    g_at: dict[float, float] = {}

    def g(t: float) -> float:
        g_at[t] = f(int(to_x(t)) if integer else to_x(t))
        return g_at[t]

    yes, _ = one_d.secant_from_guess(
        g, t_lo, t_hi, start, done, slope, step, 0.0 if integer else rtol,
        snap=(lambda t: to_t(to_x(t))) if integer else None)
    best = None if yes is None else (int(to_x(yes)) if integer else to_x(yes))
    return best, (hi if sign > 0 else lo), _slope_near(g_at, yes)


def _slope_near(g_at: dict[float, float], t0: float | None) -> float | None:
    """The secant slope of g through the two evaluated points nearest ``t0`` where g is finite
    and not clamped, when it falls (g is non-increasing); else None."""
    if t0 is None:
        return None
    pts = sorted(((t, y) for t, y in g_at.items() if math.isfinite(y)),
                 key=lambda p: abs(p[0] - t0))[:2]
    if len(pts) < 2 or pts[0][0] == pts[1][0]:
        return None
    s = (pts[1][1] - pts[0][1]) / (pts[1][0] - pts[0][0])
    return s if s < 0 else None


def _transfer_guess(mech: Mechanism, param: Param, eps: float, delta: float, fixed: dict,
                    compositions: int, accuracy: float) -> tuple[float, float | None] | None:
    """A starting point for ``compositions`` rounds from one round: (value, slope) or None.

    The composition is taken to be mu-Gaussian DP: mu_K from (eps, delta) (Dong, Roth & Su 2022,
    Cor. 2.13), each round mu_1 = mu_K / sqrt(K) (their Cor. 3.3), and one round calibrated at
    (eps_1, delta_1) on mu_1-GDP's curve, eps_1 = mu_1 (mu_1 / 2 + 1) (one standard deviation
    above the loss's mean), to a relative 1e-2 (only a start).  Shuffled randomisers at large n
    are close to Gaussian, and there the value lands within ~1e-3 of the answer; elsewhere it is
    only a start, as every value the calibration returns is judged by K rounds' own certified
    upper end.  The slope, in the mu coordinates of :func:`_objective`, is the one-round
    search's own near its answer: under mu_K = sqrt(K) mu_1 the log of mu has one slope for one
    round and for K.
    """
    mu = math.exp(_log_mu(math.log(delta), eps))
    if not MU_MIN < mu < MU_MAX:
        return None
    mu1 = mu / math.sqrt(compositions)
    e1 = mu1 * (mu1 / 2 + 1)
    ld1 = log_gaussian_delta(1 / mu1, e1) if mu1 >= MU_MIN else -math.inf
    if not -700 < ld1 < 0:
        return None
    try:
        x0, _, slope = _solve(mech, param, e1, math.exp(ld1), fixed, 1, accuracy, 1e-2, None, {})
    except ValueError:
        return None
    return None if x0 is None else (x0, slope)


def calibrate_mechanism(mech: Mechanism, solve: str, eps: float, delta: float, fixed: dict,
                        compositions: int = 1, accuracy: float = DEFAULT_ACCURACY,
                        rtol: float = 1e-4) -> tuple[dict, float, float]:
    """(parameters, value, delta_upper): the least private value of the privacy setting
    ``solve`` whose certified upper delta at ``eps`` after ``compositions`` rounds is <= ``delta``,
    the other parameters ``fixed``; the parameters are those the model reports at that value.

    Every value tried is a full query of ``compositions`` rounds at ``accuracy``, and the value
    returned is one of them, so its delta_upper is certified.  They are few: the search starts
    from a one-round calibration transferred to K rounds with its slope (:func:`_transfer_guess`;
    one-round queries are cheap where the build is) and takes secant steps on the distance to the
    target in mu-GDP coordinates (:func:`_objective`, :func:`_solve`), each aimed a little to the
    private side, until the least private value is pinned to a relative
    ``rtol`` (a failing value within rtol, or the secant's estimate of the distance to it).
    Integers (n, m) end between adjacent integers, both evaluated.
    """
    v.instance("mech", mech, Mechanism)
    param = mech.param(v.choice("solve", solve, [p.name for p in mech.params]))
    if param.more_private is None:
        allowed = ", ".join(mech.privacy_settings) or "none"
        raise ValueError(f"--solve {param.name.replace('_', '-')}: {param.option} of {mech.name} "
                         f"is not a privacy setting (calibrate solves for one of: {allowed}).")
    eps = v.real("eps", eps, 0.0)
    delta = v.probability("delta", delta)
    compositions = v.integer("compositions", compositions, lo=1, hi=MAX_COMPOSITIONS)
    rtol = v.real("rtol", rtol, 0.0, 0.5, lo_open=True)
    guess = (_transfer_guess(mech, param, eps, delta, fixed, compositions, accuracy)
             if compositions > 1 else None)
    cache: dict = {}
    value, safe, _ = _solve(mech, param, eps, delta, fixed, compositions, accuracy, rtol, guess,
                         cache)
    if value is None:
        lo, hi = _search_range(mech, param, fixed)
        raise ValueError(f"no {param.name} in [{lo:g}, {hi:g}] meets the target (not even "
                         f"{param.name}={safe:g}).")
    params, d_up = cache[value]
    return params, value, d_up
