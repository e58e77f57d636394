"""Shuffled k-randomised response (k-RR): exact privacy loss distributions.

The protocol of Balle et al. (2019) as analysed in seed 000 Sec. 4 (seed 001
Sec. 4): each of n parties reports its value x_i in [k] truthfully with
probability 1 - gamma and a uniform value in [k] with probability gamma; a
shuffler releases the multiset.  The neighbours differ in x_n = 1 vs x'_n = 2.

* Strong adversary A_s (000 Def. 7): knows x_1..x_{n-1} and beta in {0,1}^n.
  If beta_n = 1 (prob. gamma) both views have one law: loss 0.  Otherwise the
  view reduces to the counts (A + 1, C) under X and (A, C + 1) under X', with
  (A, C) the counts of values 1 and 2 among the randomisers of the first n-1
  parties, jointly Multinomial(n-1; gamma/k, gamma/k); the loss is
  log((A + 1)/C), +inf when C = 0 (000 eq. 4.1 gives only the two marginals).
* Weak adversary A_w (000 Def. 9, Thm 10, App. A): knows beta_1..beta_{n-1},
  b = sum beta.  Sufficient statistic (u, w, b) = counts of values 1, 2 left
  after removing truthful answers; loss (000 App. A)
  log[((1-gamma) u + gamma (b+1)/k) / ((1-gamma) w + gamma (b+1)/k)].

Both PLDs are symmetric (swapping the values 1 and 2 maps the P/Q loss to the
Q/P loss), so one PLD serves both directions.  Tails are cut with Chernoff's
bound; the cut mass (<= ``tail``) is sent to +inf in ``upper`` and dropped in
``lower``, so hockey-stick values of ``upper`` are >= the exact ones and those
of ``lower`` are <=.  With ``tail=0`` nothing is cut.  Views with equal
likelihood ratio are merged into one atom (exact up to rounding).  Beyond the
exact PLDs' size limits, :mod:`shuffle_lib.krr_large` supplies certified coarse
pairs, used automatically by :func:`delta_bracket` and :func:`epsilon_bracket`.
"""

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.stats import binom

from . import _validate as v
from ._chernoff import tail_range
from . import fourier
from .pld import PLD, hockey_stick

TAIL = 1e-40          # default mass cut from the tails of each PLD
CLI_TAIL = 1e-60      # the command line's cut: its lower ends are corrected by it (cli.run)
MAX_ATOMS = 10 ** 7   # refuse PLDs needing more atoms than this (memory)


@dataclass(frozen=True)
class KrrPLD:
    """Certified pair of PLDs: hockey-stick of ``lower`` <= exact <= that of ``upper``."""

    upper: PLD
    lower: PLD
    cut: float        # bound on the P-mass cut from the tails
    atoms: int


def _check(n, gamma, k):
    n = v.integer("n", n, lo=2, hi=10 ** 9)
    gamma = v.real("gamma", gamma, 0.0, 1.0, lo_open=True)
    k = v.integer("k", k, lo=2, hi=10 ** 6)
    return n, gamma, k


def krr_probs(gamma, k):
    """(P[y = x], P[y = j]) for j != x: (1 - gamma + gamma/k, gamma/k) (000 Sec. 4)."""
    gamma = v.real("gamma", gamma, 0.0, 1.0, lo_open=True)
    k = v.integer("k", k, lo=2, hi=10 ** 6)
    return 1.0 - gamma + gamma / k, gamma / k


def krr_pmfs(gamma, k):
    """Output PMFs of the local randomiser on inputs 1 and 2 (the LDP pair)."""
    p_true, p_other = krr_probs(gamma, k)
    p = np.full(k, p_other)
    q = np.full(k, p_other)
    p[0], q[1] = p_true, p_true
    return p, q


def eps0_from_gamma(gamma, k):
    """LDP level of k-RR: eps0 = log(1 + k (1 - gamma)/gamma) (seed 002 parametrisation)."""
    gamma = v.real("gamma", gamma, 0.0, 1.0, lo_open=True)
    k = v.integer("k", k, lo=2, hi=10 ** 6)
    return math.log1p(k * (1.0 - gamma) / gamma)


def gamma_from_eps0(eps0, k):
    """Inverse: gamma = k / (e^eps0 + k - 1), so that P[y = x] = e^eps0/(e^eps0 + k - 1)."""
    eps0 = v.real("eps0", eps0, 0.0, 700.0)
    k = v.integer("k", k, lo=2, hi=10 ** 6)
    return k / (math.expm1(eps0) + k)


