"""Tests for shuffle_lib.mechanisms.histogram: Biswas et al. 2023, eq. 3-6, 11-15, and the exact deltas.

Oracles: sympy (exact rational arithmetic with e^eps0 = 3), exhaustive enumeration of
every user's report for tiny n, and the independent direct-convolution route.
"""

import itertools
import json
import math
from fractions import Fraction

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from shuffle_lib.core.pld import delta_exact
from shuffle_lib.mechanisms import histogram as h

E0 = math.log(3.0)          # e^eps0 = 3: every k-RR probability is rational
CASES = [(2, 0, 10), (2, 1, 3), (5, 2, 2), (6, 0, 4), (6, 5, 3), (9, 4, 10), (12, 7, 5)]


def _exact_count_pmfs(n, n_x0, k, E=Fraction(3)):
    """Exhaustive oracle: enumerate every user's 'reported x0 or not' in exact fractions."""
    p, pb = E / (E + k - 1), Fraction(1) / (E + k - 1)
    out = []
    for q_u in (p, pb):
        probs = [q_u] + [p] * n_x0 + [pb] * (n - 1 - n_x0)
        pmf = [Fraction(0)] * (n + 1)
        for bits in itertools.product((0, 1), repeat=n):
            w = Fraction(1)
            for b, q in zip(bits, probs):
                w *= q if b else 1 - q
            pmf[sum(bits)] += w
        out.append(pmf)
    return out


