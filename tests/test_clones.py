"""The clones pairs (shuffle_lib.mechanisms.clones): definitions, Lemmas B.1-B.3, delta(inf), certified
single-round brackets, compositions, validity classes and the CLI."""

import json
import math

import mpmath as mp
import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binom

from shuffle_lib.core import pld
from shuffle_lib.mechanisms import clones
from shuffle_lib.mechanisms.clones.pld import clone_pmfs

PAIRS = ["fmt21", "stronger", "koskela"]


# ---------- independent oracle: the pair built from its definition (Koskela et al. 2021 eq. 5.1-5.2) ----------

def brute_pair(n, eps0, pair):
    """dict (a, b) -> (P, Q) by summing over C, A, Delta as written in the papers."""
    p = math.exp(-eps0) if pair != "stronger" else 2 / (math.exp(eps0) + 1)
    q = math.exp(eps0) / (math.exp(eps0) + 1)
    out = {}
    for c in range(n):
        for a in range(c + 1):
            w = binom.pmf(c, n - 1, p) * binom.pmf(a, c, 0.5)
            for dl, pd in ((1, q), (0, 1 - q)):
                if pair == "koskela":
                    kp, kq = (a + dl, c - a), (a, c - a + dl)
                else:
                    kp, kq = (a + dl, c - a + 1 - dl), (a + 1 - dl, c - a + dl)
                out.setdefault(kp, [0.0, 0.0])[0] += w * pd
                out.setdefault(kq, [0.0, 0.0])[1] += w * pd
    keys = sorted(out)
    return np.array([out[k][0] for k in keys]), np.array([out[k][1] for k in keys]), keys


def rr_shuffled(n, eps0, k):
    """Exact shuffled binary RR: count of ones; k others hold 0, n-1-k hold 1; user 1: 0 vs 1."""
    q = math.exp(eps0) / (1 + math.exp(eps0))
    base = np.convolve(binom.pmf(np.arange(k + 1), k, 1 - q), binom.pmf(np.arange(n - k), n - 1 - k, q))
    return np.convolve(base, [q, 1 - q]), np.convolve(base, [1 - q, q])


@pytest.mark.parametrize("pair", PAIRS)
@pytest.mark.parametrize("n", [1, 2, 3, 7, 25])
def test_pmfs_match_definition(pair, n):
    for eps0 in (0.3, 2.0, 5.0):
        P, Q, keys = brute_pair(n, eps0, pair)
        Pm, Qm = clone_pmfs(n, eps0, pair)
        # same multiset of (P, Q) atoms (the layouts differ): compare the sorted likelihood pairs
        a = np.array(sorted(zip(np.round(P, 15), np.round(Q, 15))))
        b = np.array(sorted(zip(np.round(Pm, 15), np.round(Qm, 15))))
        a, b = a[(a[:, 0] > 0) | (a[:, 1] > 0)], b[(b[:, 0] > 0) | (b[:, 1] > 0)]
        assert a.shape == b.shape and np.allclose(a, b, rtol=1e-10, atol=1e-300)


@pytest.mark.parametrize("pair", PAIRS)
def test_single_round_bracket_contains_exact(pair):
    for n, eps0 in [(1, 1.0), (4, 0.5), (30, 2.0), (120, 4.0), (150, 1.0)]:
        P, Q, _ = brute_pair(n, eps0, pair)
        for eps in (0.0, 0.05, 0.3, 1.0, 3.0):
            exact = float(pld.delta_exact(P, Q, eps)[0])
            b = clones.delta_bracket_single(n, eps0, eps, pair)
            assert b.lower <= exact * (1 + 1e-12) + 1e-300
            assert exact <= b.upper * (1 + 1e-12) + 1e-300
            assert b.upper - b.lower <= 1e-9 * exact + 1e-11


