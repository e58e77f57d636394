"""The exact shuffled privacy of a small randomiser, by enumeration (the book's ground truth).

The shuffled output of n users is the histogram of their reports; for inputs (x, y_2, ..., y_n)
its law is the convolution of the n rows of R.  The worst case over neighbouring datasets is a
maximum over the ordered pairs x0 != x1 and the multisets of the others' inputs (the order of
the others does not matter to a histogram).  Cost: C(n+k-2, k-1) multisets x k convolutions over
C(n+m-1, m-1) histograms, so keep n <= 8, k <= 4, m <= 6.  (tests/randomizer_oracle.py is an
independent implementation the tests compare this with.)

One neighbouring pair of datasets (:func:`dataset_delta`) takes the cheaper of two exact
representations: the histogram index, (n+1)^(m-1) cells (the first m-1 counts in base n+1), or
the m^n ordered outputs of the n users, each labelled by its sorted tuple (its histogram), which
is the smaller one for many outputs and few users (a unary encoding on d values has m = 2^d:
d = 4, n = 4 is 16^4 = 65536 ordered outputs against 5^15 histogram cells).  Either is refused
above MAX_CELLS.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from typing import overload

import numpy as np

from shuffle_lib.core import validate as v
from shuffle_lib.mechanisms.randomizer.decompose import check_matrix

MAX_CELLS = 2_000_000   # cells an enumeration may visit (exact_worst_delta: histograms x
                        # multisets x inputs; dataset_delta: its smaller representation)
LABEL_CHUNK = 2 ** 16   # ordered outputs labelled at a time (bounds the digits array)


def _laws(R: np.ndarray, others: tuple[int, ...],
          inputs: Sequence[int] | None = None) -> list[np.ndarray]:
    """The histogram law for each input x (every row, or those in ``inputs``) of the differing
    user, as vectors on one index of histograms (base n+1 digits of the first m-1 counts)."""
    k, m = R.shape
    n = len(others) + 1
    base = n + 1
    size = base ** (m - 1)
    strides = base ** np.arange(m - 1)
    law = np.zeros(size)
    law[0] = 1.0
    for y in others:
        law = _add_user(law, R[y], strides, n)
    return [_add_user(law, R[x], strides, n) for x in (range(k) if inputs is None else inputs)]


def _hockey(P: np.ndarray, Q: np.ndarray, e: float) -> float:
    """sum max(P - e Q, 0): ``math.fsum`` (the terms' sum, correctly rounded) of the positive
    terms only, which is the same sum (the zeros add nothing to it)."""
    diff = P - e * Q
    return math.fsum(diff[diff > 0.0].tolist())


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
            best = max(best, _hockey(P, Q, e))
    return best


@functools.lru_cache(maxsize=4)
def _histogram_labels(m: int, n: int) -> tuple[np.ndarray, int]:
    """(label, H): for each ordered n-tuple of m outputs (flat index sum_i o_i m^i), the index
    of its histogram among the H histograms that occur (the sorted tuples, in increasing order of
    sum_i sorted_i m^i).  Read-only: the array is shared by every call with (m, n)."""
    powers = m ** np.arange(n, dtype=np.int64)
    keys = np.empty(m ** n, dtype=np.int64)
    for start in range(0, m ** n, LABEL_CHUNK):
        flat = np.arange(start, min(start + LABEL_CHUNK, m ** n), dtype=np.int64)
        keys[flat] = np.sort(flat[:, None] // powers % m, axis=1) @ powers
    uniq, inverse = np.unique(keys, return_inverse=True)
    label = inverse.astype(np.int32 if uniq.size < 2 ** 31 else np.int64).ravel()
    label.setflags(write=False)
    return label, int(uniq.size)


def _ordered_laws(R: np.ndarray, others: tuple[int, ...]) -> list[np.ndarray]:
    """The laws of the histogram under inputs 0 and 1 of the differing user, from the product
    law on the m^n ordered outputs (the others' rows and the user's) summed by histogram."""
    m, n = R.shape[1], len(others) + 1
    label, H = _histogram_labels(m, n)
    rest = functools.reduce(np.multiply.outer, [R[y] for y in others], np.ones(()))
    return [np.bincount(label, np.multiply.outer(rest, R[x]).ravel(), minlength=H)
            for x in (0, 1)]


@overload
def dataset_delta(matrix: Sequence[Sequence[float]] | np.ndarray, others: Sequence[int],
                  eps: float) -> float: ...


@overload
def dataset_delta(matrix: Sequence[Sequence[float]] | np.ndarray, others: Sequence[int],
                  eps: Sequence[float] | np.ndarray) -> np.ndarray: ...


def dataset_delta(
    matrix: Sequence[Sequence[float]] | np.ndarray,
    others: Sequence[int],
    eps: float | Sequence[float] | np.ndarray,
) -> float | np.ndarray:
    """delta(eps) of the shuffled randomiser between the datasets (row 0, others) and (row 1,
    others), the larger direction: one concrete neighbouring pair, so a lower bound on the worst
    case (:func:`exact_worst_delta`).

    The two laws of the shuffled output are exact on the cheaper of the histogram index
    ((n+1)^(m-1) cells) and the m^n ordered outputs labelled by their histogram (module
    docstring); each hockey stick sum_h max(P(h) - e^eps Q(h), 0) is summed by ``math.fsum``.

    Args:
        matrix: the randomiser, k x m (rows: inputs, columns: outputs).
        others: the other n - 1 users' inputs (row indices); n = len(others) + 1 <= 12.
        eps: one eps >= 0, or a sequence of them (the laws are built once for all).

    Returns:
        delta(eps) as a float for one eps; a float array, one per eps, for a sequence.

    Raises:
        ValueError: a bad matrix, an input outside the rows, a negative eps, or n with more
            than MAX_CELLS cells in either representation.
    """
    R = check_matrix(matrix)
    k, m = R.shape
    others = tuple(v.integer("others", y, lo=0, hi=k - 1) for y in others)
    n = v.integer("n", len(others) + 1, lo=1, hi=12)
    epss = v.reals("eps", eps, lo=0.0)
    hist, ordered = (n + 1) ** (m - 1), m ** n
    if min(hist, ordered) > MAX_CELLS:
        raise ValueError(f"n={n} with {m} outputs needs {hist:.2g} histogram cells or "
                         f"{ordered:.2g} ordered outputs; the enumeration allows {MAX_CELLS:.0e}.")
    P, Q = _ordered_laws(R, others) if ordered < hist else _laws(R, others, (0, 1))
    out = np.array([max(_hockey(P, Q, math.exp(e)), _hockey(Q, P, math.exp(e))) for e in epss])
    return float(out[0]) if np.ndim(eps) == 0 else out