@pytest.mark.parametrize("n,n_x0,k", [(c[0], c[1], c[2]) for c in CASES if c[0] <= 9])
def test_closed_forms_eq12_eq13_match_exhaustive_enumeration(n, n_x0, k):
    P0, P1 = _exact_count_pmfs(n, n_x0, k)
    lp0, lp1 = h.log_count_pmfs_closed(n, n_x0, E0, k)
    assert np.allclose(np.exp(lp0), [float(x) for x in P0], rtol=1e-12, atol=0)
    assert np.allclose(np.exp(lp1), [float(x) for x in P1], rtol=1e-12, atol=0)
    d0, d1 = h.count_pmfs_exact(n, n_x0, E0, k)
    assert np.allclose(d0, [float(x) for x in P0], rtol=1e-12, atol=1e-300)
    assert np.allclose(d1, [float(x) for x in P1], rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("n,n_x0,eps0,k", [(100, 80, 2.0, 10), (300, 0, 0.49, 2), (300, 299, 3.0, 15),
                                           (1000, 800, 0.49, 10)])
def test_closed_forms_match_direct_convolution_large(n, n_x0, eps0, k):
    lp0, lp1 = h.log_count_pmfs_closed(n, n_x0, eps0, k)
    d0, d1 = h.count_pmfs_exact(n, n_x0, eps0, k)
    big = d0 > 1e-250
    assert np.allclose(np.exp(lp0[big]), d0[big], rtol=1e-9)
    assert np.allclose(np.exp(lp1[big]), d1[big], rtol=1e-9)
    assert abs(math.fsum(np.exp(lp0)) - 1) < 1e-12


def test_kappas_against_sympy():
    e0, k, n, nx, s = sp.symbols("varepsilon_0 k n n_x0 s", positive=True)
    E = sp.exp(e0)
    k3 = (k - 1) ** nx * (E + k - 2) ** (n - nx - s) / (E + k - 1) ** n
    for (ev, kv, nv, nxv, sv) in [(0.3, 2, 10, 3, 4), (2.0, 10, 100, 80, 17), (4.0, 15, 50, 1, 50)]:
        sub = {e0: ev, k: kv, n: nv, nx: nxv, s: sv}
        assert math.isclose(h.kappa1(ev, kv), float((E * (E + k - 2) / (k - 1)).subs(sub)), rel_tol=1e-14)
        assert math.isclose(h.kappa2(ev, kv), float(((k - 1) / (E + k - 2)).subs(sub)), rel_tol=1e-14)
        assert math.isclose(float(h.log_kappa3(nv, nxv, ev, kv, sv)), float(sp.log(k3.subs(sub))), rel_tol=1e-12)


def test_appendix_identities_exhaustively():
    """Pascal (eq. 11 -> 12, line 2), absorption (line 3, with (s-r) inside the sum)."""
    for m in range(1, 9):
        for j in range(-2, m + 3):
            assert sp.binomial(m - 1, j - 1) + sp.binomial(m - 1, j) == sp.binomial(m, j) or j < 0
            if j >= 1:
                assert m * sp.binomial(m - 1, j - 1) == j * sp.binomial(m, j)


def test_eq11_to_eq12_first_line_has_a_spurious_factor():
    """Eq. 12 first line writes (e^eps0 - kappa2)(e^eps0 A); eq. 11 regroups to (e^eps0 - kappa2) A."""
    E, k2, A, B = sp.symbols("E kappa_2 A B", positive=True)
    eq11 = E * A + k2 * B
    assert sp.simplify(k2 * (A + B) + (E - k2) * A - eq11) == 0
    assert sp.simplify(k2 * (A + B) + (E - k2) * (E * A) - eq11) != 0


def test_eq15_printed_last_line_differs_from_corrected():
    """The printed v_s (C(m-1, s-1-r)) is not log P0/P1; the corrected one (C(m, s-r)) is."""
    n, n_x0, k = 9, 4, 10
    P0, P1 = _exact_count_pmfs(n, n_x0, k)
    exact_v = np.array([math.log(a / b) for a, b in zip(P0, P1)])
    assert np.allclose(h.v_s(n, n_x0, E0, k, "corrected"), exact_v, atol=1e-12)
    assert np.max(np.abs(h.v_s(n, n_x0, E0, k, "printed") - exact_v)) > 1e-2


@pytest.mark.parametrize("n,n_x0,eps0,k", [(100, 80, 2.0, 10), (40, 3, 0.49, 2), (60, 59, 1.0, 5)])
def test_delta_hat_corrected_is_exact_one_direction_count_delta(n, n_x0, eps0, k):
    eps = [0.0, 0.01, 0.1, 0.3, 0.9 * eps0, eps0, 1.5 * eps0]
    ours = h.delta_hat(eps, n, n_x0, eps0, k)
    ref = h.delta_count_exact(eps, n, n_x0, eps0, k, direction="01")
    # at eps = eps0 the PLD route carries a rounding residue (loss at s = n is eps0 exactly)
    assert np.allclose(ours, ref, rtol=1e-9, atol=1e-25)
    both = h.delta_count_exact(eps, n, n_x0, eps0, k)
    assert np.all(both >= ours * (1 - 1e-9))
    assert ours[-1] == 0.0 and ours[-2] == 0.0     # v_s <= eps0 (max at s = n)


def test_v_s_bounds():
    for n, nx, e0, k in [(50, 10, 1.0, 3), (30, 29, 2.5, 10)]:
        vs = h.v_s(n, nx, e0, k)
        assert np.all(vs <= e0 + 1e-15) and np.all(vs >= math.log(h.kappa2(e0, k)) - 1e-12)
        assert np.all(np.diff(vs) > 0)   # monotone likelihood ratio in s


# Biswas et al. 2023, Table IV (typed in as a quotation of the paper): n = 100, n_x0 = 80, k = 10.
TABLE_IV_EPS = [0.1, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0]
TABLE_IV = {  # (eps0, k, n, n_x0) -> row
    (1.0, 10, 100, 80): [2.08e-20, 3.42e-43, 0, 0, 0, 0, 0],
    (2.0, 10, 100, 80): [2.49e-15, 3.25e-22, 2.20e-30, 1.57e-40, 0, 0, 0],
    (3.0, 10, 100, 80): [8.79e-11, 5.73e-13, 3.52e-16, 4.49e-20, 1.09e-25, 4.52e-33, 0],
    (2.0, 5, 100, 80): [1.96e-10, 2.51e-14, 1.08e-19, 2.02e-27, 0, 0, 0],
    (2.0, 15, 100, 80): [1.66e-18, 7.13e-28, 1.49e-38, 7.35e-50, 0, 0, 0],
    (2.0, 10, 150, 120): [6.58e-22, 7.83e-32, 2.75e-44, 6.99e-59, 0, 0, 0],  # n_x0 = 120, not 80
}


@pytest.mark.parametrize("key", list(TABLE_IV))
def test_table_iv_is_reproduced_by_the_printed_v_s(key):
    eps0, k, n, nx = key
    ours = h.delta_hat(TABLE_IV_EPS, n, nx, eps0, k, v_form="printed")
    paper = np.array(TABLE_IV[key])
    zero = paper == 0
    assert np.all(ours[zero] == 0)
    rel = np.abs(ours[~zero] / paper[~zero] - 1)
    assert np.all(rel[1:] < 0.006) and rel[0] < 0.04     # eps = 0.1 column: up to 3.6 % off
    corrected = h.delta_hat(TABLE_IV_EPS, n, nx, eps0, k)
    assert corrected[0] > 1e6 * paper[0]                 # the true count delta is far larger


def test_table_ii_n100_is_reproduced_with_k10_nx80():
    paper = np.array([1.18e-14, 1.26e-28, 2.69e-43, 1.39e-57, 9.46e-73])   # Biswas et al. 2023 Table II
    ours = h.delta_hat([0.01, 0.1, 0.2, 0.3, 0.4], 100, 80, 0.49, 10, v_form="printed")
    assert np.all(np.abs(ours / paper - 1) < 0.01)


def test_full_histogram_dominates_count_and_homogeneous_route():
    eps = [0.0, 0.1, 0.25, 0.5]
    for n, k, e0 in [(6, 3, 1.0), (7, 2, 1.0), (8, 4, 1.0)]:
        full, worst = h.delta_histogram_exact(eps, n, e0, k)
        count, _ = h.delta_count_worst(eps, n, e0, k)
        assert np.all(full >= count - 1e-14)
        for z in range(3 if k > 2 else 2):
            c = [0] * k
            c[z] = n - 1
            P, Q = h.histogram_pmfs(c, e0, k)
            assert np.allclose(h.delta_histogram_homogeneous(eps, n, e0, k, z),
                               delta_exact(P / P.sum(), Q / Q.sum(), eps), atol=1e-14)
    full, _ = h.delta_histogram_exact([0.1], 8, 1.0, 3)
    printed = max(h.delta_hat(0.1, 8, j, 1.0, 3, v_form="printed") for j in range(8))
    assert full[0] > 1.5 * printed


def test_histogram_pmfs_against_brute_force():
    k, e0 = 3, E0
    counts = [1, 0, 2]
    P, Q = h.histogram_pmfs(counts, e0, k)
    p, pb = 3 / (3 + k - 1), 1 / (3 + k - 1)
    vals = [0, 2, 2]
    for start, ref in ((0, P), (1, Q)):
        brute = np.zeros((5,) * k)
        for ys in itertools.product(range(k), repeat=4):
            w = 1.0
            for x, y in zip([start] + vals, ys):
                w *= p if x == y else pb
            idx = tuple(ys.count(j) for j in range(k))
            brute[idx] += w
        assert np.allclose(brute.ravel(), ref, atol=1e-15)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(2, 60), frac=st.floats(0, 1), eps0=st.floats(0.05, 5), k=st.integers(2, 30),
       e1=st.floats(0, 3), e2=st.floats(0, 3))
