"""Command line: ``python -m shuffle_lib {delta,epsilon,calibrate,rdp} MECHANISM [options]``.

The contract (a public interface: extend it, don't change it):

* ``delta MECHANISM [options] --eps E [E ...] [--compositions K] [--json]``
* ``epsilon MECHANISM [options] --delta D [D ...] [--compositions K] [--json]``
* with ``--json`` stdout is one JSON object ``{"mechanism", "params", "compositions",
  "results": [{"eps", "delta_lower", "delta_upper"}, ...], "seconds"}`` (for
  ``epsilon``: ``{"delta", "eps_lower", "eps_upper"}``); delta is the max over both
  directions; an infinite eps is written as ``null``.  Each result also carries
  ``"accuracy_met"`` (true/false), ``"half_width"`` ((upper - lower) / 2, ``null`` when infinite)
  and ``"limit"`` (``null``, or what stopped a missed target: ``"memory"``, ``"floating-point
  floor"``, ``"grid step"``, ``"mechanism bounds"``); :mod:`shuffle_lib.core.accuracy` defines
  what meeting ``--accuracy`` means.  The text output names each missed target and its limit.
* ``--n`` counts all users, the differing one included; delta is for the worst-case
  neighbouring pair the mechanism's analysis covers, both directions.
* bad input: exit code 2 and one line on stderr.
* work longer than 2 s shows a progress bar on stderr when it is a terminal; ``--quiet`` (or
  ``SHUFFLE_LIB_PROGRESS=0``) turns it off; stdout stays the result alone.
* ``calibrate MECHANISM [fixed options] --eps E --delta D [--compositions K] --solve PARAM
  [--json]``: the least private PARAM meeting (eps, delta) by the upper bound;
  JSON ``{"mechanism", "params", "solve", "value", "achieved": {"eps", "delta_upper"}, "seconds"}``.
  PARAM must be one of the mechanism's declared privacy settings.
* ``rdp MECHANISM [options] --order A [A ...] [--compositions K] [--json]``: ``{"mechanism",
  "params", "results": [{"order", "rdp_lower", "rdp_upper"}], "seconds"}``, max over both
  directions (with ``"compositions"`` when K > 1: K times one round).
* ``--csv`` (``delta``, ``epsilon``, ``rdp``): the results as CSV, a header and one row per target.
  The text output's first line is the parameter line, ``name=value`` pairs.

Every mechanism and every option comes from the registry (:mod:`shuffle_lib.core.registry`); the
numbers from the declaration's ``evaluate`` and
:func:`shuffle_lib.core.calibrate.calibrate_mechanism`, the path
:func:`shuffle_lib.mechanism_brackets` takes: the command line only parses, calls and prints.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import math
import numbers
import os
import re
import sys
import time
from collections.abc import Sequence

from shuffle_lib import mechanisms
from shuffle_lib.core import accuracy, budget, evaluate, progress
from shuffle_lib.core import validate as v
from shuffle_lib.core.calibrate import calibrate_mechanism
from shuffle_lib.core.constants import EPS_MAX, MAX_COMPOSITIONS
from shuffle_lib.core.fourier import DEFAULT_ACCURACY
from shuffle_lib.core.registry import Mechanism, Param
from shuffle_lib.core.renyi import LAM_MAX
from shuffle_lib.core.types import Bracket

VERBS = {
    "delta": "bracket the tight delta at given eps",
    "epsilon": "bracket the tight eps at given delta",
    "calibrate": "the least private setting of one privacy parameter meeting (eps, delta)",
    "rdp": "bracket the Renyi divergence at given orders",
}


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        sys.stderr.write(f"error: {message}\n")
        sys.exit(2)


def _int_text(text: str) -> int:
    """An integer option's text: '1000' as before, and '1e9' or '1.0e6' when the number is integral
    (``--n 1e9`` was refused as 'invalid int value'); anything else stays invalid."""
    try:
        return int(text)
    except ValueError:
        x = float(text)                    # ValueError for words: argparse's 'invalid int value'
        if not (math.isfinite(x) and x.is_integer()):
            raise ValueError(text) from None
        return int(x)


# argparse names the type in its message: 'invalid int value'
_int_text.__name__ = "int"


def _add_params(mp: argparse.ArgumentParser, mech: Mechanism, calibrating: bool = False) -> None:
    """One option per declared parameter; for ``calibrate`` the privacy settings are optional
    (the solved one takes no value; the others are checked in :func:`run_calibrate`).  Every
    option's parser default is None, so a value seen is one the user gave; the declaration's
    defaults are filled in by :meth:`Mechanism.checked`."""
    for p in mech.params:
        kind = p.parse or (_int_text if p.kind is int else float if p.kind is float else str)
        required = (p.default is None and p.derives is None and not mech.alternatives(p.name)
                    and not (calibrating and p.more_private is not None))
        extra = {"choices": p.choices} if p.choices else {}
        mp.add_argument(
            p.option,
            dest=p.name,
            type=kind,
            required=required,
            default=None,
            help=_help(p),
            **extra,
        )


def _help(p: Param) -> str:
    """The option's help: the declaration's text, with its default unless that is a placeholder
    (a value meaning "not given") or the text already names it."""
    if p.default is None or p.placeholder or "default" in p.help:
        return p.help.replace("%", "%%")
    return f"{p.help} (default {_fmt(p.default)})".replace("%", "%%")


def _fmt(x: object) -> str:
    """A value as the parameter line and messages print it: integers as integers, reals in %g
    (8 significant digits), numpy scalars as plain numbers."""
    if isinstance(x, bool) or x is None:
        return str(x)
    if isinstance(x, numbers.Integral):
        return str(int(x))
    if isinstance(x, numbers.Real):
        return format(float(x), ".8g")
    return str(x)


def _run_options(mp: argparse.ArgumentParser) -> None:
    mp.add_argument("--compositions", type=_int_text, default=1,
                    help="number of rounds K (default 1)")
    mp.add_argument("--accuracy", type=float, default=DEFAULT_ACCURACY,
                    help="target half-width of the bracket in eps (default %(default)g)")
    _output_options(mp)


def _output_options(mp: argparse.ArgumentParser, csv: bool = True) -> None:
    out = mp.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print one JSON object")
    if csv:
        out.add_argument("--csv", action="store_true",
                         help="print the results as CSV, a header and one row per target")
    mp.add_argument("--quiet", action="store_true",
                    help="no progress bar on stderr (shown on a terminal for work over 2 s)")
    mp.add_argument("--time-limit", type=float, default=None, dest="time_limit",
                    help="CPU seconds the query may take before it stops with a refusal "
                         f"(default {budget.default_time_limit():g}: SHUFFLE_LIB_TIME_LIMIT or "
                         "the library's limit)")


def _prog() -> str:
    """The name usage lines show: the console script's when run as ``shuffle-accounting``."""
    script = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return script if script == "shuffle-accounting" else "python -m shuffle_lib"


