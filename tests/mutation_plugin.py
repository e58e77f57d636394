"""A pytest plugin that makes one library function false before any test runs (the mutation audit).

``python -m pytest -p tests.mutation_plugin ...`` with ``SHUFFLE_MUTATION`` set to
``module:function|mutation`` replaces the function's code, so every reference to it -- ``from x
import f`` in a test module, the registry's declarations, calls inside the library -- runs the
mutant.  The mutation language (one per row of ``tests/mutations.csv``):

* ``scale C`` / ``add C``    -- the result times C / plus C (numbers, arrays, and every number
  inside a tuple, list, dict or dataclass such as ``Bracket``);
* ``item[K] scale C`` / ``item[K] add C`` -- only the entry K of the result (an index of a tuple
  or list, a key of a dict, a field of a dataclass);
* ``scale C per NAME``       -- the result times C ** (the argument NAME): a trend in NAME reversed;
* ``item[K] copy J``          -- the entry K of the result replaced by its entry J (a refuted
  formula made equal to the right one);
* ``reverse``                 -- the result's order reversed (an array, or the two of a pair);
* ``not``                     -- a boolean result negated;
* ``arg[NAME] scale C`` / ``arg[NAME] add C`` / ``arg[NAME] set V`` -- an argument changed before
  the call (V is read as a Python literal, e.g. ``'corrected'``).

When ``SHUFFLE_MUTATION_LOG`` names a file, the number of calls of the mutant is written there at
the end of the session: a mutant that is never called is reported as such by the audit, not
counted as a check that bit.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import importlib
import inspect
import os
import re

import numpy as np

_CALLS = {"n": 0, "errors": 0}
_GRAMMAR = re.compile(r"^(?:(item|arg)\[(?P<key>[^\]]+)\]\s+)?(?P<op>scale|add|set|copy|reverse|not)(?:\s+(?P<val>.+))?$")


def parse(mutation: str):
    """(where, key, op, value) of a mutation string; ValueError naming the mutation if malformed."""
    m = _GRAMMAR.match(mutation.strip())
    if not m:
        raise ValueError(f"mutation must follow the grammar of tests/mutation_plugin.py, got mutation={mutation!r}.")
    where = mutation.split("[", 1)[0] if m.group("key") else "result"
    key, op, val = m.group("key"), m.group("op"), m.group("val")
    per = None
    if op in ("scale", "add", "set"):
        if val is None:
            raise ValueError(f"mutation {mutation!r}: '{op}' needs a value.")
        if op == "copy":
            return where, key, op, val.strip()
        if op == "scale" and " per " in val:
            val, per = (x.strip() for x in val.split(" per ", 1))
        val = ast.literal_eval(val)
    if key is not None:
        try:
            key = ast.literal_eval(key)
        except (ValueError, SyntaxError):
            pass                                   # a bare word: a dict key, field or argument name
    return where, key, op, (val, per) if per else val


def _number(x, op, val):
    if isinstance(x, (bool, np.bool_)):
        return x
    if isinstance(x, (int, float, np.integer, np.floating, np.ndarray)):
        return x * val if op == "scale" else x + val
    if isinstance(x, (tuple, list)):
        return _rebuild(x, [_number(y, op, val) for y in x])
    if isinstance(x, dict):
        return {k: _number(y, op, val) for k, y in x.items()}
    if dataclasses.is_dataclass(x):
        return dataclasses.replace(x, **{f.name: _number(getattr(x, f.name), op, val)
                                         for f in dataclasses.fields(x) if f.init})
    raise TypeError(f"the mutation cannot {op} a {type(x).__name__}")


def _rebuild(x, items):
    """A tuple, list, named tuple or ``Bracket`` like ``x`` holding ``items``."""
    if type(x) in (tuple, list):
        return type(x)(items)
    return type(x)(*items)


def _index(x, key):
    """The position of the entry ``key`` of a sequence (a named field such as Bracket's upper)."""
    if isinstance(key, int):
        return key
    fields = getattr(type(x), "_fields", None) or ("lower", "upper")
    return fields.index(key)


def _apply(x, op, val):
    if op in ("scale", "add"):
        return _number(x, op, val)
    if op == "reverse":
        if isinstance(x, np.ndarray):
            return x[::-1]
        return _rebuild(x, list(x)[::-1])
    if op == "not":
        return not x
    if op == "set":
        return val
    raise ValueError(op)


def _apply_item(x, key, op, val):
    if dataclasses.is_dataclass(x):
        return dataclasses.replace(x, **{key: _apply(getattr(x, key), op, val)})
    if isinstance(x, dict):
        return {**x, key: _apply(x[key], op, val)}
    if isinstance(x, np.ndarray):
        y = x.copy()
        y[key] = _apply(y[key], op, val)
        return y
    y, i = list(x), _index(x, key)
    y[i] = _apply(y[i], op, val)
    return _rebuild(x, y)


def mutant(original, mutation: str):
    """A function that calls ``original`` and applies ``mutation`` to its arguments or result."""
    where, key, op, val = parse(mutation)
    sig = inspect.signature(original)

    def mutated(stage, *a):
        """One stage of the mutation; its own failure (a mutation that does not fit) is counted."""
        try:
            return stage(*a)
        except Exception:
            _CALLS["errors"] += 1
            raise

    def before(args, kwargs):
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        if where == "arg":
            bound.arguments[key] = _apply(bound.arguments[key], op, val)
        return bound

    def after(out, bound):
        if isinstance(val, tuple):                   # scale C per NAME
            return _number(out, "scale", val[0] ** bound.arguments[val[1]])
        if op == "copy":
            return {**out, key: out[val]} if isinstance(out, dict) else _apply_item(out, key, "set", out[val])
        if where == "item":
            if isinstance(out, list) and out and isinstance(out[0], tuple) and not isinstance(key, int):
                return [_apply_item(o, key, op, val) for o in out]     # e.g. a list of Brackets
            return _apply_item(out, key, op, val)
        return out if where == "arg" else _apply(out, op, val)

    def call(*args, **kwargs):
        _CALLS["n"] += 1
        bound = mutated(before, args, kwargs)
        out = original(*bound.args, **bound.kwargs)  # the original's own errors are not counted
        return mutated(after, out, bound)
    return call


def resolve(target: str):
    """The function object named by ``module:function`` (a dotted attribute path after the colon)."""
    module, _, name = target.partition(":")
    obj = importlib.import_module(module)
    for part in name.split("."):
        obj = getattr(obj, part)
    return inspect.unwrap(obj)


def install(target: str, mutation: str) -> None:
    """Swap the code of the function ``target`` for a call of its mutant (every reference sees it)."""
    func = resolve(target)
    if func.__closure__:
        raise ValueError(f"target {target!r} is a closure; name the function it is built from.")
    original = type(func)(func.__code__, func.__globals__, func.__name__, func.__defaults__, None)
    original.__kwdefaults__ = func.__kwdefaults__
    hooks = func.__globals__.setdefault("_MUTATION_HOOKS", {})
    hooks[target] = mutant(original, mutation)
    space: dict = {}
    exec(compile(f"def _m(*args, **kwargs):\n    return _MUTATION_HOOKS[{target!r}](*args, **kwargs)\n",
                 f"<mutation of {target}>", "exec"), func.__globals__, space)
    func.__code__ = space["_m"].__code__
    for obj in vars(importlib.import_module(target.partition(":")[0])).values():
        if isinstance(obj, functools._lru_cache_wrapper):
            obj.cache_clear()


def pytest_configure(config):
    spec = os.environ.get("SHUFFLE_MUTATION")
    if spec:
        target, _, mutation = spec.partition("|")
        install(target.strip(), mutation.strip())


def pytest_unconfigure(config):
    log = os.environ.get("SHUFFLE_MUTATION_LOG")
    if log:
        with open(log, "w") as f:
            f.write(f"{_CALLS['n']} {_CALLS['errors']}")
