"""Every public function validates first.

For each public function of the package (the walk of tests/test_typing.py) a valid specimen call
(tests/bad_input_specimens.py) is made once, then each argument in turn is replaced by the bad
values of its role (NaN, infinities, negatives, zero where positive is required, probabilities
outside [0, 1], wrong types, huge sizes; for PMFs and matrices rows not summing to 1, negative
entries, wrong shapes).  A bad value must be refused with a ``ValueError`` whose message names the
argument as the caller wrote it, or a ``TypeError`` (a wrong type; its message is Python's); the test fails on any other
exception, on a call that takes longer than ``TIMEOUT`` seconds, on a call that allocates more
than ``MEMORY`` bytes (``MemoryError``), and on a bad value silently accepted.  Huge sizes may also
be answered, as long as the answer comes in time and within the memory limit.

``OPEN`` (tests/bad_input_specimens.py) names the arguments whose defects are known and not yet
fixed; they are reported, not failed, and an entry the sweep no longer faults fails as stale.
"""

from __future__ import annotations

import inspect
import json
import math
import re
import resource
import signal
import warnings

import pytest

import bad_input_specimens as spec
from test_typing import FUNCTIONS

from shuffle_lib import accountant as acc
from shuffle_lib.core import grid

TIMEOUT = 10.0          # seconds per call
MEMORY = 3 * 10 ** 9    # bytes of address space a call may add
FUNCS = dict(FUNCTIONS)
SWEPT = sorted(q for q in FUNCS if q not in spec.NOT_SWEPT)


class _Timeout(BaseException):
    pass


def _alarm(signum, frame):
    raise _Timeout()


def _vm_bytes() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[0]) * resource.getpagesize()


def _names(exc: BaseException, arg: str) -> bool:
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(arg)}(?![A-Za-z0-9_])", str(exc)) is not None


def outcome(fn, kwargs: dict) -> tuple[str, BaseException | None]:
    """('ok', None), ('refused', exc) for ValueError/TypeError, else ('crash'|'hang'|'memory', exc)."""
    old = signal.signal(signal.SIGALRM, _alarm)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (_vm_bytes() + MEMORY, hard))
    signal.setitimer(signal.ITIMER_REAL, TIMEOUT)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            fn(**kwargs)
        return "ok", None
    except _Timeout as e:
        return "hang", e
    except MemoryError as e:
        return "memory", e
    except (ValueError, TypeError) as e:
        return "refused", e
    except Exception as e:  # noqa: BLE001 (any other exception is the defect looked for)
        return "crash", e
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad_input")
    pmfs = d / "pmfs.json"
    pmfs.write_text(json.dumps({"p": [0.75, 0.25], "q": [0.25, 0.75]}))
    matrix = d / "matrix.json"
    matrix.write_text(json.dumps({"matrix": spec.R3}))
    return {"PMFS_FILE": str(pmfs), "MATRIX_FILE": str(matrix)}


def _resolve(value, files):
    if not isinstance(value, str):
        return value
    if value in files:
        return files[value]
    if value == "ACCOUNTANT":
        return acc.ShuffleAccountant(accuracy=1e-3)
    if value == "ACCOUNTANT_RR":
        return acc.ShuffleAccountant(accuracy=1e-3).compose(spec.EVENT, 2)
    return value


PLURAL = {"real": "reals", "prob": "probs", "pos": "reals"}   # a list of them where the annotation allows one


def role(q: str, arg: str) -> str | None:
    """The role of ``arg`` in ``q``: ROLES, else by name, made plural where the annotation takes a list."""
    if arg in spec.ROLES.get(q, {}):
        return spec.ROLES[q][arg]
    r = spec.ROLE_BY_NAME.get(arg)
    param = inspect.signature(FUNCS[q]).parameters.get(arg)
    ann = str(param.annotation) if param is not None else ""
    if r in PLURAL and any(t in ann for t in ("ArrayLike", "Sequence", "list[", "np.ndarray")):
        r = PLURAL[r]
    return r


def bad_calls(q: str):
    """(argument, bad value, must refuse) for every swept argument of ``q`` (``None`` is not bad
    where the annotation allows it)."""
    for arg in spec.SPECIMENS[q]:
        r = role(q, arg) if arg != "self" else None
        param = inspect.signature(FUNCS[q]).parameters.get(arg)
        optional = param is not None and "None" in str(param.annotation)
        for bad in spec.BAD.get(r, []):
            if bad is None and optional:
                continue
            yield arg, bad, not (isinstance(bad, int) and bad in spec.MUST_ANSWER_OR_REFUSE)


def test_every_public_function_has_a_specimen_or_a_reason():
    missing = [q for q in SWEPT if q not in spec.SPECIMENS]
    assert not missing, "public functions with no specimen in tests/bad_input_specimens.py:\n" + "\n".join(missing)
    stale = [q for q in list(spec.SPECIMENS) + list(spec.NOT_SWEPT) if q not in FUNCS]
    assert not stale, "specimens of functions that no longer exist:\n" + "\n".join(stale)
    for q, kw in spec.SPECIMENS.items():
        params = inspect.signature(FUNCS[q]).parameters
        has_var_kw = any(p.kind is p.VAR_KEYWORD for p in params.values())
        assert has_var_kw or set(kw) <= set(params), (q, set(kw) - set(params))


