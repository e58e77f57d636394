"""Several shuffled rounds of a numeric randomiser: a dominating PLD from the certified profile.

**The upper end: connect the dots** (Doroshenko, Ghazi, Kamath, Kumar & Manurangsi 2022,
"Connect the dots: tighter discrete approximations of privacy loss distributions", PETS, Sec. 3;
dominating pairs: Zhu, Dong & Wang 2022, AISTATS, Def. 7 and Thm 10).  Write H(alpha) =
sup over ordered neighbours (D, D') of sup_S P_D(S) - alpha P_D'(S), alpha > 0: the hockey stick
of one shuffled round, both directions at once.  Each H_{D,D'} is convex and non-increasing in
alpha with H(0) = 1, so H is too.  From certified values u_i >= delta(eps_i) of
:func:`~shuffle_lib.mechanisms.randomizer.noise.upper_delta` (which bounds both directions):

* alpha = e^{eps_i} >= 1: H(alpha) <= u_i;
* alpha = e^{-eps_i} < 1: H_{D,D'}(alpha) = 1 - alpha + alpha H_{D',D}(1/alpha), so
  H(alpha) <= 1 - alpha + alpha u_i;
* alpha = 0: H = 1.

Take these points (x_j, y_j), replace y_j by the running minimum from the left (H is
non-increasing: still >= H), and let G be their lower convex envelope, constant beyond the last
point.  **G >= H everywhere** on [0, inf): at alpha between points, G(alpha) = sum_j l_j y_j for
weights l_j >= 0 of points with sum_j l_j x_j = alpha, and sum_j l_j y_j >= sum_j l_j H(x_j) >=
H(alpha) by convexity; beyond the last point H is non-increasing.  G is convex, piecewise linear,
non-increasing, G(0) = 1 and G'(0+) >= -1 (the first chord's y >= H >= 1 - alpha): it is the
hockey stick of a discrete pair (P, Q) with P-mass p_k = q_k alpha_k at loss log alpha_k, q_k the
slope's increase at the vertex alpha_k, P-mass G(last) at +inf and Q-mass 1 - sum q_k at -inf
(G(alpha) = P(+inf) + sum_k p_k (1 - alpha / alpha_k)_+).  This one pair dominates every ordered
pair of neighbours for every alpha > 0, so the K-fold product of (P, Q) dominates K adaptive
rounds (Zhu, Dong & Wang, Thm 10), and the Fourier accountant composes it with its certified
error budget.  The reverse direction's PLD is (Q w.r.t. P): loss -log alpha_k with Q-mass q_k, and
Q-mass 1 - sum q_k at +inf.  Round-off of the envelope (a few ulps of values <= 1) is covered by
mixing ``MIX`` of an atom of its own into each of P and Q: the hockey stick rises by MIX (1 - G).

**The lower end: the exact view, composed.**  The view T = sum_i phi(y_i) of the datasets
(0, ..., 0) and (1, 0, ..., 0) (:func:`~shuffle_lib.mechanisms.randomizer.noise.view_delta`)
is a post-processing of each round; K independent rounds of it are a post-processing of K rounds
of the shuffler on those datasets, so the hockey stick of the K-fold product of the view's pair
is a lower end.  The view's laws are computed by FFT: with the window's outside lumped into one
outcome, the computed PMFs A, B are within l1 distance e_a, e_b of the true ones (round-off plus
the aliased mass, both bounded as in ``noise``), so the products are within K e_a, K e_b and
H_alpha(true^K) >= H_alpha(A^K || B^K) - K (e_a + alpha e_b) (each direction; |P(S) - P'(S)| is at
most the l1 distance).  For Gaussian noise the K sums of the reports are a second view, the
Gaussian mechanism with sensitivity sqrt(K) and noise sigma sqrt(n) (closed form, Balle & Wang
2018, Thm 8); the larger lower end is taken.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy import stats

from shuffle_lib.core import fourier
from shuffle_lib.core import validate as v
from shuffle_lib.core.constants import MAX_COMPOSITIONS
from shuffle_lib.core.pld import PLD, pld_from_losses, pld_from_pmfs_lower
from shuffle_lib.core.types import ArrayLike, Bracket, Method, Model, PLDPair
from shuffle_lib.mechanisms.randomizer import noise as N

PROFILE_POINTS = 24  # eps grid points of the profile on [0, eps_hi] (besides the doubling probes)
PROFILE_STEP = (
    0.1  # the profile's W lattice step (noise.STEP's unit): 3x faster, values ~0.4 % higher
)
PROFILE_FLOOR = 1e-13  # eps_hi: the first doubling probe whose upper delta is below this
MIX = 1e-14  # +inf mass mixed into P to cover the envelope's round-off
EPS_PROBE = 1.0 / 64  # the first doubling probe


def envelope_pld(eps: np.ndarray, u: np.ndarray) -> tuple[PLD, PLD]:
    """The dominating pair (P w.r.t. Q, Q w.r.t. P) whose hockey stick is the envelope G of the
    module docstring, from certified upper values ``u`` >= delta (both directions) at the losses
    ``eps`` >= 0, 0 among them.

    Built on alpha >= 1 only (no cancellation): g is the lower convex hull of (e^{eps_i}, u_i)
    (running minimum first), and G(alpha) = g(alpha) for alpha >= 1, 1 - alpha + alpha g(1/alpha)
    below (the perspective of a convex function is convex, and this is the envelope of the points
    of the docstring: the map (x, y) -> (1/x, y/x) carries the left points onto the right ones).
    G is convex at 1 iff q_0 = 2 g'(1+) + 1 - g(1) >= 0; otherwise the points are first raised to
    the line through (1, g(1)) of slope (g(1) - 1)/2 (raising is safe).  The pair is symmetric:
    P-mass q_k at loss -eps_k, q_0 at 0, q_k e^{eps_k} at eps_k (q_k the slope's increase of g at
    its vertex e^{eps_k}) and g(last) at +inf.  P and Q are then mixed with ``MIX`` of atoms of
    their own (P's at +inf, Q's at -inf): the pair stays symmetric (one PLD serves both
    directions) and its hockey stick rises by MIX (1 - G), which covers the round-off.

    Raises: ValueError if eps, u differ in length, eps has no 0 or a negative entry, u is not in
    [0, 1].
    """
    eps = v.reals("eps", eps, lo=0.0)
    u = v.reals("u", u, lo=0.0, hi=1.0)
    if eps.size != u.size:
        raise ValueError(f"eps and u must have equal length, got {eps.size} and {u.size}.")
    if not np.any(eps == 0.0):
        raise ValueError("eps must contain 0 (the envelope starts at alpha = 1).")
    order = np.lexsort((u, eps))
    e, y = eps[order], np.minimum.accumulate(u[order])
    first = np.concatenate(([True], np.diff(e) > 0))
    e, y = e[first], y[first]
    x = np.exp(e)
    hx, hy, he = _hull(x, y, e)
    s1 = (hy[1] - hy[0]) / (hx[1] - hx[0]) if hx.size > 1 else 0.0
    if 2 * s1 + 1 - hy[0] < 0:  # raise onto the junction's line
        y = np.maximum(y, hy[0] + 0.5 * (hy[0] - 1) * (x - 1))
        hx, hy, he = _hull(x, y, e)
    slopes = np.append(np.diff(hy) / np.diff(hx), 0.0)
    q = np.maximum(np.diff(slopes), 0.0)  # at vertices 1..
    q0 = max(0.0, 2 * slopes[0] + 1 - hy[0])
    ek = he[1:]
    losses = np.concatenate((-ek[::-1], [0.0], ek))
    probs = np.concatenate((q[::-1], [q0], q * np.exp(ek)))
    keep = probs > 0
    losses, probs = losses[keep], probs[keep]
    inf = float(hy[-1])
    scale = (1.0 - MIX) / max(1.0, math.fsum(probs) + inf)
    inf_pq = max(inf * scale + MIX, 1.0 - math.fsum(probs * scale))  # a deficit goes to +inf too
    pq = pld_from_losses(losses, probs * scale, min(1.0, inf_pq))
    return pq, pq


def _hull(x: np.ndarray, y: np.ndarray, e: np.ndarray):
    """The lower convex hull of points sorted by x (monotone chain): its x, y and eps."""
    hull = [0]
    for j in range(1, x.size):
        while len(hull) >= 2:
            a, b = hull[-2], hull[-1]
            if (y[b] - y[a]) * (x[j] - x[a]) >= (y[j] - y[a]) * (x[b] - x[a]):
                hull.pop()
            else:
                break
        hull.append(j)
    return x[hull], y[hull], e[hull]


@functools.lru_cache(maxsize=16)
def _profile(
    nz: N.Noise, n: int, points: int, step: float = PROFILE_STEP
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    probe, e = {}, EPS_PROBE
    while True:  # doubling probes up to eps_hi: the floor reached, or a plateau (round-off)
        probe[e] = N.upper_delta(nz, n, e, step=step)
        if (
            probe[e] <= PROFILE_FLOOR
            or e >= 64.0
            or (e > EPS_PROBE and probe[e] > 0.5 * probe[e / 2] and probe[e] < 1e-6)
        ):
            break
        e *= 2.0
    grid = e * (np.arange(points + 1) / points) ** 2  # dense near 0, where K rounds' losses live
    vals = {float(t): N.upper_delta(nz, n, float(t), step=step) for t in grid}
    vals.update(probe)
    ks = sorted(vals)
    return tuple(ks), tuple(vals[k] for k in ks)


def profile_plds(
    noise: str | N.Noise, n: int, scale: float | None = None, points: int = PROFILE_POINTS
) -> tuple[PLD, PLD]:
    """The dominating pair of one shuffled round (module docstring), both directions.

    Args: as :func:`~shuffle_lib.mechanisms.randomizer.noise.upper_delta`; points: grid points of
      the certified profile on [0, eps_hi] (one n-fold FFT each).
    """
    nz = N.noise_law(noise, scale)
    n = v.integer("n", n, lo=1, hi=N.MAX_N)
    points = v.integer("points", points, lo=2, hi=10**4)
    eps, u = _profile(nz, n, points)
    return envelope_pld(np.array(eps), np.array(u))


@functools.lru_cache(maxsize=16)
def view_plds(nz: N.Noise, n: int) -> tuple[PLD, PLD, float]:
    """The view's pair (A w.r.t. B, B w.r.t. A) as computed, and e = max(e_a, e_b), the l1 bound
    of the module docstring (round-off, aliased mass, clipping, the outside lumped)."""
    v.instance("nz", nz, N.Noise)
    n = v.integer("n", n, lo=1, hi=N.MAX_N)
    a, b, l1a, l1b, out_a, out_b = N.view_sums(nz, n)
    A, B = np.maximum(a, 0.0), np.maximum(b, 0.0)
    A, B = A / max(1.0, A.sum()), B / max(1.0, B.sum())
    A = np.append(A, max(0.0, 1.0 - A.sum()))
    B = np.append(B, max(0.0, 1.0 - B.sum()))
    err = 4.0 * max(l1a + out_a, l1b + out_b) + 1e-15
    A, B = A / A.sum(), B / B.sum()
    return pld_from_pmfs_lower(A, B), pld_from_pmfs_lower(B, A), err


def accounting_plds(n: int, noise: str | N.Noise, scale: float | None = None) -> tuple[PLD, PLD]:
    """(dominating, dominated) PLDs of one round, one PLD per end serving both directions, for
    :class:`~shuffle_lib.accountant.ShuffleAccountant`.  The dominated one: for Gaussian noise the
    sum of the reports (a post-processing: N(mu, 1) against N(0, 1), mu = 1/(sigma sqrt n), whose
    loss is N(mu^2/2, mu^2) under P) with losses rounded down onto a grid of mu/200 on
    mean -+ 12 sd (mass above at the top, below dropped) and masses lowered by 1e-12 (their cdf
    round-off); for other noises the trivial PLD (loss 0): the lattice view's computed PLD carries
    an error that grows with e^eps, which the accountant's per-round cut cannot express."""
    nz = N.noise_law(noise, scale)
    n = v.integer("n", n, lo=1, hi=N.MAX_N)
    up, _ = profile_plds(nz, n)
    if nz.name != "gaussian":
        return up, pld_from_losses([0.0], [1.0])
    mu = 1.0 / (float(nz.dist.std()) * math.sqrt(n))
    edges = mu * mu / 2 + mu * np.linspace(-12.0, 12.0, 4801)
    cdf = stats.norm.cdf((edges - mu * mu / 2) / mu)
    probs = np.diff(cdf)
    probs[-1] += float(stats.norm.sf(12.0))
    return up, pld_from_losses(edges[:-1], np.maximum(probs, 0.0) * (1 - 1e-12))


