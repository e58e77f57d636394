"""Rényi divergences of shuffle-model pairs (shuffle_lib.core.renyi, shuffle_lib.mechanisms.clones.renyi) against independent oracles."""

import math

import mpmath as mp
import numpy as np
import pytest
import sympy as sp
from scipy.stats import binom

from shuffle_lib.bounds import renyi as renyi_bounds
from shuffle_lib.core import renyi
from shuffle_lib.mechanisms.clones import pld as clone_pld
from shuffle_lib.mechanisms.clones import renyi as clone_renyi


def _direct(p, q, lam):
    """log sum p (p/q)^(lam-1) / (lam-1) in plain floating point (no log-sum-exp), atoms with p, q > 0."""
    m = (p > 0) & (q > 0)
    return math.log(math.fsum(p[m] * (p[m] / q[m]) ** (lam - 1))) / (lam - 1)


def test_renyi_pmfs_against_direct_sum():
    rng = np.random.default_rng(3)
    for _ in range(5):
        p, q = rng.dirichlet(np.ones(12)), rng.dirichlet(np.ones(12))
        for lam in (1.5, 2.0, 7.25):
            a, b = renyi.renyi_pmfs(p, q, lam)
            assert a[0] == pytest.approx(_direct(p, q, lam), rel=1e-12)
            assert b[0] == pytest.approx(_direct(q, p, lam), rel=1e-12)


@pytest.mark.parametrize("n,eps0", [(2, 0.5), (10, 2.0), (60, 1.0), (200, 3.0)])
def test_clone_rdp_against_direct_summation(n, eps0):
    p, q = clone_pld.clone_pmfs(n, eps0)
    for lam in (2.0, 3.5, 10.0):
        exact = _direct(p, q, lam)
        br = clone_renyi.clone_rdp(n, eps0, lam)[0]
        assert br.lower <= exact * (1 + 1e-12) and exact <= br.upper * (1 + 1e-12)
        assert br.upper == pytest.approx(exact, rel=1e-10)
        a, b = renyi.renyi_pmfs(p, q, lam)          # both directions agree for fmt21
        assert a[0] == pytest.approx(b[0], rel=1e-12)


def _mp_fmt21(n, eps0, lam):
    """D_lam(P||Q) of the fmt21 pair by enumerating (C, A, Delta) with 50-digit mpmath."""
    mp.mp.dps = 50
    e, p = mp.e ** mp.mpf(eps0), mp.e ** (-mp.mpf(eps0))
    q = e / (e + 1)
    P, Q = {}, {}
    for c in range(n):
        pc = mp.binomial(n - 1, c) * p ** c * (1 - p) ** (n - 1 - c)
        for a in range(c + 1):
            w = pc * mp.binomial(c, a) / mp.mpf(2) ** c
            for d, pd in ((1, q), (0, 1 - q)):
                kp, kq = (a + d, c - a + 1 - d), (a + 1 - d, c - a + d)
                P[kp] = P.get(kp, 0) + w * pd
                Q[kq] = Q.get(kq, 0) + w * pd
    s = mp.fsum(P[k] ** lam * Q[k] ** (1 - lam) for k in P)
    return mp.log(s) / (lam - 1)


def test_clone_rdp_against_mpmath():
    for n, eps0, lam in ((20, 1.5, 2.5), (20, 1.5, 7.0), (35, 4.0, 16.0)):
        ref = float(_mp_fmt21(n, eps0, mp.mpf(lam)))
        assert clone_renyi.clone_rdp(n, eps0, lam)[0].upper == pytest.approx(ref, rel=1e-11)


