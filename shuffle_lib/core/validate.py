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
    # an infinite end that is refused is shown open: '[0, inf]' read as if inf were allowed
    left = "(" if lo_open or (lo == -math.inf and not allow_inf) else "["
    right = ")" if hi_open or (hi == math.inf and not allow_inf) else "]"
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


def floats(name: str, x: object, what: str, shown: int | None = 80) -> np.ndarray:
    """``x`` as a float array, or ValueError "``name`` must be ``what``, got ``name``=..." (the
    value's repr cut to ``shown`` characters; all of it for None)."""
    try:
        return np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        text = repr(x) if shown is None else f"{x!r:.{shown}}"
        raise ValueError(f"{name} must be {what}, got {name}={text}.") from None


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
        raise ValueError(
            f"{name} must be a non-empty 1-d list of probabilities, got shape {arr.shape}."
        )
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must contain finite probabilities in [0, 1], got a NaN or inf.")
    if np.any(arr < 0) or np.any(arr > 1):
        bad = arr[(arr < 0) | (arr > 1)][0]
        raise ValueError(f"{name} must contain probabilities in [0, 1], got {bad!r}.")
    total = math.fsum(arr)
    if abs(total - 1.0) > PMF_TOL:
        raise ValueError(f"{name} must sum to 1 (within {PMF_TOL:g}), got sum={total!r}.")
    return arr


# a JSON input file's size limit (100 MB: a 4e6-entry --matrix in full precision)
JSON_MAX_BYTES = 10 ** 8
JSON_MAX_DEPTH = 8         # a JSON input file's nesting limit (--pmfs needs 2, --matrix 3)


def _json_number(option: str, path: str):
    """parse_float/parse_int for :func:`json_file`: a finite double, else ValueError naming the
    option."""
    def parse(text: str) -> float:
        try:
            x = float(text)
        except (ValueError, OverflowError):
            x = math.inf
        if not math.isfinite(x):
            raise ValueError(
                f"{option}: {path!r} holds the number {text[:40]}, outside the range of a double."
            )
        return x
    return parse


def _all_finite(node: object) -> bool:
    """True when every number in ``node`` is finite; a row is summed in C (an overflowing sum of
    finite numbers is a false alarm, which only costs :func:`json_file` a second parse)."""
    if isinstance(node, list):
        if all(type(x) is float for x in node):
            return math.isfinite(sum(node))
        return all(_all_finite(x) for x in node)
    if isinstance(node, dict):
        return all(_all_finite(x) for x in node.values())
    return not isinstance(node, float) or math.isfinite(node)


def _numbers_only(option: str, path: str, node: object, where: str = "", depth: int = 0) -> None:
    """Raise ValueError unless ``node`` is numbers in lists and objects, at most JSON_MAX_DEPTH
    deep."""
    if depth > JSON_MAX_DEPTH:
        raise ValueError(f"{option}: {path!r} is nested deeper than {JSON_MAX_DEPTH} levels.")
    if isinstance(node, dict):
        for key, value in node.items():
            _numbers_only(option, path, value, f"{where}.{key}" if where else key, depth + 1)
    elif isinstance(node, list):
        if all(type(x) is float for x in node):     # a row of numbers: nothing to walk
            return
        for i, value in enumerate(node):
            _numbers_only(option, path, value, f"{where}[{i}]", depth + 1)
    elif isinstance(node, bool) or not isinstance(node, (int, float)):
        kind = {str: "a string", bool: "a boolean", type(None): "null"}.get(
            type(node), type(node).__name__
        )
        raise ValueError(
            f"{option}: {path!r} holds {kind} at {where or 'the top'} ({json.dumps(node)[:40]}); "
            "only numbers are allowed."
        )


