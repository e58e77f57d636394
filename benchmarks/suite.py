"""The whole benchmark table in one run (one round against Apple, compositions against dp_accounting, the exact evaluators): prints a table, never pass/fail.

    python benchmarks/suite.py [--apple DIR] [--repeats 3] [--quick] [--peer-timeout 300] [--once-above 20]

Workloads, all eps(delta = 1e-6) through the command line's route in process
(``shuffle_lib.mechanism_brackets``, what ``python -m shuffle_lib epsilon ...`` calls, without the
interpreter start-up):

(a) ``ldp-shuffle``, one round (the fmt21 clones pair of Feldman, McMillan, Talwar 2021), n in
    {1e4, 1e5, 1e6, 1e7, 1e8} x eps0 in {1, 4}, against Apple's ``numericalanalysis`` (FMT21's own
    code, ``computeamplification.py`` of ``apple/ml-shuffling-amplification``; num_iterations = 10,
    step = 100 as in its example.py): its upper and its lower bound, the peer's seconds being both
    calls together (a bracket against a bracket).
(b) ``ldp-shuffle`` compositions K in {1, 10, 100} at n = 1e4, eps0 = 4 against Google's
    dp_accounting at matched accuracy, through ``benchmarks/compositions.py``'s own functions
    (:func:`_compositions`, the adapter, reads them by name).
(c) the exact evaluators, no peer: ``krr-strong`` / ``krr-weak`` (gamma = 0.853, k = 4) at
    n = 1e4 and 1e5 (``krr-weak`` also at 1e6 and 1e7: blocks of b), ``bitflip --m worst`` at n = 1e4 (q = 0.01) and 1e6 (q = 0.001), the
    ``randomizer`` k-RR (k = 10, eps0 = 1 and 4) at n = 1e4 (its peers: benchmarks/randomizers.py).

Columns: our median seconds, our certified bracket and its relative width (upper - lower) / upper,
the peer's median seconds and value, and peer seconds / our seconds (for Apple also its upper-bound
call alone).  Each of the ``--repeats`` runs calls ours then the peer, alternating, in this
process; before each of ours every cache of shuffle_lib is emptied (:func:`cold`), so each run
costs what the command line's one call costs, less the imports (scipy's take seconds and are done
once, untimed, before the first row).  A peer not given or not importable says so in its
column.  A peer call longer than ``--peer-timeout`` seconds is stopped (SIGALRM) and its column
says so, the ratio then being a lower bound (">="); a peer run longer than ``--once-above``
seconds is not repeated (Apple's code takes minutes at some sizes).  ``--quick``: a subset that
runs in under a minute.  Neither peer is part of this project: fetch Apple's repository yourself,
and ``pip install dp-accounting`` into a scratch environment (never into the project's).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import math
import platform
import signal
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import shuffle_lib as sl

try:
    from tqdm import tqdm
except ImportError:                      # the bar is a convenience
    def tqdm(it, **_):
        return it

DELTA = 1e-6
HERE = Path(__file__).resolve().parent


@dataclass
class Row:
    section: str
    name: str
    ours: Callable[[], object]                       # -> Bracket
    peer: Callable[[], tuple[str, float]] | None     # -> (value text, value for the table)
    peer_name: str = ""
    missing: str = ""                                # why the peer column is empty


class PeerTimeout(Exception):
    pass


def _alarm(signum, frame):
    raise PeerTimeout


def timed(f, limit: float | None = None):
    """(result, seconds); result is PeerTimeout if ``limit`` seconds passed first."""
    if limit:
        old = signal.signal(signal.SIGALRM, _alarm)
        signal.setitimer(signal.ITIMER_REAL, limit)
    t = time.perf_counter()
    try:
        out = f()
    except PeerTimeout:
        out = PeerTimeout
    finally:
        if limit:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
    return out, time.perf_counter() - t


def cold():
    """Empty every ``functools.lru_cache`` of shuffle_lib, so each of our runs is a first call, as
    the command line's always is (the k-RR PLDs and the randomiser decompositions are cached)."""
    for name, mod in list(sys.modules.items()):
        if name.startswith("shuffle_lib"):
            for obj in list(vars(mod).values()):
                if callable(getattr(obj, "cache_clear", None)):
                    obj.cache_clear()


def _apple(path: str | None):
    """Apple's computeamplification module, or (None, why not)."""
    if not path:
        return None, "not given (--apple DIR)"
    if not (Path(path) / "computeamplification.py").exists():
        return None, f"no computeamplification.py in {path}"
    sys.path.insert(0, str(path))
    return importlib.import_module("computeamplification"), ""


