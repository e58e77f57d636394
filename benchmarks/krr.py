"""Longer runs for chapter 02 (shuffled k-RR): never part of pass/fail.

    .venv/bin/python benchmarks/krr.py timing      # PLD size and build time vs n, both adversaries
    .venv/bin/python benchmarks/krr.py big         # the Figure 1 table at n = 10^5 (both adversaries)
    .venv/bin/python benchmarks/krr.py single      # one round at n = 1e4..1e6: streamed vs the PLD route
    .venv/bin/python benchmarks/krr.py composed    # K = 10 rounds at n = 1e4..1e7: the lattice pairs

``timing`` prints workload / seconds / ratio against a baseline timed in the same
run: the seed's loose one-dimensional pair (two binomial PMFs, O(n)).
"""

import argparse
import math
import time

import numpy as np
from scipy.stats import binom

from shuffle_lib.mechanisms import krr


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
            br = krr.epsilon_bracket(adv, delta=deltas, compositions=nc, accuracy=2e-3, **params)
            ana = [krr.balle_epsilon_composed(delta=d, n_c=nc, **params) for d in deltas]
            print(f"{adv:6s} n_c={nc:>3}  " + "  ".join(
                f"delta={d:g}: [{b.lower:.4f}, {b.upper:.4f}], Balle {a if math.isfinite(a) else 'inf':.4}"
                for d, b, a in zip(deltas, br, ana)) + f"  ({time.perf_counter() - t0:.0f} s)", flush=True)


def single():
    """One round, eps(1e-6): the streamed route (what the CLI takes) against the PLD route of
    krr_model (exact PLD, binned above 1e6 atoms, or the coarse binned pairs), same run."""
    from shuffle_lib.core import evaluate
    from shuffle_lib.mechanisms.krr import stream
    print(f"{'workload':38s}{'streamed eps bracket':>28}{'s':>7}{'rel.w':>9}"
          f"{'PLD-route eps bracket':>28}{'s':>7}{'rel.w':>9}")
    cases = [("weak", 10 ** 4, 0.25, 4), ("weak", 10 ** 4, 0.853, 4), ("weak", 10 ** 5, 0.25, 4),
             ("weak", 10 ** 5, 0.853, 4), ("weak", 10 ** 6, 0.25, 4), ("strong", 10 ** 5, 0.25, 4),
             ("strong", 10 ** 6, 0.25, 4), ("strong", 10 ** 6, 0.853, 4), ("strong", 10 ** 8, 0.25, 4)]
    for adv, n, g, k in cases:
        t0 = time.perf_counter()
        b = stream.epsilon_streamed(adv, n, g, k, [1e-6])[0]
        ts = time.perf_counter() - t0
        row = f"{adv + f' n={n:.0e} gamma={g} k={k}':38s}{f'[{b.lower:.6g}, {b.upper:.6g}]':>28}{ts:>7.2f}" \
              f"{(b.upper - b.lower) / b.upper:>9.1e}"
        if n <= 10 ** 5 or (adv == "strong" and n <= 10 ** 6):
            t0 = time.perf_counter()
            try:
                c = evaluate.epsilon_brackets(krr.krr_model(adv, n, g, k), [1e-6])[0]
                tp = time.perf_counter() - t0
                row += f"{f'[{c.lower:.6g}, {c.upper:.6g}]':>28}{tp:>7.2f}{(c.upper - c.lower) / c.upper:>9.1e}"
            except ValueError as err:
                row += f"  refused: {str(err)[:60]}"
        print(row, flush=True)


def composed():
    """K = 10 rounds, eps(1e-6), gamma = 0.853, k = 4: bracket, relative width
    and seconds of the whole query (PLD pair and composition), at the default accuracy and at
    2e-5.  Above ~1e6 atoms the pair is the lattice pair of krr.lattice."""
    from shuffle_lib import mechanism_brackets
    print(f"{'adversary':10s}{'n':>8}{'accuracy':>10}{'eps bracket':>26}{'width':>9}{'met':>6}{'s':>8}")
    for adv in ("strong", "weak"):
        for n in (10 ** 4, 10 ** 5, 10 ** 6, 10 ** 7):
            for acc in (2e-4, 2e-5):
                krr.strong_pld.cache_clear()
                krr.weak_pld.cache_clear()
                krr.lattice.strong_pld_lattice.cache_clear()
                krr.lattice.weak_pld_lattice.cache_clear()
                t0 = time.perf_counter()
                b = mechanism_brackets(f"krr-{adv}", "epsilon", [1e-6], 10, accuracy=acc,
                                       n=n, gamma=0.853, k=4)[0]
                dt = time.perf_counter() - t0
                print(f"{adv:10s}{n:>8.0e}{acc:>10.0e}{f'[{b.lower:.6g}, {b.upper:.6g}]':>26}"
                      f"{(b.upper - b.lower) / b.lower:>9.2%}{str(b.accuracy_met):>6}{dt:>8.1f}",
                      flush=True)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["timing", "big", "single", "composed"])
    {"timing": timing, "big": big, "single": single, "composed": composed}[ap.parse_args().what]()
