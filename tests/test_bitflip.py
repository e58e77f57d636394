"""Shuffled bit flipping and clear fake records (Zhilyaev 2020 Secs. 3-5; chapter 5).

Oracles: exact enumeration with Fractions, sympy generating functions and
symbolic identities, the k-RR strong pair, exhaustive grids for the unproved claims.
"""

import itertools
import json
import math
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest
import sympy as sp

from shuffle_lib.core.pld import delta_exact
from shuffle_lib.mechanisms import krr
from shuffle_lib.mechanisms.mixnet import bitflip as bf
from shuffle_lib.mechanisms.mixnet import fake_records as fr

Q_GRID = [0.01, 0.1, 0.25, 0.4, 0.49]
q_, z, n_, m_, s_ = sp.symbols("q z n m s", positive=True)
p_ = 1 - q_


def _enumerate(n, m, q):
    """Exact PMF of A_n(m): all 2^n flip patterns, Fractions."""
    out = [Fraction(0)] * (n + 1)
    bits = [1] * m + [0] * (n - m)
    for flips in itertools.product([0, 1], repeat=n):
        w, s = Fraction(1), 0
        for b, f in zip(bits, flips):
            w *= q if f else 1 - q
            s += b ^ f
        out[s] += w
    return out


@pytest.mark.parametrize("n", [1, 2, 5, 8])
def test_pmf_A_against_enumeration(n):
    q = Fraction(3, 10)
    for m in range(n + 1):
        exact = np.array([float(x) for x in _enumerate(n, m, q)])
        got = bf.pmf_A(n, m, 0.3)
        assert np.allclose(got, exact, rtol=1e-13, atol=0), (n, m)


def test_pmf_A_against_sympy_generating_function():
    """P_{n,m}(s) = [z^s] (q + p z)^m (p + q z)^(n-m) at q = 1/7, exact rationals."""
    q = sp.Rational(1, 7)
    for n, m in [(12, 0), (12, 5), (12, 12), (30, 17)]:
        poly = sp.Poly(sp.expand((q + (1 - q) * z) ** m * ((1 - q) + q * z) ** (n - m)), z)
        exact = np.array([float(poly.coeff_monomial(z ** s)) for s in range(n + 1)])
        assert np.allclose(bf.pmf_A(n, m, 1 / 7), exact, rtol=1e-12, atol=0), (n, m)


