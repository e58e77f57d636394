"""The exact shuffled privacy of a small randomiser, by enumeration (the book's ground truth).

The shuffled output of n users is the histogram of their reports; for inputs (x, y_2, ..., y_n)
its law is the convolution of the n rows of R.  The worst case over neighbouring datasets is a
maximum over the ordered pairs x0 != x1 and the multisets of the others' inputs (the order of
the others does not matter to a histogram).  Cost: C(n+k-2, k-1) multisets x k convolutions over
C(n+m-1, m-1) histograms, so keep n <= 8, k <= 4, m <= 6.  (tests/randomizer_oracle.py is an
independent implementation the tests compare this with.)
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

from shuffle_lib.core import validate as v
from shuffle_lib.mechanisms.randomizer.decompose import check_matrix

MAX_CELLS = 2_000_000   # histograms x multisets x inputs the enumeration may visit


def _laws(R: np.ndarray, others: tuple[int, ...]) -> list[np.ndarray]:
    """The histogram law for each input x of the differing user, as vectors on one index of
    histograms (base n+1 digits of the first m-1 counts)."""
    k, m = R.shape
    n = len(others) + 1
    base = n + 1
    size = base ** (m - 1)
    strides = base ** np.arange(m - 1)
    law = np.zeros(size)
    law[0] = 1.0
    for y in others:
        law = _add_user(law, R[y], strides, n)
    return [_add_user(law, R[x], strides, n) for x in range(k)]


def _add_user(law: np.ndarray, row: np.ndarray, strides: np.ndarray, n: int) -> np.ndarray:
    out = law * row[-1]
    for o, st in enumerate(strides):
        out[st:] += law[:-st] * row[o]     # one more report o: count o + 1 (never past n: no wrap)
    return out


def exact_worst_delta(
    matrix: Sequence[Sequence[float]] | np.ndarray, n: int, eps: float, rounds: int = 1
) -> float:
    """max over neighbouring datasets of delta(eps) of the shuffled randomiser, ``rounds`` in {1, 2}
    rounds on the same data (the product laws)."""
    R = check_matrix(matrix)
    n = v.integer("n", n, lo=1, hi=12)
    eps = v.real("eps", eps, lo=0.0)
    rounds = v.integer("rounds", rounds, lo=1, hi=2)
    k, m = R.shape
    cells = (
        math.comb(n + k - 2, k - 1)
        * k
        * (n + 1) ** (m - 1)
        * (m if rounds == 1 else (n + 1) ** (m - 1))
    )
    if cells > MAX_CELLS:
        raise ValueError(
            f"n={n} with a {k}x{m} matrix needs about {cells:.2g} cells; the enumeration allows "
            f"{MAX_CELLS:.0e} (keep n <= 8, k <= 4, m <= 6)."
        )
    e, best = math.exp(eps), 0.0
    for others in itertools.combinations_with_replacement(range(k), n - 1):
        laws = _laws(R, others)
        for x0, x1 in itertools.permutations(range(k), 2):
            P, Q = laws[x0], laws[x1]
            if rounds == 2:
                P, Q = np.outer(P, P).ravel(), np.outer(Q, Q).ravel()
            best = max(best, math.fsum(np.maximum(P - e * Q, 0.0)))
    return best


def dataset_delta(
    matrix: Sequence[Sequence[float]] | np.ndarray, others: Sequence[int], eps: float
) -> float:
    """delta(eps) of the shuffled randomiser between the datasets (row 0, others) and (row 1,
    others), the larger direction: one concrete neighbouring pair, so a lower bound on the worst
    case (:func:`exact_worst_delta`).  ``others``: the other users' inputs (row indices)."""
    R = check_matrix(matrix)
    k, m = R.shape
    others = tuple(v.integer("others", y, lo=0, hi=k - 1) for y in others)
    n = v.integer("n", len(others) + 1, lo=1, hi=12)
    eps = v.real("eps", eps, lo=0.0)
    cells = (n + 1) ** (m - 1)          # histograms: the length of each law
    if cells > MAX_CELLS:
        raise ValueError(f"n={n} with {m} outputs needs {cells:.2g} histograms; the "
                         f"enumeration allows {MAX_CELLS:.0e}.")
    P, Q = _laws(R, others)[:2]
    e = math.exp(eps)
    return max(math.fsum(np.maximum(P - e * Q, 0.0)), math.fsum(np.maximum(Q - e * P, 0.0)))
