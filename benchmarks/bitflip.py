"""Tight q for shuffled bit flipping at n = 1e5 with the worst case over EVERY m.

    .venv/bin/python benchmarks/bitflip.py [n]

Chapter 5 scans every m only up to n = 1e4 and a grid of m beyond (a lower bound
on the q needed); this script removes that gap for one n (minutes at n = 1e5).
Prints the tight q for m = 0, over m_grid(n), over all m, and the seed's Lemma 4.5 q.
"""

import sys
import time

from shuffle_lib import bitflip as bf

n = int(sys.argv[1]) if len(sys.argv) > 1 else 10 ** 5
print(f"{'eps':>4} {'delta':>6} {'n':>7} {'q m=0':>10} {'q grid':>10} {'q all m':>10} {'seed L4.5':>10} {'s':>6}")
for eps, dl in [(1.0, 1e-6), (0.5, 1e-6), (0.2, 1e-6)]:
    t = time.time()
    q0 = bf.q_needed(n, eps, dl, tol=1e-3)
    qg = bf.q_needed_worst(n, eps, dl, bf.m_grid(n), tol=1e-3)
    qa = bf.q_needed_worst(n, eps, dl, tol=1e-3)
    print(f"{eps:4.2g} {dl:6.0e} {n:7d} {q0:10.4g} {qg:10.4g} {qa:10.4g} {bf.seed_q_lemma45(n, eps, dl):10.4g} "
          f"{time.time() - t:6.0f}", flush=True)