def test_clone_rdp_large_n_against_exact_pld():
    """Truncated log-space atoms vs the full O(n^2) PLD of clone_pld (binom.pmf route)."""
    from shuffle_lib.core.pld import pld_from_losses
    lams = [2.0, 8.0, 64.0]
    for eps0 in (0.5, 3.0):
        p, q = clone_pld.clone_pmfs(1500, eps0)
        m = (p > 0) & (q > 0)                      # atoms below 1e-308 underflow: dropped (< 1e-300 mass)
        full = renyi.renyi_pld(pld_from_losses(np.log(p[m]) - np.log(q[m]), p[m]), lams)
        for f, br in zip(full, clone_renyi.clone_rdp(1500, eps0, lams)):
            assert br.lower * (1 - 1e-10) <= f <= br.upper * (1 + 1e-10)
            assert br.upper - br.lower <= 1e-9 * br.upper


def test_shuffled_rr_pmfs_against_convolution():
    n, eps0 = 40, 1.3
    q = math.exp(eps0) / (1 + math.exp(eps0))
    b = binom.pmf(np.arange(n), n - 1, 1 - q)
    lp, lq = clone_renyi.shuffled_rr_logpmfs(n, eps0)
    np.testing.assert_allclose(np.exp(lp), np.convolve(b, [1 - q, q]), rtol=1e-12)
    np.testing.assert_allclose(np.exp(lq), np.convolve(b, [q, 1 - q]), rtol=1e-12)


def test_clones_pair_dominates_shuffled_rr():
    """FMT21: shuffled RR is a post-processing of the clones pair, so its RDP is never larger."""
    lams = [2.0, 5.0, 32.0]
    for n in (2, 50, 3000):
        for eps0 in (0.3, 2.0, 6.0):
            a, b = clone_renyi.shuffled_rr_rdp(n, eps0, lams)
            up = [x.upper for x in clone_renyi.clone_rdp(n, eps0, lams)]
            assert np.all(np.maximum(a, b) <= np.array(up) * (1 + 1e-10))


def test_cor2_below_a_real_mechanism():
    """Cor. 2 fails: one atom (K = 0) of shuffled RR already exceeds 2 e^eps0 lam/(n-1) at lam = 2."""
    n, eps0 = 10 ** 4, 8.0
    q = math.exp(eps0) / (1 + math.exp(eps0))
    one_atom = (n + 1) * math.log(q) - math.log(1 - q)          # log Q(0)^2 / P(0)
    cor2 = renyi_bounds.cor2_rdp(n, eps0, 2.0)[0]
    assert one_atom > 3 * cor2
    assert clone_renyi.shuffled_rr_rdp(n, eps0, 2.0)[1][0] >= one_atom


def test_chen_pair_is_degenerate_at_log2():
    """Delta ~ Bern(e^-eps0) (Chen et al. 2024 Thm 1): at eps0 = log 2, P = Q, yet shuffled RR leaks."""
    p, q = clone_renyi.chen_pmfs(12, math.log(2))
    assert math.fsum(p) == pytest.approx(1.0, abs=1e-12)
    assert np.max(np.abs(p - q)) <= 1e-15
    assert clone_renyi.shuffled_rr_rdp(12, math.log(2), 2.0)[0][0] > 1e-3
    q = 2.0 / 3.0                                   # p_delta = e^eps0/(e^eps0+1) is the fmt21 pair
    for x, y in zip(clone_renyi.chen_pmfs(12, math.log(2), q), clone_pld.clone_pmfs(12, math.log(2))):
        np.testing.assert_allclose(x, y, rtol=1e-13, atol=1e-300)


def test_lemma_a2_likelihood_ratio():
    a, b = sp.symbols("a b", positive=True, integer=True)
    s = a + b
    pq = sp.binomial(s - 1, a - 1)   # P(Q=(a,b)) / P(C=s-1) 2^-(s-1): A = a-1
    pp = sp.binomial(s - 1, a)       # P(P=(a,b)) / same: A = a
    assert sp.simplify(sp.gammasimp(pq / pp) - a / b) == 0
    for av, bv in ((1, 1), (3, 7), (9, 2)):
        assert float(pq.subs({a: av, b: bv}) / pp.subs({a: av, b: bv})) == pytest.approx(av / bv)