def _checked(noise: str | N.Noise, n: int, compositions: int, scale: float | None):
    """(noise law, n, K): the arguments both composed routes share, checked."""
    nz = N.noise_law(noise, scale)
    n = v.integer("n", n, lo=1, hi=N.MAX_N)
    return nz, n, v.integer("compositions", compositions, lo=1, hi=MAX_COMPOSITIONS)


def composed_delta(noise: str | N.Noise, n: int, eps: ArrayLike, compositions: int,
                   scale: float | None = None, points: int = PROFILE_POINTS) -> list[Bracket]:
    """Certified brackets on delta(eps) of ``compositions`` shuffled rounds (module docstring)."""
    nz, n, K = _checked(noise, n, compositions, scale)
    eps = v.reals("eps", eps, lo=0.0)
    pq, qp = profile_plds(nz, n, points=points)
    up = fourier.delta_bracket([(pq, K)], [(qp, K)], eps)
    va, vb, err = view_plds(nz, n)
    low = fourier.delta_bracket([(va, K)], [(vb, K)], eps)
    out = []
    for e, u, w in zip(eps, up, low):
        lo = w.lower - K * err * (1.0 + math.exp(e))
        if nz.name == "gaussian":
            lo = max(lo, N.gauss_sum_delta(math.sqrt(K / n) / float(nz.dist.std()), float(e)))
        out.append(Bracket(min(max(lo, 0.0), u.upper), u.upper))
    return out


