"""The whole benchmark table in one run (one round against Apple, compositions against dp_accounting, the exact evaluators): prints a table, never pass/fail.

    python benchmarks/suite.py [--apple DIR] [--wang DIR] [--repeats 3] [--quick] [--sections abcd]
                               [--peer-timeout 300]
                               [--once-above 20]

Workloads, all eps(delta = 1e-6) through the command line's route in process
(``shuffle_lib.mechanism_brackets``, what ``python -m shuffle_lib epsilon ...`` calls, without the
interpreter start-up):

(a) ``ldp-shuffle``, one round (the fmt21 clones pair of Feldman, McMillan, Talwar 2021), n in
    {1e4, 1e5, 1e6, 1e7, 1e8} x eps0 in {1, 4}, against Apple's ``numericalanalysis`` (FMT21's own
    code, ``computeamplification.py`` of ``apple/ml-shuffling-amplification``; num_iterations = 10,
    step = 100 as in its example.py): its upper and its lower bound, the peer's seconds being both
    calls together (a bracket against a bracket).
(b) against Google's dp_accounting at matched accuracy, through ``benchmarks/compositions.py``'s
    own functions (:func:`_compositions`, the adapter): ``ldp-shuffle`` compositions K in
    {1, 10, 100, 1000} at n = 1e4, eps0 = 4, a 3-outcome custom pair at K = 10, and chapter 9's
    accountant pipeline (30 rounds of ``ldp-shuffle`` with the stronger clones pair at n = 1e5,
    eps0 = 4, and 4 Gaussian releases: ``ShuffleAccountant`` against dp_accounting's own PLDs
    composed and read).  The summary gives each ratio by wall and by CPU time (targets: 4x for
    the compositions, 2x for the pipeline).
(d) the deployed randomisers against Wang et al.'s variation-ratio code (``--wang DIR``, a
    checkout of ``wangsw/PrivacyAmplification``; VLDB 2024), through ``benchmarks/randomizers.py``'s
    own functions: k-RR (k = 10, eps0 = 1) and OUE (d = 100, eps0 = 3) at n = 1e4, K = 1 (their
    ``amplificationUB``, T = 20 bisection steps).  Their number is a comparison, not a certified
    bound for OUE or k-RR (chapter 10, the ledger); the ratio is their seconds over ours.
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
runs in under a minute; ``--sections b``: section (b) alone.  Neither peer is part of this project: fetch Apple's repository yourself,
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
    prepare: Callable[[], None] | None = None        # untimed work before the first run


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


def _compositions(Ks: tuple[int, ...], extra: bool) -> tuple[list[tuple], str]:
    """Adapter to benchmarks/compositions.py (its workloads, ours and dp_accounting's functions).

    Returns ([(name, ours() -> Bracket, peer() -> eps text or None, prepare()), ...], why the peer
    is missing): ``ldp-shuffle`` n = 1e4, eps0 = 4 at each K of ``Ks``, and with ``extra`` the 3-outcome
    custom pair at K = 10 and chapter 9's accountant pipeline (``pipeline_ours`` /
    ``pipeline_peer``).  Accuracy as there: REL x eps / 2, eps from an untimed run at accuracy
    1e-2; dp_accounting at matched accuracy, its coarsest discretisation within REL of our upper
    end (``compositions.matched_h``), searched by the row's untimed ``prepare``.
    """
    spec = importlib.util.spec_from_file_location("_bench_compositions", HERE / "compositions.py")
    comp = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(comp)
    rel = comp.REL
    have_peer = getattr(comp, "dpl", None) is not None
    work = [(f"ldp-shuffle n=1e4 eps0=4 K={K}", lambda acc, K=K: comp.ours_clones(K, acc),
             ("clones", K)) for K in Ks]
    if extra:
        work.append(("custom 3 outcomes K=10", lambda acc: comp.ours_custom(10, acc), ("custom", 10)))
        if have_peer:
            work.append(("pipeline: 30 ldp-shuffle n=1e5 + 4 Gaussians", comp.pipeline_ours,
                         ("pipeline", 0)))
    pmfs: dict = {}

    def their(kind: str, K: int, h: float) -> float:
        if kind not in pmfs:        # dp_accounting's input, prepared once, untimed
            pmfs[kind] = comp.log_pmfs(*(comp.CUSTOM if kind == "custom" else comp.peer_pmfs(
                *((comp.PIPE_N, comp.PIPE_EPS0, "stronger") if kind == "pipeline" else ()))))
        if kind == "pipeline":
            return comp.pipeline_peer(*pmfs[kind], h)
        return comp.peer(*pmfs[kind], K, h)

    out = []
    for name, ours_at, (kind, K) in work:
        state: dict = {}

        def prepare(ours_at=ours_at, state=state, kind=kind, K=K) -> None:
            """Untimed: our accuracy, a warm run, and dp_accounting's matched discretisation."""
            if "acc" in state:
                return
            state["acc"] = rel * ours_at(1e-2).upper / 2
            target = ours_at(state["acc"]).upper * (1 + rel)
            if have_peer:
                state["h"] = comp.matched_h(lambda h: their(kind, K, h), state["acc"], target)[0]

        def ours(ours_at=ours_at, state=state):
            return ours_at(state["acc"])

        def peer(state=state, kind=kind, K=K) -> str:
            return f"{their(kind, K, state['h']):.6f}"

        out.append((name, ours, peer if have_peer else None, prepare))
    return out, "" if have_peer else "dp_accounting not importable"


