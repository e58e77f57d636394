"""Tight q for shuffled bit flipping at n = 1e5 with the worst case over EVERY m; --m worst timings.

    .venv/bin/python benchmarks/bitflip.py [n]
    .venv/bin/python benchmarks/bitflip.py worst    # one round, --m worst at n = 1e4..1e6 (blocks of m)

Chapter 5 scans every m only up to n = 1e4 and a grid of m beyond (a lower bound
on the q needed); this script removes that gap for one n (minutes at n = 1e5).
Prints the tight q for m = 0, over m_grid(n), over all m, and the seed's Lemma 4.5 q.
"""

import sys
import time

from shuffle_lib.mechanisms.mixnet import bitflip as bf

if len(sys.argv) > 1 and sys.argv[1] == "worst":
    from shuffle_lib.mechanisms.mixnet.bitflip_worst import worst_brackets
    print(f"{'n':>8} {'q':>7} {'verb':>8} {'bracket':>28} {'rel.w':>8} {'pairs':>6} {'widest':>7} {'s':>6} "
          f"{'every m (n<=1e4) s':>19}")
    for n, q in [(10 ** 4, 0.01), (10 ** 4, 0.1), (10 ** 5, 0.01), (10 ** 6, 0.001), (10 ** 6, 0.01)]:
        for verb, target in (("delta", 1.0), ("epsilon", 1e-6)):
            t = time.perf_counter()
            (b,), info = worst_brackets(n, q, verb, [target])
            dt = time.perf_counter() - t
            every = ""
            if n <= 10 ** 4 and verb == "delta":
                t = time.perf_counter()
                x = float(bf.delta_worst(n, q, [target])[0])
                every = f"{time.perf_counter() - t:8.1f} ({'in' if b.lower <= x <= b.upper else 'OUT'})"
            print(f"{n:8d} {q:7g} {verb:>8} {f'[{b.lower:.6g}, {b.upper:.6g}]':>28} "
                  f"{(b.upper - b.lower) / max(b.upper, 1e-300):8.1e} {info['pairs']:6d} {info['widest_block']:7d} "
                  f"{dt:6.2f} {every:>19}", flush=True)
    sys.exit(0)

n = int(sys.argv[1]) if len(sys.argv) > 1 else 10 ** 5
print(f"{'eps':>4} {'delta':>6} {'n':>7} {'q m=0':>10} {'q grid':>10} {'q all m':>10} {'seed L4.5':>10} {'s':>6}")
for eps, dl in [(1.0, 1e-6), (0.5, 1e-6), (0.2, 1e-6)]:
    t = time.time()
    q0 = bf.q_needed(n, eps, dl, tol=1e-3)
    qg = bf.q_needed_worst(n, eps, dl, bf.m_grid(n), tol=1e-3)
    qa = bf.q_needed_worst(n, eps, dl, tol=1e-3)
    print(f"{eps:4.2g} {dl:6.0e} {n:7d} {q0:10.4g} {qg:10.4g} {qa:10.4g} {bf.seed_q_lemma45(n, eps, dl):10.4g} "
          f"{time.time() - t:6.0f}", flush=True)
