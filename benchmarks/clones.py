"""Speed of the clones-pair accountant: prints a table, never pass/fail.

    python benchmarks/clones.py [--quick]

Workloads: certified single-round eps(delta = 1e-6) and delta(eps = 0.1) for
n in {1e4, ..., 1e8}, eps0 in {1, 4}; compositions n_c in {10, 100, 1000} at n in {1e4, 1e6}.
Baselines timed in the same run: FMT21's numerical method (shuffle_lib.fmt21, our
implementation from the paper; n <= 1e6), the O(n^2) direct sum over all atoms (n = 3000),
and dp_accounting's PLD built from the same PMFs (compositions, n = 1e4).
"""

import argparse
import math
import time

import numpy as np

from shuffle_lib.core import pld
from shuffle_lib.mechanisms import clones
from shuffle_lib.mechanisms.clones import fmt21
from shuffle_lib.mechanisms.clones import pld as clone_pld


def timed(f, *a, **k):
    t = time.perf_counter()
    out = f(*a, **k)
    return out, time.perf_counter() - t


def row(work, secs, result, base=None):
    ratio = "" if base is None else f"{base[1]:>9.3f} s  x{base[1] / secs:>8.1f}  ({base[0]})"
    print(f"{work:<48} {secs:>9.3f} s  {result:<34} {ratio}")


def single(quick):
    ns = [10 ** 4, 10 ** 5, 10 ** 6] if quick else [10 ** 4, 10 ** 5, 10 ** 6, 10 ** 7, 10 ** 8]
    for n in ns:
        for e0 in (1.0, 4.0):
            b, t = timed(clones.epsilon_bracket_single, n, e0, 1e-6)
            base = None
            if n <= 10 ** 6:
                f, tf = timed(fmt21.feldman_epsilon, n, e0, 1e-6, num_iterations=20)
                base = (f"FMT21 method [{f.lower:.5f}, {f.upper:.5f}]", tf)
            row(f"eps(1e-6)   n={n:.0e} eps0={e0:g}", t, f"[{b.lower:.8f}, {b.upper:.8f}]", base)
            d, t = timed(clones.delta_bracket_single, n, e0, 0.1)
            base = None
            if n <= 10 ** 6:
                f, tf = timed(fmt21.feldman_delta, n, e0, 0.1)
                base = (f"FMT21 method up {f.upper:.3e}", tf)
            row(f"delta(0.1)  n={n:.0e} eps0={e0:g}", t, f"[{d.lower:.6e}, {d.upper:.6e}]", base)
    n, e0 = 3000, 4.0
    d, t = timed(clones.delta_bracket_single, n, e0, 0.1)
    pm, td = timed(clone_pld.clone_pmfs, n, e0)
    ex, te = timed(lambda: float(pld.delta_exact(*pm, 0.1)[0]))
    row(f"delta(0.1)  n={n} eps0={e0:g}", t, f"[{d.lower:.6e}, {d.upper:.6e}]",
        (f"O(n^2) direct sum {ex:.6e}", td + te))


def dp_accounting_eps(n, e0, k, delta):
    from dp_accounting.pld import privacy_loss_distribution as dpl
    P, Q = clone_pld.clone_pmfs(n, e0) if n <= 3000 else _kept_pmfs(n, e0)
    keep = (P > 0) & (Q > 0)
    lp = {i: math.log(x) for i, x in enumerate(P) if keep[i]}
    lq = {i: math.log(x) for i, x in enumerate(Q) if keep[i]}
    d = dpl.from_two_probability_mass_functions(lq, lp, value_discretization_interval=1e-4)
    return d.self_compose(k).get_epsilon_for_delta(delta)


def _kept_pmfs(n, e0):
    from shuffle_lib.mechanisms.clones.pld import atoms_at, kept_atoms
    pr = clones.PAIRS["fmt21"]
    ss, aa, _ = kept_atoms(n, e0, pr, 1e-18)
    return atoms_at(n, e0, pr, ss, aa)


def compositions(quick):
    for n in ((10 ** 4,) if quick else (10 ** 4, 10 ** 6)):
        for k in ((10, 100) if quick else (10, 100, 1000)):
            b, t = timed(clones.epsilon_bracket, n, 4.0, [1e-6], compositions=k)
            base = None
            if n == 10 ** 4 and k <= 100:
                e, td = timed(dp_accounting_eps, n, 4.0, k, 1e-6)
                base = (f"dp_accounting {e:.5f}", td)
            row(f"eps(1e-6) n_c={k} n={n:.0e} eps0=4", t, f"[{b[0].lower:.5f}, {b[0].upper:.5f}]", base)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    print(f"{'workload':<48} {'ours':>11}  {'result':<34} baseline (same run), ratio baseline/ours")
    single(a.quick)
    compositions(a.quick)


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