def _parser() -> argparse.ArgumentParser:
    top = _Parser(prog=_prog(), description="Certified privacy accounting for shuffle protocols.")
    verbs = top.add_subparsers(dest="verb", required=True, parser_class=_Parser)
    for verb, doc in VERBS.items():
        vp = verbs.add_parser(verb, help=doc, description=doc)
        mechs = vp.add_subparsers(dest="mechanism", required=True, parser_class=_Parser)
        for name in mechanisms.names():
            mech = mechanisms.get(name)
            mp = mechs.add_parser(
                name, help=mech.summary, description=f"{mech.summary}. Source: {mech.source}."
            )
            if verb == "calibrate":
                _add_params(mp, mech, calibrating=True)
                mp.add_argument("--eps", type=float, required=True,
                                help="the target eps, >= 0")
                mp.add_argument("--delta", type=float, required=True,
                                help="the target delta, in (0, 1)")
                mp.add_argument(
                    "--solve",
                    required=True,
                    help="the privacy setting to find, one of: "
                    + ", ".join(p.replace("_", "-") for p in mech.privacy_settings or ("none",)),
                )
                mp.add_argument("--compositions", type=_int_text, default=1,
                                help="number of rounds K (default 1)")
                mp.add_argument("--accuracy", type=float, default=DEFAULT_ACCURACY,
                                help="target half-width of the eps bracket of each query "
                                     "(default %(default)g)")
                _output_options(mp, csv=False)
            elif verb == "rdp":
                _add_params(mp, mech)
                mp.add_argument("--order", type=float, nargs="+", required=True, dest="orders",
                                help=f"Renyi orders, each in (1, {LAM_MAX:g}]")
                mp.add_argument("--compositions", type=_int_text, default=1,
                                help="number of rounds K; K rounds of Renyi DP are K times one "
                                     "(default 1)")
                _output_options(mp)
            else:
                _add_params(mp, mech)
                if verb == "delta":
                    mp.add_argument("--eps", type=float, nargs="+", required=True, dest="targets",
                                    metavar="EPS",
                                    help="one or more eps >= 0 at which to bracket delta")
                else:
                    mp.add_argument("--delta", type=float, nargs="+", required=True,
                                    dest="targets", metavar="DELTA",
                                    help="one or more delta in (0, 1) at which to bracket eps")
                _run_options(mp)
    return top