def test_lemma1_thm2_cor2_algebra():
    n, p, lam, eps0 = sp.symbols("n p lambda varepsilon_0", positive=True)
    t = sp.symbols("t0:3")
    pr = (p / 2, p / 2, 1 - p)
    G = sum(pi * ti for pi, ti in zip(pr, t)) ** (n - 1)      # pgf of Mult(n-1; p/2, p/2, 1-p)
    at1 = {ti: 1 for ti in t}
    mean = [sp.simplify(sp.diff(G, ti).subs(at1)) for ti in t]
    cov = sp.Matrix(3, 3, lambda i, j: sp.simplify(sp.diff(G, t[i], t[j]).subs(at1) + (mean[i] if i == j else 0)
                                                   - mean[i] * mean[j]))
    seed = (n - 1) * sp.Matrix([[p / 2 * (1 - p / 2), -p ** 2 / 4, -p * (1 - p) / 2],
                                [-p ** 2 / 4, p / 2 * (1 - p / 2), -p * (1 - p) / 2],
                                [-p * (1 - p) / 2, -p * (1 - p) / 2, p * (1 - p)]])
    assert sp.simplify(cov - seed) == sp.zeros(3, 3)
    assert [sp.simplify(m - e) for m, e in zip(mean, ((n - 1) * p / 2, (n - 1) * p / 2, (n - 1) * (1 - p)))] == [0] * 3
    inv = cov[:2, :2].inv()
    seed_inv = sp.Matrix([[(2 - p) / (p * (1 - p)), 1 / (1 - p)], [1 / (1 - p), (2 - p) / (p * (1 - p))]]) / (n - 1)
    assert sp.simplify(inv - seed_inv) == sp.zeros(2, 2)
    d = sp.Matrix([-1, 1])
    maha = sp.simplify((d.T * inv * d)[0])
    assert sp.simplify(maha - 4 / ((n - 1) * p)) == 0
    mu = sp.sqrt(maha.subs(p, sp.exp(-eps0)))
    assert sp.simplify(mu ** 2 - (2 * sp.exp(eps0 / 2) / sp.sqrt(n - 1)) ** 2) == 0   # both > 0
    rdp = sp.simplify(mu ** 2 * lam / 2)
    assert sp.simplify(rdp - 2 * sp.exp(eps0) * lam / (n - 1)) == 0
    f = sp.lambdify((n, eps0, lam), rdp)
    for nv, ev, lv in ((100, 0.5, 2.0), (10 ** 4, 3.0, 17.0)):
        assert renyi_bounds.cor2_rdp(nv, ev, lv)[0] == pytest.approx(f(nv, ev, lv), rel=1e-14)
        assert renyi.gdp_rdp(2 * math.exp(ev / 2) / math.sqrt(nv - 1), lv)[0] == pytest.approx(f(nv, ev, lv))


def test_girgis_bounds_against_mpmath():
    mp.mp.dps = 50
    for n, eps0, lam in ((10 ** 4, 2.0, 4), (500, 0.7, 17)):
        e = mp.e ** mp.mpf(eps0)
        nbar = mp.floor((n - 1) / (2 * e)) + 1
        up = mp.log(mp.e ** (lam ** 2 * (e - 1) ** 2 / nbar) + mp.e ** (eps0 * lam - (n - 1) / (8 * e))) / (lam - 1)
        lo = mp.log(1 + mp.mpf(lam) * (lam - 1) / 2 * (e - 1) ** 2 / (n * e)) / (lam - 1)
        assert renyi_bounds.girgis_upper(n, eps0, lam)[0] == pytest.approx(float(up), rel=1e-13)
        assert renyi_bounds.girgis_lower(n, eps0, lam)[0] == pytest.approx(float(lo), rel=1e-13)


