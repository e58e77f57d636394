"""Compositions against dp_accounting at matched accuracy: prints a table, never pass/fail.

    python benchmarks/compositions.py [--repeats 3]

Workloads: eps(delta = 1e-6) of K rounds of the shuffled eps0-LDP randomiser (``ldp-shuffle``,
fmt21 clones pair, n = 1e4, eps0 = 4), K in {1, 10, 100}, asked with a relative bracket width of
1e-4 (``accuracy`` = 1e-4 x eps / 2, eps from a coarse run that is not timed), and a 3-outcome
``custom`` pair at K = 10.  Ours: ``clones.epsilon_bracket`` / ``fourier.epsilon_bracket``
(certified [lower, upper]).  dp_accounting: PMFs -> ``from_two_probability_mass_functions``
(pessimistic) -> ``self_compose`` -> ``get_epsilon_for_delta``, twice:

* 'dp@ours': at our discretisation (1e-4 x eps / 2); its error in eps grows like K x
  discretisation, so at K = 100 it lands well above our upper end (column 'dp eps');
* 'dp@match': at matched accuracy, the coarsest discretisation (found by halvings and doublings
  of the first, not timed) at which its eps is within the same relative 1e-4 of our bracket,
  dp_eps <= our_upper x (1 + 1e-4); the ratio 'dp/ours' compares this one.

Medians of ``--repeats`` runs, alternating, in one process.  dp_accounting is not a dependency of
the project: without it the peer columns say so.
"""

import argparse
import statistics
import time

import numpy as np

from shuffle_lib.core import fourier
from shuffle_lib.core.pld import pld_from_pmfs
from shuffle_lib.mechanisms import clones
from shuffle_lib.mechanisms.clones.pld import clone_pld

try:
    from dp_accounting.pld import privacy_loss_distribution as dpl
except ImportError:          # the peer column is skipped
    dpl = None

DELTA, REL = 1e-6, 1e-4
CUSTOM = ([0.5, 0.3, 0.2], [0.2, 0.3, 0.5])


def timed(f):
    t = time.perf_counter()
    out = f()
    return out, time.perf_counter() - t


def ours_clones(K, acc):
    return clones.epsilon_bracket(10_000, 4.0, [DELTA], compositions=K, accuracy=acc)[0]


def ours_custom(K, acc):
    p, q = CUSTOM
    return fourier.epsilon_bracket([(pld_from_pmfs(p, q), K)], [(pld_from_pmfs(q, p), K)], [DELTA], accuracy=acc)[0]


def peer(p, q, K, h):
    """dp_accounting's eps(DELTA) for K rounds of the pair (p, q), pessimistic, discretisation h."""
    lp = {i: float(np.log(x)) for i, x in enumerate(p) if x > 0}
    lq = {i: float(np.log(x)) for i, x in enumerate(q) if x > 0}
    d = dpl.from_two_probability_mass_functions(lq, lp, pessimistic_estimate=True, value_discretization_interval=h)
    return (d.self_compose(K) if K > 1 else d).get_epsilon_for_delta(DELTA)


def matched(p, q, K, h0, target):
    """(coarsest discretisation h = h0 2^j found with dp eps <= target, its eps); not timed."""
    h, eps = h0, peer(p, q, K, h0)
    if eps <= target:
        while h < 1.0:
            e2 = peer(p, q, K, 2 * h)
            if e2 > target:
                break
            h, eps = 2 * h, e2
        return h, eps
    for _ in range(12):
        h /= 2
        eps = peer(p, q, K, h)
        if eps <= target:
            return h, eps
    return h, eps    # not reached: printed as is


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    reps = ap.parse_args().repeats
    pl = clone_pld(10_000, 4.0, "fmt21", 1e-18, "lower", 10 ** 7)[0]   # dp_accounting gets the same atoms
    w = np.exp(pl.losses)                                               # P / Q of each kept atom
    p_cl, q_cl = pl.probs, pl.probs / w
    if dpl is None:
        print("dp_accounting is not importable: the peer columns are skipped (pip install dp-accounting "
              "into a scratch venv, never into the project).")
    print(f"{'workload':<30} {'ours s':>7} {'rel width':>9} {'our upper':>10} | {'dp@ours s':>9} {'dp eps':>10} "
          f"| {'match h':>8} {'dp@match s':>10} {'dp eps':>10} {'dp/ours':>8}")
    rows = [(f"ldp-shuffle n=1e4 eps0=4 K={K}", K, ours_clones, p_cl, q_cl) for K in (1, 10, 100)]
    rows.append(("custom 3 outcomes K=10", 10, ours_custom, *CUSTOM))
    total = 0.0
    for name, K, fn, p, q in rows:
        coarse = fn(K, 1e-2)                                            # not timed: the eps scale
        eps_scale = coarse.upper if np.isfinite(coarse.upper) else 1.0
        acc = REL * eps_scale / 2
        br = fn(K, acc)                                                 # warm, and the target
        h_m = eps_m = None
        if dpl is not None:
            h_m, eps_m = matched(p, q, K, acc, br.upper * (1 + REL))
        ts, tp, tm, dp_eps = [], [], [], float("nan")
        for _ in range(reps):
            br, t = timed(lambda: fn(K, acc))
            ts.append(t)
            if dpl is not None:
                dp_eps, t = timed(lambda: peer(p, q, K, acc))
                tp.append(t)
                _, t = timed(lambda: peer(p, q, K, h_m))
                tm.append(t)
        ours = statistics.median(ts)
        total += ours if name.startswith("ldp") else 0.0
        width = (br.upper - br.lower) / br.upper
        head = f"{name:<30} {ours:7.3f} {width:9.2e} {br.upper:10.6f}"
        if dpl is None:
            print(f"{head} | {'--':>9} {'--':>10} | {'--':>8} {'--':>10} {'--':>10} {'--':>8}")
        else:
            theirs = statistics.median(tm)
            print(f"{head} | {statistics.median(tp):9.3f} {dp_eps:10.6f} | {h_m:8.2g} {theirs:10.3f} "
                  f"{eps_m:10.6f} {theirs / ours:8.2f}")
    print(f"ldp-shuffle K = 1, 10, 100 in total: {total:.3f} s (target <= 0.5 s)")


if __name__ == "__main__":
    main()