def _values(a: argparse.Namespace, mech: Mechanism) -> dict:
    """The parameters the user gave (the declaration fills in the rest)."""
    return {p.name: getattr(a, p.name) for p in mech.params if getattr(a, p.name) is not None}


def _check_run(a: argparse.Namespace) -> None:
    v.integer("compositions", a.compositions, lo=1, hi=MAX_COMPOSITIONS)
    v.real("accuracy", a.accuracy, 0.0, 1.0, lo_open=True)


def run(argv: list[str]) -> tuple[argparse.Namespace, dict]:
    """``delta``/``epsilon``: parse, compute, and return (args, the JSON-ready dict); ValueError on
    bad input."""
    a = _parser().parse_args(argv)
    mech = mechanisms.get(a.mechanism)
    _check_run(a)
    t0 = time.perf_counter()
    with _progress(a, f"{a.verb} {a.mechanism}"):
        params, br = mech.evaluate(a.verb, a.targets, _values(a, mech), a.compositions, a.accuracy)
    if a.verb == "delta":
        res = [
            {"eps": e, "delta_lower": b.lower, "delta_upper": b.upper, **_met(b)}
            for e, b in zip(a.targets, br)
        ]
    else:
        res = [
            {
                "delta": d,
                "eps_lower": evaluate.finite_or_none(b.lower),
                "eps_upper": evaluate.finite_or_none(b.upper),
                **_met(b),
            }
            for d, b in zip(a.targets, br)
        ]
    return a, {"mechanism": a.mechanism, "params": params, "compositions": a.compositions,
               "results": res, "seconds": time.perf_counter() - t0}


def _progress(a: argparse.Namespace, desc: str) -> contextlib.AbstractContextManager:
    """The run's progress bar (:mod:`shuffle_lib.core.progress`), or none under ``--quiet``."""
    return progress.quiet() if getattr(a, "quiet", False) else progress.task(desc)


def _met(b: Bracket) -> dict:
    """A result's accuracy fields (:mod:`shuffle_lib.core.accuracy`): whether the bracket met the
    accuracy asked, its half-width (null when infinite) and, when it missed, the limit that stopped
    it (null otherwise)."""
    return {"accuracy_met": b.accuracy_met,
            "half_width": evaluate.finite_or_none(accuracy.half_width(b)), "limit": b.limit}


def _solve_param(argv: list[str]) -> tuple[Mechanism | None, Param | None]:
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--solve")
    known, rest = pre.parse_known_args(argv)
    name = next((x for x in rest if not x.startswith("-")), None)
    if known.solve is None or name not in mechanisms.names():
        return None, None
    mech = mechanisms.get(name)
    allowed = ", ".join(mech.privacy_settings) or "none"
    if known.solve.replace("-", "_") not in {p.name for p in mech.params}:
        raise ValueError(f"--solve {known.solve}: {name} has no parameter of that name "
                         f"(calibrate solves for one of: {allowed}).")
    param = mech.param(known.solve.replace("-", "_"))
    if param.more_private is None:
        raise ValueError(f"--solve {known.solve}: {param.option} of {name} is not a privacy "
                         f"setting (calibrate solves for one of: {allowed}).")
    return mech, param


def _related(mech: Mechanism, param: Param) -> list[Param]:
    """``param`` and its other spellings: the parameter it derives, and every alternative of
    either (k-RR's --gamma and --eps0)."""
    names = {param.name} | ({param.derives} if param.derives else set())
    names |= {a.name for n in list(names) for a in mech.alternatives(n)}
    return [p for p in mech.params if p.name in names]


