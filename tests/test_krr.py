"""Tests of shuffle_lib.mechanisms.krr: oracles are sympy, brute-force enumeration of the
protocol (shuffle_lib.mechanisms.krr.checks, rational arithmetic), scipy closed forms and the
independent dp_accounting PLD implementation."""

import json
import math
import subprocess
import sys

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binom

from shuffle_lib.core.pld import delta_exact, epsilon_exact, hockey_stick, pld_from_pmfs, product_pmfs, tail_probability
from shuffle_lib.mechanisms import krr
from shuffle_lib.mechanisms.krr import checks as kc
from shuffle_lib.mechanisms.krr import lattice as krr_lattice

FIG1 = dict(n=1000, gamma=0.25, k=4)


# ---- sympy: every closed form used --------------------------------------------------------


@pytest.mark.parametrize("kk", [2, 3, 4, 5])
def test_app_a_identity_sympy(kk):
    """000 App. A: sum_i multinom(b; n - e_i) P[R(1) = i] = b!/prod n_j! [n_1 (1-g) + g (b+1)/k]."""
    g = sp.symbols("gamma", positive=True)
    ns = sp.symbols(f"n1:{kk + 1}", positive=True, integer=True)
    b = sum(ns) - 1
    w = [1 - g + g / kk] + [g / kk] * (kk - 1)
    common = sp.factorial(b) / sp.prod([sp.factorial(x) for x in ns])
    lhs = sum(sp.factorial(b) / sp.prod([sp.factorial(ns[j] - int(j == i)) for j in range(kk)]) * w[i]
              for i in range(kk))
    rhs = common * (ns[0] * (1 - g) + g * (b + 1) / kk)
    assert sp.simplify(sp.gammasimp((lhs - rhs) / common)) == 0


def test_strong_ratio_sympy():
    """A_s, beta_n = 0: P[A = a-1, C = c] / P[A = a, C = c-1] = a / c (multinomial)."""
    a, c, N = sp.symbols("a c N", positive=True, integer=True)
    p = sp.symbols("p", positive=True)
    r = 1 - 2 * p
    f = lambda x, y: sp.factorial(N) / (sp.factorial(x) * sp.factorial(y) * sp.factorial(N - x - y)) * p ** (x + y) * r ** (N - x - y)  # noqa: E731
    assert sp.simplify(sp.gammasimp(f(a - 1, c) / f(a, c - 1) - a / c)) == 0


def test_weak_loss_sympy_and_library():
    """weak_loss is log of the App. A bracket ratio; lambdified and compared on a grid."""
    u, w, b, g, k = sp.symbols("u w b gamma k", positive=True)
    expr = sp.log((u * (1 - g) + g * (b + 1) / k) / (w * (1 - g) + g * (b + 1) / k))
    f = sp.lambdify((u, w, b, g, k), expr)
    rng = np.random.default_rng(3)
    U, W = rng.integers(0, 50, 200), rng.integers(0, 50, 200)
    B = U + W + rng.integers(0, 50, 200)
    G, K = rng.uniform(0.05, 1, 200), rng.integers(2, 9, 200)
    np.testing.assert_allclose(krr.weak_loss(U, W, B, G, K), f(U, W, B, G, K), rtol=1e-13, atol=1e-15)


def test_conversion_sympy():
    """gamma = k/(e^eps0 + k - 1)  <=>  1 - gamma + gamma/k = e^eps0/(e^eps0 + k - 1)."""
    e0, k = sp.symbols("varepsilon_0 k", positive=True)
    gam = k / (sp.exp(e0) + k - 1)
    assert sp.simplify(1 - gam + gam / k - sp.exp(e0) / (sp.exp(e0) + k - 1)) == 0
    assert sp.simplify(sp.log(1 + k * (1 - gam) / gam) - e0) == 0


def test_balle_inversion_sympy():
    """delta = 2 exp(-gamma (n-1) eps^2/(14k)) makes the first term of the max equal gamma."""
    n, g, k, e = sp.symbols("n gamma k varepsilon", positive=True)
    d = 2 * sp.exp(-g * (n - 1) * e ** 2 / (14 * k))
    assert sp.simplify(14 * k * sp.log(2 / d) / ((n - 1) * e ** 2) - g) == 0


# ---- randomiser and conversions -----------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(st.floats(1e-6, 1.0), st.integers(2, 1000))
def test_gamma_eps0_roundtrip(gamma, k):
    e0 = krr.eps0_from_gamma(gamma, k)
    assert math.isclose(krr.gamma_from_eps0(e0, k), gamma, rel_tol=1e-12)
    p_true, p_other = krr.krr_probs(gamma, k)
    assert math.isclose(p_true, math.exp(e0) / (math.exp(e0) + k - 1), rel_tol=1e-12)
    assert math.isclose(p_true + (k - 1) * p_other, 1.0, rel_tol=1e-14)