def test_properties(n, frac, eps0, k, e1, e2):
    nx = min(n - 1, int(frac * n))
    lo, hi = sorted((e1, e2))
    d = h.delta_hat([lo, hi], n, nx, eps0, k)
    assert 0 <= d[1] <= d[0] <= 1
    b = h.delta_count_exact([lo, hi], n, nx, eps0, k)
    assert np.all(b >= d - 1e-13) and np.all(b <= 1)
    # delta(0) of the count is the total variation distance, at most p - pbar
    p, pb = h.krr_probs(eps0, k)
    assert h.delta_count_exact(0.0, n, nx, eps0, k) <= p - pb + 1e-12


@pytest.mark.parametrize("kw,match", [
    (dict(n=10, n_x0=10, eps0=1.0, k=3), "n_x0"), (dict(n=1, n_x0=0, eps0=1.0, k=3), "n must"),
    (dict(n=10, n_x0=2, eps0=0.0, k=3), "eps0"), (dict(n=10, n_x0=2, eps0=1.0, k=1), "k must"),
    (dict(n=10, n_x0=2.5, eps0=1.0, k=3), "n_x0"), (dict(n=10, n_x0=2, eps0=float("nan"), k=3), "eps0"),
])
def test_validation(kw, match):
    with pytest.raises(ValueError, match=match):
        h.delta_hat(0.1, **kw)
    with pytest.raises(ValueError, match=match):
        h.count_pmfs_exact(**kw)


def test_validation_options():
    with pytest.raises(ValueError, match="v_form"):
        h.v_s(10, 2, 1.0, 3, v_form="typo")
    with pytest.raises(ValueError, match="direction"):
        h.delta_count_exact(0.1, 10, 2, 1.0, 3, direction="x")
    with pytest.raises(ValueError, match="eps"):
        h.delta_hat(-0.1, 10, 2, 1.0, 3)
    with pytest.raises(ValueError, match="counts_others"):
        h.histogram_pmfs([1, 2], 1.0, 3)
    with pytest.raises(ValueError, match="n must be an integer in \\[2, 20000\\]"):
        h.delta_hat(0.1, 30000, 10, 1.0, 3)           # closed form: O(n n_x0), refused
    assert 0 < h.delta_count_exact(0.0, 200000, 20000, 1.0, 3) < 1   # the exact route scales


def test_extreme_valid_inputs():
    d = h.delta_hat(0.0, 2, 0, 30.0, 2)          # n = 2, huge eps0: finite, in [0, 1]
    assert 0 <= d <= 1
    assert h.delta_hat(0.5, 20000, 10, 0.1, 2) >= 0.0   # large n, chunked sums


def test_cli_json_matches_library(cli):
    r = cli("delta", "histogram-krr", "--n", "100", "--n-x0", "80", "--k", "10", "--eps0", "2",
            "--eps", "0.1", "0.5", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    ref = h.delta_count_exact([0.1, 0.5], 100, 80, 2.0, 10)
    for row, d in zip(out["results"], ref):
        assert row["delta_lower"] <= d * (1 + 1e-9) and d <= row["delta_upper"] * (1 + 1e-9)
    assert "marginal" in out["params"]["view"]


def test_cli_bad_input(cli):
    r = cli("delta", "histogram-krr", "--n", "10", "--n-x0", "10", "--k", "3", "--eps0", "1", "--eps", "0.1")
    assert r.returncode == 2 and "--n-x0" in r.stderr and r.stderr.count("\n") == 1