def run_calibrate(argv: list[str]) -> tuple[argparse.Namespace, dict]:
    """``calibrate MECHANISM [fixed options] --eps E --delta D --solve PARAM``: see
    :mod:`shuffle_lib.core.calibrate`."""
    mech, param = _solve_param(argv)
    a = _parser().parse_args(["calibrate", *argv])
    mech, param = (
        mech or mechanisms.get(a.mechanism),
        param or mechanisms.get(a.mechanism).param(a.solve),
    )
    related = _related(mech, param)
    given = [p for p in related if getattr(a, p.name) is not None]
    if given:
        spelled = " or ".join(p.option for p in related)
        raise ValueError(f"--solve {param.name.replace('_', '-')}: give {spelled} no value; "
                         "calibrate finds it.")
    missing = [
        p.option + "".join(f" (or {x.option})" for x in mech.alternatives(p.name))
        for p in mech.params
        if p.default is None and p not in related and p.derives is None
        and getattr(a, p.name) is None
        and all(getattr(a, x.name) is None for x in mech.alternatives(p.name))
    ]
    if missing:
        raise ValueError(f"calibrate {mech.name} needs {', '.join(missing)}.")
    eps = v.real("eps", a.eps, 0.0, EPS_MAX)
    delta = v.probability("delta", a.delta)
    _check_run(a)
    t0 = time.perf_counter()
    fixed = {p.name: getattr(a, p.name) for p in mech.params
             if p not in related and getattr(a, p.name) is not None}
    with _progress(a, f"calibrate {mech.name}"):
        params, value, d_up = calibrate_mechanism(mech, param.name, eps, delta, fixed,
                                                  a.compositions, a.accuracy)
    return a, {"mechanism": mech.name, "params": params, "solve": param.name, "value": value,
               "achieved": {"eps": eps, "delta_upper": d_up}, "seconds": time.perf_counter() - t0}


def run_rdp(argv: list[str]) -> tuple[argparse.Namespace, dict]:
    """``rdp MECHANISM [options] --order A [A ...]``: max over both directions of D_A(P||Q),
    D_A(Q||P).

    A mechanism's own Renyi method when it declares one (``ldp-shuffle``: :func:`clone_rdp`),
    else the generic route :func:`shuffle_lib.core.evaluate.rdp_brackets` on the PLDs it builds."""
    a = _parser().parse_args(["rdp", *argv])
    mech = mechanisms.get(a.mechanism)
    orders = v.reals("order", a.orders, lo=1.0, hi=LAM_MAX, lo_open=True)
    v.integer("compositions", a.compositions, lo=1, hi=MAX_COMPOSITIONS)
    t0 = time.perf_counter()
    params, brs = mech.evaluate("rdp", orders, _values(a, mech), a.compositions)
    out = [{"order": float(o), "rdp_lower": evaluate.finite_or_none(b.lower),
            "rdp_upper": evaluate.finite_or_none(b.upper)} for o, b in zip(orders, brs)]
    res = {"mechanism": a.mechanism, "params": params}
    if a.compositions != 1:          # the one-round JSON keeps its original keys
        res["compositions"] = a.compositions
    return a, dict(res, results=out, seconds=time.perf_counter() - t0)


def _parameter_line(out: dict) -> str:
    """The mechanism and its parameters as ``name=value`` pairs: every declared parameter but a
    placeholder left at its default (``--k 0`` of a randomiser given by a matrix), the
    alternative spellings the user gave, and the number of rounds when there is one."""
    mech = mechanisms.get(out["mechanism"])
    params = out["params"]
    pairs = []
    for p in mech.params:
        if p.name not in params:
            continue
        x = params[p.name]
        if isinstance(x, (list, dict)) or (p.placeholder and x == p.default):
            continue
        pairs.append(f"{p.name}={_fmt(x)}")
    if "compositions" in out:
        pairs.append(f"compositions={out['compositions']}")
    why = params.get("eps0_infinite")          # an infinite eps0 says which entry causes it
    return " ".join([out["mechanism"], *pairs]) + (f"\n  (eps0=inf: {why})" if why else "")


_ACCURACY_FIELDS = ("accuracy_met", "half_width", "limit")


def _table(out: dict) -> str:
    """The text output: the parameter line, a table of the results' numbers, then one line per
    target that missed its accuracy, saying why (:mod:`shuffle_lib.core.accuracy`)."""
    cols = [c for c in out["results"][0] if c not in _ACCURACY_FIELDS]
    lines = [_parameter_line(out),
             "  ".join(f"{c:>14}" for c in cols)]
    for r in out["results"]:
        lines.append(
            "  ".join(f"{'inf' if r[c] is None else format(r[c], '.8g'):>14}" for c in cols)
        )
    for r in out["results"]:
        if r.get("accuracy_met") is False:
            target = cols[0]
            width = "inf" if r["half_width"] is None else format(r["half_width"], ".3g")
            lines.append(f"accuracy not met at {target}={r[target]:g} (half-width {width}): "
                         f"{r['limit']}")
    lines.append(f"({out['seconds']:.2f} s)")
    return "\n".join(lines)