@pytest.mark.parametrize("pair", PAIRS)
def test_delta_inf_closed_form_vs_direct_sum(pair):
    for n in (1, 2, 5, 12):
        for eps0 in (0.5, 1.0, 3.0):
            P, Q, _ = brute_pair(n, eps0, pair)
            direct = math.fsum(P[Q == 0])
            assert clones.delta_inf(n, eps0, pair) == pytest.approx(direct, rel=1e-12, abs=1e-300)


def test_delta_inf_seed_formula_symbolic():
    """Koskela et al. 2021: delta(inf) = (1/2)^(n-1) e^{-(n-2) eps0}/(e^eps0+1) equals q (p/2)^(n-1)."""
    n, eps0 = sp.symbols("n varepsilon_0", positive=True)
    q = sp.exp(eps0) / (sp.exp(eps0) + 1)
    seed = sp.Rational(1, 2) ** (n - 1) * sp.exp(-(n - 2) * eps0) / (sp.exp(eps0) + 1)
    ours = q * (sp.exp(-eps0) / 2) ** (n - 1)
    assert sp.simplify(sp.powsimp(sp.expand_power_base(seed / ours, force=True), force=True)) == 1
    with mp.workdps(50):
        for nn, e in ((3, 0.5), (40, 2.0)):
            val = mp.mpf(0.5) ** (nn - 1) * mp.e ** (-(nn - 2) * mp.mpf(e)) / (mp.e ** mp.mpf(e) + 1)
            assert float(val) == pytest.approx(clones.delta_inf(nn, e, "koskela"), rel=1e-13)


def _P(c_prob, i, j):
    return c_prob(i) * sp.binomial(i, j) / 2 ** i


def _lemma_b_laws(a, b, n, p):
    """The laws of Lemmas B.1-B.3 (Koskela, Heikkilä & Honkela 2021, App. B) in sympy: the
    count law pc(i) = Bin(n-1, p) at i, and P1, Q1, P0 at the report counts (a, b)."""
    pc = lambda i: sp.binomial(n - 1, i) * p ** i * (1 - p) ** (n - 1 - i)  # noqa: E731
    P1 = pc(a + b - 1) * sp.binomial(a + b - 1, a - 1) / 2 ** (a + b - 1)
    Q1 = pc(a + b - 1) * sp.binomial(a + b - 1, a) / 2 ** (a + b - 1)
    P0 = pc(a + b) * sp.binomial(a + b, a) / 2 ** (a + b)
    return pc, P1, Q1, P0


def test_lemmas_B1_B2_B3_symbolic():
    a, b, n = sp.symbols("a b n", positive=True, integer=True)
    p, q = sp.symbols("p q", positive=True)
    pc, P1, Q1, P0 = _lemma_b_laws(a, b, n, p)
    r = p / (1 - p)
    simp = lambda e: sp.simplify(sp.powsimp(sp.gammasimp(sp.combsimp(e)), force=True))  # noqa: E731
    # Lemma B.1
    r1, r0 = simp(P1 / Q1), simp(P0 / Q1)
    assert sp.simplify(r1 - a / b) == 0
    assert sp.simplify(r0 - r * (n - a - b) / (2 * b)) == 0
    # Lemma B.2 (eq. B.7 / 5.5), with q = e^eps0/(e^eps0+1) (the seed's "q = e^-eps0" is a misprint):
    # divide numerator and denominator of P/Q = (q P1 + (1-q) P0)/(q Q1 + (1-q) P0) by Q1
    ratio = (q * r1 + (1 - q) * r0) / (q + (1 - q) * r0)
    lemma = (q * a / b + (1 - q) * r * (n - a - b) / (2 * b)) / (q + (1 - q) * r * (n - a - b) / (2 * b))
    assert sp.simplify(ratio - lemma) == 0
    # Lemma B.3 / eq. 5.7: P(P=(a,b)) = (q + (1-q) r (n-a-b)/(2a)) P1, i.e. P0/P1 = r (n-a-b)/(2a)
    assert sp.simplify(simp(P0 / P1) - r * (n - a - b) / (2 * a)) == 0
    # B.2 at b = 0, a > 0: P1(a,0)/P0(a,0) = 2 a/(n-a) (1-p)/p  (eq. B.10)
    P1b0 = pc(a - 1) / 2 ** (a - 1)
    P0b0 = pc(a) / 2 ** a
    assert sp.simplify(sp.gammasimp(sp.combsimp(P1b0 / P0b0)) - 2 * a / (n - a) * (1 - p) / p) == 0