def _window(N, p, tail):
    """[lo, hi] outside which Bin(N, p) has mass <= tail (Chernoff, tail/2 a side; arrays of N);
    the full range if tail == 0.  The one Chernoff window of the library: _chernoff.tail_range."""
    N = np.asarray(N, dtype=np.int64)
    if tail == 0.0 or p in (0.0, 1.0):
        return np.zeros_like(N), N.copy()
    lo, hi = tail_range(N, p, tail / 2)
    return lo.reshape(N.shape), hi.reshape(N.shape)


def _ragged(lo, hi):
    """Index of the block and value of each element of the ranges [lo_i, hi_i]."""
    counts = np.maximum(hi - lo + 1, 0)
    total = int(counts.sum())
    if total > MAX_ATOMS:
        raise ValueError(f"n is too large: the PLD needs {total:.3g} atoms, more than MAX_ATOMS={MAX_ATOMS:.3g}.")
    block = np.repeat(np.arange(lo.size), counts)
    start = np.cumsum(counts) - counts
    return block, np.arange(total) - start[block] + lo[block]


def _merge(losses, probs, rtol=1e-13):
    """Sort, and merge atoms whose losses agree to ``rtol`` (equal up to rounding).

    Views with equal likelihood ratios are many (e.g. (a+1)/c = 2/4 = 1/2); a merged
    atom takes the largest loss of its group, so hockey-stick values never decrease.
    """
    order = np.argsort(losses, kind="stable")
    s, p = losses[order], probs[order]
    if s.size == 0:
        return s, p
    new = np.empty(s.size, dtype=bool)
    new[0] = True
    new[1:] = np.diff(s) > rtol * np.maximum(np.abs(s[1:]), 1e-300)
    starts = np.flatnonzero(new)
    ends = np.append(starts[1:], s.size) - 1
    return s[ends], np.add.reduceat(p, starts)


def _finish(losses, probs, inf_mass, cut):
    keep = probs > 0
    losses, probs = losses[keep], probs[keep]
    losses, probs = _merge(losses, probs)       # built by construction: no re-validation
    lower = PLD(losses, probs, float(inf_mass))
    if cut == 0:
        return KrrPLD(lower, lower, 0.0, int(losses.size))
    upper = PLD(lower.losses, lower.probs, lower.inf_mass + cut)   # cut mass sent to +inf
    return KrrPLD(upper, lower, cut, int(losses.size))


@lru_cache(maxsize=16)
def strong_pld(n, gamma, k, tail=TAIL):
    """Exact PLD of the strong adversary A_s; see :func:`_strong_pld` (underflow-safe wrapper)."""
    with np.errstate(under="ignore"):
        return _strong_pld(n, gamma, k, tail)


def _strong_pld(n, gamma, k, tail):
    """Exact PLD of the strong adversary A_s (000 Def. 7; corrects eq. 4.1 / Thm 8).

    Atoms: gamma at loss 0 (beta_n = 1); (1-gamma) P[A=a, C=c] at log((a+1)/c),
    (A, C) ~ Multinomial(n-1; gamma/k, gamma/k); +inf with mass
    (1-gamma)(1 - gamma/k)^(n-1) (C = 0).  Valid for every n >= 2, 0 < gamma <= 1, k >= 2.
    """
    n, gamma, k = _check(n, gamma, k)
    tail = v.real("tail", tail, 0.0, 1e-3)
    N, p = n - 1, gamma / k
    q = p / (1.0 - p)                       # C | A = a ~ Bin(N - a, q)
    a_lo, a_hi = _window(N, p, tail / 2)
    a_all = np.arange(a_lo, a_hi + 1)
    c_lo, c_hi = _window(N - a_all, q, tail / 2)
    blk, c = _ragged(np.maximum(c_lo, 1), c_hi)
    a = a_all[blk]
    # binom.pmf is accurate to ~1e-15 relative; binom.logpmf only to ~1e-12 (scipy 1.x)
    pmf = binom.pmf(a, N, p) * binom.pmf(c, N - a, q)
    losses = np.log1p((a + 1 - c) / c)
    probs = (1.0 - gamma) * pmf
    tail = tail + int(np.sum(pmf == 0.0)) * 1e-307     # in-window atoms that underflowed to 0
    losses, probs = np.append(losses, 0.0), np.append(probs, gamma)
    inf_mass = (1.0 - gamma) * math.exp(N * math.log1p(-p))
    cut = (1.0 - gamma) * tail
    return _finish(losses, probs, inf_mass, cut)


