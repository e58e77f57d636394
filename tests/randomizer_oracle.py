"""An exact oracle for shuffled finite randomisers, independent of shuffle_lib.

For n users with inputs (x, y_2, ..., y_n) and a randomiser matrix R (rows: inputs, columns:
outputs), the shuffled output is the histogram of the n reports; its law is the convolution of
the n rows over the lattice of histograms.  The worst-case delta(eps) over neighbouring datasets
(x0, y) ~ (x1, y) is the maximum over ordered pairs x0 != x1 and over multisets y of the
others' inputs of sum_h max(P(h) - e^eps Q(h), 0) (K rounds on the same dataset: the product
laws).  Floats with math.fsum: the oracle's own rounding is ~1e-15 relative, which the tests
allow for explicitly.
"""

from __future__ import annotations

import itertools
import math

import numpy as np


def histogram_law(rows: list[np.ndarray], n_out: int) -> dict[tuple[int, ...], float]:
    """The law of the histogram of independent reports, one row per user: {counts: probability}
    (sparse: C(n + n_out - 1, n_out - 1) histograms at most)."""
    law = {(0,) * n_out: 1.0}
    for r in rows:
        new: dict[tuple[int, ...], list[float]] = {}
        for h, pr in law.items():
            for o in range(n_out):
                if r[o] > 0:
                    g = h[:o] + (h[o] + 1,) + h[o + 1:]
                    new.setdefault(g, []).append(pr * r[o])
        law = {h: math.fsum(v) for h, v in new.items()}
    return law


def hockey(P: dict, Q: dict, eps: float, rounds: int = 1) -> float:
    """sum max(P^K - e^eps Q^K, 0) over the K-fold product (K = rounds in {1, 2})."""
    keys = sorted(set(P) | set(Q))
    p = np.array([P.get(h, 0.0) for h in keys])
    q = np.array([Q.get(h, 0.0) for h in keys])
    if rounds == 2:
        p, q = np.outer(p, p).ravel(), np.outer(q, q).ravel()
    elif rounds != 1:
        raise ValueError("rounds must be 1 or 2")
    return math.fsum(np.maximum(p - math.exp(eps) * q, 0.0))


def worst_delta(R: np.ndarray, n: int, eps: float, rounds: int = 1) -> float:
    """The exact worst-case delta(eps) of the shuffled randomiser R with n users."""
    R = np.asarray(R, dtype=float)
    k, m = R.shape
    best = 0.0
    for others in itertools.combinations_with_replacement(range(k), n - 1):
        rest = [R[y] for y in others]
        laws = [histogram_law([R[x]] + rest, m) for x in range(k)]
        for x0 in range(k):
            for x1 in range(k):
                if x0 != x1:
                    best = max(best, hockey(laws[x0], laws[x1], eps, rounds))
    return best
