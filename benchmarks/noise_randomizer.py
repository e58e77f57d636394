"""Timings of the shuffled numeric randomisers' certified route: prints a table.

One round (delta at n = 1e4 and 1e6, eps(1e-6) at n = 1e4) and K = 10 rounds at n = 1e4 (the
envelope PLD's profile plus the Fourier accountant).  Not part of pass/fail.
Run: PYTHONPATH=. python benchmarks/noise_randomizer.py
"""

import time

from shuffle_lib.mechanisms.randomizer import noise as N
from shuffle_lib.mechanisms.randomizer import noise_compose as C


def timed(f, *args, **kw):
    t = time.perf_counter()
    out = f(*args, **kw)
    return out, time.perf_counter() - t


def row(what, br, s):
    print(f"{what:46s} [{br.lower:.4g}, {br.upper:.4g}]{'':4s} {s:8.1f}")


if __name__ == "__main__":
    print(f"{'what':46s} {'bracket':>28s} {'seconds':>8s}")
    for noise in ("gaussian", "laplace"):
        for n, eps in ((10**4, 0.05), (10**6, 0.005)):
            br, s = timed(N.delta_bracket, noise, n, eps, scale=1.0)
            row(f"{noise} delta, n={n:.0e}, eps={eps:g}", br, s)
        br, s = timed(N.epsilon_bracket, noise, 10**4, 1e-6, scale=1.0)
        row(f"{noise} eps(1e-6), n=1e4 (width {br.upper / br.lower - 1:.1%})", br, s)
        br, s = timed(C.composed_epsilon, noise, 10**4, [1e-6], 10, scale=1.0)
        row(f"{noise} eps(1e-6), n=1e4, K=10 (width {br[0].upper / br[0].lower - 1:.1%})", br[0], s)