def test_pmf_A_windowed_large_n():
    """n = 1e6: mass 1, mean mu_m, variance npq; window agrees with no window at n = 3000."""
    n, q = 10 ** 6, 0.01
    for m in (0, 3, n // 2):
        P = bf.pmf_A(n, m, q, tail=1e-40)
        s = np.arange(n + 1)
        mu = n * q + m * (1 - 2 * q)
        assert abs(math.fsum(P) - 1) < 1e-12
        assert abs(math.fsum(P * s) - mu) < 1e-6 * mu
        assert abs(math.fsum(P * (s - mu) ** 2) / (n * q * (1 - q)) - 1) < 1e-9
    full, cut = bf.pmf_A(3000, 1000, 0.2), bf.pmf_A(3000, 1000, 0.2, tail=1e-40)
    big = full > 1e-30          # the window only drops atoms far below the cut mass 1e-40
    assert np.allclose(cut[big], full[big], rtol=1e-12, atol=0)


def test_recursions_31_32_symbolic_and_numeric():
    """(3.1), (3.2): G_{n,m} = (q+pz) G_{n-1,m-1} = (p+qz) G_{n-1,m} for the PGF G."""
    G = lambda n, m: (q_ + p_ * z) ** m * (p_ + q_ * z) ** (n - m)  # noqa: E731
    assert sp.simplify(G(n_, m_) - (q_ + p_ * z) * G(n_ - 1, m_ - 1)) == 0
    assert sp.simplify(G(n_, m_) - (p_ + q_ * z) * G(n_ - 1, m_)) == 0
    for n in range(1, 30, 4):
        for q in Q_GRID:
            p = 1 - q
            for m in range(n + 1):
                P = bf.pmf_A(n, m, q)
                if m >= 1:
                    b = np.append(bf.pmf_A(n - 1, m - 1, q), 0.0)
                    assert np.allclose(P, p * np.roll(b, 1) + q * b, rtol=1e-12, atol=1e-300)
                if m <= n - 1:
                    b = np.append(bf.pmf_A(n - 1, m, q), 0.0)
                    assert np.allclose(P, q * np.roll(b, 1) + p * b, rtol=1e-12, atol=1e-300)


def test_lemma_31_generating_function_proof():
    """(3.3) for every s <=> G' = (p/q)(mG - zG') + (q/p)((n-m)G - zG') + z(nG - zG')."""
    G = (q_ + p_ * z) ** m_ * (p_ + q_ * z) ** (n_ - m_)
    r = sp.diff(sp.expand_log(sp.log(G), force=True), z)   # G'/G, a rational function of z
    assert sp.simplify(r - (m_ * p_ / (q_ + p_ * z) + (n_ - m_) * q_ / (p_ + q_ * z))) == 0
    rhs = (p_ / q_) * (m_ - z * r) + (q_ / p_) * (n_ - m_ - z * r) + z * (n_ - z * r)   # divided by G
    assert sp.factor(sp.together(r - rhs)) == 0


def test_lemma_31_induction_step_and_base():
    """The seed's induction: IH at n-1 for s and s-1, plus (3.2), gives (3.3) at n."""
    a, b, c = sp.symbols("a b c")          # P_{n-1,m}(s-2), (s-1), (s)
    p, q = p_, q_
    k = lambda N, s: (m_ - s) * p / q + (N - m_ - s) * q / p  # noqa: E731
    d = (k(n_ - 1, s_) * c + (n_ - 1 - s_ + 1) * b) / (s_ + 1)   # IH at s: P_{n-1}(s+1)
    c_ih = (k(n_ - 1, s_ - 1) * b + (n_ - 1 - s_ + 2) * a) / s_  # IH at s-1: P_{n-1}(s)
    Pn = lambda lo, hi: q * lo + p * hi  # noqa: E731   (3.2)
    lhs = (s_ + 1) * Pn(c, d)
    rhs = k(n_, s_) * Pn(b, c) + (n_ - s_ + 1) * Pn(a, b)
    assert sp.simplify((lhs - rhs).subs(c, c_ih)) == 0
    # base case n = 1, s = 0: (m p/q + (1-m) q/p) P_{1,m}(0) = P_{1,m}(1)
    for m, P0, P1 in [(1, q, p), (0, p, q)]:
        assert sp.simplify(k(1, 0).subs(m_, m) * P0 - P1) == 0
    # numerically against the library, all s in 0..n-1 (P(-1) = 0)
    for n in range(1, 25, 3):
        for qq in Q_GRID:
            pp = 1 - qq
            for m in range(n + 1):
                P = np.append(bf.pmf_A(n, m, qq), 0.0)
                s = np.arange(n)
                Pm1 = np.append(0.0, P[:n - 1])
                lhs = (s + 1) * P[1:n + 1]
                rhs = ((m - s) * pp / qq + (n - m - s) * qq / pp) * P[:n] + (n - s + 1) * Pm1
                assert np.allclose(lhs, rhs, rtol=1e-9, atol=1e-13 * np.abs(rhs).max()), (n, m, qq)


def test_ratio_recursion_34_and_gamma_identity():
    """(3.4) rho(s+1) = eta(s)/rho(s) + gamma_m(s) and (s+1) gamma_m(s) = (mu_m - s)/(pq) - n + 2s."""
    p, q = p_, q_
    gam = ((m_ - s_) * p / q + (n_ - m_ - s_) * q / p) / (s_ + 1)
    mu = n_ * q + m_ * (p - q)
    assert sp.simplify((s_ + 1) * gam - ((mu - s_) / (p * q) - n_ + 2 * s_)) == 0
    Ps, Ps1, Ps_1 = sp.symbols("P_s P_s1 P_sm1", positive=True)
    eq33 = sp.Eq((s_ + 1) * Ps1, (s_ + 1) * gam * Ps + (n_ - s_ + 1) * Ps_1)
    rho_next = sp.solve(eq33, Ps1)[0] / Ps
    eta = (n_ - s_ + 1) / (s_ + 1)
    assert sp.simplify(rho_next - (eta / (Ps / Ps_1) + gam)) == 0
    for n in (5, 17, 40):
        for qq in Q_GRID:
            pp = 1 - qq
            for m in range(0, n + 1, 3):
                r = bf.rho(n, m, qq)
                s = np.arange(1, n)
                g_ = ((m - s) * pp / qq + (n - m - s) * qq / pp) / (s + 1)
                assert np.allclose(r[1:], (n - s + 1) / (s + 1) / r[:-1] + g_, rtol=1e-9)
                assert np.isclose(r[0], m * pp / qq + (n - m) * qq / pp, rtol=1e-12)


def test_g_increasing_and_pi_is_g_of_rho():
    x = sp.symbols("x", positive=True)
    gx = (q_ + p_ * x) / (p_ + q_ * x)
    assert sp.simplify(sp.diff(gx, x) - (p_ - q_) / (p_ + q_ * x) ** 2) == 0
    for n in (2, 9, 30):
        for q in Q_GRID:
            for m in range(n):
                pi = bf.pi_ratio(n, m, q)
                assert np.isclose(pi[0], (1 - q) / q, rtol=1e-12)
                assert np.allclose(pi[1:n], bf.g(bf.rho(n - 1, m, q), q), rtol=1e-10), (n, m, q)
                assert np.isclose(pi[n], q / (1 - q), rtol=1e-12)   # rho_{n-1}(n) = 0, g(0) = q/p


def test_all_zero_collection_421_425():
    """(4.21)-(4.25), D = n zeros, D' = one 1: 1/R(i) = P(D')/P(D) = (n-i)/n q/p + i/n p/q."""
    i = sp.symbols("i", positive=True, integer=True)
    nn = sp.symbols("n", positive=True, integer=True)
    p, q = sp.symbols("p q", positive=True)              # holds for any p, q > 0
    PD = sp.binomial(nn, i) * q ** i * p ** (nn - i)
    PD1 = sp.binomial(nn - 1, i) * q ** (i + 1) * p ** (nn - 1 - i) + sp.binomial(nn - 1, i - 1) * q ** (i - 1) * p ** (nn - i + 1)
    assert sp.simplify(sp.powsimp(sp.combsimp(sp.expand(PD1 / PD))) - ((nn - i) / nn * q / p + i / nn * p / q)) == 0
    for n in (3, 20):
        for q in Q_GRID:
            P, Q = bf.pair_pmfs(n, 0, q)       # P: D' (one 1), Q: D (all zeros)
            s = np.arange(n + 1)
            assert np.allclose(P / Q, (n - s) / n * q / (1 - q) + s / n * (1 - q) / q, rtol=1e-10)
            assert np.isclose(math.fsum(Q * s), n * q)     # (4.21)


def test_todo_properties_rho_monotone():
    """Sec. 3.2 TODO: rho strictly decreasing in s (log-concavity) and increasing in m."""
    bad = []
    for n in range(2, 31):
        for q in Q_GRID:
            R = [bf.rho(n, m, q) for m in range(n + 1)]
            for m in range(n + 1):
                if np.any(np.diff(R[m]) >= 0):
                    bad.append(("s", n, m, q))
                if m < n and np.any(R[m + 1] <= R[m]):
                    bad.append(("m", n, m, q))
    assert not bad, f"counterexamples (kind, n, m, q): {bad[:5]}"


def test_property1_newton_log_concavity():
    """Sec. 8 Property 1 (eqs. 8.7-8.8, after Wang 1993): P_{s-1}^2 > P_s P_{s-2} for the sum of
    flipped bits.  Checked in Newton's stronger form P_k^2 >= P_{k-1} P_{k+1} (1+1/k)(1+1/(N-k)),
    which holds for any Poisson-binomial law and makes the inequality strict."""
    worst = math.inf
    for n in (3, 10, 40, 120):
        for q in Q_GRID:
            for m in {0, 1, n // 3, n - 1, n}:
                P = bf.pmf_A(n, m, q)
                k = np.arange(1, n)
                lhs = P[k] ** 2
                rhs = P[k - 1] * P[k + 1] * (1 + 1 / k) * (1 + 1 / (n - k))
                pos = rhs > 1e-280
                worst = min(worst, float(np.min(lhs[pos] / rhs[pos])))
    assert worst >= 1 - 1e-12, worst


def test_lemma71_ratio_of_sums_and_eq82():
    """Lemma 7.1 (= Lemma 8.2): min a_i/b_i <= sum a / sum b <= max a_i/b_i for b_i > 0.
    sympy: sum a / sum b is the b-weighted mean of the ratios.  Applied as in Sec. 8 (8.1)-(8.2):
    adding a 1-bit to both collections, R_{n+1}(S) is a mediant of R_n(S) and R_n(S-1)."""
    a, b = sp.symbols("a1:5", real=True), sp.symbols("b1:5", positive=True)
    lam = [bi / sum(b) for bi in b]
    assert sp.simplify(sum(a) / sum(b) - sum(ai / bi * li for ai, bi, li in zip(a, b, lam))) == 0
    assert sp.simplify(sum(lam) - 1) == 0
    rng = np.random.default_rng(71)
    for _ in range(200):
        m = int(rng.integers(1, 8))
        x, y = rng.normal(size=m), rng.random(m) + 1e-3
        r = x.sum() / y.sum()
        assert (x / y).min() - 1e-12 <= r <= (x / y).max() + 1e-12
    for n in (5, 20, 60):
        for q in Q_GRID:
            for m in (0, n // 2, n - 1):
                R_n = bf.pmf_A(n, m + 1, q) / bf.pmf_A(n, m, q)               # D has the extra 1
                R_n1 = bf.pmf_A(n + 1, m + 2, q) / bf.pmf_A(n + 1, m + 1, q)  # a 1-bit added to both
                s = np.arange(1, n + 1)
                lo, hi = np.minimum(R_n[s - 1], R_n[s]), np.maximum(R_n[s - 1], R_n[s])
                assert np.all(R_n1[s] >= lo * (1 - 1e-9)) and np.all(R_n1[s] <= hi * (1 + 1e-9))


def _s(n, m, q, dl):
    return max(math.ceil(n * q + m * (1 - 2 * q) - dl), 0)


@pytest.mark.parametrize("kind", ["prop31", "lemma43"])
def test_prop31_and_lemma43_on_grid(kind):
    """Prop. 3.1: R_m(d) <= R_0(d+2) for d > sigma0 + 1; Lemma 4.3 the same for l >= npq.
    rho(0) is undefined, so points with s_m(d) = 0 or s_0(d+2) = 0 are skipped (counted)."""
    bad, checked = [], 0
    for n in range(2, 31):
        for q in (0.05, 0.2, 0.45):
            start = math.sqrt(n * q * (1 - q)) + 1 + 1e-9 if kind == "prop31" else n * q * (1 - q)
            rows = [bf.rho(n, m, q) for m in range(n + 1)]
            for dl in np.arange(start, n + 3, 0.25):
                s0 = _s(n, 0, q, dl + 2)
                for m in range(n + 1):
                    sm = _s(n, m, q, dl)
                    if sm >= 1 and s0 >= 1:
                        checked += 1
                        if rows[m][sm - 1] > rows[0][s0 - 1] * (1 + 1e-12):
                            bad.append((n, q, float(dl), m))
    assert checked > 2000
    assert not bad, f"counterexamples (n, q, delta, m): {bad[:5]}"


def test_lemma44_more_bits_never_reduce_privacy():
    """delta_worst(n+1) <= delta_worst(n) (exhaustive over m) on a grid."""
    eps = np.array([0.0, 0.1, 0.5, 1.0, 2.0])
    for q in (0.05, 0.2, 0.4):
        prev = bf.delta_worst(1, q, eps, tail=0.0)
        for n in range(2, 26):
            cur = bf.delta_worst(n, q, eps, tail=0.0)
            assert np.all(cur <= prev + 1e-15), (n, q, cur, prev)
            prev = cur


def test_all_zero_collection_is_not_always_worst():
    """The seed reduces to m = 0; exhaustively, other m give larger delta (counterexample)."""
    n, q, eps = 60, 0.05, 1.0
    d = [float(bf.delta_pair(n, m, q, eps, tail=0.0)[0]) for m in range(n)]
    worst = int(np.argmax(d))
    assert worst not in (0, n - 1) and d[worst] > 1.05 * d[0], (worst, d[worst], d[0])


def test_delta_pair_against_enumeration_oracle():
    """Pair PMFs from Fraction enumeration of n bits, delta via pld.delta_exact."""
    eps = [0.0, 0.3, 1.0]
    for n, m, q in [(4, 0, 0.1), (5, 2, 0.3), (6, 5, 0.05)]:
        P = [float(x) for x in _enumerate(n, m + 1, Fraction(q))]
        Q = [float(x) for x in _enumerate(n, m, Fraction(q))]
        assert np.allclose(bf.delta_pair(n, m, q, eps, tail=0.0), delta_exact(P, Q, eps), rtol=1e-10, atol=1e-15)


def test_q_needed_is_tight_and_seed_lemma45():
    """q_needed gives delta <= target, 0.99 q_needed does not; the seed's Lemma 4.5 q
    (all-zero collection) is enough for m = 0 where it is <= 1/2 on this grid."""
    for n, eps, dl in [(200, 1.0, 1e-3), (1000, 0.5, 1e-4)]:
        qn = bf.q_needed(n, eps, dl)
        assert float(bf.delta_pair(n, 0, qn, eps)[0]) <= dl < float(bf.delta_pair(n, 0, 0.99 * qn, eps)[0])
        qs = bf.seed_q_lemma45(n, eps, dl)
        if qs <= 0.5:
            assert float(bf.delta_pair(n, 0, qs, eps)[0]) <= dl, (n, eps, dl, qs)
    assert bf.seed_q_prop41(1000, 0.5, 1e-4) >= bf.seed_q_lemma45(1000, 0.5, 1e-4)


def test_fake_pld_against_full_histogram_enumeration():
    """Full histograms of m uniform fakes on [d] plus e_l (P) or e_l' (Q), exhaustively."""
    eps = [0.0, 0.5, 1.5]
    for m, d in [(3, 3), (5, 2), (4, 4)]:
        hist = {}
        for z_ in itertools.product(range(d), repeat=m):
            h = tuple(np.bincount(z_, minlength=d))
            hist[h] = hist.get(h, 0) + d ** -m
        support = sorted({tuple(np.add(h, e)) for h in hist for e in (np.eye(d, dtype=int)[0], np.eye(d, dtype=int)[1])})
        P = [hist.get(tuple(np.subtract(o, np.eye(d, dtype=int)[0])), 0.0) for o in support]
        Q = [hist.get(tuple(np.subtract(o, np.eye(d, dtype=int)[1])), 0.0) for o in support]
        assert np.allclose(fr.fake_delta(m, d, eps, tail=0.0), delta_exact(P, Q, eps), rtol=1e-10, atol=1e-15)


def test_fake_pld_is_krr_strong_pair_conditioned():
    """krr strong pair with n-1 = m, gamma = (d-1)/d, k = d-1: delta_strong = delta_fake / d."""
    eps = np.array([0.2, 1.0])
    for m, d in [(40, 4), (200, 10)]:
        pl = krr.strong_pld(m + 1, (d - 1) / d, d - 1)
        strong = np.array([krr.hockey_stick_pair(pl, e)[1] for e in eps])
        assert np.allclose(strong, fr.fake_delta(m, d, eps) / d, rtol=1e-9, atol=1e-30)


def test_m_needed_and_seed_requirement():
    m = fr.m_needed(10, 1.0, 1e-3)
    assert float(fr.fake_delta(m, 10, 1.0)[0]) <= 1e-3 < float(fr.fake_delta(m - 1, 10, 1.0)[0])
    assert m <= 10 * fr.seed_m_over_d(1.0, 1e-3)
    comp = fr.fake_delta_bracket(m, 10, [1.0])[0]
    exact = float(fr.fake_delta(m, 10, 1.0)[0])
    assert comp.lower <= exact <= comp.upper


def test_cli_brackets_contain_exact():
    for args, exact in [(["bitflip", "--n", "12", "--q", "0.1", "--m", "3"], bf.delta_pair(12, 3, 0.1, [0.5], tail=0.0)[0]),
                        (["fake-records", "--m", "30", "--d", "3"], fr.fake_delta(30, 3, [0.5], tail=0.0)[0])]:
        out = subprocess.run([sys.executable, "-m", "shuffle_lib", "delta", *args, "--eps", "0.5", "--json"],
                             capture_output=True, text=True, check=True)
        r = json.loads(out.stdout)["results"][0]
        assert r["delta_lower"] <= exact * (1 + 1e-12) and exact <= r["delta_upper"] * (1 + 1e-12), (args, r, exact)


def test_cli_lower_ends_are_corrected_for_the_tail_cut():
    """The CLI's PLD sends the cut tails (<= tail_cut per round) to +inf; its lower ends are
    lowered by that much, so they stay below the exact (uncut) values even where those are
    smaller than the cut (delta ~ 1e-60 at eps = 3, eps(1e-300))."""
    from shuffle_lib import cli
    from shuffle_lib.core.pld import epsilon_exact
    n, q = 1000, 0.1
    _, out = cli.run(["delta", "bitflip", "--n", str(n), "--q", str(q), "--eps", "0.5", "3"])
    exact = bf.delta_pair(n, 0, q, [0.5, 3.0], tail=0.0)
    for r, x in zip(out["results"], exact):
        assert r["delta_lower"] <= x <= r["delta_upper"], (r, x)
    P, Q = bf.pair_pmfs(n, 0, q)
    for d in (1e-10, 1e-300):
        _, out = cli.run(["epsilon", "bitflip", "--n", str(n), "--q", str(q), "--delta", str(d)])
        r, x = out["results"][0], epsilon_exact(P, Q, d)
        assert r["eps_lower"] <= x and (r["eps_upper"] is None or x <= r["eps_upper"]), (d, r, x)


def test_cli_worst_m_is_the_max_over_every_m():
    """--m worst: the bracket of max over m of the (composed) pair, against exhaustive exact values
    over every m in 0..n-1 (not only the half the CLI builds, which relies on the bit symmetry)."""
    from shuffle_lib import cli
    from shuffle_lib.core.pld import product_pmfs
    n, q, eps = 9, 0.15, [0.2, 0.8]
    for K in (1, 2):
        exact = np.zeros(len(eps))
        for m in range(n):
            P, Q = bf.pair_pmfs(n, m, q)
            P, Q = product_pmfs(P, Q, K)
            exact = np.maximum(exact, delta_exact(P, Q, eps))
        _, out = cli.run(["delta", "bitflip", "--n", str(n), "--q", str(q), "--m", "worst",
                          "--compositions", str(K), "--eps", *map(str, eps)])
        for r, x in zip(out["results"], exact):
            assert r["delta_lower"] <= x * (1 + 1e-12) and x <= r["delta_upper"] * (1 + 1e-12), (K, r, x)
        assert out["params"]["m"] == "worst"
    big = bf.bitflip_model(1000, 0.1, "worst", 2)      # no n <= 400 limit since the composed blocks
    assert big.info["route"] == "blocks of composed pairs" and bf.COMPOSED_MAX_PAIRS < 1000 // 2
    with pytest.raises(SystemExit):     # argparse: "argument --m: invalid m (an integer or 'worst') value"
        cli.run(["delta", "bitflip", "--n", "10", "--q", "0.1", "--m", "wrst", "--eps", "1"])


@pytest.mark.parametrize("call, name", [
    (lambda: bf.pmf_A(5, 6, 0.1), "m"), (lambda: bf.pmf_A(5, 2, 0.6), "q"),
    (lambda: bf.pmf_A(-1, 0, 0.1), "n"), (lambda: bf.pmf_A(5, 2, 0.0), "q"),
    (lambda: bf.pi_ratio(5, 5, 0.1), "m"), (lambda: bf.delta_pair(5, 1, 0.1, -1.0), "eps"),
    (lambda: bf.q_needed(10, 1.0, 0.0), "delta"), (lambda: bf.seed_q_lemma45(10, 0.0, 0.1), "eps"),
    (lambda: fr.fake_pld(0, 3), "m"), (lambda: fr.fake_pld(3, 1), "d"),
    (lambda: fr.m_needed(3, 1.0, 1.5), "delta"), (lambda: bf.pmf_A(5, 2, 0.1, tail=0.5), "tail"),
])
def test_validation(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_seed_q_suffices_worst_case_exhaustive():
    """Lemma 4.5 / Prop. 4.1 conclusion: at the seed's q, the exact delta, worst case over
    every m (both directions), is <= delta (n = 1000, where the seed's q <= 1/2)."""
    for eps, dl in [(1.0, 1e-6), (0.5, 1e-6)]:
        qs = bf.seed_q_lemma45(1000, eps, dl)
        assert qs <= 0.5
        worst = float(bf.delta_worst(1000, qs, eps)[0])
        assert worst <= dl, (eps, dl, qs, worst)
        assert bf.q_needed_worst(1000, eps, dl, tol=1e-3) < qs / 3


PROP41_GRID = [(n, eps, dl) for n in (400, 1000) for eps in (0.5, 1.0, 2.0) for dl in (1e-6, 1e-9)] \
    + [(2000, 1.0, 1e-6)]
"""(n, eps, delta) at which Prop. 4.1's conclusion is checked exactly (every m: O(n) PLDs each)."""


def test_prop41_conclusion_exact_worst_case_delta_at_its_q():
    """Prop. 4.1 (eq. 4.6) itself: at the smallest q satisfying (4.6), the exact delta of the
    bit-flip shuffler, worst case over every collection (every m, both directions), is <= delta;
    and q(4.6) >= q(4.5) (the proposition's correction only raises q).  Cells where (4.6) has no
    q <= 1/2 claim nothing; enough cells must remain for the check to mean something."""
    checked = 0
    for n, eps, dl in PROP41_GRID:
        q41, q45 = bf.seed_q_prop41(n, eps, dl), bf.seed_q_lemma45(n, eps, dl)
        if q41 <= 0.5:
            worst = float(bf.delta_worst(n, q41, eps)[0])
            assert worst <= dl, (n, eps, dl, q41, worst)
            checked += 1
        assert q41 >= q45, (n, eps, dl, q41, q45)
    assert checked >= 10, checked


def test_q_needed_worst_grid_is_lower_bound_and_monotone():
    """Grid over m gives <= the exhaustive q; exhaustive >= q for m = 0; delta decreasing in q."""
    n, eps, dl = 150, 0.5, 1e-3
    full = bf.q_needed_worst(n, eps, dl, tol=1e-4)
    grid = bf.q_needed_worst(n, eps, dl, bf.m_grid(n), tol=1e-4)
    assert bf.q_needed(n, eps, dl, tol=1e-4) <= grid <= full * (1 + 1e-12)
    assert float(bf.delta_worst(n, full, eps)[0]) <= dl
    ds = [float(bf.delta_worst(40, q, 0.3)[0]) for q in np.linspace(0.02, 0.5, 13)]
    assert all(b <= a + 1e-15 for a, b in zip(ds, ds[1:])), ds
    assert bf.m_grid(1) == [0] and bf.m_grid(100)[-1] == 49


def test_seed_prop41_threshold():
    """The returned q satisfies (4.6) and 0.999 q does not; unsatisfiable small n gives inf."""
    for n, eps, dl in [(1000, 1.0, 1e-6), (10 ** 5, 0.2, 1e-6)]:
        q = bf.seed_q_prop41(n, eps, dl)

        def ok(x):
            br = -math.expm1(-eps) - 2 * (1 - 2 * x) / (n * x * (1 - x))
            return br > 0 and x >= 3 * math.log(2 / dl) / (n * br * br)
        assert ok(q) and not ok(0.999 * q)
    assert bf.seed_q_prop41(100, 1.0, 1e-6) == math.inf


def test_fake_delta_decreasing_in_m_and_composition_bracket():
    ds = [float(fr.fake_delta(m, 5, 0.7)[0]) for m in range(1, 80, 6)]
    assert all(b <= a + 1e-15 for a, b in zip(ds, ds[1:])), ds
    from shuffle_lib.core.pld import product_pmfs
    # 2-fold composition, exact by Kronecker product of the full-histogram pair (m = 3, d = 2)
    m, d = 3, 2
    P = np.array([math.comb(m, h - 1) / 2 ** m if 1 <= h <= m + 1 else 0.0 for h in range(m + 2)])
    Q = P[::-1].copy()
    Pk, Qk = product_pmfs(P, Q, 2)
    exact = float(delta_exact(Pk, Qk, [0.5])[0])
    br = fr.fake_delta_bracket(m, d, [0.5], compositions=2)[0]
    assert br.lower <= exact <= br.upper, (br, exact)


def _fake_flip_oracle(n, m, d, q, eps, others):
    """Exact delta of the column sums: every fake assignment, columns ~ A_N(count) independently."""
    N = n + m

    def dist(x1):
        out = {}
        for fakes in itertools.product(range(d), repeat=m):
            cnt = np.bincount([x1, *others, *fakes], minlength=d)
            cols = [bf.pmf_A(N, int(c), q) for c in cnt]
            for g_ in itertools.product(range(N + 1), repeat=d):
                out[g_] = out.get(g_, 0.0) + d ** -m * math.prod(cols[k][g_[k]] for k in range(d))
        return out
    P, Q = dist(0), dist(1)
    keys = sorted(set(P) | set(Q))
    return delta_exact([P.get(k, 0.0) for k in keys], [Q.get(k, 0.0) for k in keys], eps)


def test_fake_flip_bracket_contains_enumeration():
    from shuffle_lib.mechanisms.mixnet import fake_flip as ff
    eps = [0.0, 0.3, 1.0]
    for n, m, d, others, r in [(1, 2, 3, (), (0, 0)), (2, 2, 3, (2,), (0, 0)), (2, 2, 3, (0,), (1, 0)), (2, 3, 2, (1,), (0, 1))]:
        ex = _fake_flip_oracle(n, m, d, 0.2, eps, others)
        lo, up = ff.fake_flip_bracket(n, m, d, 0.2, eps, r)
        assert np.all(lo <= ex + 1e-13) and np.all(ex <= up + 1e-13), (n, m, d, r, lo, ex, up)
        if d == 2:
            assert np.allclose(lo, ex, rtol=1e-9) and np.allclose(up, ex, rtol=1e-9)
    with pytest.raises(ValueError, match="r"):
        ff.fake_flip_bracket(2, 2, 2, 0.2, [0.5], r=(0, 0))
    with pytest.raises(ValueError, match="n \\+ m"):
        ff.fake_flip_bracket(1, 700, 5, 0.2, [0.5])


def test_fake_flip_seed_q_suffices():
    """Sec. 6: at the note's q (m = 300, eps = 2, delta = 1e-3) the certified upper end is
    <= delta, for d = 2 and d = 100 (one user: the worst case)."""
    from shuffle_lib.mechanisms.mixnet import fake_flip as ff
    q = ff.seed_q_sec6(300, 2.0, 1e-3)
    assert q <= 0.5
    for d in (2, 100):
        lo, up = ff.fake_flip_bracket(1, 300, d, q, [2.0])
        assert lo[0] <= up[0] <= 1e-3, (d, q, lo, up)


# ---- --m worst, one round, at any n: blocks of m -------------------------


def _exact_worst_eps(n, q, delta):
    """max over every m in 0..n-1 of the exact eps(delta) of the pair (both directions)."""
    from shuffle_lib.core.pld import epsilon_exact
    return max(epsilon_exact(*bf.pair_pmfs(n, m, q), delta) for m in range(n))


@pytest.mark.parametrize("n, q", [(1, 0.1), (2, 0.3), (9, 0.05), (60, 0.05), (250, 0.1), (400, 0.02)])
def test_worst_blocks_bracket_the_exhaustive_max(n, q):
    """worst_brackets against the max over every m of the exact pair (tail 0): lower <= exact <= upper,
    relative width <= 1 % where delta > 1e-300 (the blocks stop at (1 + 2e-3) x the best m)."""
    from shuffle_lib.mechanisms.mixnet.bitflip_worst import worst_brackets
    eps = [0.0, 0.1, 0.5, 1.0, 2.0]
    exact = np.max([bf.delta_pair(n, m, q, eps, tail=0.0) for m in range(n)], axis=0)
    br, info = worst_brackets(n, q, "delta", eps)
    for b, x in zip(br, exact):
        assert b.lower <= x * (1 + 1e-12) and x <= b.upper * (1 + 1e-12), (b, x)
        assert b.upper - b.lower <= 0.01 * b.upper or b.upper < 1e-30, (b, x)
    assert info["pairs"] <= 2 * n + 34
    for d in (1e-2, 1e-6):
        x = _exact_worst_eps(n, q, d)
        b = worst_brackets(n, q, "epsilon", [d])[0][0]
        assert b.lower <= x * (1 + 1e-12) and x <= b.upper * (1 + 1e-12), (d, b, x)


@pytest.mark.parametrize("seed", range(6))
def test_block_bound_fewer_users_dominate(seed):
    """The lemma behind the blocks: delta_n(m) <= delta_{n-w}(s) for s <= m <= s + w, s + w <= (n-1)/2
    (random n, q, s, w, m; exact pairs, tail 0)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 120))
    q = float(rng.uniform(0.01, 0.49))
    top = (n - 1) // 2
    s = int(rng.integers(0, top + 1))
    w = int(rng.integers(0, top - s + 1))
    m = int(rng.integers(s, s + w + 1))
    eps = [0.0, 0.3, 1.0]
    assert np.all(bf.delta_pair(n, m, q, eps, tail=0.0) <= bf.delta_pair(n - w, s, q, eps, tail=0.0) * (1 + 1e-12)
                  + 1e-300)


def test_cli_worst_m_at_the_sizes_of_chapter_5():
    """epsilon bitflip --m worst at n = 1e4 and 1e6, one round: relative width
    <= 1 %, the lower end at least the exact eps of the pair m = 0, route 'blocks'."""
    from shuffle_lib import cli
    from shuffle_lib.core.pld import epsilon_exact
    for n, q in ((10 ** 4, 0.01), (10 ** 6, 0.001)):
        _, out = cli.run(["epsilon", "bitflip", "--n", str(n), "--q", str(q), "--m", "worst", "--delta", "1e-6"])
        r = out["results"][0]
        assert out["params"]["route"] == "blocks"
        assert r["eps_upper"] - r["eps_lower"] <= 0.01 * r["eps_upper"], r
        assert r["eps_lower"] >= epsilon_exact(*bf.pair_pmfs(n, 0, q, 1e-40), 1e-6) * (1 - 1e-9) - 1e-15, r


@pytest.mark.parametrize("n, q, K", [(101, 0.1, 2), (70, 0.3, 3)])
def test_composed_worst_blocks_bracket_the_exhaustive_max(n, q, K):
    """--m worst with compositions > 1 by blocks of m (the post-processing bound holds round by
    round): lower <= max over every m in 0..n-1 of the exact K-fold product's delta <= upper, with
    blocks wider than one m at these n (M + 1 >= 32)."""
    from shuffle_lib.core.pld import product_pmfs
    from shuffle_lib.mechanisms.mixnet.bitflip import _composed_worst
    eps = [0.3, 1.0]
    exact = np.zeros(len(eps))
    for m in range(n):
        P, Q = product_pmfs(*bf.pair_pmfs(n, m, q), K)
        exact = np.maximum(exact, delta_exact(P, Q, eps))
    br, info = _composed_worst(n, q, K, "delta", eps)
    assert info["widest_block"] > 1 or info["pairs"] < (n - 1) // 2 + 1, info
    for b, x in zip(br, exact):
        assert b.lower <= x * (1 + 1e-12) and x <= b.upper * (1 + 1e-12), (b, x)
    assert all(b.upper - b.lower <= 0.05 * b.upper for b in br), br



def test_fake_records_sec5_each_step_runs_the_direction_the_conclusion_needs():
    """Sec. 5 derives m/d >= 3 log(4/delta)((e^eps+1)/(e^eps-1))^2 by a chain written from the
    bound (5.3) towards the condition; sufficiency needs every step read the other way.  With
    x = m/d, c = sqrt(3 log(4/delta)), E = e^eps, on eps in {0.5, 1, 2} x delta in {1e-3, 1e-6}:

    * dropping the '-1' (x(E-1) - c sqrt(x)(E+1) - 1 >= 0  =>  ... >= 0) runs the wrong way: at the
      note's x, (5.3)'s ratio exceeds E, and (5.3)'s own condition needs a larger x (by < 2%);
    * the Chernoff step (each count within c sqrt(x) of x except with probability <= delta/2) and
      the union bound run the right way: exact binomial tails at the note's m are <= delta/2;
    * the lower-bound chain's last implication (lower => upper) is false, while what its sentence
      says (upper => lower) holds on a grid of x;
    * the conclusion holds all the same: the exact delta at m = ceil(d x) is <= delta (d = 10, 1000).
    """
    from scipy.stats import binom

    for eps in (0.5, 1.0, 2.0):
        for dl in (1e-3, 1e-6):
            E, c = math.exp(eps), math.sqrt(3 * math.log(4 / dl))
            x = fr.seed_m_over_d(eps, dl)
            assert x * (E - 1) - c * math.sqrt(x) * (E + 1) == pytest.approx(0.0, abs=1e-9 * x)
            ratio = (x + c * math.sqrt(x) + 1) / (x - c * math.sqrt(x))          # (5.3) at the note's x
            assert ratio > E
            root = (c * (E + 1) + math.sqrt(c * c * (E + 1) ** 2 + 4 * (E - 1))) / (2 * (E - 1))
            assert x < root ** 2 < 1.02 * x                                      # (5.3)'s own condition
            for d in (10, 1000):
                m = math.ceil(d * x)
                lo, hi = m / d - c * math.sqrt(m / d), m / d + c * math.sqrt(m / d)
                tail = binom.sf(math.floor(hi), m, 1 / d) + binom.cdf(math.ceil(lo) - 1, m, 1 / d)
                assert tail <= dl / 2, (eps, dl, d, tail)
                assert float(fr.fake_delta(m, d, eps)[0]) <= dl
            xs = np.geomspace(c * c * 1.0001, 100 * x, 400)
            s = np.sqrt(xs)
            upper = (xs + c * s + 1) / (xs - c * s) <= E
            lower = (xs - c * s + 1) / (xs + c * s) >= 1 / E
            assert np.all(lower[upper]) and np.any(upper)                      # upper => lower
            assert np.any(lower & ~upper)                                      # lower =/=> upper


def _answered(brackets):
    return [(b.lower, b.upper, b.accuracy_met, b.limit) for b in brackets]


def test_fake_records_brackets_are_the_command_lines_composed(cli_brackets):
    """fake_delta_bracket / fake_epsilon_bracket and ``python -m shuffle_lib delta|epsilon
    fake-records`` return the same brackets, accuracy_met and limit, K = 2 rounds (the epsilon case
    is refined: see the test below)."""
    lib = fr.fake_delta_bracket(200, 3, [0.5, 1.0], compositions=2)
    cli_out = cli_brackets("delta", "fake-records", "--m", 200, "--d", 3, "--compositions", 2,
                           "--eps", 0.5, 1.0)
    assert _answered(lib) == cli_out
    lib = fr.fake_epsilon_bracket(30000, 3, [1e-3], compositions=2)
    assert _answered(lib) == cli_brackets("epsilon", "fake-records", "--m", 30000, "--d", 3,
                                          "--compositions", 2, "--delta", 1e-3)
    assert all(b.accuracy_met is not None for b in lib)


def test_fake_epsilon_bracket_refines_what_the_first_grid_leaves_too_wide():
    """m = 30000, d = 3, K = 2, delta = 1e-3: the first grid (evaluate.epsilon_brackets on
    fake_model) gave [0.0250343, 0.0254339], half-width 2.0e-4 against the contract's 25 a eps =
    1.3e-4 at a = 2e-4; fake_epsilon_bracket now answers [0.0251306, 0.025334] (width 2.0e-4),
    inside the first bracket and meeting the contract."""
    from shuffle_lib.core import accuracy, evaluate
    from shuffle_lib.core.fourier import DEFAULT_ACCURACY

    model = fr.fake_model(30000, 3)
    first = evaluate.epsilon_brackets(model, [1e-3], 2, accuracy=DEFAULT_ACCURACY)[0]
    assert not accuracy.met("epsilon", first, DEFAULT_ACCURACY, 2), first
    got = fr.fake_epsilon_bracket(30000, 3, [1e-3], compositions=2)[0]
    assert got.accuracy_met and accuracy.met("epsilon", got, DEFAULT_ACCURACY, 2), got
    assert first.lower <= got.lower <= got.upper <= first.upper
    assert got.upper - got.lower < first.upper - first.lower


@pytest.mark.parametrize("m", [3, "worst"])
def test_bitflip_brackets_are_the_command_lines_composed(m, cli_brackets):
    """bitflip.delta_bracket / epsilon_bracket and ``python -m shuffle_lib delta|epsilon bitflip``
    return the same brackets, accuracy_met and limit, K = 2 rounds, for one pair and for the max
    over every m."""
    args = ("--n", 12, "--q", 0.1, "--m", m, "--compositions", 2)
    lib = bf.delta_bracket(12, 0.1, [0.5, 1.0], m=m, compositions=2)
    assert _answered(lib) == cli_brackets("delta", "bitflip", *args, "--eps", 0.5, 1.0)
    lib = bf.epsilon_bracket(12, 0.1, [1e-3], m=m, compositions=2)
    assert _answered(lib) == cli_brackets("epsilon", "bitflip", *args, "--delta", 1e-3)
    assert all(b.accuracy_met is not None for b in lib)


def test_bitflip_epsilon_bracket_refines_what_the_first_grid_leaves_too_wide(cli_brackets):
    """n = 1e4, q = 0.3, m = 0, K = 2, delta = 1e-3: the first grid (evaluate.epsilon_brackets on
    bitflip_model) gave [0.0124098, 0.0128094], half-width 2.0e-4 against the contract's 25 a eps
    = 6.4e-5 at a = 2e-4; epsilon_bracket now answers [0.0125582, 0.0126607] (width 1.0e-4),
    the command line's, inside the first bracket and meeting the contract."""
    from shuffle_lib.core import accuracy, evaluate
    from shuffle_lib.core.fourier import DEFAULT_ACCURACY

    model = bf.bitflip_model(10 ** 4, 0.3, 0, 2)
    first = evaluate.epsilon_brackets(model, [1e-3], 2, accuracy=DEFAULT_ACCURACY)[0]
    assert not accuracy.met("epsilon", first, DEFAULT_ACCURACY, 2), first
    got = bf.epsilon_bracket(10 ** 4, 0.3, [1e-3], compositions=2)
    assert _answered(got) == cli_brackets("epsilon", "bitflip", "--n", 10 ** 4, "--q", 0.3,
                                          "--compositions", 2, "--delta", 1e-3)
    got = got[0]
    assert got.accuracy_met and accuracy.met("epsilon", got, DEFAULT_ACCURACY, 2), got
    assert first.lower <= got.lower <= got.upper <= first.upper
    assert got.upper - got.lower < first.upper - first.lower