def _lemma_b1_pair():
    """The pair of Koskela, Heikkilä & Honkela (2021) eq. 5.1 from Lemma B.1's pieces, in sympy: P = q P1 + (1-q) P0,
    Q = q Q1 + (1-q) P0 with P1, Q1, P0 the binomial laws of the lemma, and the log-ratio that
    Lemma B.1 (P1 = a/b Q1, P0 = r (n-a-b)/(2b) Q1, r = p/(1-p)) gives for P/Q."""
    a, b, n = sp.symbols("a b n", integer=True, nonnegative=True)
    p, q = sp.symbols("p q", positive=True)
    _, P1, Q1, P0 = _lemma_b_laws(a, b, n, p)
    r1, r0 = a / b, p / (1 - p) * (n - a - b) / (2 * b)          # Lemma B.1
    ratio = sp.log((q * r1 + (1 - q) * r0) / (q + (1 - q) * r0))
    return (a, b, n, p, q), q * P1 + (1 - q) * P0, q * Q1 + (1 - q) * P0, ratio


def test_lemma_b1_against_the_library_on_a_grid():
    """Lemma B.1 linked to the library: on every atom (a, b) of n in {2, 9, 30, 80} x eps0 in
    {0.1, 1.3, 4}, the koskela pair built from the lemma's binomial pieces (mpmath, 30 digits)
    equals clone_pmfs, and the log-ratio that Lemma B.1's two identities give equals the
    library's loss (its closed form, module docstring of clones.pairs) where b > 0."""
    mp.mp.dps = 30

    def binomial(x, k):                           # C(x, k) = 0 outside 0 <= k <= x
        return mp.binomial(x, k) if 0 <= k <= x else mp.mpf(0)
    syms, P, Q, ratio = _lemma_b1_pair()
    mods = [{"binomial": binomial}, "mpmath"]
    fP, fQ, fr = (sp.lambdify(syms, e, modules=mods) for e in (P, Q, ratio))
    koskela = clones.PAIRS["koskela"]
    compared = 0
    for n in (2, 9, 30, 80):
        for eps0 in (0.1, 1.3, 4.0):
            p, q = mp.e ** -mp.mpf(eps0), mp.e ** mp.mpf(eps0) / (mp.e ** mp.mpf(eps0) + 1)
            Pm, Qm = clone_pmfs(n, eps0, "koskela")
            s = np.concatenate([np.full(k + 1, k) for k in range(n + 1)])
            a = np.concatenate([np.arange(k + 1) for k in range(n + 1)])
            _, al, be, ga = clones.shared_weights(n, eps0, koskela, s)
            lib_loss = clones.loss(s, a, al, be, ga)
            for i, (si, ai) in enumerate(zip(s.tolist(), a.tolist())):
                bi = si - ai
                want_p, want_q = fP(ai, bi, n, p, q), fQ(ai, bi, n, p, q)
                assert Pm[i] == pytest.approx(float(want_p), rel=1e-10, abs=1e-300), (n, eps0, ai, bi)
                assert Qm[i] == pytest.approx(float(want_q), rel=1e-10, abs=1e-300), (n, eps0, ai, bi)
                if bi > 0 and ai + bi < n and want_q > 1e-300:
                    assert lib_loss[i] == pytest.approx(float(fr(ai, bi, n, p, q)), rel=1e-9, abs=1e-12)
                    compared += 1
    assert compared > 5000, compared