def weak_loss(u, w, b, gamma, k):
    """Loss of the A_w view (000 App. A): log[((1-g)u + g(b+1)/k) / ((1-g)w + g(b+1)/k)]."""
    c = gamma * (np.asarray(b, dtype=float) + 1.0) / k
    u, w = np.asarray(u, dtype=float), np.asarray(w, dtype=float)
    return np.log1p((1.0 - gamma) * (u - w) / ((1.0 - gamma) * w + c))


def _weak_block(b, N, gamma, k, lo, hi):
    """Atoms of the views (u, w, b) for one b: mixture over the n-th party's report.

    Trinomial pmf of the randomisers' counts (m1, m2) of values 1, 2 given B = b,
    m1, m2 in [lo, hi], as Bin(m1; b, 1/k) Bin(m2; b - m1, 1/(k-1)).
    """
    m = np.arange(lo, hi + 1)
    m1, m2 = m[:, None], m[None, :]
    ok = m1 + m2 <= b
    t = binom.pmf(m1, b, 1.0 / k) * binom.pmf(m2, np.maximum(b - m1, 0), 1.0 / (k - 1))
    t = np.where(ok, t, 0.0)
    under = int(np.sum(ok & (t == 0.0) & ((m1 + m2 == b) | (k > 2))))   # underflowed: each < 1e-307
    view = np.zeros((m.size + 1, m.size + 1))   # indices (u - lo, w - lo)
    p1, p2 = krr_probs(gamma, k)
    view[1:, :-1] += p1 * t                        # n-th report = 1
    view[:-1, 1:] += p2 * t                        # n-th report = 2
    if k > 2:
        view[:-1, :-1] += (1.0 - p1 - p2) * t      # n-th report in 3..k
    view *= binom.pmf(b, N, gamma)
    u = np.arange(lo, hi + 2)
    return weak_loss(u[:, None], u[None, :], b, gamma, k).ravel(), view.ravel(), under


@lru_cache(maxsize=16)
def weak_pld(n, gamma, k, tail=TAIL):
    """Exact PLD of the weak adversary A_w; see :func:`_weak_pld` (underflow-safe wrapper)."""
    with np.errstate(under="ignore"):
        return _weak_pld(n, gamma, k, tail)


def _weak_pld(n, gamma, k, tail):
    """Exact PLD of the weak adversary A_w (000 Def. 9, Thm 10, App. A; 001 Thm 4).

    The view (u, w, b): B ~ Bin(n-1, gamma); given B = b the randomisers' counts of
    values 1, 2 are Multinomial(b; 1/k, 1/k), plus the n-th report
    (1 w.p. 1-gamma+gamma/k, 2 w.p. gamma/k).  Losses lie in [-eps0, eps0].
    Atoms below tail / (number of candidate atoms) are cut too (their mass is summed).
    """
    n, gamma, k = _check(n, gamma, k)
    tail = v.real("tail", tail, 0.0, 1e-3)
    N = n - 1
    b_lo, b_hi = (int(x[0]) for x in _window(np.array([N]), gamma, tail / 3))
    bs = np.arange(b_lo, b_hi + 1)
    los, his = _window(bs, 1.0 / k, tail / 3)
    size = int(np.sum((his - los + 2) ** 2))
    if size > 4 * MAX_ATOMS:
        raise ValueError(f"n={n} is too large for the exact weak-adversary PLD "
                         f"({size:.3g} candidate atoms; the limit is {4 * MAX_ATOMS:.3g}).")
    floor = tail / size                      # atoms below it: total mass <= tail
    losses, probs, pruned, held = [], [], 0.0, 0
    for b, lo, hi in zip(bs, los, his):
        ls, ps, under = _weak_block(int(b), N, gamma, k, int(lo), int(hi))
        small = ps < floor
        pruned += float(np.sum(ps[small])) * (1 + 1e-9) + under * 1e-307
        losses.append(ls[~small])
        probs.append(ps[~small])
        held += losses[-1].size
        if held > MAX_ATOMS // 4:      # merge equal losses as we go, to bound memory
            merged = _merge(np.concatenate(losses), np.concatenate(probs))
            losses, probs, held = [merged[0]], [merged[1]], merged[0].size
    losses, probs = np.concatenate(losses), np.concatenate(probs)
    if losses.size > MAX_ATOMS:
        raise ValueError(f"n={n} is too large: the weak PLD needs {losses.size:.3g} atoms (> {MAX_ATOMS:.3g}).")
    return _finish(losses, probs, 0.0, tail + pruned)