def _compositions(Ks: tuple[int, ...]):
    """Adapter to benchmarks/compositions.py (another file, whose signatures may still move).

    Returns (ours(K) -> Bracket, peer(K) -> eps | None, why the peer is missing), reading by name:
    ``ours_clones(K, accuracy)``, ``peer(p, q, K, h)``, ``matched(p, q, K, h0, target)``, ``DELTA``, ``REL``, ``dpl`` (None without
    dp_accounting) and, if present, ``peer_pmfs()`` (the PMFs dp_accounting gets); without it the
    same atoms as that file's ``main`` (``clone_pld(1e4, 4, "fmt21", 1e-18, "lower", 1e7)``).
    Accuracy as there: REL x eps / 2, eps from an untimed run at accuracy 1e-2.
    """
    spec = importlib.util.spec_from_file_location("_bench_compositions", HERE / "compositions.py")
    comp = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(comp)
    rel = getattr(comp, "REL", 1e-4)
    acc = {}

    def accuracy(K):
        if K not in acc:
            acc[K] = rel * comp.ours_clones(K, 1e-2).upper / 2
        return acc[K]

    def ours(K):
        return comp.ours_clones(K, accuracy(K))

    if getattr(comp, "dpl", None) is None:
        return ours, None, "dp_accounting not importable"
    if hasattr(comp, "peer_pmfs"):
        p, q = comp.peer_pmfs()
    else:
        import numpy as np
        from shuffle_lib.mechanisms.clones.pld import clone_pld
        pl = clone_pld(10_000, 4.0, "fmt21", 1e-18, "lower", 10 ** 7)[0]
        p, q = pl.probs, pl.probs / np.exp(pl.losses)

    h_matched = {}

    def peer(K):
        """dp_accounting at matched accuracy: the coarsest discretisation (``compositions.matched``,
        searched once per K before any timing) whose eps is within REL of our upper end."""
        return comp.peer(p, q, K, h_matched[K])

    for K in Ks:                          # untimed: the matched discretisations
        h_matched[K] = comp.matched(p, q, K, accuracy(K), ours(K).upper * (1 + rel))[0]
    return ours, peer, ""


def rows(quick: bool, apple, apple_why: str) -> list[Row]:
    out = []
    mb = sl.mechanism_brackets
    ns = (10 ** 4, 10 ** 5) if quick else (10 ** 4, 10 ** 5, 10 ** 6, 10 ** 7, 10 ** 8)
    for e0 in (1.0, 4.0):
        for n in ns:
            def ours(n=n, e0=e0):
                return mb("ldp-shuffle", "epsilon", [DELTA], 1, n=n, eps0=e0)[0]
            peer = None
            if apple is not None:
                def peer(n=n, e0=e0):
                    t = time.perf_counter()   # not timed(): a PeerTimeout must reach measure's timed
                    up = apple.numericalanalysis(n, e0, DELTA, 10, 100, True)
                    t_up = time.perf_counter() - t
                    lo = apple.numericalanalysis(n, e0, DELTA, 10, 100, False)
                    return f"[{lo:.6f}, {up:.6f}]", t_up
            out.append(Row("a", f"ldp-shuffle K=1 n={n:.0e} eps0={e0:g}", ours, peer, "Apple FMT21", apple_why))
    try:
        c_ours, c_peer, why = _compositions((1, 10) if quick else (1, 10, 100))
    except Exception as err:            # the adapter's file is being rewritten elsewhere
        c_ours, c_peer, why = None, None, f"compositions.py: {type(err).__name__}: {err}"
    for K in ((1, 10) if quick else (1, 10, 100)):
        if c_ours is None:
            out.append(Row("b", f"ldp-shuffle n=1e4 eps0=4 K={K}", None, None, "dp_accounting", why))
            continue
        peer = None if c_peer is None else (lambda K=K: f"{c_peer(K):.6f}")
        out.append(Row("b", f"ldp-shuffle n=1e4 eps0=4 K={K}", lambda K=K: c_ours(K), peer, "dp_acc. matched", why))
    exact = [("krr-strong", 10 ** 4, dict(gamma=0.853, k=4)), ("krr-weak", 10 ** 4, dict(gamma=0.853, k=4)),
             ("bitflip", 10 ** 4, dict(q=0.01, m="worst")), ("randomizer", 10 ** 4, dict(family="krr", k=10, eps0=4.0))]
    if not quick:
        exact[2:2] = [("krr-strong", 10 ** 5, dict(gamma=0.853, k=4)), ("krr-weak", 10 ** 5, dict(gamma=0.853, k=4)),
                      ("krr-weak", 10 ** 6, dict(gamma=0.853, k=4)), ("krr-weak", 10 ** 7, dict(gamma=0.853, k=4))]
        exact[7:7] = [("bitflip", 10 ** 6, dict(q=0.001, m="worst"))]
        exact.append(("randomizer", 10 ** 4, dict(family="krr", k=10, eps0=1.0)))
    for name, n, kw in exact:
        label = " ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in kw.items())
        out.append(Row("c", f"{name} n={n:.0e} {label}", lambda name=name, n=n, kw=kw:
                       mb(name, "epsilon", [DELTA], 1, n=n, **kw)[0], None, "", "no peer in this table"))
    return out