def test_lemma12_and_eq57_58_numeric():
    """Lemma 12 (eq. 5.5), eq. 5.7 and 5.8 at 40 digits against clone_pmfs (koskela pair)."""
    n, eps0 = 9, 1.3
    mp.mp.dps = 40
    e0 = mp.mpf(eps0)
    p, q = mp.e ** -e0, mp.e ** e0 / (mp.e ** e0 + 1)
    r = p / (1 - p)
    Pm, Qm = clone_pmfs(n, eps0, "koskela")
    idx = 0
    for s in range(0, n + 1):
        for a in range(s + 1):
            b = s - a
            if a > 0:
                i, j = a + b - 1, a - 1
                want = (q + (1 - q) * r * (n - a - b) / (2 * a)) * mp.binomial(n - 1, i) * mp.binomial(i, j) \
                    * p ** i * (1 - p) ** (n - 1 - i) / mp.mpf(2) ** i
            else:
                want = (1 - q) * mp.binomial(n - 1, b) * (p / 2) ** b * (1 - p) ** (n - 1 - b)
            assert Pm[idx] == pytest.approx(float(want), rel=1e-12, abs=1e-300)
            if b > 0:
                lem = (q * a / b + (1 - q) * r * (n - a - b) / (2 * b)) / (q + (1 - q) * r * (n - a - b) / (2 * b))
                assert Pm[idx] / Qm[idx] == pytest.approx(float(lem), rel=1e-12)
            idx += 1


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 3000), eps0=st.floats(0.1, 6.0), eps=st.floats(0.0, 2.0))
def test_order_and_monotonicity(n, eps0, eps):
    """stronger <= fmt21 <= koskela (in delta), and delta non-increasing in eps."""
    d = {pr: clones.delta_bracket_single(n, eps0, eps, pr) for pr in PAIRS}
    assert d["stronger"].lower <= d["fmt21"].upper
    assert d["fmt21"].lower <= d["koskela"].upper
    later = clones.delta_bracket_single(n, eps0, eps + 0.05, "fmt21")
    assert later.lower <= d["fmt21"].upper


@pytest.mark.parametrize("n", [1, 2, 5, 20, 60])
def test_binary_rr_is_dominated(n):
    """Exact shuffled binary RR (every data split) <= fmt21 and <= stronger (RR meets its condition)."""
    for eps0 in (0.5, 2.0, 4.0):
        for eps in (0.0, 0.2, 0.7):
            rr = max(float(pld.delta_exact(*rr_shuffled(n, eps0, k), eps)[0]) for k in range(n))
            for pr in ("fmt21", "stronger"):
                assert rr <= clones.delta_bracket_single(n, eps0, eps, pr).upper * (1 + 1e-10)


def test_koskela_pair_at_n1_is_not_ldp():
    """At n = 1 the shuffler is the eps0-LDP randomiser itself (delta(eps0) = 0), but the printed pair
    has delta(inf) = q: it is an upper bound, not the pair of the mechanism.  eps = eps0 ties with the
    fmt21 atom a = 1 (loss log(q/(1-q)) = eps0): its term q - e^eps0 (1-q) is 0 only within the
    rounding, and bracket_at's certified margin for it is 1e-12 (P + e^eps0 Q) = 2e-12 q, on top
    of the rounded term itself (a few ulps of P + e^eps0 Q = 2q: < 4e-15).  The tie-safe threshold
    first reported; the former bound 1e-25 held only because the rounded threshold skipped the atom."""
    for eps0 in (0.5, 2.0):
        q = math.exp(eps0) / (1 + math.exp(eps0))
        assert clones.delta_inf(1, eps0, "koskela") == pytest.approx(q)
        assert clones.delta_bracket_single(1, eps0, eps0, "fmt21").upper <= 2e-12 * q + 4e-15


