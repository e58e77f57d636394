"""One round of an eps0-LDP shuffler through the command line's route, against its peers.

    python benchmarks/single_round.py [--apple DIR] [--old DIR] [--repeat R]

Prints a table, never pass/fail.  Workload: eps(delta = 1e-6), one round of ``ldp-shuffle``
(the clones pair of Feldman, McMillan, Talwar 2021), as ``python -m shuffle_lib epsilon
ldp-shuffle --n N --eps0 E0 --delta 1e-6`` computes it (``shuffle_lib.mechanism_brackets``, in
process: the command line's code path without the interpreter start-up), and ``krr-strong`` at
n = 1e5.  Peers timed in the same run, when given:

* ``--apple DIR``: a checkout of Apple's ``ml-shuffling-amplification`` (FMT21's own code,
  ``computeamplification.numericalanalysis``, num_iterations = 10, step = 100 as in its
  example.py), upper and lower bound.  Not part of this project; fetch it yourself.
* ``--old DIR``: an older checkout of this project (e.g. ``git worktree add /tmp/old e6f11cc``),
  run as ``python -m shuffle_lib ... --json`` with ``PYTHONPATH=DIR`` in a subprocess; its time is
  the JSON's own ``seconds`` (the computation, without the interpreter start-up).

Our timing is the median of ``--repeat`` runs; the peers run once each, Apple's only up to
n = 1e6.  The whole table (Apple at every n up to 1e8 with a time limit, alternating
medians, compositions, the exact evaluators) is ``benchmarks/suite.py``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import subprocess
import sys
import time

import shuffle_lib as sl

WORK = [(10 ** 4, 1.0), (10 ** 5, 1.0), (10 ** 6, 4.0), (10 ** 8, 4.0)]
DELTA = 1e-6


def timed(f):
    t = time.perf_counter()
    out = f()
    return out, time.perf_counter() - t


def ours(n, eps0):
    return sl.mechanism_brackets("ldp-shuffle", "epsilon", [DELTA], 1, n=n, eps0=eps0)[0]


def old_cli(root, args):
    env = dict(os.environ, PYTHONPATH=root)
    cmd = [sys.executable, "-m", "shuffle_lib", *args, "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=3600)
    if out.returncode:
        return None, out.stderr.strip().splitlines()[-1]
    res = json.loads(out.stdout)
    return res["results"][0], res["seconds"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--apple", help="checkout of apple/ml-shuffling-amplification")
    ap.add_argument("--old", help="older checkout of this project")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    apple = None
    if a.apple:
        sys.path.insert(0, a.apple)
        apple = importlib.import_module("computeamplification")
    print(f"{'workload':<34} {'ours: s':>9} {'eps bracket':>30} {'peer':>28} {'peer: s':>9} {'x faster':>8}")
    for n, e0 in WORK:
        work = f"ldp-shuffle n={n:.0e} eps0={e0:g}"
        runs = []
        for _ in range(a.repeat):
            runs.append(timed(lambda: ours(n, e0)))
        br, secs = runs[-1][0], statistics.median(t for _, t in runs)
        peers = []
        if apple is not None and n <= 10 ** 6:
            up, t_up = timed(lambda: apple.numericalanalysis(n, e0, DELTA, 10, 100, True))
            lo, t_lo = timed(lambda: apple.numericalanalysis(n, e0, DELTA, 10, 100, False))
            peers.append((f"Apple [{lo:.4f},{up:.4f}]", t_up + t_lo))
        if a.old:
            r, t = old_cli(a.old, ["epsilon", "ldp-shuffle", "--n", str(n), "--eps0", str(e0), "--delta", str(DELTA)])
            peers.append(("old CLI" if r else f"old CLI: {t[:20]}", t if r else float("nan")))
        text = f"[{br.lower:.6f}, {br.upper:.6f}]"
        if not peers:
            print(f"{work:<34} {secs:>9.3f} {text:>30}")
        for i, (name, t) in enumerate(peers):
            print(f"{work if i == 0 else '':<34} {format(secs, '9.3f') if i == 0 else '':>9} {text if i == 0 else '':>30} "
                  f"{name[:28]:>28} {t:>9.3f} {t / secs:>8.1f}")
    args = ["epsilon", "krr-strong", "--n", "100000", "--gamma", "0.25", "--k", "4", "--delta", str(DELTA)]
    (b, secs) = timed(lambda: sl.mechanism_brackets("krr-strong", "epsilon", [DELTA], 1, n=10 ** 5, gamma=0.25, k=4)[0])
    line = f"{'krr-strong n=1e5 gamma=0.25 k=4':<34} {secs:>9.3f} {f'[{b.lower:.6f}, {b.upper:.6f}]':>30}"
    if a.old:
        r, t = old_cli(a.old, args)
        line += f" {'old CLI':>28} {t:>9.3f} {t / secs:>8.1f}" if r else f" old CLI: {t}"
    print(line)


if __name__ == "__main__":
    main()