@pytest.mark.parametrize("gamma,k", [(0.25, 4), (0.6, 2), (0.9, 7)])
def test_local_randomiser_is_eps0_ldp(gamma, k):
    """The local pair's tight eps at delta -> 0 is eps0 (000 Def. 3)."""
    p, q = krr.krr_pmfs(gamma, k)
    e0 = krr.eps0_from_gamma(gamma, k)
    assert delta_exact(p, q, e0)[0] == 0.0
    assert delta_exact(p, q, e0 * (1 - 1e-6))[0] > 0.0
    assert math.isclose(epsilon_exact(p, q, 1e-300), e0, rel_tol=1e-9)


# ---- brute force: library == enumeration of the whole protocol ---------------------------

TINY = [(2, 2), (3, 2), (4, 2), (6, 2), (3, 3), (4, 3), (5, 3), (6, 3)]
EPS = [0.0, 0.2, 0.5, 0.9, 1.4, 2.5]


@pytest.mark.parametrize("n,k", TINY)
@pytest.mark.parametrize("gamma", [0.25, 0.6, 1.0])
@pytest.mark.parametrize("view", ["strong", "weak"])
def test_bruteforce_equals_library(n, k, gamma, view):
    """The library's exact PLD (tail=0) gives the tight delta of the enumerated views, to 1e-12."""
    bf = kc.brute_delta(n, gamma, k, view, EPS)
    pl = krr.adversary_pld(view, n, gamma, k, tail=0)
    assert pl.cut == 0.0
    lib = np.array([hockey_stick(pl.lower, e) for e in EPS])
    np.testing.assert_allclose(lib, bf, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("view", ["strong", "weak"])
def test_bruteforce_both_directions_and_any_others(view):
    """One PLD serves both directions and every x_1..x_{n-1} (the dominating-pair argument)."""
    pl = krr.adversary_pld(view, 4, 0.4, 3, tail=0)
    lib = [hockey_stick(pl.lower, e) for e in EPS]
    for others in [(0, 0, 0), (1, 2, 0), (2, 2, 1), (1, 1, 1)]:
        p, q = kc.view_pmfs(4, 0.4, 3, view, others)
        pq = hockey_stick(pld_from_pmfs(p, q), EPS)
        qp = hockey_stick(pld_from_pmfs(q, p), EPS)
        np.testing.assert_allclose(pq, lib, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(qp, lib, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("view", ["strong", "weak"])
def test_bruteforce_composition_in_bracket(view):
    """Two rounds: the enumerated product views' tight delta lies in the library bracket."""
    n, g, k = 4, 0.4, 2
    bf = kc.brute_delta(n, g, k, view, EPS[1:], n_c=2)
    br = krr.delta_bracket(view, n, g, k, EPS[1:], compositions=2)
    for d, b in zip(bf, br):
        assert b.lower <= d * (1 + 1e-12) + 1e-15 and d <= b.upper * (1 + 1e-12) + 1e-15


@pytest.mark.parametrize("n,k", [(3, 2), (4, 2), (4, 3), (5, 2)])
def test_side_information_order(n, k):
    """plain <= weak <= strong (each view is a post-processing of the next)."""
    for g in (0.3, 0.7):
        plain = kc.plain_worst_delta(n, g, k, EPS)
        weak = kc.brute_delta(n, g, k, "weak", EPS)
        strong = kc.brute_delta(n, g, k, "strong", EPS)
        assert np.all(plain <= weak + 1e-15) and np.all(weak <= strong + 1e-15)


# ---- structure of the PLDs ---------------------------------------------------------------


@pytest.mark.parametrize("n,gamma,k", [(2, 0.5, 2), (50, 0.25, 4), (1000, 0.25, 4), (300, 0.9, 3)])
def test_strong_closed_forms(n, gamma, k):
    """inf mass (1-g)(1-g/k)^(n-1), total mass 1, E_P[e^-L] = 1 - inf mass (symmetry)."""
    pl = krr.strong_pld(n, gamma, k)
    inf = (1 - gamma) * (1 - gamma / k) ** (n - 1)
    assert math.isclose(pl.lower.inf_mass, inf, rel_tol=1e-12)
    assert math.isclose(math.fsum(pl.lower.probs) + inf, 1.0, abs_tol=1e-14)
    assert math.isclose(math.fsum(pl.lower.probs * np.exp(-pl.lower.losses)), 1 - inf, abs_tol=1e-14)
    zero = pl.lower.probs[pl.lower.losses == 0].sum()
    assert zero >= gamma


@pytest.mark.parametrize("n,gamma,k", [(50, 0.25, 4), (1000, 0.25, 4), (200, 0.5, 2)])
def test_weak_closed_forms(n, gamma, k):
    """No inf mass; losses in [-eps0, eps0]; total mass 1; E_P[e^-L] = 1."""
    pl = krr.weak_pld(n, gamma, k)
    e0 = krr.eps0_from_gamma(gamma, k)
    assert pl.lower.inf_mass == 0.0
    assert pl.lower.losses[0] >= -e0 - 1e-12 and pl.lower.losses[-1] <= e0 + 1e-12
    assert math.isclose(math.fsum(pl.lower.probs), 1.0, abs_tol=1e-14)
    assert math.isclose(math.fsum(pl.lower.probs * np.exp(-pl.lower.losses)), 1.0, abs_tol=1e-14)


@pytest.mark.parametrize("view", ["strong", "weak"])
def test_truncation_is_certified(view):
    """With a coarse tail: delta(lower) <= delta(exact, tail=0) <= delta(upper)."""
    n, g, k = 120, 0.3, 3
    exact = krr.adversary_pld(view, n, g, k, tail=0)
    cut = krr.adversary_pld(view, n, g, k, tail=1e-4)
    assert cut.cut > 0
    for e in [0.0, 0.3, 0.8, 1.5, 3.0]:
        lo, up = krr.hockey_stick_pair(cut, e)
        ex = hockey_stick(exact.lower, e)
        assert lo <= ex * (1 + 1e-12) + 1e-300 and ex <= up * (1 + 1e-12)
        assert up - lo <= cut.cut * (1 + 1e-9)


def test_large_n_paths_are_certified(monkeypatch):
    """The lattice pair that takes over from an exact PLD above EXACT_ABOVE atoms, and the A_w
    fallback beyond the exact PLD's size, give brackets that contain the exact delta (size
    thresholds lowered so that the exact value is still computable)."""
    eps = [0.2, 0.5]
    for view in ("strong", "weak"):
        pl = krr.adversary_pld(view, 300, 0.35, 3)
        for n_c in (1, 3):
            want = [hockey_stick(pl.lower, e) for e in eps] if n_c == 1 else \
                [b for b in krr.delta_bracket(view, 300, 0.35, 3, eps, compositions=n_c)]
            monkeypatch.setattr(krr, "EXACT_ABOVE", 100)
            got = krr.delta_bracket(view, 300, 0.35, 3, eps, compositions=n_c)
            monkeypatch.undo()
            for w, g in zip(want, got):
                lo, hi = (w, w) if n_c == 1 else (w.lower, w.upper)
                assert g.lower <= hi * (1 + 1e-12) and lo <= g.upper * (1 + 1e-12)
    krr.weak_pld.cache_clear()
    monkeypatch.setattr(krr, "MAX_ATOMS", 20000)
    got = krr.delta_bracket("weak", 301, 0.35, 3, eps)
    monkeypatch.undo()
    krr.weak_pld.cache_clear()
    ex = krr.weak_pld(301, 0.35, 3)
    for e, g in zip(eps, got):
        assert g.lower <= hockey_stick(ex.lower, e) * (1 + 1e-12) <= g.upper * (1 + 1e-12)


def test_gamma_one_is_perfectly_private():
    for view in ("strong", "weak"):
        assert kc.brute_delta(3, 1.0, 2, view, [0.0])[0] < 1e-15
        assert krr.hockey_stick_pair(krr.adversary_pld(view, 150, 1.0, 3), 0.0)[1] < 1e-12


@pytest.mark.parametrize("view", ["strong", "weak"])
def test_monotone(view):
    """delta falls with eps and with gamma, and rises with the number of rounds."""
    d = [krr.hockey_stick_pair(krr.adversary_pld(view, 200, g, 3), 0.5)[0] for g in (0.2, 0.4, 0.8)]
    assert d[0] > d[1] > d[2]
    br = [krr.delta_bracket(view, 200, 0.4, 3, [0.5], compositions=c)[0] for c in (1, 2, 4)]
    assert br[0].upper < br[1].lower and br[1].upper < br[2].lower


# ---- loose readings of the seed ---------------------------------------------------------


def test_strong_readings_scipy_oracle():
    """The independent reading recomputed from scipy on a full (a, c) grid."""
    n, g, k = 60, 0.5, 3
    a = np.arange(n)
    pa = binom.pmf(a, n - 1, g / k)
    for e in (0.3, 1.0):
        z = np.log((a[:, None] + 1) / np.where(a[None, :] == 0, 1e-300, a[None, :]))
        want = float(np.sum(np.outer(pa, pa)[z >= e]))
        assert math.isclose(kc.reading_independent_tail(n, g, k, e), want, rel_tol=1e-10)


@pytest.mark.parametrize("eps", [0.25, 0.5, 1.0, 1.5])
def test_thm8_tail_is_an_upper_bound_not_tight(eps):
    """P[L >= eps] >= delta(eps), strictly here: Thm 8's 'tight' is an upper bound."""
    pl = krr.strong_pld(**FIG1)
    assert tail_probability(pl.lower, eps) > 1.5 * krr.hockey_stick_pair(pl, eps)[1]


def test_pmf_pair_reading_underestimates():
    """The 1-d PMF pair Bin+1 vs Bin is a post-processing of the (A+1, C) vs (A, C+1) pair."""
    for e in (0.5, 1.0):
        r = kc.strong_readings(200, 0.25, 4, e)
        assert r["PMF pair Bin+1 vs Bin, tight"] <= r["exact, no beta_n"] * (1 + 1e-12)


def test_weak_independent_reading_can_underestimate():
    """000 Thm 10 read with N1, N2 independent given B is below the tight delta (unsafe)."""
    r = kc.weak_readings(1000, 0.25, 4, 1.0)
    assert r["independent N1, N2 given B, tail (Thm 10)"] < r["exact (tight)"]
    assert r["joint counts, tail"] >= r["exact (tight)"]


def test_composed_tail_against_enumeration():
    """composed_tail brackets P[L_1+..+L_m >= eps], the exact tail of the m-fold product (m = 3)."""
    p, q = kc.view_pmfs(3, 0.4, 2, "strong")
    pl = pld_from_pmfs(p, q)
    pm, qm = product_pmfs(p, q, 3)
    exact3 = pld_from_pmfs(pm, qm)
    for e in (0.1, 0.7, 1.5):
        lo, hi = kc.composed_tail(pl.losses, pl.probs, pl.inf_mass, 3, [e], h=1e-4)[0]
        t = tail_probability(exact3, e)
        assert lo - 1e-12 <= t <= hi + 1e-12


def test_thm8_composed_tail_exceeds_tight_delta():
    """Thm 8's composed tail (joint counts, with beta_n) lies above the certified tight delta."""
    pl = krr.strong_pld(**FIG1)
    for n_c, e in ((10, 1.0), (10, 2.0)):
        lo, _ = kc.composed_tail(pl.lower.losses, pl.lower.probs, pl.lower.inf_mass, n_c, [e])[0]
        assert lo > 2 * krr.delta_bracket("strong", eps=[e], compositions=n_c, accuracy=2e-3, **FIG1)[0].upper


# ---- analytic bounds --------------------------------------------------------------------


def test_balle_bound_valid_and_roundtrip():
    """Balle et al. Thm 3.1 lies above the tight A_s delta; eps(delta) and delta(eps) invert."""
    pl = krr.strong_pld(**FIG1)
    for e in (0.45, 0.6, 0.8, 1.0):
        d = krr.balle_delta(eps=e, **FIG1)
        assert d >= krr.hockey_stick_pair(pl, e)[1]
        if d < 1:
            assert math.isclose(krr.balle_epsilon(delta=d, **FIG1), e, rel_tol=1e-9)
    assert krr.balle_delta(eps=0.3, **FIG1) == 1.0          # gamma < 27k/((n-1)eps): no guarantee
    assert krr.balle_epsilon(delta=1e-6, **FIG1) == math.inf  # needs eps > 1


def test_advanced_composition():
    e, d = krr.advanced_composition(0.1, 1e-8, 10, 1e-6)
    assert math.isclose(e, math.sqrt(20 * math.log(1e6)) * 0.1 + 10 * 0.1 * math.expm1(0.1), rel_tol=1e-14)
    assert math.isclose(d, 1e-7 + 1e-6, rel_tol=1e-14)
    big = dict(n=10 ** 5, gamma=0.25, k=4)
    eps_ac = krr.balle_epsilon_composed(delta=1e-6, n_c=10, **big)
    assert math.isfinite(eps_ac)
    assert eps_ac >= krr.balle_epsilon(delta=1e-6, **big)


# ---- validation and extremes ------------------------------------------------------------


@pytest.mark.parametrize("kw,name", [
    (dict(n=1, gamma=0.5, k=3), "n"), (dict(n=10, gamma=0.0, k=3), "gamma"),
    (dict(n=10, gamma=1.5, k=3), "gamma"), (dict(n=10, gamma=0.5, k=1), "k"),
    (dict(n=10, gamma=0.5, k=2.5), "k"), (dict(n=10.5, gamma=0.5, k=2), "n"),
    (dict(n=10, gamma=float("nan"), k=2), "gamma"),
])
def test_validation(kw, name):
    for f in (krr.strong_pld, krr.weak_pld):
        with pytest.raises(ValueError, match=name):
            f(**kw)


def test_validation_misc():
    with pytest.raises(ValueError, match="adversary"):
        krr.adversary_pld("medium", 10, 0.5, 2)
    with pytest.raises(ValueError, match="compositions"):
        krr.delta_bracket("strong", 10, 0.5, 2, [1.0], compositions=0)
    with pytest.raises(ValueError, match="eps0"):
        krr.gamma_from_eps0(-1.0, 3)
    with pytest.raises(ValueError, match="delta"):
        krr.balle_epsilon(100, 0.5, 2, 0.0)


def test_extremes():
    """n = 1e7: a clear error for the exact PLDs and for two rounds of A_w, a certified bracket for A_s;
    delta = 1e-300: eps = inf for A_s (delta(inf) > 0)."""
    with pytest.raises(ValueError, match="too large"):
        krr.strong_pld(10 ** 7, 0.25, 4)
    with pytest.raises(ValueError, match="too large"):
        krr.weak_pld(10 ** 7, 0.25, 4)
    br = krr.epsilon_bracket("strong", 100, 0.25, 4, [1e-300])[0]
    assert br.lower == br.upper == math.inf
    br = krr.epsilon_bracket("strong", 10 ** 7, 0.25, 4, [1e-6])[0]   # one round: streamed
    assert 0 < br.lower <= br.upper <= krr.balle_epsilon(10 ** 7, 0.25, 4, 1e-6)


# ---- CLI ---------------------------------------------------------------------------------


def _dp_accounting_delta(pl, n_c, eps, h, pessimistic):
    """Independent oracle: Google dp_accounting's PLD on a grid of step h (ceil or floor rounding)."""
    from dp_accounting.pld import privacy_loss_distribution as pldlib
    idx = (np.ceil if pessimistic else np.floor)(pl.losses / h).astype(int)
    pmf = {}
    for i, p in zip(idx.tolist(), pl.probs.tolist()):
        pmf[i] = pmf.get(i, 0.0) + p
    d = pldlib.PrivacyLossDistribution.create_from_rounded_probability(
        pmf, pl.inf_mass, h, pessimistic_estimate=pessimistic)
    d = d.self_compose(n_c) if n_c > 1 else d
    return [d.get_delta_for_epsilon(e) for e in eps]


@pytest.mark.parametrize("mech", ["krr-strong", "krr-weak"])
@pytest.mark.parametrize("n_c", [1, 10, 100])
def test_cli_done_when(mech, n_c, capsys):
    """n=1000, gamma=0.25, k=4, eps in {0.5,1,1.5,2}: brackets <= 1 % wide,
    containing the value of an independent computation (exact for one round; for more,
    Google dp_accounting's pessimistic/optimistic estimates).  The CLI's ``main`` is run
    in-process (same code path as ``python -m shuffle_lib``, which the next test spawns) so
    that the PLD is built once."""
    from shuffle_lib import cli
    eps = [0.5, 1.0, 1.5, 2.0]
    assert cli.main(["delta", mech, "--n", "1000", "--gamma", "0.25", "--k", "4", "--eps", *map(str, eps),
                     "--compositions", str(n_c), "--accuracy", "2e-3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["mechanism"] == mech and out["compositions"] == n_c and out["params"]["k"] == 4
    pl = krr.adversary_pld(mech[4:], **FIG1)
    slack = n_c * out["params"]["tail_cut"]
    if n_c == 1:
        lo = [krr.hockey_stick_pair(pl, e)[0] for e in eps]
        hi = [krr.hockey_stick_pair(pl, e)[1] for e in eps]
    else:
        h = 1e-4
        hi = _dp_accounting_delta(pl.upper, n_c, eps, h, True)
        lo = _dp_accounting_delta(pl.lower, n_c, eps, h, False)
    for r, a, b in zip(out["results"], lo, hi):
        assert r["delta_upper"] - r["delta_lower"] <= 0.01 * r["delta_upper"]
        assert r["delta_lower"] <= b + slack and a <= r["delta_upper"] * (1 + 1e-12)


def test_cli_epsilon_and_errors(cli_json):
    out = cli_json("epsilon", "krr-strong", "--n", "1000", "--gamma", "0.25", "--k", "4", "--delta", "1e-6")
    r = out["results"][0]
    pl = krr.strong_pld(**FIG1)
    assert r["eps_lower"] <= r["eps_upper"]
    assert hockey_stick(pl.upper, r["eps_upper"]) <= 1e-6 * (1 + 1e-9)
    bad = subprocess.run([sys.executable, "-m", "shuffle_lib", "delta", "krr-weak", "--n", "1",
                          "--gamma", "0.25", "--k", "4", "--eps", "1"], capture_output=True, text=True)
    assert bad.returncode == 2 and "n must be" in bad.stderr and bad.stderr.count("\n") == 1


# ---- one round at any n, streamed -----------------------------------------


from shuffle_lib.mechanisms.krr import stream  # noqa: E402

SMALL = [(50, 0.3, 2), (50, 0.3, 3), (200, 0.5, 4), (120, 0.853, 4), (100, 0.1, 10), (40, 0.9, 5)]


@pytest.mark.parametrize("view", ["strong", "weak"])
@pytest.mark.parametrize("n, gamma, k", SMALL)
def test_streamed_delta_brackets_the_exact_pld(view, n, gamma, k):
    """The streamed sum against the exact PLD (no tail cut): lower <= exact <= upper; relative width
    <= 1.01e-4 wherever the exact delta exceeds 1e-100 (the windows' cut is redone at 1e-6 of any
    lower end it exceeds 1e-4 of), and the lower end within 2 ROUND of the exact value (rounding
    only: the route's floating-point margin)."""
    pl = krr.adversary_pld(view, n, gamma, k, tail=0.0)
    eps = [0.0, 0.05, 0.2, 0.5, 1.0, 2.0]
    for e, b in zip(eps, stream.delta_streamed(view, n, gamma, k, eps)):
        x = hockey_stick(pl.lower, e)
        assert b.lower <= x * (1 + 1e-12) and x <= b.upper * (1 + 1e-12), (e, b, x)
        if x > 1e-100:
            assert b.upper - b.lower <= 1.01e-4 * x and x - b.lower <= 2 * stream.ROUND * x, (e, b, x)


@pytest.mark.parametrize("view", ["strong", "weak"])
@pytest.mark.parametrize("n, gamma, k", SMALL[:4])
def test_streamed_epsilon_brackets_the_exact_pld(view, n, gamma, k):
    """eps(delta) streamed against the exact PLD's inverse; relative width <= 1 %."""
    pl = krr.adversary_pld(view, n, gamma, k, tail=0.0)
    for d, b in zip([1e-2, 1e-4, 1e-6], stream.epsilon_streamed(view, n, gamma, k, [1e-2, 1e-4, 1e-6])):
        x = epsilon_exact_pld(pl.lower, d)
        assert b.lower <= x * (1 + 1e-12) + 1e-15 and x <= b.upper * (1 + 1e-12) + 1e-15, (d, b, x)
        assert b.upper - b.lower <= 0.01 * b.upper or b.upper == 0.0, (d, b)


def epsilon_exact_pld(pld, delta):
    from shuffle_lib.core.pld import epsilon_for_delta
    return epsilon_for_delta(pld, delta)


@settings(max_examples=15, deadline=None)
@given(st.integers(2, 40), st.floats(0.05, 1.0), st.integers(2, 6), st.floats(0.0, 3.0))
def test_streamed_property_lower_exact_upper(n, gamma, k, e):
    """Property: for random small settings the streamed bracket contains the exact PLD's delta."""
    for view in ("strong", "weak"):
        x = hockey_stick(krr.adversary_pld(view, n, gamma, k, tail=0.0).lower, e)
        b = stream.delta_streamed(view, n, gamma, k, [e])[0]
        assert b.lower <= x * (1 + 1e-12) + 1e-300 and x <= b.upper * (1 + 1e-12) + 1e-300


def test_streamed_weak_agrees_with_the_lattice_pair():
    """Two certified methods at n = 1e4 (beyond the exact PLD): the streamed bracket and the lattice
    pair's overlap, and the streamed one sits inside it (it is exact up to 1e-9)."""
    n, gamma, k, eps = 10 ** 4, 0.25, 4, [0.1, 0.2]
    pl = krr_lattice.weak_pld_lattice(n, gamma, k)
    for e, b in zip(eps, stream.delta_streamed("weak", n, gamma, k, eps)):
        lo, hi = hockey_stick(pl.lower, e), hockey_stick(pl.upper, e)
        assert lo <= b.lower <= b.upper <= hi, (e, lo, b, hi)


@pytest.mark.parametrize("view, n", [("weak", 10 ** 4), ("weak", 10 ** 5), ("strong", 10 ** 6)])
def test_cli_single_round_at_research_sizes(view, n):
    """One round of krr-weak at n = 1e4, 1e5 and krr-strong at 1e6 through the
    CLI: route 'streamed', eps(1e-6) bracket of relative width <= 1 %, certified by its own ends
    (delta's lower end >= 1e-6 at eps_lower, its upper end <= 1e-6 at eps_upper)."""
    from shuffle_lib import cli
    _, out = cli.run(["epsilon", f"krr-{view}", "--n", str(n), "--gamma", "0.853", "--k", "4", "--delta", "1e-6"])
    r = out["results"][0]
    assert out["params"]["route"] == "streamed"
    assert 0 < r["eps_lower"] <= r["eps_upper"] <= 1.01 * r["eps_lower"], r
    if n <= 10 ** 4:
        lo = stream.delta_streamed(view, n, 0.853, 4, [r["eps_lower"], r["eps_upper"]])
        assert lo[0].lower >= 1e-6 * (1 - 1e-6) and lo[1].upper <= 1e-6 * (1 + 1e-6)


def test_streamed_route_and_gamma_one():
    assert krr.krr_route("weak", 10 ** 4, 0.5, 2).info["route"] == "streamed"
    assert krr.krr_route("weak", 10 ** 4, 0.5, 2, compositions=2).info["route"] == "pld"
    assert krr.krr_route("strong", 100, 0.5, 2).info["route"] == "pld"
    assert stream.delta_streamed("weak", 10 ** 5, 1.0, 3, [0.0]) == [(0.0, 0.0)]
    assert stream.epsilon_streamed("strong", 10 ** 5, 1.0, 3, [1e-9])[0] == (0.0, 0.0)


# One round of A_w on blocks of b (stream.weak_delta_blocked, used beyond stream.BLOCK_ABOVE cells):
# it rests on delta_b(eps) being non-increasing in b (adding a uniform report is a post-processing).

def _weak_pair_given_b(b, gamma, k):
    """(P_b, Q_b) over (u, w) by direct enumeration, independent of shuffle_lib: the counts of reports
    1 and 2 among b uniform reports and the target's (input 1 under P, input 2 under Q)."""
    size = b + 2
    T = np.zeros((size, size))
    for m1 in range(b + 1):
        for m2 in range(b + 1 - m1):
            T[m1, m2] = math.comb(b, m1) * math.comb(b - m1, m2) * (1 / k) ** (m1 + m2) * (1 - 2 / k) ** (b - m1 - m2)
    own, other, rest = 1 - gamma + gamma / k, gamma / k, gamma * (k - 2) / k

    def law(a1, a2):
        L = rest * T.copy()
        L[1:, :] += a1 * T[:-1, :]
        L[:, 1:] += a2 * T[:, :-1]
        return L
    return law(own, other), law(other, own)


@pytest.mark.parametrize("gamma, k", [(0.3, 2), (0.8, 3), (0.5, 5)])
def test_weak_delta_given_b_falls_in_b_and_the_rows_match_enumeration(gamma, k):
    """The data-processing step behind the blocks, by enumeration: delta_b(eps) is non-increasing in
    b; and stream's per-b sums (full windows) equal the enumerated delta_b."""
    eps = np.array([0.0, 0.1, 0.5, 1.5])
    bs = np.arange(0, 26)
    exact = np.array([[np.maximum(P - np.exp(e) * Q, 0.0).sum() for e in eps]
                      for P, Q in (_weak_pair_given_b(int(b), gamma, k) for b in bs)])
    assert np.all(np.diff(exact, axis=0) <= 1e-15), np.diff(exact, axis=0).max()
    assert np.any(np.diff(exact, axis=0) < -1e-3)              # it does fall: the check can fail
    rows = stream._weak_rows(gamma, k, bs, np.zeros_like(bs), bs + 1, np.exp(eps))
    assert np.allclose(rows, exact, rtol=1e-12, atol=1e-15), np.abs(rows - exact).max()


@pytest.mark.parametrize("n, gamma, k", SMALL)
@pytest.mark.parametrize("rtol", [0.5, 1e-3])
def test_blocked_weak_delta_brackets_the_exact_pld(n, gamma, k, rtol):
    """The blocked ends contain the exact PLD's delta, and stop only when rtol (or the tail) is met."""
    pl = krr.adversary_pld("weak", n, gamma, k, tail=0.0)
    eps = np.array([0.0, 0.05, 0.2, 0.5, 1.0])
    tail = 1e-15
    low, up = stream.weak_delta_blocked(n, gamma, k, eps, tail, rtol=rtol)
    for e, lo, hi in zip(eps, low, up):
        x = hockey_stick(pl.lower, e)
        assert lo <= x * (1 + 1e-12) and x <= hi * (1 + 1e-12), (e, lo, x, hi)
        assert hi - lo <= max(rtol * lo, 2 * tail) * (1 + 1e-9), (e, lo, hi)


@settings(max_examples=15, deadline=None)
@given(st.integers(2, 60), st.floats(0.05, 0.95), st.integers(2, 6), st.floats(0.0, 3.0),
       st.floats(1e-12, 0.3))
def test_blocked_route_property_lower_exact_upper(n, gamma, k, e, d):
    """Property: with the blocks forced on (BLOCK_ABOVE = 0), delta_streamed's and epsilon_streamed's
    weak brackets contain the exact PLD's delta(e) and eps(d)."""
    pl = krr.adversary_pld("weak", n, gamma, k, tail=0.0)
    old = stream.BLOCK_ABOVE
    stream.BLOCK_ABOVE = 0
    try:
        b = stream.delta_streamed("weak", n, gamma, k, [e])[0]
        be = stream.epsilon_streamed("weak", n, gamma, k, [d])[0]
    finally:
        stream.BLOCK_ABOVE = old
    x = hockey_stick(pl.lower, e)
    assert b.lower <= x * (1 + 1e-12) + 1e-300 and x <= b.upper * (1 + 1e-12) + 1e-300, (b, x)
    y = epsilon_exact_pld(pl.lower, d)
    assert be.lower <= y * (1 + 1e-12) + 1e-15 and y <= be.upper * (1 + 1e-12) + 1e-15, (be, y)


def test_blocked_and_streamed_agree_at_n_3e4():
    """Beyond the exact PLD: the blocked bracket contains the streamed one (exact to ~1e-9)."""
    n, gamma, k, eps = 3 * 10 ** 4, 0.5, 4, np.array([0.02, 0.05])
    streamed = stream.delta_streamed("weak", n, gamma, k, eps)
    low, up = stream.weak_delta_blocked(n, gamma, k, eps, 1e-20, rtol=1e-3)
    for b, lo, hi in zip(streamed, low, up):
        assert lo <= b.lower <= b.upper <= hi and hi - lo <= 1e-3 * lo * (1 + 1e-9), (b, lo, hi)


def test_cli_weak_one_round_at_n_1e6_is_blocked_and_certified_by_its_ends():
    """n = 1e6 (cells beyond BLOCK_ABOVE: the streamed sum took 75 s here, n = 1e7 more than 10 min):
    eps(1e-8) of relative width <= 1 %, certified by the blocked delta at its ends."""
    from shuffle_lib import cli
    n, gamma, k = 10 ** 6, 0.5, 4
    assert stream._blocked("weak", n, gamma, k, 1e-14)
    _, out = cli.run(["epsilon", "krr-weak", "--n", str(n), "--gamma", str(gamma), "--k", str(k), "--delta", "1e-8"])
    r = out["results"][0]
    assert 0 < r["eps_lower"] <= r["eps_upper"] <= 1.01 * r["eps_lower"], r
    ends = stream.delta_streamed("weak", n, gamma, k, [r["eps_lower"], r["eps_upper"]])
    assert ends[0].lower >= 1e-8 and ends[1].upper <= 1e-8, ends


# ---- the library functions answer as the command line ----------------------------------------


def _answered(brackets):
    return [(b.lower, b.upper, b.accuracy_met, b.limit) for b in brackets]


@pytest.mark.parametrize("adversary", ["strong", "weak"])
def test_krr_brackets_are_the_command_lines_composed(adversary, cli_brackets):
    """delta_bracket / epsilon_bracket and ``python -m shuffle_lib delta|epsilon krr-ADV`` return
    the same brackets with the same accuracy_met and limit, K = 3 and 2 rounds (for A_w the
    eps bracket at delta = 1e-3 is one the first grid leaves too wide, so the refinement is
    compared as well)."""
    args = ("--n", 200, "--gamma", 0.3, "--k", 4, "--compositions", 3)
    lib = krr.delta_bracket(adversary, 200, 0.3, 4, [0.5, 1.0], compositions=3)
    assert _answered(lib) == cli_brackets("delta", f"krr-{adversary}", *args, "--eps", 0.5, 1.0)
    lib = krr.epsilon_bracket(adversary, 2000, 0.9, 4, [1e-3, 1e-6], compositions=2)
    cli_out = cli_brackets("epsilon", f"krr-{adversary}", "--n", 2000, "--gamma", 0.9, "--k", 4,
                           "--compositions", 2, "--delta", 1e-3, 1e-6)
    assert _answered(lib) == cli_out
    assert all(b.accuracy_met is not None for b in lib)


def test_krr_epsilon_bracket_refines_what_the_first_grid_leaves_too_wide():
    """A_w, n = 2000, gamma = 0.9, k = 4, K = 2, delta = 1e-3: the first grid (the route of
    evaluate.epsilon_brackets on the same model) gave [0.0079958, 0.0082346], half-width 1.2e-4
    against the contract's 25 a eps = 4.1e-5 at a = 2e-4; the library function now answers
    [0.0081549, 0.0082346] (width 8.0e-5), inside the first bracket and meeting the contract."""
    from shuffle_lib.core import accuracy, evaluate
    from shuffle_lib.core.fourier import DEFAULT_ACCURACY

    model = krr.krr_route("weak", 2000, 0.9, 4, 2)
    first = evaluate.epsilon_brackets(model, [1e-3], 2, accuracy=DEFAULT_ACCURACY)[0]
    assert not accuracy.met("epsilon", first, DEFAULT_ACCURACY, 2), first
    got = krr.epsilon_bracket("weak", 2000, 0.9, 4, [1e-3], compositions=2)[0]
    assert got.accuracy_met and accuracy.met("epsilon", got, DEFAULT_ACCURACY, 2), got
    assert first.lower <= got.lower <= got.upper <= first.upper
    assert got.upper - got.lower < first.upper - first.lower
