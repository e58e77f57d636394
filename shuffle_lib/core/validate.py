"""Input checks shared by every module.

Each check raises ``ValueError`` naming the parameter, the allowed range and the
value received, so that bad input never turns into a NaN, a hang or a silently
wrong answer.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

import numpy as np

PMF_TOL = 1e-9  # |sum(pmf) - 1| allowed before a PMF is rejected


def real(name: str, x: object, lo: float = -math.inf, hi: float = math.inf, lo_open: bool = False,
         hi_open: bool = False, allow_inf: bool = False) -> float:
    """Return ``x`` as a float after checking ``lo <(=) x <(=) hi`` and not NaN; infinities are
    refused unless ``allow_inf`` (then +-inf pass where the range contains them)."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a real number, got {name}={x!r}.") from None
    left = "(" if lo_open else "["
    right = ")" if hi_open else "]"
    rng = f"{left}{lo:g}, {hi:g}{right}"
    bad = (
        math.isnan(v)
        or (math.isinf(v) and not allow_inf)
        or (v <= lo if lo_open else v < lo)
        or (v >= hi if hi_open else v > hi)
    )
    if bad:
        raise ValueError(f"{name} must lie in {rng}, got {name}={x!r}.")
    return v


def reals(name: str, xs: float | Sequence[float] | np.ndarray, **kw) -> np.ndarray:
    """Validate every entry of a scalar or sequence; return a 1-d float array."""
    arr = np.atleast_1d(np.asarray(xs, dtype=object))
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty number or list of numbers, got {xs!r}.")
    return np.array([real(name, x, **kw) for x in arr], dtype=float)


def integer(name: str, x: object, lo: float = -math.inf, hi: float = math.inf) -> int:
    """Return ``x`` as an int after checking it is integral and in ``[lo, hi]``."""
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
        if isinstance(x, (float, np.floating)) and float(x).is_integer():
            x = int(x)
        else:
            raise ValueError(f"{name} must be an integer in [{lo:g}, {hi:g}], got {name}={x!r}.")
    if not lo <= x <= hi:
        raise ValueError(f"{name} must be an integer in [{lo:g}, {hi:g}], got {name}={x!r}.")
    return int(x)


def probability(name: str, x: object, open_left: bool = True, open_right: bool = True) -> float:
    """A probability in (0, 1) (ends open unless told otherwise)."""
    return real(name, x, 0.0, 1.0, lo_open=open_left, hi_open=open_right)


def pmf(name: str, p: Sequence[float] | np.ndarray) -> np.ndarray:
    """Check a PMF: 1-d, finite, non-negative, sums to 1 within ``PMF_TOL``."""
    try:
        arr = np.asarray(p, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a list of probabilities, got {p!r}.") from None
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-d list of probabilities, got shape {arr.shape}.")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must contain finite probabilities in [0, 1], got a NaN or inf.")
    if np.any(arr < 0) or np.any(arr > 1):
        bad = arr[(arr < 0) | (arr > 1)][0]
        raise ValueError(f"{name} must contain probabilities in [0, 1], got {bad!r}.")
    total = math.fsum(arr)
    if abs(total - 1.0) > PMF_TOL:
        raise ValueError(f"{name} must sum to 1 (within {PMF_TOL:g}), got sum={total!r}.")
    return arr


def json_file(option: str, path: str) -> object:
    """The parsed JSON of the file ``path`` given as ``option`` (ValueError naming the option when
    the file cannot be read or is not JSON; NaN and infinities are refused, as JSON has none)."""
    def _no_constant(name):
        raise ValueError(f"{option}: {path!r} holds {name}, which is not a JSON number.")
    try:
        with open(path) as fh:
            return json.load(fh, parse_constant=_no_constant)
    except OSError as e:
        raise ValueError(f"{option}: cannot read {path!r}: {e.strerror}.") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{option}: {path!r} is not valid JSON ({e.msg}, line {e.lineno}).") from None


def choice(name: str, x: object, choices: Sequence[str]) -> str:
    """Return ``x`` after checking it is one of ``choices`` (ValueError naming ``name`` and the choices)."""
    if not isinstance(x, str) or x not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}, got {name}={x!r}.")
    return x