def _wang_rows(wang: str | None) -> list[Row]:
    """Section (d): ours and Wang et al.'s eps for k-RR and OUE at n = 1e4, one round, through
    benchmarks/randomizers.py (its ``ours`` and ``wang_eps``)."""
    spec = importlib.util.spec_from_file_location("_bench_randomizers", HERE / "randomizers.py")
    rb = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rb)
    why = "" if wang else "not given (--wang DIR)"
    out = []
    for family, e0 in (("krr", 1.0), ("oue", 3.0)):
        size = f"k={rb.K_RR}" if family == "krr" else f"d={rb.D_DOMAIN}"
        peer = None
        if wang:
            def peer(family=family, e0=e0) -> str:
                return f"{rb.wang_eps(wang, family, e0, 10 ** 4)[0]:.6f}"
        out.append(Row("d", f"randomizer {family} {size} eps0={e0:g} n=1e4 K=1",
                       lambda family=family, e0=e0: rb.ours(family, e0, 10 ** 4, 1)[0], peer,
                       "Wang et al.", why))
    return out


def rows(quick: bool, apple, apple_why: str, sections: str = "abc",
         wang: str | None = None) -> list[Row]:
    out = []
    mb = sl.mechanism_brackets
    ns = (10 ** 4, 10 ** 5) if quick else (10 ** 4, 10 ** 5, 10 ** 6, 10 ** 7, 10 ** 8)
    for e0 in ((1.0, 4.0) if "a" in sections else ()):
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
    comp_rows: list[tuple] = []
    try:
        if "b" in sections:
            comp_rows, why = _compositions((1, 10) if quick else (1, 10, 100, 1000), not quick)
    except Exception as err:            # the adapter's file is being rewritten elsewhere
        comp_rows, why = [], f"compositions.py: {type(err).__name__}: {err}"
        out.append(Row("b", "compositions", None, None, "dp_accounting", why))
    for name, ours, peer, prepare in comp_rows:
        out.append(Row("b", name, ours, peer, "dp_acc. matched", why, prepare))
    if "d" in sections:
        out.extend(_wang_rows(wang))
    if "c" not in sections:
        return out
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
    """Medians of ``repeats`` alternating runs (ours, then the peer) of wall and CPU seconds (the CPU
    time of this process: the machine is shared, and its load moves the wall clock); a peer run that
    was stopped or took more than ``once`` seconds is not repeated (its noise is small beside it)."""
    if row.prepare is not None:
        row.prepare()
    ts, tp, cs, cp, alone, br, val, stopped = [], [], [], [], [], None, "", False
    for _ in range(repeats):
        if row.ours is not None:
            cold()
            c = time.process_time()
            br, t = timed(row.ours)
            cs.append(time.process_time() - c)
            ts.append(t)
        if row.peer is not None and not stopped and not (tp and tp[0] > once):
            c = time.process_time()
            v, t = timed(row.peer, limit)
            cp.append(time.process_time() - c)
            stopped = v is PeerTimeout
            if isinstance(v, tuple):           # (value, seconds of the upper-bound call alone)
                v, t_alone = v
                alone.append(t_alone)
            val = f"stopped after {limit:g} s" if stopped else v
            tp.append(t)

    def med(x):
        return statistics.median(x) if x else math.nan
    return {"br": br, "ours": med(ts), "peer": med(tp), "val": val, "stopped": stopped,
            "alone": med(alone), "ours_cpu": med(cs), "peer_cpu": med(cp)}


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
    ap.add_argument("--wang", help="a checkout of wangsw/PrivacyAmplification (section d)")
    ap.add_argument("--sections", default="abcd",
                    help="the sections to run, e.g. 'b' for the compositions against dp_accounting alone")
    a = ap.parse_args()
    if not a.sections or set(a.sections) - set("abcd"):
        ap.error(f"--sections takes letters of 'abcd', got {a.sections!r}")
    apple, why = _apple(a.apple)
    work = rows(a.quick, apple, why, a.sections, a.wang)
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
    b = [(r, m) for r, m in results if r.section == "b" and r.ours is not None]
    k_rows = [(r, m) for r, m in b if r.name.startswith("ldp-shuffle")]
    small = [m["ours"] for r, m in k_rows if int(r.name.split("K=")[1]) <= 100]
    if small:
        print(f"(b) ldp-shuffle K = 1, 10, 100: {sum(small):.3f} s in total (target: <= 0.5 s)")
    for r, m in b:
        if r.peer is not None:
            target = 2 if r.name.startswith("pipeline") else 4
            print(f"(b) {r.name}: dp_accounting / ours = {m['peer'] / m['ours']:.1f}x by wall time, "
                  f"{m['peer_cpu'] / m['ours_cpu']:.1f}x by CPU time "
                  f"({m['ours_cpu']:.3f} s against {m['peer_cpu']:.3f} s; target >= {target}x)")
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
