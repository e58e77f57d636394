"""Bounds the papers compare the clones pair with: FMT21's closed form, FMT21's numerical
method, and Erlingsson et al. (2019).

* :func:`fmt21_closed_form` -- Feldman, McMillan, Talwar (2021), Thm 3.1: for
  eps0 <= log(n / (16 log(2/delta))),
  eps <= log(1 + (e^eps0 - 1)/(e^eps0 + 1) (8 sqrt(e^eps0 log(4/delta)) / sqrt(n) + 8 e^eps0 / n)).
* :func:`feldman_delta` / :func:`feldman_epsilon` -- FMT21's numerical method (Sec. 4 of
  their paper; Koskela et al. 2021, Sec. 5.3, Koskela et al. 2022, Sec. 3.3), implemented from the
  description: given C = c the pair is one-dimensional, delta_c(eps) follows from two binomial CDFs,
  and delta_c is non-increasing in c (one more clone is post-processing: adding a
  Bern(1/2) coin), so blocks of `step` consecutive c are bounded by their end points:
  upper with the smallest c of the block, lower with the largest.  Blocks are visited
  outwards from the mode; once the mass left is below the running delta it is added to the
  upper bound and ignored by the lower one.  eps(delta) by `num_iterations` bisection steps
  on [0, eps0], as in the paper.
* :func:`erlingsson_epsilon` -- Erlingsson et al. (2019), Cor. 9: for eps0 < 1/2,
  delta in (0, 1/100) and n > 1000, eps = 12 eps0 sqrt(log(1/delta) / n).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import binom

from shuffle_lib.bounds.closed_forms import erlingsson_epsilon as erlingsson_epsilon_any
from shuffle_lib.bounds.closed_forms import fmt21_closed_form, fmt21_epsilon_log  # noqa: F401  (public here too)
from shuffle_lib.core import grid
from shuffle_lib.core import validate as v
from shuffle_lib.core.types import Bracket
from shuffle_lib.mechanisms.clones.pairs import (
    MAX_N,
    PAIRS,
    clone_probability,
    conditional_tails,
    loss_threshold,
    shared_weights,
)


def erlingsson_epsilon(n: int, eps0: float, delta: float) -> float:
    """Erlingsson et al. (2019), Cor. 9, refused outside its stated range (eps0 < 1/2,
    delta < 1/100, n > 1000): :func:`shuffle_lib.bounds.closed_forms.erlingsson_epsilon`, strict."""
    return erlingsson_epsilon_any(n, eps0, delta, strict=True)


def _delta_c(n, eps0, c, eps, pair):
    """delta_{P/Q}(eps) given C = c (arrays of c): the paper's 'onestep', both directions equal."""
    pr = PAIRS[pair]
    s = np.asarray(c, dtype=np.int64) + 1
    _, al, be, ga = shared_weights(n, eps0, pr, s)
    k = loss_threshold(s, al, be, ga, eps)
    tp, tq = conditional_tails(s, k, al, be, ga)
    return np.maximum(tp - math.exp(eps) * tq, 0.0)


# the per-block arrays of feldman_delta (bounds, masses, tails, sums), float64
BYTES_PER_BLOCK = 200


def _check_blocks(n, step):
    """Refuse (ValueError naming ``step``) a block count whose arrays would exceed
    grid.MEMORY_LIMIT."""
    blocks = -(-n // step)
    if blocks * BYTES_PER_BLOCK > grid.MEMORY_LIMIT:
        raise ValueError(
            f"step={step} at n={n} gives {blocks:.3g} blocks, about "
            f"{blocks * BYTES_PER_BLOCK / 1e9:.3g} GB, more than the limit of "
            f"{grid.MEMORY_LIMIT / 1e9:.3g} GB (SHUFFLE_LIB_MEMORY_LIMIT); take a larger step."
        )


def feldman_delta(
    n: int, eps0: float, eps: float, step: int | None = None, pair: str = "fmt21"
) -> Bracket:
    """FMT21's numerical method: Bracket(lower, upper) for delta(eps) of the (full) clones pair.

    step: block width in c (default: the standard deviation of C / 20, at least 1; the
    authors' example uses 100 at n = 1e5).  Vectorised over blocks; the outward visiting
    order and the stopping rule are applied to cumulative sums.

    Source: Feldman et al. 2021, Sec. 4 (numerical method) on the pair of Thm 3.2; Koskela et al.
    2021, Sec. 5.3.
    """
    n = v.integer("n", n, lo=1, hi=MAX_N)
    eps0 = v.real("eps0", eps0, 0.0, 30.0, lo_open=True)
    eps = v.real("eps", eps, lo=0.0)
    if pair not in PAIRS or not PAIRS[pair].full:
        raise ValueError(
            f"pair must be 'fmt21' or 'stronger' for Feldman's method, got pair={pair!r}."
        )
    p = clone_probability(eps0, pair)
    if step is None:
        step = max(1, int(math.sqrt((n - 1) * p * (1 - p)) / 20))
    step = v.integer("step", step, lo=1)
    _check_blocks(n, step)
    mode = min(n - 1, math.floor(n * p))
    lo = np.arange(0, n, step)
    lo = lo[np.argsort(np.abs(lo + (step - 1) / 2 - mode), kind="stable")]
    hi = np.minimum(lo + step - 1, n - 1)
    mass = np.maximum(binom.cdf(hi, n - 1, p) - binom.cdf(lo - 1, n - 1, p), 0.0)
    up = np.cumsum(mass * _delta_c(n, eps0, lo, eps, pair))
    low = np.cumsum(mass * _delta_c(n, eps0, hi, eps, pair))
    left = 1.0 - np.cumsum(mass)
    stop = np.flatnonzero(left < up)
    j = int(stop[0]) if stop.size else lo.size - 1
    return Bracket(float(low[j]), float(min(1.0, up[j] + max(0.0, left[j]))))


def feldman_epsilon(
    n: int,
    eps0: float,
    delta: float,
    step: int | None = None,
    num_iterations: int = 20,
    pair: str = "fmt21",
) -> Bracket:
    """eps(delta) by bisection on [0, eps0] (num_iterations steps): Bracket(lower, upper).

    Source: Feldman et al. 2021, Sec. 4; Koskela et al. 2022, Sec. 3.3.
    """
    eps0 = v.real("eps0", eps0, 0.0, 30.0, lo_open=True)
    delta = v.probability("delta", delta)
    num_iterations = v.integer("num_iterations", num_iterations, lo=1, hi=200)
    out = []
    for side in (0, 1):
        lo, hi = 0.0, float(eps0)
        for _ in range(num_iterations):
            mid = 0.5 * (lo + hi)
            d = feldman_delta(n, eps0, mid, step, pair)
            if (d.upper <= delta) if side else (d.lower < delta):
                hi = mid
            else:
                lo = mid
        out.append(lo if side == 0 else hi)
    return Bracket(*out)