def measure(row: Row, repeats: int, limit: float, once: float) -> dict:
    """Medians of ``repeats`` alternating runs (ours, then the peer); a peer run that was stopped or
    took more than ``once`` seconds is not repeated (its noise is small beside it)."""
    ts, tp, alone, br, val, stopped = [], [], [], None, "", False
    for _ in range(repeats):
        if row.ours is not None:
            cold()
            br, t = timed(row.ours)
            ts.append(t)
        if row.peer is not None and not stopped and not (tp and tp[0] > once):
            v, t = timed(row.peer, limit)
            stopped = v is PeerTimeout
            if isinstance(v, tuple):           # (value, seconds of the upper-bound call alone)
                v, t_alone = v
                alone.append(t_alone)
            val = f"stopped after {limit:g} s" if stopped else v
            tp.append(t)
    return {"br": br, "ours": statistics.median(ts) if ts else math.nan,
            "peer": statistics.median(tp) if tp else math.nan, "val": val, "stopped": stopped,
            "alone": statistics.median(alone) if alone else math.nan}


def table(results: list[tuple[Row, dict]]) -> str:
    head = (f"{'':1} {'workload':<44} {'ours s':>8} {'our bracket':>30} {'rel width':>9}  "
            f"{'peer':<13} {'peer s':>8} {'peer value':>26} {'peer/ours':>9}")
    lines = [head, "-" * len(head)]
    for row, m in results:
        br = m["br"]
        text = "--" if br is None else f"[{br.lower:.8g}, {br.upper:.8g}]"
        width = "--" if br is None else f"{(br.upper - br.lower) / br.upper:9.1e}" if br.upper > 0 else "0"
        if row.peer is None:
            peer = f"{row.peer_name + ': ' if row.peer_name else ''}{row.missing}"
            lines.append(f"{row.section:1} {row.name:<44} {m['ours']:8.3f} {text:>30} {width:>9}  {peer}")
            continue
        ratio = m["peer"] / m["ours"]
        r = f"{'>=' if m['stopped'] else ''}{ratio:.1f}"
        lines.append(f"{row.section:1} {row.name:<44} {m['ours']:8.3f} {text:>30} {width:>9}  "
                     f"{row.peer_name:<13} {m['peer']:8.3f} {m['val']:>26} {r:>9}"
                     + (f"  (upper call alone {m['alone']:.3f} s: {m['alone'] / m['ours']:.1f}x)"
                        if m["alone"] == m["alone"] else ""))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--apple", help="folder holding Apple's computeamplification.py")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="a subset that runs in under a minute")
    ap.add_argument("--peer-timeout", type=float, default=300.0, help="seconds before a peer call is stopped")
    ap.add_argument("--once-above", type=float, default=20.0,
                    help="a peer run longer than this many seconds is not repeated")
    a = ap.parse_args()
    apple, why = _apple(a.apple)
    work = rows(a.quick, apple, why)
    sl.mechanism_brackets("ldp-shuffle", "epsilon", [DELTA], 1, n=100, eps0=1.0)   # imports scipy, untimed
    t0 = time.perf_counter()
    results = [(r, measure(r, a.repeats, a.peer_timeout, a.once_above)) for r in tqdm(work, desc="workloads", unit="row")]
    print(f"shuffle-accounting benchmark, eps(delta = 1e-6), medians of {a.repeats} alternating runs; "
          f"{platform.python_version()}, {time.strftime('%Y-%m-%d')}, {_load()}")
    print(table(results))
    a_rows = [(r, m) for r, m in results if r.section == "a" and r.peer is not None]
    if a_rows:
        slower = [r.name for r, m in a_rows if not m["stopped"] and m["ours"] > m["peer"]]
        alone = [r.name for r, m in a_rows if not m["stopped"] and m["ours"] > m["alone"]]
        print(f"(a) ours <= Apple's time (its two calls) in {len(a_rows) - len(slower)} of {len(a_rows)} rows"
              + (f"; slower: {', '.join(slower)}" if slower else "")
              + f"; ours <= its upper-bound call alone in {len(a_rows) - len(alone)} of {len(a_rows)}"
              + (f"; slower: {', '.join(alone)}" if alone else ""))
    b = [m["ours"] for r, m in results if r.section == "b" and r.ours is not None]
    if b:
        print(f"(b) ldp-shuffle K = {', '.join(r.name.split('K=')[1] for r, _ in results if r.section == 'b')}: "
              f"{sum(b):.3f} s in total (target: <= 0.5 s)")
    print(f"wall time {time.perf_counter() - t0:.0f} s")


def _load() -> str:
    try:
        with open("/proc/loadavg") as f:
            one, five = f.read().split()[:2]
        return f"load average {one} (1 min) {five} (5 min) at the end"
    except OSError:
        return "load average unknown"


if __name__ == "__main__":
    main()