def json_file(option: str, path: str) -> object:
    """The parsed JSON of the file ``path`` given as ``option``: numbers (finite doubles) in lists
    and objects only, at most ``JSON_MAX_BYTES`` bytes and ``JSON_MAX_DEPTH`` levels deep.  Anything
    else (an unreadable file, invalid JSON or UTF-8, strings, booleans, null, NaN, Infinity, a
    number beyond a double's range) is a ValueError naming the option and the file, never a
    traceback (a deeply nested file raised RecursionError)."""
    def _no_constant(name):
        raise ValueError(f"{option}: {path!r} holds {name}, which is not a JSON number.")
    try:
        with open(path, "rb") as fh:
            raw = fh.read(JSON_MAX_BYTES + 1)
    except OSError as e:
        raise ValueError(f"{option}: cannot read {path!r}: {e.strerror or e}.") from None
    if len(raw) > JSON_MAX_BYTES:
        raise ValueError(
            f"{option}: {path!r} is larger than the limit of {JSON_MAX_BYTES / 1e6:g} MB."
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{option}: {path!r} is not UTF-8 text.") from None
    number = _json_number(option, path)
    try:
        # numbers parsed by the C float(); only a file with a number beyond a double's range is
        # parsed again with the hook that names it as written (a Python call per number costs
        # about a minute on a 4e6-entry --matrix)
        data = json.loads(text, parse_constant=_no_constant, parse_float=float, parse_int=float)
        if not _all_finite(data):
            data = json.loads(text, parse_constant=_no_constant, parse_float=number,
                              parse_int=number)
    except json.JSONDecodeError as e:
        raise ValueError(
            f"{option}: {path!r} is not valid JSON ({e.msg}, line {e.lineno})."
        ) from None
    except RecursionError:
        raise ValueError(
            f"{option}: {path!r} is nested deeper than {JSON_MAX_DEPTH} levels."
        ) from None
    _numbers_only(option, path, data)
    return data


def choice(name: str, x: object, choices: Sequence[str]) -> str:
    """Return ``x`` after checking it is one of ``choices`` (ValueError naming ``name`` and the
    choices)."""
    if not isinstance(x, str) or x not in choices:
        raise ValueError(
            f"{name} must be one of {', '.join(map(repr, choices))}, got {name}={x!r}."
        )
    return x


def stochastic_matrix(name: str, R: object, tol: float = PMF_TOL) -> np.ndarray:
    """A randomiser matrix (rows inputs, columns outputs) as a 2-d float array: at least 2 rows,
    entries finite and in [0, 1], every row summing to 1 within ``tol`` (ValueError naming
    ``name``)."""
    arr = floats(name, R, "a matrix of probabilities (a list of rows)", shown=None)
    if arr.ndim != 2 or arr.shape[0] < 2 or arr.shape[1] < 1:
        raise ValueError(
            f"{name} must be a 2-d array (a matrix) with at least 2 rows, got shape {arr.shape}."
        )
    if not np.all(np.isfinite(arr)) or np.any(arr < 0) or np.any(arr > 1):
        raise ValueError(f"{name} entries must be finite probabilities, >= 0 and <= 1.")
    sums = np.array([math.fsum(row) for row in arr])
    bad = np.flatnonzero(np.abs(sums - 1.0) > tol)
    if bad.size:
        raise ValueError(
            f"{name} is not a randomiser: row {bad[0]} sums to {float(sums[bad[0]])!r}, not 1 "
            f"(within {tol:g})."
        )
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
    if arr.size and (
        arr.dtype.kind == "f"
        and not (np.all(np.isfinite(arr)) and np.all(arr == np.floor(arr)))
        or np.min(arr) < lo
        or np.max(arr) > hi
    ):
        raise ValueError(f"{want}, got {name}={x!r:.80}.")
    if arr.size and arr.dtype.kind != "i" and np.max(np.abs(arr)) >= 2.0 ** 63:
        raise ValueError(f"{want}, got {name}={x!r:.80}.")
    return arr.astype(np.int64, copy=False)


def array(
    name: str, x: object, ndim: int | None = None, lo: float = -math.inf, hi: float = math.inf
) -> np.ndarray:
    """A non-empty array of finite reals in [``lo``, ``hi``] (of ``ndim`` dimensions if given) as
    floats (ValueError naming ``name``).  Vectorised: O(size) in numpy, no Python loop."""
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