def adversary_pld(adversary, n, gamma, k, tail=TAIL):
    """``strong_pld`` or ``weak_pld`` by name ('strong' / 'weak')."""
    if adversary not in ("strong", "weak"):
        raise ValueError(f"adversary must be 'strong' or 'weak', got adversary={adversary!r}.")
    f = strong_pld if adversary == "strong" else weak_pld
    return f(*_check(n, gamma, k), float(tail))


def hockey_stick_pair(pl, eps):
    """One round, exactly: (delta of ``pl.lower``, delta of ``pl.upper``) at eps (both directions)."""
    return float(hockey_stick(pl.lower, eps)), float(hockey_stick(pl.upper, eps))


BIN_ABOVE = 10 ** 6   # PLDs with more atoms are rounded onto a grid before the FFT accountant
BIN_STEP = 1e-6


def _pld_for(adversary, n, gamma, k):
    """(pair, exact?): the exact PLD, binned when it is large, or beyond the exact size
    limit the certified block pairs of :mod:`shuffle_lib.krr_large`."""
    try:
        pl = adversary_pld(adversary, n, gamma, k)
    except ValueError as err:
        if "too large" not in str(err):
            raise
        from . import krr_large   # noqa: PLC0415  (imports this module)
        f = krr_large.weak_pld_binned if adversary == "weak" else krr_large.strong_pld_binned
        return f(*_check(n, gamma, k)), False
    if pl.upper.losses.size > BIN_ABOVE:
        from . import krr_large   # noqa: PLC0415
        return krr_large.bin_pair(pl, BIN_STEP), False
    return pl, True


def delta_bracket(adversary, n, gamma, k, eps, n_c=1, **kw):
    """Certified brackets for the tight delta(eps) of n_c rounds (000 Thm 8/11, 001 Thm 2/5).

    Returns a list of ``fourier.Bracket``, one per eps.  The PLD does not depend on
    x_1..x_{n-1}, so it dominates every neighbouring pair and serves adaptive
    compositions too.  The FFT accountant runs on ``upper``; moving the cut mass
    changes the composed delta by at most n_c * cut, which is taken off the lower end.
    Beyond the exact PLDs' size limits the certified coarse pairs of
    :mod:`shuffle_lib.krr_large` are used (two compositions).  Keywords (``accuracy``,
    ``rtol``, ...) go to :func:`shuffle_lib.fourier.delta_bracket`.
    """
    eps = v.reals("eps", eps, lo=0.0)
    n_c = v.integer("n_c", n_c, lo=1, hi=10 ** 7)
    pl, exact = _pld_for(adversary, n, gamma, k)
    out = fourier.delta_bracket([(pl.upper, n_c)], [(pl.upper, n_c)], eps, **kw)
    if not exact:
        low = fourier.delta_bracket([(pl.lower, n_c)], [(pl.lower, n_c)], eps, **kw)
        return [fourier.Bracket(a.lower, b.upper) for a, b in zip(low, out)]
    return [fourier.Bracket(max(0.0, b.lower - n_c * pl.cut), b.upper) for b in out]