def test_eps_from_rdp_against_dp_accounting():
    from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon
    lams = np.array([1.5, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0])
    rdp = 0.01 * lams
    for delta in (1e-5, 1e-8):
        eps, lam = renyi.eps_from_rdp(lams, rdp, delta)
        ref, order = compute_epsilon(lams, rdp, delta)
        assert eps == pytest.approx(ref, rel=1e-12) and lam == order
        std, _ = renyi.eps_from_rdp(lams, rdp, delta, "standard")
        assert std == pytest.approx(min(rdp + math.log(1 / delta) / (lams - 1)), rel=1e-14)
        assert eps < std


def test_infinite_and_validation():
    assert clone_renyi.clone_rdp(10, 1.0, 2.0, pair="koskela")[0].lower == math.inf
    from shuffle_lib.core.pld import PLD
    assert renyi.renyi_pld(PLD(np.array([0.0]), np.array([0.5]), 0.5), 2.0)[0] == math.inf
    with pytest.raises(ValueError, match="lam"):
        clone_renyi.clone_rdp(10, 1.0, 1.0)
    with pytest.raises(ValueError, match="eps0"):
        renyi_bounds.cor2_rdp(10, -1.0, 2.0)
    with pytest.raises(ValueError, match="n must"):
        renyi_bounds.girgis_upper(2.5, 1.0, 2.0)
    with pytest.raises(ValueError, match="same length"):
        renyi.renyi_pmfs([0.5, 0.5], [1.0], 2.0)
    with pytest.raises(ValueError, match="method"):
        renyi.eps_from_rdp([2.0], [0.1], 1e-5, "magic")
    with pytest.raises(ValueError, match="rdp"):
        renyi.eps_from_rdp([2.0, 3.0], [0.1], 1e-5)


def test_girgis_leading_term_of_eq5():
    """Chen et al. 2024 after eq. (6): eq. (5) without its Chernoff term ~ 2 lam^2 E (E-1)^2 / ((lam-1)(n-1)), not lam."""
    E, lam, n = sp.symbols("E lambda n", positive=True)
    lead = (lam ** 2 * (E - 1) ** 2 / ((n - 1) / (2 * E))) / (lam - 1)
    assert sp.simplify(lead / (2 / (n - 1) * lam / (lam - 1) * E * (E - 1) ** 2) - lam) == 0
    nv, ev, lv = 10 ** 7, 0.5, 8.0            # numerically: eq. (5) approaches `lead`, not the seed's form
    num = renyi_bounds.girgis_upper(nv, ev, lv)[0]
    f = float(lead.subs({E: math.exp(ev), lam: lv, n: nv}))
    assert num == pytest.approx(f, rel=1e-3)
    assert abs(num * lv / f - 1) > 1   # the seed's form, f / lam, is off by the factor lam


def test_thm1_h_and_lemma_a5_alpha_against_enumeration():
    """Thm 1's h exceeds 1 - alpha (impossible for a trade-off function); Lemma A.5's alpha(t) is wrong."""
    n, eps0, p = 30, 1.0, math.exp(-1.0)
    C = binom.pmf(np.arange(n), n - 1, p)
    for t in (0.5, 1.0, 2.0):
        r = clone_renyi.chen_thm1_check(n, eps0, t)
        # independent enumeration of alpha_0 = P(A/(C-A+1) > t) by loops
        a0 = math.fsum(C[c] * binom.pmf(a, c, 0.5) for c in range(n) for a in range(c + 1) if a > t * (c - a + 1))
        assert r["alpha_0"] == pytest.approx(a0, rel=1e-12)
        assert r["alpha"] + r["beta"] <= 1 + 1e-12            # a valid test: beta <= 1 - alpha
        assert r["h"] > 1 - r["alpha"] + 1e-3                 # Thm 1's h is not a trade-off function
        assert abs(r["h"] - r["beta"]) > 1e-2
        assert abs(r["alpha_A5"] - a0) > 1e-2