def stochastic_matrix(name: str, R: object, tol: float = PMF_TOL) -> np.ndarray:
    """A randomiser matrix (rows inputs, columns outputs) as a 2-d float array: at least 2 rows,
    entries finite and in [0, 1], every row summing to 1 within ``tol`` (ValueError naming ``name``)."""
    try:
        arr = np.asarray(R, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a matrix of probabilities (a list of rows), got {name}={R!r}.") from None
    if arr.ndim != 2 or arr.shape[0] < 2 or arr.shape[1] < 1:
        raise ValueError(f"{name} must be a 2-d matrix with at least 2 rows, got shape {arr.shape}.")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0) or np.any(arr > 1):
        raise ValueError(f"{name} must hold finite probabilities in [0, 1].")
    sums = np.array([math.fsum(row) for row in arr])
    bad = np.flatnonzero(np.abs(sums - 1.0) > tol)
    if bad.size:
        raise ValueError(f"{name} is not a randomiser: row {bad[0]} sums to {sums[bad[0]]!r}, not 1 "
                         f"(within {tol:g}).")
    return arr


def instance(name: str, x: object, cls: type | tuple[type, ...]) -> object:
    """Return ``x`` after checking it is an instance of ``cls`` (TypeError naming ``name``)."""
    if not isinstance(x, cls):
        want = " or ".join(c.__name__ for c in (cls if isinstance(cls, tuple) else (cls,)))
        raise TypeError(f"{name} must be a {want}, got {name}={x!r}.")
    return x


def integers(name: str, x: object, lo: float = -math.inf, hi: float = math.inf) -> np.ndarray:
    """An integer or array of integers as an int64 array of the same shape, every entry integral and
    in ``[lo, hi]`` (ValueError naming ``name``).  Vectorised: O(size) in numpy, no Python loop."""
    want = f"{name} must be an integer or array of integers in [{lo:g}, {hi:g}]"
    if isinstance(x, (bool, np.bool_)) or x is None or isinstance(x, str):
        raise ValueError(f"{want}, got {name}={x!r}.")
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{want}, got {name}={x!r}.") from None
    if arr.dtype.kind == "O":         # Python ints beyond int64, or mixed objects
        try:
            arr = arr.astype(float)
        except (TypeError, ValueError, OverflowError):
            raise ValueError(f"{want}, got {name}={x!r}.") from None
    if arr.dtype.kind not in "iuf":
        raise ValueError(f"{want}, got {name}={x!r}.")
    if arr.size and (arr.dtype.kind == "f" and not (np.all(np.isfinite(arr)) and np.all(arr == np.floor(arr)))
                     or np.min(arr) < lo or np.max(arr) > hi):
        raise ValueError(f"{want}, got {name}={x!r:.80}.")
    if arr.size and arr.dtype.kind != "i" and np.max(np.abs(arr)) >= 2.0 ** 63:
        raise ValueError(f"{want}, got {name}={x!r:.80}.")
    return arr.astype(np.int64, copy=False)


def array(name: str, x: object, ndim: int | None = None, lo: float = -math.inf, hi: float = math.inf) -> np.ndarray:
    """A non-empty array of finite reals in [``lo``, ``hi``] (of ``ndim`` dimensions if given) as floats
    (ValueError naming ``name``).  Vectorised: O(size) in numpy, no Python loop."""
    shape = f"{ndim}-d " if ndim is not None else ""
    want = f"{name} must be a non-empty {shape}array of finite numbers" + (
        f" in [{lo:g}, {hi:g}]" if lo > -math.inf or hi < math.inf else "")
    if x is None or isinstance(x, str):
        raise ValueError(f"{want}, got {name}={x!r}.")
    try:
        arr = np.asarray(x, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{want}, got {name}={x!r:.80}.") from None
    if arr.size == 0 or (ndim is not None and arr.ndim != ndim) or not np.all(np.isfinite(arr)) \
            or np.any(arr < lo) or np.any(arr > hi):
        raise ValueError(f"{want}, got {name}={x!r:.80}.")
    return arr