def epsilon_bracket(adversary, n, gamma, k, delta, n_c=1, **kw):
    """Certified brackets for the tight eps(delta) of n_c rounds (see :func:`delta_bracket`).

    The lower end is read at delta + n_c * cut, where the upper PLD's delta is no
    larger than the exact one's plus n_c * cut.
    """
    delta = v.reals("delta", delta, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    n_c = v.integer("n_c", n_c, lo=1, hi=10 ** 7)
    pl, exact = _pld_for(adversary, n, gamma, k)
    if not exact:
        up = fourier.epsilon_bracket([(pl.upper, n_c)], [(pl.upper, n_c)], delta, **kw)
        low = fourier.epsilon_bracket([(pl.lower, n_c)], [(pl.lower, n_c)], delta, **kw)
        return [fourier.Bracket(a.lower, b.upper) for a, b in zip(low, up)]
    shifted = np.minimum(delta + n_c * pl.cut, 1.0 - 1e-16)
    both = fourier.epsilon_bracket([(pl.upper, n_c)], [(pl.upper, n_c)], np.concatenate([delta, shifted]), **kw)
    m = delta.size
    return [fourier.Bracket(lo.lower, up.upper) for up, lo in zip(both[:m], both[m:])]


def balle_delta(n, gamma, k, eps):
    """delta of Balle et al. (2019, Thm 3.1) as quoted in 000 Sec. 4, solved for delta.

    gamma = max{14 k log(2/delta)/((n-1) eps^2), 27 k/((n-1) eps)} gives
    delta = 2 exp(-gamma (n-1) eps^2 / (14 k)), valid for eps <= 1 and
    gamma >= 27 k/((n-1) eps); outside that range the theorem says nothing (1.0).
    """
    n, gamma, k = _check(n, gamma, k)
    eps = v.real("eps", eps, 0.0, lo_open=True)
    if eps > 1.0 or gamma < 27.0 * k / ((n - 1) * eps):
        return 1.0
    return min(1.0, 2.0 * math.exp(-gamma * (n - 1) * eps ** 2 / (14.0 * k)))


def balle_epsilon(n, gamma, k, delta):
    """Smallest eps the Balle et al. bound certifies at delta; ``math.inf`` if it needs eps > 1."""
    n, gamma, k = _check(n, gamma, k)
    delta = v.probability("delta", delta, open_right=False)
    m = (n - 1) * gamma
    eps = max(math.sqrt(14.0 * k * math.log(2.0 / delta) / m), 27.0 * k / m)
    return eps if eps <= 1.0 else math.inf


def advanced_composition(eps, delta, n_c, delta_prime):
    """Dwork & Roth (2014, Thm 3.20): n_c-fold (eps, delta) is (eps', n_c delta + delta')-DP.

    eps' = sqrt(2 n_c log(1/delta')) eps + n_c eps (e^eps - 1).  Returns (eps', delta_total).
    """
    eps = v.real("eps", eps, 0.0)
    delta = v.real("delta", delta, 0.0, 1.0)
    n_c = v.integer("n_c", n_c, lo=1, hi=10 ** 9)
    delta_prime = v.probability("delta_prime", delta_prime)
    e = math.sqrt(2.0 * n_c * math.log(1.0 / delta_prime)) * eps + n_c * eps * math.expm1(eps)
    return e, n_c * delta + delta_prime


def balle_epsilon_composed(n, gamma, k, delta, n_c):
    """eps of n_c rounds at total delta: Balle et al. per round + advanced composition.

    n_c = 1: :func:`balle_epsilon`.  Otherwise the best split delta = n_c delta_0 + delta'
    over a fixed grid of 400 fractions (deterministic); ``math.inf`` if none is valid.
    """
    delta = v.probability("delta", delta)
    n_c = v.integer("n_c", n_c, lo=1, hi=10 ** 9)
    if n_c == 1:
        return balle_epsilon(n, gamma, k, delta)
    best = math.inf
    for f in np.linspace(0.0025, 0.9975, 400):
        e0 = balle_epsilon(n, gamma, k, (1.0 - f) * delta / n_c)
        if math.isfinite(e0):
            best = min(best, advanced_composition(e0, 0.0, n_c, f * delta)[0])
    return best


def _cli_args(parser):
    parser.add_argument("--n", type=int, required=True, help="number of users, the differing one included (>= 2)")
    parser.add_argument("--gamma", type=float, required=True, help="probability of a uniform report, in (0, 1]")
    parser.add_argument("--k", type=int, required=True, help="domain size, >= 2")


def _cli_build(adversary):
    def build(a):
        try:
            pl = adversary_pld(adversary, a.n, a.gamma, a.k, tail=CLI_TAIL)
        except ValueError as err:
            if "too large" not in str(err):
                raise
            raise ValueError(f"{err} The CLI needs one exact PLD; for larger n use "
                             f"shuffle_lib.krr.delta_bracket / epsilon_bracket (certified binned pairs).") from None
        # The cut mass (<= tail_cut) sits at +inf: the upper end is certified; the CLI lowers
        # the lower end by n_c * tail_cut (cli.run).  1e-60 keeps that invisible at delta ~ 1e-38.
        return {"n": a.n, "gamma": a.gamma, "k": a.k, "tail_cut": pl.cut}, pl.upper, pl.upper
    return build


CLI_MECHANISMS = {
    "krr-strong": (_cli_args, _cli_build("strong"), "shuffled k-RR, strong adversary A_s (--n --gamma --k)"),
    "krr-weak": (_cli_args, _cli_build("weak"), "shuffled k-RR, weak adversary A_w (--n --gamma --k)"),
}