def test_cor2_below_3rr_with_others_outside_the_pair():
    """Prop. 1's setting (others hold a third value): a two-point post-processing of shuffled 3-RR beats Cor. 2."""
    mp.mp.dps = 50
    n, eps0 = 10 ** 4, 8.0
    r = 1 / (mp.e ** eps0 + 2)
    base = (1 - r) ** (n - 1)
    pa, qa = base * (1 - mp.e ** eps0 * r), base * (1 - r)
    d2 = mp.log(qa ** 2 / pa + (1 - qa) ** 2 / (1 - pa))             # D_2(Q||P) of the indicator, 50 digits
    p3, q3 = np.array([float(pa), float(1 - pa)]), np.array([float(qa), float(1 - qa)])
    assert renyi.renyi_pmfs(p3, q3, 2.0)[1][0] == pytest.approx(float(d2), rel=1e-12)
    assert float(d2) > 3 * renyi_bounds.cor2_rdp(n, eps0, 2.0)[0]


# --- Girgis et al. Thm 1 in full (shuffle_lib.bounds.renyi) -------------------------------------

def _sympy_girgis_full(n, eps0, lam):
    """Girgis et al. Thm 1 (the form of renyi_bounds.girgis_upper_full), evaluated by sympy at 40 digits."""
    e = sp.exp(sp.Rational(eps0))
    nbar = sp.floor((n - 1) / (2 * e)) + 1
    base = (e ** 2 - 1) ** 2 / (2 * nbar * e ** 2)
    m = (1 + sp.binomial(lam, 2) * (e - 1) ** 2 / (nbar * e)
         + sum(sp.binomial(lam, j) * j * sp.gamma(sp.Rational(j, 2)) * base ** sp.Rational(j, 2) for j in range(3, lam + 1))
         + sp.exp(sp.Rational(eps0) * lam - sp.Rational(n - 1, 8) / e))
    return float(sp.N(sp.log(m) / (lam - 1), 40))


def test_girgis_upper_full_against_sympy():
    for n, eps0, lam in ((2, "0.5", 2), (10, "0.1", 16), (10 ** 4, "2", 4), (10 ** 4, "2", 64), (500, "3.5", 7)):
        got = renyi_bounds.girgis_upper_full(n, float(sp.Rational(eps0)), lam)[0]
        assert got == pytest.approx(_sympy_girgis_full(n, eps0, lam), rel=1e-12)
    # identities: the first author's code writes the j/2 base as (e^eps0 - e^-eps0)^2 / (2 nbar);
    # eq. (5)'s exponent over Thm 1's j = 2 term is 2 lam e^eps0 / (lam - 1)
    E, lam, nbar = sp.symbols("E lambda nbar", positive=True)
    assert sp.simplify((E - 1 / E) ** 2 / (2 * nbar) - (E ** 2 - 1) ** 2 / (2 * nbar * E ** 2)) == 0
    ratio = (lam ** 2 * (E - 1) ** 2 / nbar) / (lam * (lam - 1) / 2 * (E - 1) ** 2 / (nbar * E))
    assert sp.simplify(ratio - 2 * lam * E / (lam - 1)) == 0


def test_girgis_upper_full_above_exact_clones():
    """A valid upper bound is >= the exact RDP of the clones pair's lower end?  On this grid, yes
    (the clones RDP itself only upper-bounds the shuffle model; shuffled RR is what it must beat)."""
    lams = [2, 3, 4, 8, 16, 64]
    for n in (2, 5, 10, 30, 100, 1000):
        for eps0 in (0.01, 0.1, 0.5, 1.0, 3.0):
            full = renyi_bounds.girgis_upper_full(n, eps0, lams)
            lo = np.array([b.lower for b in clone_renyi.clone_rdp(n, eps0, lams)])
            rr = np.maximum(*clone_renyi.shuffled_rr_rdp(n, eps0, lams))
            assert np.all(full >= lo) and np.all(full >= rr), (n, eps0)