def composed_epsilon(noise: str | N.Noise, n: int, delta: ArrayLike, compositions: int,
                     scale: float | None = None, points: int = PROFILE_POINTS) -> list[Bracket]:
    """Certified brackets on eps(delta) of ``compositions`` shuffled rounds (module docstring):
    the lower end reads the view's bracket at delta + K e (1 + e^{eps_up}), which only lowers it."""
    nz, n, K = _checked(noise, n, compositions, scale)
    delta = v.reals("delta", delta, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    pq, qp = profile_plds(nz, n, points=points)
    up = fourier.epsilon_bracket([(pq, K)], [(qp, K)], delta)
    va, vb, err = view_plds(nz, n)
    out = []
    for d, u in zip(delta, up):
        slack = K * err * (1.0 + math.exp(min(u.upper, 700.0)))
        lo = 0.0
        if d + slack < 1.0:
            lo = fourier.epsilon_bracket([(va, K)], [(vb, K)], [d + slack])[0].lower
        if nz.name == "gaussian":
            mu = math.sqrt(K / n) / float(nz.dist.std())
            if N.gauss_sum_delta(mu, 0.0) > d:
                lo = max(lo, _bisect_gauss(mu, d, u.upper))
        out.append(Bracket(min(lo, u.upper), u.upper))
    return out


def _bisect_gauss(mu: float, delta: float, hi: float) -> float:
    """The largest eps found with the Gaussian sum's delta > delta (a certified lower end)."""
    lo = 0.0
    hi = hi if math.isfinite(hi) else 700.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if N.gauss_sum_delta(mu, mid) > delta:
            lo = mid
        else:
            hi = mid
    return lo


def noise_model(
    n: int, noise: str | N.Noise, scale: float | None = None, compositions: int = 1
) -> Model:
    """The model for the registry, a method serving both ends: one round directly
    (:mod:`~shuffle_lib.mechanisms.randomizer.noise`), several through the dominating PLD of this
    module and the Fourier accountant; composed with other events through
    :func:`accounting_plds`."""
    nz = N.noise_law(noise, scale)
    n = v.integer("n", n, lo=1, hi=N.MAX_N)
    K = v.integer("compositions", compositions, lo=1, hi=MAX_COMPOSITIONS)
    info = {
        "noise": nz.name,
        "gamma": nz.gamma,
        "route": "blanket sum by FFT (upper), exact delta of post-processed views of "
        "(x, 0, ..., 0) (lower)"
        + ("" if K == 1 else "; rounds composed from a dominating PLD of the certified profile"),
    }
    if K == 1:
        method = Method(lambda eps: [N.delta_bracket(nz, n, e) for e in eps],
                        lambda delta: [N.epsilon_bracket(nz, n, d) for d in delta])
    else:
        method = Method(lambda eps: composed_delta(nz, n, eps, K),
                        lambda delta: composed_epsilon(nz, n, delta, K), K)
    # the local randomiser's own delta(eps) and eps(delta) of K rounds cap the shuffled ones (a
    # post-processing); a target the cap settles (delta below the double range) is spared the
    # blanket's FFT, which at eps = 700, sigma = 1 costs 70 CPU-s and bounds delta by 1 only
    method = method.capped(lambda e: N.local_delta(nz, e, K), lambda d: N.local_epsilon(nz, d, K))
    return Model.of(method, info, round_pairs=lambda rounds, accuracy: _accounting_pairs(nz, n))


def _accounting_pairs(nz: N.Noise, n: int) -> tuple[PLDPair, PLDPair]:
    up, low = accounting_plds(n, nz)
    return PLDPair.of(up), PLDPair.of(low)
