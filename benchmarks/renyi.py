"""Cost and tightness of clone_renyi.clone_rdp at the seed's n = 1e4 and beyond (prints a table; not a test)."""

import time

from shuffle_lib.mechanisms.clones import renyi as clone_renyi

LAMS = [2, 4, 8, 16, 32, 64]

if __name__ == "__main__":
    print(f"{'n':>8} {'eps0':>5} {'seconds':>8} {'D_2':>12} {'D_64':>12} {'max rel. width':>15}")
    for n in (10 ** 4, 10 ** 5):            # n = 1e6: ~100 s per eps0 <= 2 on 2 cores
        for eps0 in (0.5, 2.0, 6.0):
            t0 = time.perf_counter()
            br = clone_renyi.clone_rdp(n, eps0, LAMS)
            dt = time.perf_counter() - t0
            width = max((b.upper - b.lower) / b.upper for b in br)
            print(f"{n:8d} {eps0:5.1f} {dt:8.2f} {br[0].upper:12.6g} {br[-1].upper:12.6g} {width:15.2e}")
