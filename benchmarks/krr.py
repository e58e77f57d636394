"""Longer runs for chapter 02 (shuffled k-RR): never part of pass/fail.

    .venv/bin/python benchmarks/krr.py timing      # PLD size and build time vs n, both adversaries
    .venv/bin/python benchmarks/krr.py big         # the Figure 1 table at n = 10^5 (both adversaries)

``timing`` prints workload / seconds / ratio against a baseline timed in the same
run: the seed's loose one-dimensional pair (two binomial PMFs, O(n)).
"""

import argparse
import math
import time

import numpy as np
from scipy.stats import binom

from shuffle_lib import krr


def _baseline(n, gamma, k):
    pmf = binom.pmf(np.arange(n), n - 1, gamma / k)
    return np.append(0.0, pmf), np.append(pmf, 0.0)


def timing():
    print(f"{'workload':34s}{'atoms':>12}{'seconds':>10}{'ratio':>10}")
    for n in (100, 300, 1000, 3000, 10000, 100000):
        t0 = time.perf_counter()
        _baseline(n, 0.25, 4)
        base = max(time.perf_counter() - t0, 1e-6)
        print(f"{'baseline: 1-d pair, n=' + str(n):34s}{2 * n:>12}{base:>10.4f}{1.0:>10.1f}")
        for adv in ("strong", "weak"):
            krr.strong_pld.cache_clear()
            krr.weak_pld.cache_clear()
            t0 = time.perf_counter()
            try:
                pl = krr.adversary_pld(adv, n, 0.25, 4)
                atoms = pl.atoms
            except ValueError:
                print(f"{adv + ' exact PLD, n=' + str(n):34s}{'refused (too large)':>32}")
                continue
            dt = time.perf_counter() - t0
            print(f"{adv + ' exact PLD, n=' + str(n):34s}{atoms:>12}{dt:>10.3f}{dt / base:>10.0f}", flush=True)


def big():
    params = dict(n=10 ** 5, gamma=0.25, k=4)
    deltas = [1e-4, 1e-6]
    for adv in ("strong", "weak"):
        for nc in (1, 10, 100):
            t0 = time.perf_counter()
            br = krr.epsilon_bracket(adv, delta=deltas, n_c=nc, accuracy=2e-3, **params)
            ana = [krr.balle_epsilon_composed(delta=d, n_c=nc, **params) for d in deltas]
            print(f"{adv:6s} n_c={nc:>3}  " + "  ".join(
                f"delta={d:g}: [{b.lower:.4f}, {b.upper:.4f}], Balle {a if math.isfinite(a) else 'inf':.4}"
                for d, b, a in zip(deltas, br, ana)) + f"  ({time.perf_counter() - t0:.0f} s)", flush=True)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["timing", "big"])
    {"timing": timing, "big": big}[ap.parse_args().what]()
