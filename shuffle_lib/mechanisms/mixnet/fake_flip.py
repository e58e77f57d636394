"""Fake-and-flip protocol (Zhilyaev 2020, Sec. 6): certified delta brackets for the column sums.

n users send one-hot vectors of their values in [d], m uniform fake one-hot vectors
are added, every bit of every vector is flipped with probability q, and the
released view is, as in the note, the vector g of column sums (N = n + m records;
the shuffled multiset of vectors itself may reveal more and is not covered).
Neighbours: x_1 = l vs x_1' = l'; the other users hold r_l, r_l' copies of l, l'
(default 0: they hold other values).  With F the fake counts and
t = F_l + F_l' (so F_l | t ~ Bin(t, 1/2)), g_k | h_k ~ A_N(h_k) independently
(:func:`shuffle_lib.mechanisms.mixnet.bitflip.pmf_A`), h = the true counts.

* lower: the exact delta of the marginal view (g_l, g_l') (a post-processing of g);
* upper: the exact delta when t is revealed too ((g, t) is at least as informative
  as g, and given t the other columns are independent of x_1), i.e.
  sum_t P[t] delta_t(eps), per direction.

For d = 2 both are the exact delta of g.  Exact computation on (N+1)^2 outcomes:
keep N <= ~500.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import binom

from shuffle_lib.core import validate as v
from shuffle_lib.core.types import ArrayLike
from shuffle_lib.mechanisms.mixnet.bitflip import pmf_A

# t with smaller Bin(m, 2/d) weight are skipped; their mass goes to the upper end
MIN_WEIGHT = 1e-30


def _joint(A, t, r1, r2):
    """(P, Q) joint PMFs of (g_l, g_l') given t fakes in {l, l'}, as (N+1, N+1) arrays;
    row h of A is the PMF of A_N(h)."""
    f = np.arange(t + 1)
    w = binom.pmf(f, t, 0.5)
    P = A[r1 + 1 + f].T @ (w[:, None] * A[r2 + t - f])
    Q = A[r1 + f].T @ (w[:, None] * A[r2 + 1 + t - f])
    return P, Q


def _both(P, Q, eps):
    """Hockey-stick divergences sum (P - e^eps Q)_+ in both directions (Koskela et al. 2021, Def.
    1)."""
    P, Q = P.ravel() / P.sum(), Q.ravel() / Q.sum()
    a = np.array([np.maximum(P - math.exp(e) * Q, 0.0).sum() for e in eps])
    b = np.array([np.maximum(Q - math.exp(e) * P, 0.0).sum() for e in eps])
    return a, b


def fake_flip_bracket(n: int, m: int, d: int, q: float, eps: ArrayLike,
                      r: tuple[int, int] = (0, 0)) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) arrays bracketing the tight delta(eps) of the column-sum view.

    Valid for n >= 1, m >= 0, d >= 2, 0 < q <= 1/2, r = (r_l, r_l') with
    r_l + r_l' <= n - 1 (r_l + r_l' = n - 1 when d = 2).

    Source: Zhilyaev 2020, Sec. 6 (module docstring); Koskela et al. 2021, Thm 5.
    """
    n = v.integer("n", n, lo=1, hi=10 ** 4)
    m = v.integer("m", m, lo=0, hi=10 ** 4)
    d = v.integer("d", d, lo=2, hi=10 ** 9)
    q = v.real("q", q, 0.0, 0.5, lo_open=True)
    eps = v.reals("eps", eps, lo=0.0)
    r1, r2 = (v.integer("r", x, lo=0, hi=n - 1) for x in r)
    if r1 + r2 > n - 1 or (d == 2 and r1 + r2 != n - 1):
        raise ValueError(
            f"r must satisfy r_l + r_l' <= n - 1 (= n - 1 when d = 2), got r={r}, n={n}."
        )
    N = n + m
    if N > 600:
        raise ValueError(f"n + m must be <= 600 for the exact (N+1)^2 computation, got n + m={N}.")
    ts = np.arange(m + 1)
    wt = binom.pmf(ts, m, min(1.0, 2.0 / d))
    keep = wt >= MIN_WEIGHT
    skipped = max(0.0, 1.0 - math.fsum(wt[keep]))
    A = np.array([pmf_A(N, h, q) for h in range(N + 1)])
    PM = np.zeros((N + 1, N + 1))
    QM = np.zeros((N + 1, N + 1))
    up_pq = np.zeros(eps.size)
    up_qp = np.zeros(eps.size)
    for t, w in zip(ts[keep], wt[keep]):
        P, Q = _joint(A, int(t), r1, r2)
        PM += w * P
        QM += w * Q
        a, b = _both(P, Q, eps)
        up_pq += w * a
        up_qp += w * b
    lo = np.maximum(0.0, np.maximum(*_both(PM, QM, eps)) - 2.0 * skipped)   # kept part renormalised
    up = np.minimum(1.0, np.maximum(up_pq, up_qp) + skipped)
    return lo, up


def seed_q_sec6(m: int, eps: float, delta: float) -> float:
    """The note's per-dimension route (Sec. 6 with Lemmas 4.4-4.5): each affected column
    (eps/2, delta/2)-private on the ~m fake zeros: q >= 3 ln(4/delta)/(m (1 - e^{-eps/2})^2)."""
    m = v.integer("m", m, lo=1)
    eps = v.real("eps", eps, 0.0, lo_open=True)
    delta = v.probability("delta", delta)
    return 3.0 * math.log(4.0 / delta) / (m * (-math.expm1(-eps / 2.0)) ** 2)
