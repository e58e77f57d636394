"""Speed of the two grid builders of the clones pair: prints a table, never pass/fail.

    python benchmarks/clones_grid.py [--quick]

Both give the same (upper, lower) PLDs on the grid k h (tests/test_clone_pld.py): the binned
builder rounds the exact atoms (O(#atoms)), the tails builder differences binomial tails per
s and grid cell (O(#s x #cells)).  Baseline: the tails builder, timed in the same run.  Then
what the binned builder makes possible: eps(1e-10) of 100 rounds at n = 1e6.
"""

import argparse
import time

from shuffle_lib.mechanisms import clones
from shuffle_lib.mechanisms.clones import pld as clone_pld


def timed(f, *a, **k):
    t = time.perf_counter()
    out = f(*a, **k)
    return out, time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="n = 1e5 only")
    cases = [(10 ** 5, 1.0, 2e-5), (10 ** 5, 1.0, 2e-6)]
    if not ap.parse_args().quick:
        cases += [(10 ** 6, 1.0, 2e-5)]
    print(f"{'workload':<36} {'binned s':>9} {'tails s':>9} {'tails/binned':>13} {'max |delta diff|':>17}")
    for n, e0, h in cases:
        (bu, bl), tb = timed(clone_pld.clone_pld_binned, n, e0, h)
        try:
            (gu, _), tg = timed(clone_pld.clone_pld_grid, n, e0, h, "upper")
            (gl, _), tl = timed(clone_pld.clone_pld_grid, n, e0, h, "lower")
            from shuffle_lib.core.pld import hockey_stick
            diff = max(abs(hockey_stick(bu, e) - hockey_stick(gu, e)) + abs(hockey_stick(bl, e) - hockey_stick(gl, e))
                       for e in (0.0, 0.01, 0.05))
            tails = f"{tg + tl:>9.2f} {(tg + tl) / tb:>13.1f} {diff:>17.1e}"
        except ValueError as err:
            tails = f"{'--':>9} {'--':>13} {'':>17}  ({str(err)[:40]}...)"
        print(f"n={n:.0e} eps0={e0:g} h={h:g}{'':<8} {tb:>9.2f} {tails}", flush=True)
    if not ap.parse_args().quick:
        r, t = timed(clones.epsilon_bracket, 10 ** 6, 1.0, [1e-10], compositions=100)
        print(f"\nn=1e6, eps0=1, 100 rounds, eps(1e-10) in [{r[0].lower:.5f}, {r[0].upper:.5f}]: {t:.1f} s")


if __name__ == "__main__":
    main()