@pytest.mark.parametrize("q", SWEPT)
def test_bad_input_is_refused(q, files, monkeypatch):
    # the guard (what the process holds + 1 GB) refuses well inside the address-space limit
    monkeypatch.setattr(grid, "MEMORY_LIMIT", grid.resident_bytes() + 1e9)
    fn = FUNCS[q]
    valid = {k: _resolve(v, files) for k, v in spec.SPECIMENS[q].items()}
    kind, exc = outcome(fn, valid)
    assert kind == "ok", f"the specimen call of {q} fails: {kind} {exc!r}"
    problems, known = [], set()
    open_args = set(spec.OPEN.get(q, {}))
    for arg, bad, must_refuse in bad_calls(q):
        kw = dict(valid)
        kw[arg] = bad
        if arg == "self" or any(isinstance(v, str) and v.startswith("ACCOUNTANT") for v in spec.SPECIMENS[q].values()):
            kw = {k: (_resolve(spec.SPECIMENS[q][k], files) if k != arg else v) for k, v in kw.items()}
        kind, exc = outcome(fn, kw)
        where = f"{arg}={bad!r}"
        if kind == "ok":
            problem = f"accepted: {where}" if must_refuse else None
        elif kind == "refused":
            named = not isinstance(exc, ValueError) or _names(exc, arg)
            problem = None if named else f"unnamed: {where}: {type(exc).__name__}: {exc}"
        else:
            problem = f"{kind}: {where}: {type(exc).__name__}: {exc}"
        if problem is not None:
            (known.add(arg) if arg in open_args else problems.append(problem))
    assert not problems, f"{q}:\n" + "\n".join(problems)
    assert known == open_args, (f"{q}: OPEN lists {sorted(open_args - known)}, which the sweep no longer "
                                f"faults: take them off tests/bad_input_specimens.py's OPEN")


def test_the_sweep_can_fail():
    """The outcome classifier is not vacuous: a loop hangs, a silent NaN is accepted, an unnamed or
    foreign exception is reported."""
    import shuffle_lib.core.validate as v
    global TIMEOUT

    def loops(n: int) -> int:
        while True:
            n += 1

    def silent(x: float) -> float:
        return x

    def checked(x: float) -> float:
        return v.real("x", x, 0.0, 1.0)

    def foreign(x: float) -> float:
        return 1.0 / x

    saved, TIMEOUT = TIMEOUT, 0.2
    try:
        assert outcome(loops, {"n": 1})[0] == "hang"
    finally:
        TIMEOUT = saved
    assert outcome(silent, {"x": math.nan})[0] == "ok"
    kind, exc = outcome(checked, {"x": math.nan})
    assert kind == "refused" and _names(exc, "x") and not _names(exc, "y")
    assert outcome(foreign, {"x": 0.0})[0] == "crash"
    kind, exc = outcome(math.log, {"x": -1.0})        # math domain error: refused, but names nothing
    assert kind == "refused" and not _names(exc, "x")
    assert outcome(lambda: bytearray(10 ** 13), {})[0] == "memory"


REPORTED = [   # (qualified name, the bad argument, its value): the cases first reported
    ("shuffle_lib.core.pld.product_pmfs", "k", 10 ** 20),                              # was an endless loop
    ("shuffle_lib.mechanisms.mixnet.bitflip.q_needed", "tol", 0.0),                    # endless loop
    ("shuffle_lib.mechanisms.mixnet.bitflip.q_needed", "tol", -1.0),                   # endless loop
    ("shuffle_lib.mechanisms.gaussian_shuffle.delta_mc", "chunk", 0),                  # endless loop
    ("shuffle_lib.mechanisms.histogram.delta_histogram_exact", "k", 0),                # RecursionError
    ("shuffle_lib.mechanisms.clones.fmt21.feldman_delta", "n", 10 ** 20),              # MemoryError (3 TiB)
    ("shuffle_lib.mechanisms.clones.compose.delta_bracket", "accuracy", math.nan),     # ignored for one round
    ("shuffle_lib.mechanisms.clones.compose.delta_bracket", "accuracy", -1.0),
    ("shuffle_lib.mechanisms.clones.compose.delta_bracket", "accuracy", "abc"),
    ("shuffle_lib.mechanisms.clones.pairs.clone_probability", "pair", "foo"),          # gave fmt21's value
    ("shuffle_lib.bounds.closed_forms.advanced_composition", "delta", 1.0),            # total delta 10.000001
    ("shuffle_lib.core.pld.tail_probability", "eps", math.nan),                        # returned 0.0
    ("shuffle_lib.mechanisms.clones.pairs.decomposition_holds", "R",                   # chapter 3's old matrix
     [[x / (2 * math.e + 2) for x in row] for row in ((math.e, math.e, 1, 1), (math.e, 1, math.e, 1),
                                                       (1, 1, 1, math.e))]),
]


@pytest.mark.parametrize("q, arg, bad", REPORTED, ids=[f"{q.rsplit('.', 1)[1]}-{a}={b!r:.12}" for q, a, b in REPORTED])
def test_reported_bad_inputs_are_refused_naming_the_argument(q, arg, bad, files):
    kw = {k: _resolve(v, files) for k, v in spec.SPECIMENS[q].items()}
    kw[arg] = bad
    kind, exc = outcome(FUNCS[q], kw)
    assert kind == "refused" and isinstance(exc, ValueError) and _names(exc, arg), (kind, exc)
    assert arg not in spec.OPEN.get(q, {})
