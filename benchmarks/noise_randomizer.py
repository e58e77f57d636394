"""Timings of the shuffled numeric randomisers' certified route: prints a table.

Rows, all at scale 1 (Gaussian sigma, Laplace b, the discrete laws' scale):

* one round: delta(eps) at n = 1e4 and 1e6, eps(1e-6) at n = 1e4 and 1e6 (the targets: n = 1e6
  in under 30 s with a positive lower end);
* K = 10 rounds of eps(1e-6) at n = 1e4 (the envelope PLD's profile plus the Fourier accountant;
  target: under 60 s);
* integer noise on inputs {0, 1} (the two-sided geometric ``stats.dlaplace(1)`` and a discrete
  Gaussian), eps(1e-6) at n = 1e4, one round;
* the width's diagnosis at n = 1e4: certified ends of the datasets' (x, 0, ..., 0) own
  eps(1e-6) (``noise_crowd.crowd_epsilon``), which show how close the certified lower end is to
  those datasets and that the width is the blanket's.

Width = upper / lower - 1.  Not part of pass/fail.
Run: PYTHONPATH=. python benchmarks/noise_randomizer.py
"""

import math
import time

import numpy as np
from scipy import stats

from shuffle_lib.mechanisms.randomizer import noise as N
from shuffle_lib.mechanisms.randomizer import noise_compose as C
from shuffle_lib.mechanisms.randomizer import noise_crowd as CR
from shuffle_lib.mechanisms.randomizer import noise_discrete as D


def timed(f, *args, **kw):
    t = time.perf_counter()
    out = f(*args, **kw)
    return out, time.perf_counter() - t


def row(what, br, s):
    width = br.upper / br.lower - 1 if br.lower > 0 else math.inf
    print(f"{what:44s} [{br.lower:.5g}, {br.upper:.5g}]{'':2s} {width:7.1%} {s:8.1f}")


def discrete_gaussian(sigma=1.0, half=60):
    k = np.arange(-half, half + 1)
    p = np.exp(-(k**2) / (2 * sigma**2))
    return stats.rv_discrete(values=(k, p / p.sum()))


if __name__ == "__main__":
    print(f"{'what':44s} {'bracket':>26s} {'width':>7s} {'seconds':>8s}")
    for noise in ("gaussian", "laplace"):
        for n, eps in ((10**4, 0.05), (10**6, 0.005)):
            br, s = timed(N.delta_bracket, noise, n, eps, scale=1.0)
            row(f"{noise} delta, n={n:.0e}, eps={eps:g}", br, s)
        for n in (10**4, 10**6):
            br, s = timed(N.epsilon_bracket, noise, n, 1e-6, scale=1.0)
            row(f"{noise} eps(1e-6), n={n:.0e}", br, s)
        br, s = timed(C.composed_epsilon, noise, 10**4, [1e-6], 10, scale=1.0)
        row(f"{noise} eps(1e-6), n=1e4, K=10", br[0], s)
    for name, dist in (("dlaplace(1)", stats.dlaplace(1.0)),
                       ("discrete gaussian", discrete_gaussian())):
        br, s = timed(D.epsilon_bracket, dist, 10**4, [1e-6])
        row(f"{name} eps(1e-6), n=1e4", br[0], s)
    print("\nthe datasets (x, 0, ..., 0) at n = 1e4: certified ends of their own eps(1e-6)")
    for noise in ("gaussian", "laplace"):
        own, s = timed(CR.crowd_epsilon, noise, 10**4, 1e-6, scale=1.0)
        br = N.epsilon_bracket(noise, 10**4, 1e-6, scale=1.0)
        print(f"{noise:9s} theirs [{own.lower:.5f}, {own.upper:.5f}] "
              f"({own.upper / own.lower - 1:.2%} wide), the mechanism's certified upper "
              f"{br.upper:.5f} ({br.upper / own.upper - 1:.1%} above)  {s:.1f} s")