def test_decomposition_classes():
    e0 = 1.5
    e = math.exp(e0)
    rr = np.array([[e, 1], [1, e]]) / (e + 1)
    krr = (np.ones((4, 4)) + (e - 1) * np.eye(4)) / (e + 3)
    odd = np.array([[e, e, 1, 1], [e, 1, e, 1], [1, 1, e, e]]) / (2 * e + 2)   # rows sum to 1
    for R in (rr, krr, odd):
        assert clones.decomposition_holds(R, e0, "fmt21")
    assert clones.decomposition_holds(rr, e0, "stronger") and clones.decomposition_holds(krr, e0, "stronger")
    assert not clones.decomposition_holds(odd, e0, "stronger")


def test_epsilon_roundtrip_and_extremes():
    for n, eps0, delta in [(10 ** 4, 4.0, 1e-6), (10 ** 5, 1.0, 1e-8), (10 ** 7, 10.0, 1e-6), (10 ** 4, 2.0, 1e-300)]:
        b = clones.epsilon_bracket_single(n, eps0, delta)
        assert 0 <= b.lower <= b.upper
        if math.isfinite(b.upper):
            assert clones.delta_bracket_single(n, eps0, b.upper, tau=1e-300).upper <= delta * (1 + 1e-9)
        if b.lower > 0:
            assert clones.delta_bracket_single(n, eps0, b.lower, tau=1e-300).lower > delta * (1 - 1e-9)
    k = clones.epsilon_bracket_single(50, 1.0, 1e-40, "koskela")   # delta < delta(inf): no finite eps
    assert k.upper == math.inf and clones.delta_inf(50, 1.0, "koskela") > 1e-40


@pytest.mark.parametrize("bad", [dict(n=0), dict(eps0=-1.0), dict(eps0=float("nan")), dict(pair="bogus"),
                                 dict(n=2.5), dict(eps=-0.1)])
def test_validation(bad):
    args = dict(n=100, eps0=1.0, eps=0.1, pair="fmt21") | bad
    with pytest.raises(ValueError, match=list(bad)[0]):
        clones.delta_bracket_single(**args)
    with pytest.raises(ValueError, match="delta"):
        clones.epsilon_bracket_single(100, 1.0, 0.0)


def test_compositions_contain_exact_product():
    n, eps0, k = 4, 1.0, 3
    P, Q = clone_pmfs(n, eps0, "fmt21")
    Pk, Qk = pld.product_pmfs(P / P.sum(), Q / Q.sum(), k)
    for eps in (0.2, 1.0):
        exact = float(pld.delta_exact(Pk, Qk, eps)[0])
        b = clones.delta_bracket(n, eps0, eps, compositions=k)[0]
        assert b.lower <= exact <= b.upper
    # heterogeneous: one round at eps0 = 1 and one at eps0 = 2 (n = 3)
    P1, Q1 = clone_pmfs(3, 1.0)
    P2, Q2 = clone_pmfs(3, 2.0)
    Ph, Qh = np.kron(P1, P2), np.kron(Q1, Q2)
    exact = float(pld.delta_exact(Ph / Ph.sum(), Qh / Qh.sum(), 0.5)[0])
    b = clones.delta_bracket(None, None, 0.5, rounds=[(3, 1.0, 1), (3, 2.0, 1)])[0]
    assert b.lower <= exact <= b.upper


