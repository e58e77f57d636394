"""Shuffled k-RR histogram queries: Biswas et al.'s closed-form delta and the exact deltas.

Biswas, Jung & Palamidessi (2023), Sec. IV and Appendix.  User u holds x0
(dataset D(x0)) or x1 (D(x1)); of the other n - 1 users, n_x0 hold x0 and
m - 1 = n - 1 - n_x0 hold some other value.  Every user reports through k-RR
(Def. III.5): the true value w.p. p = e^eps0/(e^eps0+k-1), each other value
w.p. pbar = 1/(e^eps0+k-1).  The paper studies only the *count of x0* in the
output, S = M_x0(x_i) (Def. IV.1), whose two laws are

    S | D(x0) = Bern(p)    + Bin(n_x0, p) + Bin(m - 1, pbar),
    S | D(x1) = Bern(pbar) + Bin(n_x0, p) + Bin(m - 1, pbar).

Closed forms (eq. 3-6, 11-13, 15), with m = n - n_x0:

    kappa1 = e^eps0 (e^eps0 + k - 2)/(k - 1),   kappa2 = (k - 1)/(e^eps0 + k - 2),
    kappa3(s) = (k-1)^n_x0 (e^eps0+k-2)^(n-n_x0-s) / (e^eps0+k-1)^n   (depends on s),
    mu(s, r) = C(n_x0, r) C(m, s-r) kappa1^r,  tau_r = kappa2 m + (e^eps0 - kappa2)(s - r),
    P(S=s | D(x0)) = kappa3(s)/m sum_r mu(s, r) tau_r                    (eq. 12),
    P(S=s | D(x1)) = kappa3(s) sum_r mu(s, r)                            (eq. 13),
    delta_hat(eps) = sum_s 1{v_s > eps} (1 - e^{eps - v_s}) P(S=s | D(x0))  (eq. 6),

with v_s = log P(S=s|D(x0)) / P(S=s|D(x1)).  The paper's printed v_s (eq. 15,
last line, and Thm IV.1) has C(m-1, s-1-r) where C(m, s-r) belongs; both are
provided (``v_form="corrected"`` / ``"printed"``).  Everything is in log space.

The exact routes: :func:`count_pmfs_exact` / :func:`delta_count_exact` (the count,
both directions, by direct convolution), :func:`histogram_pmfs` /
:func:`delta_histogram_exact` (the whole released histogram, every configuration of
the other users, tiny n and k) and :func:`delta_histogram_homogeneous` (the whole
histogram when all other users share one value, exact on a sufficient statistic).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache
from typing import Literal

import numpy as np
from scipy.special import gammaln, logsumexp, xlogy
from scipy.stats import binom

from shuffle_lib.core import validate as v
from shuffle_lib.core.pld import PLD, delta_both, hockey_stick, pld_from_pmfs
from shuffle_lib.core.registry import Mechanism, Param, register
from shuffle_lib.core.types import ArrayLike, Model, PLDPair

_MAX_CLOSED_CELLS = 4_000_000  # (s, r) cells per chunk of the closed-form sums
MAX_N_CLOSED = 20_000           # the closed forms cost O(n n_x0); beyond this use count_pmfs_exact


def _check(n, n_x0, eps0, k, n_max=10 ** 6):
    n = v.integer("n", n, lo=2, hi=n_max)
    n_x0 = v.integer("n_x0", n_x0, lo=0, hi=n - 1)
    eps0 = v.real("eps0", eps0, 0.0, 30.0, lo_open=True)
    k = v.integer("k", k, lo=2, hi=10 ** 6)
    return n, n_x0, eps0, k


def krr_probs(eps0: float, k: int) -> tuple[float, float]:
    """(p, pbar) of k-RR (Biswas et al. 2023, Def. III.5): P(y = x) and P(y = y' != x)."""
    eps0 = v.real("eps0", eps0, 0.0, 30.0, lo_open=True)
    k = v.integer("k", k, lo=2, hi=10 ** 6)
    d = math.exp(eps0) + k - 1
    return math.exp(eps0) / d, 1.0 / d


def kappa1(eps0: float, k: int) -> float:
    """kappa1 = e^eps0 (e^eps0 + k - 2)/(k - 1) (Biswas et al. 2023, eq. 3); eps0 in (0, 30], k in
    [2, 1e6]."""
    eps0 = v.real("eps0", eps0, 0.0, 30.0, lo_open=True)
    k = v.integer("k", k, lo=2, hi=10 ** 6)
    return math.exp(eps0) * (math.exp(eps0) + k - 2) / (k - 1)


def kappa2(eps0: float, k: int) -> float:
    """kappa2 = (k - 1)/(e^eps0 + k - 2) (Biswas et al. 2023, eq. 4); eps0 in (0, 30], k in [2,
    1e6]."""
    eps0 = v.real("eps0", eps0, 0.0, 30.0, lo_open=True)
    k = v.integer("k", k, lo=2, hi=10 ** 6)
    return (k - 1) / (math.exp(eps0) + k - 2)


def log_kappa3(n: int, n_x0: int, eps0: float, k: int, s: int | np.ndarray) -> float | np.ndarray:
    """log kappa3(s) = n_x0 log(k-1) + (n-n_x0-s) log(e^eps0+k-2) - n log(e^eps0+k-1) (eq. 5).

    kappa3 depends on s, although eq. 5 calls it a constant; vectorised over s (integers in [0, n]).
    """
    n, n_x0, eps0, k = _check(n, n_x0, eps0, k)
    s = v.integers("s", s, 0, n).astype(float)
    return (n_x0 * math.log(k - 1) + (n - n_x0 - s) * math.log(math.exp(eps0) + k - 2)
            - n * math.log(math.exp(eps0) + k - 1))


def _logc(a, b):
    """log C(a, b) on arrays; -inf outside 0 <= b <= a."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    ok = (b >= 0) & (b <= a) & (a >= 0)
    out = np.full(np.broadcast(a, b).shape, -np.inf)
    aa, bb = np.broadcast_arrays(a, b)
    out[ok] = gammaln(aa[ok] + 1) - gammaln(bb[ok] + 1) - gammaln(aa[ok] - bb[ok] + 1)
    return out


def log_mu(
    s: int | np.ndarray, r: int | np.ndarray, n: int, n_x0: int, eps0: float, k: int
) -> float | np.ndarray:
    """log mu(s, r) = log[C(n_x0, r) C(n - n_x0, s - r) kappa1^r] (Def. IV.2); s in [0, n], r in [0,
    n_x0]."""
    n, n_x0, eps0, k = _check(n, n_x0, eps0, k)
    s = v.integers("s", s, 0, n).astype(float)
    r = v.integers("r", r, 0, n_x0).astype(float)
    return _logc(n_x0, r) + _logc(n - n_x0, s - r) + r * math.log(kappa1(eps0, k))


def tau(
    s: int | np.ndarray, r: int | np.ndarray, n: int, n_x0: int, eps0: float, k: int
) -> float | np.ndarray:
    """tau_r = kappa2 (n - n_x0) + (e^eps0 - kappa2)(s - r) (Def. IV.2; > 0 for r <= s); s in [0,
    n], r in [0, n_x0]."""
    n, n_x0, eps0, k = _check(n, n_x0, eps0, k)
    s = v.integers("s", s, 0, n).astype(float)
    r = v.integers("r", r, 0, n_x0).astype(float)
    k2 = kappa2(eps0, k)
    return k2 * (n - n_x0) + (math.exp(eps0) - k2) * (s - r)


@lru_cache(maxsize=16)
def _closed_sums(n, n_x0, eps0, k):
    """For s = 0..n: log sum_r mu tau, log sum_r mu, and the printed eq.-15 numerator sum."""
    m = n - n_x0
    s_all = np.arange(n + 1, dtype=float)
    r = np.arange(n_x0 + 1, dtype=float)
    out = np.empty((3, n + 1))
    step = max(1, _MAX_CLOSED_CELLS // (n_x0 + 1))
    lk1 = math.log(kappa1(eps0, k))
    for a in range(0, n + 1, step):
        s = s_all[a:a + step, None]
        lmu = _logc(n_x0, r) + _logc(m, s - r) + r * lk1
        t = np.where(s >= r, tau(s, r, n, n_x0, eps0, k), 1.0)  # tau_r > 0 for r <= s
        out[0, a:a + step] = logsumexp(lmu + np.log(t), axis=1)
        out[1, a:a + step] = logsumexp(lmu, axis=1)
        # printed eq. 15 / Thm IV.1: sum_r (s - r) C(n_x0, r) C(m - 1, s - 1 - r) kappa1^r
        sr = np.where(s - r > 0, s - r, 1.0)
        lpr = _logc(n_x0, r) + _logc(m - 1, s - 1 - r) + r * lk1 + np.log(sr)
        out[2, a:a + step] = logsumexp(lpr, axis=1)
    out.setflags(write=False)   # cached: shared by eq. 12, eq. 15 and eq. 6
    return out


def log_count_pmfs_closed(n: int, n_x0: int, eps0: float, k: int) -> tuple[np.ndarray, np.ndarray]:
    """log P(S = s | D(x0)) (eq. 12) and log P(S = s | D(x1)) (eq. 13), s = 0..n (n <= 20000)."""
    n, n_x0, eps0, k = _check(n, n_x0, eps0, k, MAX_N_CLOSED)
    lmt, lm, _ = _closed_sums(n, n_x0, eps0, k)
    lk3 = log_kappa3(n, n_x0, eps0, k, np.arange(n + 1))
    return lk3 - math.log(n - n_x0) + lmt, lk3 + lm


def v_s(
    n: int, n_x0: int, eps0: float, k: int, v_form: Literal["corrected", "printed"] = "corrected"
) -> np.ndarray:
    """Privacy loss v_s of the count of x0, s = 0..n (Def. IV.1, eq. 15).

    ``"corrected"``: log of eq. 12 over eq. 13 (= eq. 15, second-to-last line).
    ``"printed"``: eq. 15 last line / Thm IV.1 as printed, with C(m-1, s-1-r).
    n <= 20000 (cost O(n n_x0)).
    """
    n, n_x0, eps0, k = _check(n, n_x0, eps0, k, MAX_N_CLOSED)
    lmt, lm, lpr = _closed_sums(n, n_x0, eps0, k)
    if v_form == "corrected":
        out = lmt - math.log(n - n_x0) - lm
    elif v_form == "printed":
        k2 = kappa2(eps0, k)
        out = np.log(k2 + (math.exp(eps0) - k2) / (n - n_x0) * np.exp(lpr - lm))
    else:
        raise ValueError(f"v_form must be 'corrected' or 'printed', got v_form={v_form!r}.")
    out[n] = eps0  # both forms reduce to log(kappa2 + e^eps0 - kappa2) at s = n (only r = n_x0)
    return out



def delta_hat(eps: ArrayLike, n: int, n_x0: int, eps0: float, k: int,
              v_form: Literal["corrected", "printed"] = "corrected") -> float | np.ndarray:
    """Biswas et al.'s delta_hat(eps) (Biswas et al. 2023, eq. 6): one direction, count of x0 only.

    sum_s 1{v_s > eps}(1 - e^{eps - v_s}) P(S=s|D(x0)), P from eq. 12, in log space.
    Vectorised over eps (eps >= 0).  With v_form="corrected" it equals the exact
    hockey-stick delta_{P0/P1} of the count; "printed" uses eq. 15 as printed.
    """
    eps_arr = v.reals("eps", eps, lo=0.0)
    n, n_x0, eps0, k = _check(n, n_x0, eps0, k, MAX_N_CLOSED)
    lp0, _ = log_count_pmfs_closed(n, n_x0, eps0, k)
    vs = v_s(n, n_x0, eps0, k, v_form)
    out = np.empty(eps_arr.size)
    for i, e in enumerate(eps_arr):
        sel = vs > e
        out[i] = (
            math.exp(logsumexp(lp0[sel] + np.log(-np.expm1(e - vs[sel])))) if sel.any() else 0.0
        )
    return out if np.ndim(eps) else float(out[0])


def _nonzero(pmf):
    """Trim exact zeros at both ends: (trimmed pmf, offset)."""
    nz = np.flatnonzero(pmf)
    return pmf[nz[0]:nz[-1] + 1], int(nz[0])


def count_pmfs_exact(n: int, n_x0: int, eps0: float, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The two laws of the count of x0, by direct convolution of Bernoulli/binomial PMFs.

    Independent of the closed forms: S|D(x_i) = Bern(q_i) + Bin(n_x0, p) + Bin(n-1-n_x0, pbar),
    q_0 = p, q_1 = pbar.  Direct (not FFT) convolution of non-negative terms keeps
    relative accuracy; only atoms below the double range (< 1e-308) are lost.  1 - p is computed as
    (k - 1)/(e^eps0 + k - 1), never as 1 - p (which cancels: relative error 1e-16/(1 - p), 2e-8 at
    eps0 = 20, 1e-3 at eps0 = 30), and Bin(n_x0, p) as Bin(n_x0, 1 - p) read backwards, so every
    atom is within ~1e-14 relative of the exact law (tests/test_adversarial_krr.py).

    Source: Biswas et al. 2023, Def. IV.1 (the count of x0), Def. III.5.
    """
    n, n_x0, eps0, k = _check(n, n_x0, eps0, k)
    p, pb = krr_probs(eps0, k)
    # 1 - p without cancelling: at eps0 = 20, 1 - p is off by 2e-8
    q = (k - 1) / (math.exp(eps0) + k - 1)
    i = np.arange(n_x0 + 1)
    # Bin(n_x0, p) at i, as Bin(n_x0, 1 - p) at n_x0 - i
    a, oa = _nonzero(binom.pmf(n_x0 - i, n_x0, q))
    b, ob = _nonzero(binom.pmf(np.arange(n - n_x0), n - 1 - n_x0, pb))
    rest = np.zeros(n)
    c = np.convolve(a, b)
    rest[oa + ob:oa + ob + c.size] = c
    p0 = np.concatenate([q * rest, [0.0]]) + np.concatenate([[0.0], p * rest])
    p1 = np.concatenate([(1 - pb) * rest, [0.0]]) + np.concatenate([[0.0], pb * rest])
    return p0, p1


def delta_count_exact(eps: ArrayLike, n: int, n_x0: int, eps0: float, k: int,
                      direction: Literal["01", "10", "both"] = "both") -> float | np.ndarray:
    """Exact hockey-stick delta of the count of x0 (Koskela et al. 2021, Thm 5), per direction or
    max.

    direction: "01" = delta_{D(x0)/D(x1)} (the paper's eq. 14), "10" = reverse, "both" = max.
    """
    eps_arr = v.reals("eps", eps, lo=0.0)
    p0, p1 = count_pmfs_exact(n, n_x0, eps0, k)
    d01 = hockey_stick(pld_from_pmfs(p0 / p0.sum(), p1 / p1.sum()), eps_arr)
    d10 = hockey_stick(pld_from_pmfs(p1 / p1.sum(), p0 / p0.sum()), eps_arr)
    out = {"01": d01, "10": d10, "both": np.maximum(d01, d10)}.get(direction)
    if out is None:
        raise ValueError(f"direction must be '01', '10' or 'both', got direction={direction!r}.")
    return out if np.ndim(eps) else float(out[0])


def delta_count_worst(eps: ArrayLike, n: int, eps0: float, k: int) -> tuple[np.ndarray, np.ndarray]:
    """max over n_x0 in [0, n-1] of the exact count delta (both directions): eq. 10's reading.

    Returns (delta array, argmax n_x0 array).  n convolutions of cost O(n^2): n <= 2000.
    """
    eps_arr = v.reals("eps", eps, lo=0.0)
    n = v.integer("n", n, lo=2, hi=2000)
    all_d = np.array([delta_count_exact(eps_arr, n, j, eps0, k) for j in range(n)])
    return all_d.max(axis=0), all_d.argmax(axis=0)


def histogram_pmfs(
    counts_others: Sequence[int], eps0: float, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """Exact laws of the full released histogram under D(x0) and D(x1) (tiny n, k only).

    counts_others[j] = number of the other n - 1 users holding value j (x0 = 0, x1 = 1).
    Every user reports through k-RR; the output is the histogram h (Def. III.7 up to
    the factor 1/n), an array of shape (n+1,)*k, flattened.  Built by adding users
    one at a time (h -> h + e_y w.p. R(y|x)); cost n k (n+1)^k, capped at 2e6 cells.

    Source: Biswas et al. 2023, Def. III.5, III.7.
    """
    counts = [v.integer("counts_others", c, lo=0) for c in counts_others]
    k = v.integer("k", k, lo=2, hi=8)
    if len(counts) != k:
        raise ValueError(f"counts_others must have k={k} entries, got {len(counts)}.")
    n = sum(counts) + 1
    if (n + 1) ** k > 2_000_000:
        raise ValueError(f"(n+1)**k must be <= 2e6 for exact enumeration, got n={n}, k={k}.")
    p, pb = krr_probs(eps0, k)
    base = np.zeros((n + 1,) * k)
    base[(0,) * k] = 1.0

    def add(arr, x):
        out = np.zeros_like(arr)
        for y in range(k):
            out += (p if y == x else pb) * np.roll(arr, 1, axis=y)
        return out

    for x, c in enumerate(counts):
        for _ in range(c):
            base = add(base, x)
    return add(base, 0).ravel(), add(base, 1).ravel()


def _compositions(total, parts):
    if parts == 1:
        yield (total,)
        return
    for first in range(total + 1):
        for rest in _compositions(total - first, parts - 1):
            yield (first,) + rest


def delta_histogram_exact(eps: ArrayLike, n: int, eps0: float, k: int
                          ) -> tuple[np.ndarray, list[tuple[int, ...] | None]]:
    """Tight delta of the full histogram release, worst case over the other users' data.

    Enumerates every composition of the n - 1 other users over the k values (up to
    exchanging the values 2..k-1), computes both directions exactly, and returns
    (delta array, list of the worst counts_others per eps).  Tiny n, k only.

    Source: Biswas et al. 2023, Sec. IV (the full histogram release); Koskela et al. 2021, Thm 5.
    """
    eps_arr = v.reals("eps", eps, lo=0.0)
    n = v.integer("n", n, lo=2, hi=40)
    # histogram_pmfs's range, checked before the enumeration
    k = v.integer("k", k, lo=2, hi=8)
    v.real("eps0", eps0, 0.0, lo_open=True)
    best = np.full(eps_arr.size, -1.0)
    arg = [None] * eps_arr.size
    for c in _compositions(n - 1, k):
        if list(c[2:]) != sorted(c[2:], reverse=True):
            continue
        P, Q = histogram_pmfs(c, eps0, k)
        P, Q = P / P.sum(), Q / Q.sum()
        d = delta_both(pld_from_pmfs(P, Q), pld_from_pmfs(Q, P), eps_arr)
        for i in np.flatnonzero(d > best):
            best[i], arg[i] = d[i], c
    return best, arg


def delta_histogram_homogeneous(
    eps: ArrayLike, n: int, eps0: float, k: int, z: int = 2
) -> float | np.ndarray:
    """Tight delta of the full histogram when all n - 1 other users hold one value z.

    z = 0 (x0), 1 (x1) or 2 (a third value; needs k >= 3).  With q the others' report
    law, P(h | D(x_i)) is proportional to sum_y R(y|x_i) h_y / q_y, and all values other
    than x0, x1, z enter with equal weights, so the likelihood ratio is a function of
    (h0, h1, h2) (of (h0, h1) when z < 2).  The hockey-stick over histograms therefore
    equals the one over the exact joint law of these counts: an (n+1)^3 grid for z = 2
    (n <= 200), (n+1)^2 for z < 2 (n <= 3000).  Both directions.  A lower bound on the
    worst case over the other users' data; z = 2 is the worst configuration in most
    exhaustive cases of the tests.

    Source: Biswas et al. 2023, Sec. IV (the full histogram release); Koskela et al. 2021, Thm 5.
    """
    eps_arr = v.reals("eps", eps, lo=0.0)
    k = v.integer("k", k, lo=2, hi=10 ** 6)
    z = v.integer("z", z, lo=0, hi=2 if k >= 3 else 1)
    dims = 3 if z == 2 else 2
    n = v.integer("n", n, lo=2, hi=200 if dims == 3 else 3000)
    p, pb = krr_probs(eps0, k)
    q = np.full(dims, pb)
    q[z] = p
    rest = max(0.0, 1.0 - q.sum())
    N = n - 1
    idx = np.indices((n,) * dims, dtype=float)
    r = N - idx.sum(axis=0)
    ok = r >= 0
    r0 = np.where(ok, r, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        lo = gammaln(N + 1) - gammaln(r0 + 1) + xlogy(r0, rest)
        for d in range(dims):
            lo = lo - gammaln(idx[d] + 1) + xlogy(idx[d], q[d])
    others = np.where(ok, np.exp(lo), 0.0)
    out = []
    for x in (0, 1):
        u = np.full(dims, pb)
        u[x] = p
        h = np.zeros((n + 1,) * dims)
        h[(slice(0, n),) * dims] += max(0.0, 1.0 - u.sum()) * others
        for d in range(dims):
            sl = [slice(0, n)] * dims
            sl[d] = slice(1, n + 1)
            h[tuple(sl)] += u[d] * others
        out.append(h.ravel() / h.sum())
    P, Q = out
    d = np.maximum(
        hockey_stick(pld_from_pmfs(P, Q), eps_arr), hockey_stick(pld_from_pmfs(Q, P), eps_arr)
    )
    return d if np.ndim(eps) else float(d[0])


def histogram_model(n: int, n_x0: int, k: int, eps0: float) -> Model:
    """The exact pair of the count of x0 (Biswas et al.'s (2023) marginal view, fixed n_x0):
    :func:`count_pmfs_exact`."""
    p0, p1 = count_pmfs_exact(n, n_x0, eps0, k)
    p0, p1 = p0 / p0.sum(), p1 / p1.sum()
    info = {"view": "marginal count of x0 only (Biswas, Jung & Palamidessi 2023's reading); "
                    "not the full histogram"}
    lost = _underflow_allowance(n, p0, p1)
    if lost == 0.0:
        return Model.from_pmfs(p0, p1, info)
    exact = (pld_from_pmfs(p0, p1), pld_from_pmfs(p1, p0))
    up_pq, up_qp = (PLD(x.losses, x.probs, x.inf_mass + lost) for x in exact)
    return Model((PLDPair.of(up_pq, up_qp, max_loss=float(eps0)),),
                 (PLDPair.of(*exact, tail_cut=lost, max_loss=float(eps0)),),
                 info=dict(info, underflow=lost))


def _underflow_allowance(n, p0, p1):
    """The P-mass the doubles may have lost below the normal range (2.2e-308), 0 when every atom is
    well inside it: each atom sums at most n products, each rounded by < 2.5e-308, so an atom is off
    by < (n+1) 2.5e-308 and the law by < (n+1)^2 2.5e-308 (2.5e-302 at n = 1e3).  Sent to +inf in
    the upper PLDs (the lost atoms' losses lie in [-eps0, eps0], so the Renyi route bounds it) and
    taken off the lower end: at n = 1000, n_x0 = 0, k = 10, eps0 = 0.49 the exact delta(0.3) is
    1e-341 and the bracket was [0, 0]; at n_x0 = 500 it was [1e-323, 1e-323] for an exact 1e-347."""
    if min(float(p0.min()), float(p1.min())) > 1e-290:
        return 0.0
    return (n + 1) ** 2 * 2.5e-308


register(
    Mechanism(
        name="histogram-krr",
        summary="count of x0 in a shuffled k-RR histogram, fixed n_x0 (the marginal view of "
                "Biswas, Jung & Palamidessi 2023; --n --n-x0 --k --eps0)",
        source="Biswas, Jung & Palamidessi 2023 Sec. IV (Thm IV.1, eq. 4-7)",
        params=(
            Param(
                "n", int, "number of users, u included (>= 2)", lo=2, hi=10**6, more_private="up"
            ),
            Param("n_x0", int, "other users holding x0, in [0, n-1]", lo=0, hi=10**6),
            Param("k", int, "domain size of k-RR, >= 2", lo=2, hi=10**6),
            Param(
                "eps0",
                float,
                "LDP parameter of k-RR, in (0, 30]",
                lo=0.0,
                hi=30.0,
                lo_open=True,
                more_private="down",
            ),
        ),
        build=histogram_model,
        # n > n_x0
        calibration_range=lambda name, fixed: (fixed["n_x0"] + 1, 10**6) if name == "n" else None,
        example={"n": 40, "n_x0": 10, "k": 4, "eps0": 2.0},
    )
)
