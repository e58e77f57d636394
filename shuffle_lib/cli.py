"""Command line: ``python -m shuffle_lib {delta,epsilon} MECHANISM [options]``.

The contract (issue 2; extend it, don't change it):

* ``delta MECHANISM [options] --eps E [E ...] [--compositions K] [--json]``
* ``epsilon MECHANISM [options] --delta D [D ...] [--compositions K] [--json]``
* with ``--json`` stdout is one JSON object ``{"mechanism", "params", "compositions",
  "results": [{"eps", "delta_lower", "delta_upper"}, ...], "seconds"}`` (for
  ``epsilon``: ``{"delta", "eps_lower", "eps_upper"}``); delta is the max over both
  directions; an infinite eps is written as ``null``.
* ``--n`` counts all users, the differing one included; delta is for the worst-case
  neighbouring pair the mechanism's analysis covers, both directions.
* bad input: exit code 2 and one line on stderr.
* ``calibrate MECHANISM [fixed options] --eps E --delta D [--compositions K] --solve PARAM
  [--json]`` (issue 8): the least private PARAM meeting (eps, delta) by the upper bound;
  JSON ``{"mechanism", "params", "solve", "value", "achieved": {"eps", "delta_upper"}, "seconds"}``.
* ``rdp MECHANISM [options] --order A [A ...] [--json]`` (issue 6): ``{"mechanism", "params",
  "results": [{"order", "rdp_lower", "rdp_upper"}], "seconds"}``, max over both directions.

A mechanism is an entry of ``MECHANISMS``: a function adding its options to a
parser and a function turning the parsed options into (params, P/Q PLD, Q/P PLD).
"""

import argparse
import json
import math
import sys
import time

import numpy as np

from . import _validate as v
from . import calibrate, fourier, pld, rr


def _rr_args(p):
    p.add_argument("--eps0", type=float, required=True, help="LDP parameter of randomised response, > 0")


def _rr_build(a):
    P, Q = rr.rr_pmfs(a.eps0)
    return {"eps0": a.eps0}, pld.pld_from_pmfs(P, Q), pld.pld_from_pmfs(Q, P)


def _custom_args(p):
    p.add_argument("--pmfs", required=True, help='JSON file {"p": [...], "q": [...]} on one ordered support')


def _custom_build(a):
    try:
        with open(a.pmfs) as fh:
            data = json.load(fh)
    except OSError as e:
        raise ValueError(f"--pmfs: cannot read {a.pmfs!r}: {e.strerror}.") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"--pmfs: {a.pmfs!r} is not valid JSON ({e.msg}, line {e.lineno}).") from None
    if not isinstance(data, dict) or "p" not in data or "q" not in data:
        raise ValueError(f'--pmfs: {a.pmfs!r} must hold an object {{"p": [...], "q": [...]}}.')
    return {"pmfs": a.pmfs}, pld.pld_from_pmfs(data["p"], data["q"]), pld.pld_from_pmfs(data["q"], data["p"])


MECHANISMS = {
    "rr": (_rr_args, _rr_build, "binary randomised response (--eps0)"),
    "custom": (_custom_args, _custom_build, "two PMFs from a JSON file (--pmfs)"),
}

# Mechanism modules register themselves: a module listed here that defines
# ``CLI_MECHANISMS = {name: (add_args, build, help)}`` has its entries added.
_MECHANISM_MODULES = ("krr", "clones", "histogram", "renyi", "bitflip", "gaussian_shuffle")


def _load_mechanisms():
    import importlib
    import importlib.util

    for mod in _MECHANISM_MODULES:
        if importlib.util.find_spec(f"{__package__}.{mod}") is not None:
            MECHANISMS.update(getattr(importlib.import_module(f"{__package__}.{mod}"), "CLI_MECHANISMS", {}))


_load_mechanisms()


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        sys.stderr.write(f"error: {message}\n")
        sys.exit(2)


def _parser():
    top = _Parser(prog="python -m shuffle_lib", description="Certified privacy accounting for shuffle protocols.")
    verbs = top.add_subparsers(dest="verb", required=True, parser_class=_Parser)
    for verb, target in (("delta", "--eps"), ("epsilon", "--delta")):
        vp = verbs.add_parser(verb, help=f"bracket the tight {verb} at given {target[2:]}")
        mechs = vp.add_subparsers(dest="mechanism", required=True, parser_class=_Parser)
        for name, (add, _, doc) in MECHANISMS.items():
            mp = mechs.add_parser(name, help=doc)
            add(mp)
            mp.add_argument(target, type=float, nargs="+", required=True, dest="targets")
            mp.add_argument("--compositions", type=int, default=1, help="number of rounds K (default 1)")
            mp.add_argument("--accuracy", type=float, default=fourier.DEFAULT_ACCURACY,
                            help="target half-width of the bracket in eps (default %(default)g)")
            mp.add_argument("--json", action="store_true", help="print one JSON object")
    return top