def test_cli_done_when(cli):
    """n = 1e4, eps0 = 4, n_c in {1, 10, 100}, delta in {1e-4, 1e-6, 1e-8}: <= 0.1 % wide, exact inside."""
    deltas = [1e-4, 1e-6, 1e-8]
    single = [clones.epsilon_bracket_single(10 ** 4, 4.0, d) for d in deltas]
    prev = None
    for k in (1, 10, 100):
        r = cli("epsilon", "ldp-shuffle", "--n", "10000", "--eps0", "4", "--delta", *map(str, deltas),
                "--compositions", str(k), "--json")
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout)
        for i, row in enumerate(out["results"]):
            lo, hi = row["eps_lower"], row["eps_upper"]
            assert hi - lo <= 1e-3 * hi
            if k == 1:   # the exact value, from the independent binomial-tail computation
                assert lo <= single[i].upper and single[i].lower <= hi
            else:        # composing cannot help, and cannot cost more than k times
                assert lo >= prev[i][0] * (1 - 1e-9) and hi <= k * single[i].upper
        prev = [(row["eps_lower"], row["eps_upper"]) for row in out["results"]]


def test_cli_bad_input(cli):
    r = cli("delta", "ldp-shuffle", "--n", "0", "--eps0", "1", "--eps", "0.1")
    assert r.returncode == 2 and "n must be" in r.stderr
    r = cli("delta", "ldp-shuffle", "--n", "100", "--eps0", "1", "--eps", "0.1", "--pair", "nope")
    assert r.returncode == 2


def test_cli_pairs_differ(cli):
    vals = {}
    for pr in PAIRS:
        r = cli("delta", "ldp-shuffle", "--n", "1000", "--eps0", "2", "--eps", "0.3", "--pair", pr, "--json")
        assert r.returncode == 0, r.stderr
        row = json.loads(r.stdout)["results"][0]
        exact = clones.delta_bracket_single(1000, 2.0, 0.3, pr)
        assert row["delta_lower"] <= exact.upper and exact.lower <= row["delta_upper"]
        vals[pr] = row["delta_upper"]
    assert vals["stronger"] < vals["fmt21"] < vals["koskela"]


def brute_no_w_pair(n, p, u):
    """(P, Q) atoms of a pair whose differing user reports x0 w.p. u and nothing else (w = 0: the
    koskela form with q = u), from the definition: C ~ Bin(n-1, p) clones split evenly."""
    out = {}
    for c in range(n):
        for a in range(c + 1):
            wgt = binom.pmf(c, n - 1, p) * binom.pmf(a, c, 0.5)
            for dl, pd in ((1, u), (0, 1 - u)):
                out.setdefault((a + dl, c - a), [0.0, 0.0])[0] += wgt * pd
                out.setdefault((a, c - a + dl), [0.0, 0.0])[1] += wgt * pd
    return np.array(list(out.values()))


@pytest.mark.parametrize("n", [1, 2, 3, 5, 10, 40])
def test_top_loss_is_above_every_finite_loss(n):
    """clone_top_loss is where the tail cut's dropped mass goes: it must not lie below any finite
    loss.  The koskela case once dropped the 1 + and the S = n atoms (0.760 < 1.144 at n = 2)."""
    from shuffle_lib.mechanisms.clones.pairs import PAIRS as PAIR_DECL
    from shuffle_lib.mechanisms.clones.pairs import general_pair
    cases = [(PAIR_DECL["koskela"], e0, math.exp(-e0), math.exp(e0) / (1 + math.exp(e0))) for e0 in (0.1, 0.5, 1, 3, 8)]
    cases += [(general_pair(pc, u, 0.0), None, pc, u) for pc in (0.3, 0.9) for u in (0.01, 0.6)]
    for pr, e0, pc, u in cases:
        PQ = brute_no_w_pair(n, pc, u)
        fin = (PQ[:, 0] > 0) & (PQ[:, 1] > 0)
        top = np.max(np.log(PQ[fin, 0] / PQ[fin, 1]))
        assert clones.clone_top_loss(n, e0 if e0 is not None else 1.0, pr) >= top, (pr, e0, n)
    for pair in ("fmt21", "stronger"):
        P, Q, _ = brute_pair(n, 2.0, pair)
        fin = (P > 0) & (Q > 0)
        assert clones.clone_top_loss(n, 2.0, PAIR_DECL[pair]) >= np.max(np.log(P[fin] / Q[fin])) - 1e-12
