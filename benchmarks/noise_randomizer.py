"""Timings of the shuffled numeric randomisers' certified route (one round): prints a table.

Not part of pass/fail.  Run: PYTHONPATH=. python benchmarks/noise_randomizer.py
"""

import time

from shuffle_lib.mechanisms.randomizer import noise as N


def timed(f, *args, **kw):
    t = time.perf_counter()
    out = f(*args, **kw)
    return out, time.perf_counter() - t


if __name__ == "__main__":
    print(f"{'what':44s} {'result':>34s} {'seconds':>8s}")
    for noise in ("gaussian", "laplace"):
        for n, eps in ((10 ** 4, 0.05), (10 ** 6, 0.005)):
            br, s = timed(N.delta_bracket, noise, n, eps, scale=1.0)
            print(f"{noise} delta n={n:.0e} eps={eps:<6g}{'':14s} [{br.lower:.4g}, {br.upper:.4g}] {s:8.1f}")
        br, s = timed(N.epsilon_bracket, noise, 10 ** 4, 1e-6, scale=1.0)
        print(f"{noise} eps(1e-6) n=1e4 (width {br.upper / br.lower - 1:.1%}){'':7s} "
              f"[{br.lower:.4g}, {br.upper:.4g}] {s:8.1f}")
    print("K = 10 rounds: not available (no certified composition for --noise yet)")