def test_girgis_eq5_is_not_a_relaxation_of_thm1():
    """Eq. (5) is larger than Thm 1 at leading order but smaller at small eps0, large lam, small n."""
    assert renyi_bounds.girgis_upper(10, 0.1, 16)[0] < renyi_bounds.girgis_upper_full(10, 0.1, 16)[0]
    assert renyi_bounds.girgis_upper(5, 0.05, 32)[0] < renyi_bounds.girgis_upper_full(5, 0.05, 32)[0]
    lams = [2, 4, 8, 16, 32, 64]
    for eps0 in (0.1, 1.0, 2.0, 8.0):
        assert np.all(renyi_bounds.girgis_upper(10 ** 4, eps0, lams) > renyi_bounds.girgis_upper_full(10 ** 4, eps0, lams))
    # where eq. (5) is below Thm 1 it is still above the exact clones RDP
    for n, eps0, lam in ((10, 0.1, 16), (5, 0.05, 32)):
        assert renyi_bounds.girgis_upper(n, eps0, lam)[0] > clone_renyi.clone_rdp(n, eps0, lam)[0].upper


def test_girgis_upper_full_monotone_in_n_and_validation():
    vals = [renyi_bounds.girgis_upper_full(n, 1.0, 8)[0] for n in (2, 10, 100, 1000, 10 ** 4, 10 ** 6)]
    assert all(a >= b for a, b in zip(vals, vals[1:]))
    for bad in (1, 2.5, 0, 10 ** 5):
        with pytest.raises(ValueError, match="lam must be an integer"):
            renyi_bounds.girgis_upper_full(100, 1.0, bad)
    with pytest.raises(ValueError, match="n must"):
        renyi_bounds.girgis_upper_full(1, 1.0, 2)
    for bad in (0.0, -1.0, math.nan, 800.0):
        with pytest.raises(ValueError, match="eps0 must"):
            renyi_bounds.girgis_upper_full(100, bad, 2)
    assert np.isfinite(renyi_bounds.girgis_upper_full(100, 700.0, [2, 10 ** 4])).all()


# --- Theorem 1's pair as printed: P = (A, C-A+Delta), Q = (A+Delta, C-A) -------------------------

def _mp_printed(n, eps0, p_delta):
    """{(a, b): (P, Q)} of the printed pair by enumerating (C, A, Delta) with 50-digit mpmath."""
    mp.mp.dps = 50
    p = mp.e ** (-mp.mpf(eps0))
    out = {}
    for c in range(n):
        for a in range(c + 1):
            w = mp.binomial(n - 1, c) * p ** c * (1 - p) ** (n - 1 - c) * mp.binomial(c, a) / mp.mpf(2) ** c
            for d, pd in ((0, 1 - p_delta), (1, p_delta)):
                for key, k in (((a, c - a + d), 0), ((a + d, c - a), 1)):
                    out.setdefault(key, [mp.mpf(0), mp.mpf(0)])[k] += w * pd
    return out


def test_chen_printed_pmfs_against_mpmath():
    for n, eps0 in ((1, 0.7), (6, 1.3), (12, 0.2)):
        p_delta = mp.e ** (-mp.mpf(eps0))
        ref = _mp_printed(n, eps0, p_delta)
        lp, lq = clone_renyi.chen_printed_logpmfs(n, eps0)
        s = np.concatenate([np.full(k + 1, k) for k in range(n + 1)])
        a = np.concatenate([np.arange(k + 1) for k in range(n + 1)])
        for si, ai, x, y in zip(s, a, np.exp(lp), np.exp(lq)):
            P, Q = ref.get((int(ai), int(si - ai)), (0, 0))
            assert x == pytest.approx(float(P), rel=1e-12, abs=1e-300)
            assert y == pytest.approx(float(Q), rel=1e-12, abs=1e-300)