def _calibrate_parser(solve):
    """Parser for ``calibrate``: the solved parameter's option is not required."""
    top = _Parser(prog="python -m shuffle_lib calibrate", description="Least private setting meeting (eps, delta).")
    mechs = top.add_subparsers(dest="mechanism", required=True, parser_class=_Parser)
    for name, (add, _, doc) in MECHANISMS.items():
        mp = mechs.add_parser(name, help=doc)
        add(mp)
        for act in mp._actions:
            if act.dest == solve:
                act.required = False
        mp.add_argument("--eps", type=float, required=True)
        mp.add_argument("--delta", type=float, required=True)
        mp.add_argument("--solve", required=True, choices=sorted(calibrate.PARAMETERS))
        mp.add_argument("--compositions", type=int, default=1)
        mp.add_argument("--accuracy", type=float, default=fourier.DEFAULT_ACCURACY)
        mp.add_argument("--json", action="store_true")
    return top


def run_calibrate(argv):
    """``calibrate MECHANISM [fixed options] --eps E --delta D --solve PARAM``: see calibrate.py."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--solve")
    known, rest = pre.parse_known_args(argv)
    solve, mech = known.solve, next((x for x in rest if not x.startswith("-")), None)
    if mech in MECHANISMS and solve is not None:
        probe = _Parser(add_help=False)
        MECHANISMS[mech][0](probe)
        if solve not in {act.dest for act in probe._actions}:
            raise ValueError(f"mechanism {mech} has no parameter --{solve}.")
    a = _calibrate_parser(solve).parse_args(argv)
    eps = v.real("eps", a.eps, 0.0)
    delta = v.probability("delta", a.delta)
    t0 = time.perf_counter()
    cast = int if calibrate.PARAMETERS[a.solve][0] == "int" else float
    build = MECHANISMS[a.mechanism][1]
    last = {}

    def upper(value):
        setattr(a, a.solve, cast(value))
        params, pq, qp = build(a)
        br = _worst(fourier.delta_bracket, pq, qp, a.compositions, [eps], a.accuracy)[0]
        last[cast(value)] = (params, br.upper)
        return br.upper

    value = calibrate.calibrate(lambda x: upper(x) <= delta, a.solve)
    params, d_up = last[value] if value in last else (None, upper(value))
    if params is None:
        params = last[value][0]
    return a, {"mechanism": a.mechanism, "params": params, "solve": a.solve, "value": value,
               "achieved": {"eps": eps, "delta_upper": d_up}, "seconds": time.perf_counter() - t0}


def _rdp_parser():
    top = _Parser(prog="python -m shuffle_lib rdp", description="Renyi divergence of a mechanism's pair.")
    mechs = top.add_subparsers(dest="mechanism", required=True, parser_class=_Parser)
    for name, (add, _, doc) in MECHANISMS.items():
        mp = mechs.add_parser(name, help=doc)
        add(mp)
        mp.add_argument("--order", type=float, nargs="+", required=True, dest="orders")
        mp.add_argument("--json", action="store_true")
    return top


def run_rdp(argv):
    """``rdp MECHANISM [options] --order A [A ...]`` (issue 6): max over both directions of
    D_A(P||Q), D_A(Q||P).  ``ldp-shuffle`` (fmt21/stronger pairs) gets the certified bracket of
    :func:`renyi.clone_rdp`; other mechanisms the divergence of the PLDs the mechanism builds
    (exact for exact PLDs; +inf when a PLD carries mass at +inf, unless the build reports
    ``max_loss``: then that mass is a tail cut and bounded, see :func:`renyi.renyi_pld_bracket`)."""
    from . import renyi

    a = _rdp_parser().parse_args(argv)
    orders = v.reals("order", a.orders, lo=1.0, lo_open=True)
    t0 = time.perf_counter()
    if a.mechanism == "ldp-shuffle" and getattr(a, "pair", "fmt21") in ("fmt21", "stronger"):
        params = {"n": a.n, "eps0": a.eps0, "pair": a.pair}      # no PLD needed: clone_rdp works on atoms
        brs = renyi.clone_rdp(a.n, a.eps0, orders, pair=a.pair)
        res = [(b.lower, b.upper) for b in brs]
    else:
        params, pq, qp = MECHANISMS[a.mechanism][1](a)
        cap = params.get("max_loss")   # the +inf mass is a tail cut of atoms with loss <= max_loss

        def div(x, y, end):            # end 0: upper PLDs, 1: lower (dominated) PLDs
            x, y = (x[end], y[end]) if isinstance(x, tuple) else (x, y)
            if cap is not None:
                return np.maximum(renyi.renyi_pld_bracket(x, orders, cap)[1 - end],
                                  renyi.renyi_pld_bracket(y, orders, cap)[1 - end])
            return np.maximum(renyi.renyi_pld(x, orders), renyi.renyi_pld(y, orders))
        alts = _alternatives(pq, qp)
        res = list(zip(np.max([div(x, y, 1) for x, y in alts], axis=0), np.max([div(x, y, 0) for x, y in alts], axis=0)))
    out = [{"order": float(o), "rdp_lower": _num(lo), "rdp_upper": _num(hi)} for o, (lo, hi) in zip(orders, res)]
    return a, {"mechanism": a.mechanism, "params": params, "results": out, "seconds": time.perf_counter() - t0}


def _num(x):
    return None if x is None or not math.isfinite(x) else float(x)


def _alternatives(pq, qp):
    """A build gives one pair of PLDs, or lists of them (e.g. bitflip --m worst): the mechanism's
    guarantee is then the worst case, the max over the pairs."""
    return list(zip(pq, qp)) if isinstance(pq, list) else [(pq, qp)]


def _bracket(fn, a, b, k, targets, accuracy):
    """One pair; a PLD may come as (upper, lower): a dominating and a dominated PLD (e.g. the
    clones pair on a grid), each then gives its own end of the bracket."""
    if isinstance(a, tuple):
        up = fn([(a[0], k)], [(b[0], k)], targets, accuracy=accuracy)
        low = fn([(a[1], k)], [(b[1], k)], targets, accuracy=accuracy)
        return [fourier.Bracket(min(x.lower, y.upper), y.upper) for x, y in zip(low, up)]
    return fn([(a, k)], [(b, k)], targets, accuracy=accuracy)


def _worst(fn, pq, qp, k, targets, accuracy):
    """Brackets of the max over alternative pairs: [max of lower ends, max of upper ends].

    A build may instead return a function (verb, targets) -> brackets (a mechanism with its
    own exact method, e.g. one round of ldp-shuffle at any n); it is then called directly."""
    if callable(pq):
        return pq("delta" if fn is fourier.delta_bracket else "epsilon", targets)
    per = [_bracket(fn, a, b, k, targets, accuracy) for a, b in _alternatives(pq, qp)]
    return [fourier.Bracket(max(r.lower for r in col), max(r.upper for r in col)) for col in zip(*per)]


def run(argv):
    """Parse, compute, and return the JSON-ready result dict (raises ValueError on bad input)."""
    a = _parser().parse_args(argv)
    t0 = time.perf_counter()
    params, pq, qp = MECHANISMS[a.mechanism][1](a)
    k = a.compositions
    # A build that cuts binomial tails sends the cut mass (<= tail_cut per round) to +inf: upper
    # ends stay certified, and the tight delta of the mechanism is >= the PLD's minus k * tail_cut
    # (the cut events of k rounds have probability <= k * tail_cut), so the lower ends are
    # corrected by that much (for eps: read at delta + k * tail_cut).
    cut = k * params.get("tail_cut", 0.0)
    if a.verb == "delta":
        br = _worst(fourier.delta_bracket, pq, qp, k, a.targets, a.accuracy)
        br = [fourier.Bracket(max(0.0, b.lower - cut), b.upper) for b in br]
        res = [{"eps": e, "delta_lower": b.lower, "delta_upper": b.upper} for e, b in zip(a.targets, br)]
    else:
        shifted = [d + cut for d in a.targets] if cut > 0 else []
        both = _worst(fourier.epsilon_bracket, pq, qp, k, list(a.targets) + [d for d in shifted if d < 1.0],
                      a.accuracy)
        br, low = both[:len(a.targets)], both[len(a.targets):]
        if cut > 0:
            low = low + [fourier.Bracket(0.0, 0.0)] * (len(a.targets) - len(low))   # delta + cut >= 1: eps >= 0
            br = [fourier.Bracket(min(b.lower, x.lower), b.upper) for b, x in zip(br, low)]
        res = [{"delta": d, "eps_lower": _num(b.lower), "eps_upper": _num(b.upper)} for d, b in zip(a.targets, br)]
    return a, {"mechanism": a.mechanism, "params": params, "compositions": k,
               "results": res, "seconds": time.perf_counter() - t0}


def _table(out):
    cols = list(out["results"][0].keys())
    lines = [f"{out['mechanism']} {out['params']}  compositions={out['compositions']}",
             "  ".join(f"{c:>14}" for c in cols)]
    for r in out["results"]:
        lines.append("  ".join(f"{'inf' if r[c] is None else format(r[c], '.8g'):>14}" for c in cols))
    lines.append(f"({out['seconds']:.2f} s)")
    return "\n".join(lines)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    try:
        if argv[:1] == ["rdp"]:
            a, out = run_rdp(argv[1:])
            print(json.dumps(out) if a.json else _table(dict(out, compositions=1)))
            return 0
        if argv[:1] == ["calibrate"]:
            a, out = run_calibrate(argv[1:])
            print(json.dumps(out) if a.json else
                  f"{out['mechanism']} {out['params']}\n{out['solve']} = {out['value']:.8g}  "
                  f"(delta_upper = {out['achieved']['delta_upper']:.4g} at eps = {out['achieved']['eps']:g}; "
                  f"{out['seconds']:.2f} s)")
            return 0
        a, out = run(argv)
        bad = [r for r in out["results"] for x in r.values() if isinstance(x, float) and math.isnan(x)]
        if bad:
            raise ValueError(f"internal error: NaN in result {bad[0]} (please report).")
    except (ValueError, OverflowError) as e:
        sys.stderr.write(f"error: {e}\n".replace("\n", " ").rstrip() + "\n")
        return 2
    print(json.dumps(out) if a.json else _table(out))
    return 0