def _csv(out: dict) -> str:
    """The results as CSV: a header, then one row per target (an infinite end is ``inf``; the
    accuracy contract's columns as ``true``/``false``, the half-width, and the limit or nothing)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    cols = list(out["results"][0].keys())
    w.writerow(cols)

    def cell(c: str, x: object) -> str:
        if isinstance(x, bool):
            return str(x).lower()
        if c == "limit":
            return "" if x is None else str(x)
        return "inf" if x is None else repr(float(x))

    for r in out["results"]:
        w.writerow([cell(c, r[c]) for c in cols])
    return buf.getvalue().rstrip("\n")


def _print(a: argparse.Namespace, out: dict) -> None:
    print(json.dumps(out) if a.json else _csv(out) if getattr(a, "csv", False) else _table(out))


RUN_OPTIONS = {
    "compositions": "--compositions",
    "accuracy": "--accuracy",
    "eps": "--eps",
    "delta": "--delta",
    "order": "--order",
    "lam": "--order",
    "solve": "--solve",
    "time_limit": "--time-limit",
}
"""The library's argument names the command line spells differently (``lam`` is ``--order``)."""


def user_words(message: str, argv: Sequence[str]) -> str:
    """``message`` with each argument name the library used replaced by the option the user wrote:
    ``n_x0 must be ..., got n_x0=nan`` becomes ``--n-x0 must be ..., got --n-x0=nan``, and ``lam``
    becomes ``--order`` (tests/test_cli_bad_input.py: every error names the option written).  Only
    a name followed by `` must`` or ``=`` is replaced, so prose that happens to contain the word is
    left alone."""
    names = dict(RUN_OPTIONS)
    mech = next((x for x in argv[:2] if x in mechanisms.names()), None)
    if mech is not None:
        names.update({p.name: p.option for p in mechanisms.get(mech).params})
    for name, option in names.items():
        message = re.sub(rf"(?<![\w.\[-]){re.escape(name)}(?=\s+must\b|=)", option, message)
    # numpy 2 writes a scalar's repr as np.float64(1.2): the user wrote 1.2
    return re.sub(r"\bnp\.(?:float|int|uint|bool|str|complex)\w*\(([^()]*)\)", r"\1", message)


def _time_limit(argv: list[str]) -> float | None:
    """``--time-limit`` as typed (None: the default), read before the full parse so that the
    budget covers building the parser's choices and the model too."""
    pre = argparse.ArgumentParser(add_help=False, exit_on_error=False)
    pre.add_argument("--time-limit", type=float, default=None, dest="time_limit")
    try:
        return pre.parse_known_args(argv)[0].time_limit
    except argparse.ArgumentError:       # a bad value: the full parser names it
        return None


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m shuffle_lib``: print the result, return the exit code (2 on bad
    input, and on a query that runs past its time limit, :mod:`shuffle_lib.core.budget`)."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        with budget.time_limit(_time_limit(argv)):
            return _main(argv)
    except (ValueError, budget.TimeLimitError) as e:
        return _refuse(e, argv)


def _refuse(e: Exception, argv: list[str]) -> int:
    """Exit code 2 after one line on stderr naming the options as the user typed them."""
    sys.stderr.write(f"error: {user_words(str(e), argv)}\n".replace("\n", " ").rstrip() + "\n")
    return 2


def _main(argv: list[str]) -> int:
    """:func:`main` under its time limit."""
    try:
        if argv[:1] == ["rdp"]:
            a, out = run_rdp(argv[1:])
            _print(a, out)
            return 0
        if argv[:1] == ["calibrate"]:
            a, out = run_calibrate(argv[1:])
            print(
                json.dumps(out)
                if a.json
                else f"{_parameter_line(out)}\n{out['solve']} = {out['value']:.8g}  "
                f"(delta_upper = {out['achieved']['delta_upper']:.4g} at eps = "
                f"{out['achieved']['eps']:g}; "
                f"{out['seconds']:.2f} s)"
            )
            return 0
        a, out = run(argv)
        bad = [
            r for r in out["results"] for x in r.values() if isinstance(x, float) and math.isnan(x)
        ]
        if bad:
            raise ValueError(f"internal error: NaN in result {bad[0]} (please report).")
    except (ValueError, OverflowError) as e:
        return _refuse(e, argv)
    _print(a, out)
    return 0