def test_chen_printed_pair_has_infinite_rdp():
    """Atom (a, b) = (0, n): P-mass p_delta p^(n-1) 2^-(n-1) > 0, Q = 0 (and (n, 0) the other way)."""
    for n, eps0 in ((2, 0.5), (50, math.log(2)), (300, 2.0), (1000, 8.0)):
        a, b = clone_renyi.chen_printed_rdp(n, eps0, [1.5, 2.0, 64.0])
        assert np.all(np.isinf(a)) and np.all(np.isinf(b))
        lp, lq = clone_renyi.chen_printed_logpmfs(n, eps0)
        lost = np.logaddexp.reduce(lp[np.isneginf(lq)])
        assert lost == pytest.approx(-eps0 * n - (n - 1) * math.log(2), rel=1e-12)
    a, b = clone_renyi.chen_printed_rdp(20, 1.0, 2.0, p_delta=0.0)           # Delta = 0: P = Q
    assert a[0] == pytest.approx(0.0, abs=1e-12) and b[0] == pytest.approx(0.0, abs=1e-12)


def test_chen_printed_pair_is_not_dominating_nor_the_proofs_pair():
    from shuffle_lib.core.pld import delta_exact
    n = 50
    for eps0 in (2.0, 4.0):                      # total variation below that of shuffled RR, a real mechanism
        lp, lq = clone_renyi.chen_printed_logpmfs(n, eps0)
        r1, r2 = clone_renyi.shuffled_rr_logpmfs(n, eps0)
        tv_printed = delta_exact(np.exp(lp), np.exp(lq), 0.0)[0]
        tv_rr = delta_exact(np.exp(r1), np.exp(r2), 0.0)[0]
        assert tv_printed < 0.5 * tv_rr
    # the printed pair puts mass (1 - p)(1 - p)^(n-1) on the empty output (s = 0); the proof's pair has s >= 1
    lp, _ = clone_renyi.chen_printed_logpmfs(n, 1.0)
    p = math.exp(-1.0)
    assert math.exp(lp[0]) == pytest.approx((1 - p) ** n, rel=1e-12)
    # Thm 1's own alpha(t) is that of the proof's pair, not of the printed one (reject when a > t b)
    s = np.concatenate([np.full(k + 1, k) for k in range(31)])
    a = np.concatenate([np.arange(k + 1) for k in range(31)])
    lp, _ = clone_renyi.chen_printed_logpmfs(30, 2.0)
    for t in (0.5, 1.0, 2.0):
        alpha_printed = math.fsum(np.exp(lp)[a > t * (s - a)])
        assert abs(alpha_printed - clone_renyi.chen_thm1_check(30, 2.0, t)["alpha"]) > 0.05


def test_closed_forms_at_extreme_eps0():
    """eps0 up to 700 gives a number or +inf (a valid, vacuous upper bound), never an OverflowError;
    above 700 a ValueError naming eps0.  girgis_lower (log space) equals its log1p form where that fits."""
    from shuffle_lib.bounds import renyi as rb
    for f in (rb.girgis_upper, rb.girgis_lower, rb.girgis_upper_full, renyi_bounds.cor2_rdp):
        for n, e0 in ((2, 700.0), (10 ** 12, 500.0), (100, 1e-300)):
            out = np.atleast_1d(f(n, e0, 2))
            assert not np.any(np.isnan(out)) and np.all(out >= 0)
        with pytest.raises(ValueError, match="eps0"):
            f(100, 701.0, 2)
    lam = np.array([2.0, 4.0, 64.0])
    for n, e0 in ((10 ** 4, 1.0), (50, 5.0), (10 ** 6, 0.01)):
        want = np.log1p(lam * (lam - 1) / 2 * math.expm1(e0) ** 2 / (n * math.exp(e0))) / (lam - 1)
        assert np.allclose(rb.girgis_lower(n, e0, lam), want, rtol=1e-13, atol=0)
    assert np.isinf(rb.girgis_upper(2, 700.0, 2)).all()
