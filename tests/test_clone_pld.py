"""PLDs of the clones pairs (shuffle_lib.mechanisms.clones.pld): exact, truncated and grid constructions are
certified against the exact O(n^2) enumeration; term counts of the seeds' truncations."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shuffle_lib.core import fourier, pld
from shuffle_lib.mechanisms import clones
from shuffle_lib.mechanisms.clones import pld as clone_pld

EPS = [0.0, 0.05, 0.2, 0.6, 1.5]


@pytest.mark.parametrize("pair", ["fmt21", "koskela", "stronger"])
@pytest.mark.parametrize("n,eps0", [(60, 0.5), (300, 1.0), (800, 4.0)])
def test_truncated_and_grid_plds_bracket_exact(pair, n, eps0):
    ex = clone_pld.clone_pld_exact(n, eps0, pair)
    up, iu = clone_pld.clone_pld(n, eps0, pair, tau=1e-10, side="upper")
    lo, _ = clone_pld.clone_pld(n, eps0, pair, tau=1e-10, side="lower")
    gu, _ = clone_pld.clone_pld_grid(n, eps0, 3e-3, "upper", pair, tau=1e-10)
    gl, _ = clone_pld.clone_pld_grid(n, eps0, 3e-3, "lower", pair, tau=1e-10)
    assert iu["dropped"] <= 2e-10
    for e in EPS:
        d = pld.hockey_stick(ex, e)
        tol = 1e-12 * d + 1e-300
        assert pld.hockey_stick(lo, e) <= d + tol <= pld.hockey_stick(up, e) + 2 * tol
        assert pld.hockey_stick(gl, e) <= d + tol <= pld.hockey_stick(gu, e) + 2 * tol
        assert pld.hockey_stick(up, e) - pld.hockey_stick(lo, e) <= iu["dropped"] * (1 + 1e-9) + 1e-15
    assert ex.inf_mass == pytest.approx(clones.delta_inf(n, eps0, pair), rel=1e-12, abs=1e-300)


def test_grid_composition_bracket_contains_exact_composition():
    """Fourier on the upper / lower grid PLDs brackets the exact 2-fold composition."""
    n, eps0, k = 200, 2.0, 2
    ex = clone_pld.clone_pld_exact(n, eps0)
    gu, _ = clone_pld.clone_pld_grid(n, eps0, 1e-3, "upper")
    gl, _ = clone_pld.clone_pld_grid(n, eps0, 1e-3, "lower")
    exact = fourier.delta_bracket([(ex, k)], [(ex, k)], [0.3], accuracy=1e-5)[0]
    hi = fourier.delta_bracket([(gu, k)], [(gu, k)], [0.3])[0].upper
    lo = fourier.delta_bracket([(gl, k)], [(gl, k)], [0.3])[0].lower
    assert lo <= exact.upper and exact.lower <= hi


@settings(max_examples=12, deadline=None)
@given(n=st.integers(2, 400), eps0=st.floats(0.2, 5.0), h=st.floats(1e-4, 5e-2))
def test_grid_pld_property(n, eps0, h):
    ex = clone_pld.clone_pld_exact(n, eps0)
    gu, _ = clone_pld.clone_pld_grid(n, eps0, h, "upper")
    gl, _ = clone_pld.clone_pld_grid(n, eps0, h, "lower")
    for e in (0.0, 0.1, 0.5):
        d = pld.hockey_stick(ex, e)
        assert pld.hockey_stick(gl, e) <= d * (1 + 1e-10) + 1e-300
        assert d <= pld.hockey_stick(gu, e) * (1 + 1e-10) + 1e-300
    assert np.all(np.abs(gu.losses / h - np.round(gu.losses / h)) < 1e-6)


@pytest.mark.parametrize("pair", ["fmt21", "koskela", "stronger"])
@pytest.mark.parametrize("n,eps0,h", [(60, 0.5, 3e-3), (300, 1.0, 1e-3), (800, 4.0, 2e-2)])
def test_binned_plds_bracket_exact_and_match_the_grid(pair, n, eps0, h):
    """clone_pld_binned (exact atoms rounded onto the grid, O(#atoms)) is certified against the
    exact enumeration, and has the same bins as clone_pld_grid (binomial tails, O(#s x #bins));
    small chunks exercise the chunked accumulation."""
    ex = clone_pld.clone_pld_exact(n, eps0, pair)
    bu, bl = clone_pld.clone_pld_binned(n, eps0, h, pair, tau=1e-10, chunk=997)
    gu, _ = clone_pld.clone_pld_grid(n, eps0, h, "upper", pair, tau=1e-10)
    gl, _ = clone_pld.clone_pld_grid(n, eps0, h, "lower", pair, tau=1e-10)
    for e in EPS:
        d = pld.hockey_stick(ex, e)
        assert pld.hockey_stick(bl, e) <= d * (1 + 1e-12) + 1e-300
        assert d <= pld.hockey_stick(bu, e) * (1 + 1e-12) + 1e-300
        assert pld.hockey_stick(bu, e) == pytest.approx(pld.hockey_stick(gu, e), rel=1e-9, abs=1e-16)
        assert pld.hockey_stick(bl, e) == pytest.approx(pld.hockey_stick(gl, e), rel=1e-9, abs=1e-16)
    assert np.all(np.abs(bu.losses / h - np.round(bu.losses / h)) < 1e-6)


def test_cli_grid_fallback_brackets_the_exact_composition(monkeypatch):
    """Above EXACT_MAX_ATOMS (one threshold for the CLI and the library) ldp-shuffle composes the binned (upper, lower) PLDs; forced
    here at n = 12 by a tiny limit, its brackets contain the exact 2-fold composition."""
    from shuffle_lib import cli
    monkeypatch.setattr(clones.compose, "EXACT_MAX_ATOMS", 20)
    n, eps0, k, eps = 12, 1.0, 2, [0.1, 0.5, 1.5]
    _, out = cli.run(["delta", "ldp-shuffle", "--n", str(n), "--eps0", str(eps0), "--eps", *map(str, eps),
                      "--compositions", str(k)])
    assert out["params"].get("grid") is True
    P, Q = clone_pld.clone_pmfs(n, eps0)
    Pk, Qk = pld.product_pmfs(P, Q, k)
    exact = pld.delta_exact(Pk, Qk, eps)
    for r, x in zip(out["results"], exact):
        assert r["delta_lower"] <= x * (1 + 1e-12) and x <= r["delta_upper"] * (1 + 1e-12), (r, x)
        assert r["delta_upper"] - r["delta_lower"] <= 0.05 * r["delta_upper"]


def test_cli_single_round_at_any_n_uses_the_exact_method(monkeypatch):
    """One round (at any size): the exact single-round functions, not a grid."""
    from shuffle_lib import cli
    monkeypatch.setattr(clones.compose, "EXACT_MAX_ATOMS", 20)
    n, eps0 = 30, 1.5
    ex = clone_pld.clone_pld_exact(n, eps0)
    _, out = cli.run(["delta", "ldp-shuffle", "--n", str(n), "--eps0", str(eps0), "--eps", "0.2", "0.8"])
    assert out["params"].get("single_round") is True
    for r, e in zip(out["results"], (0.2, 0.8)):
        d = pld.hockey_stick(ex, e)
        assert r["delta_lower"] <= d * (1 + 1e-12) and d <= r["delta_upper"] * (1 + 1e-12)
    _, out = cli.run(["epsilon", "ldp-shuffle", "--n", str(n), "--eps0", str(eps0), "--delta", "1e-3"])
    e = pld.epsilon_for_delta(ex, 1e-3)
    assert out["results"][0]["eps_lower"] <= e * (1 + 1e-9) and e <= out["results"][0]["eps_upper"] * (1 + 1e-9)


def test_rdp_too_large_is_a_clear_error():
    from shuffle_lib.mechanisms.clones import renyi as clone_renyi
    with pytest.raises(ValueError, match="exact RDP is out of reach"):
        clone_renyi.clone_rdp(10 ** 6, 1.0, 2)


def test_cli_top_atom_pld_is_certified():
    """side='top': dropped mass <= 1e-17 placed at the largest loss; Fourier brackets stay valid."""
    n, eps0 = 2000, 4.0
    pl, info = clone_pld.clone_pld(n, eps0, "fmt21", 1e-18, "top")
    assert info["dropped"] <= 1e-17 and pl.losses[-1] == pytest.approx(eps0)
    b = fourier.delta_bracket(pl, pl, [0.3, 0.8])
    for e, br in zip((0.3, 0.8), b):
        exact = clones.delta_bracket_single(n, eps0, e)
        assert br.lower <= exact.upper and exact.lower <= br.upper


def test_term_counts_ordering():
    """Koskela et al. 2021 Sec. 5.2 (one level) keeps O(n sqrt(n log 1/tau)) atoms, Koskela et al. 2022 Lemma 6 (two levels)
    O(n) -- and the exact quantile ranges fewer still."""
    for n in (10 ** 3, 10 ** 4):
        c = clone_pld.term_counts(n, 4.0, 1e-12)
        assert c["quantile"] <= c["hoeffding2"] <= c["hoeffding1"] <= c["full"]
        assert c["full"] == (n + 1) * (n + 2) // 2
    # Lemma 6's O(n) itself: from n = 1e3 to 1e4 the two-level count grows like n^1.0 (at most
    # n^1.1), the one-level count faster (n^1.2 here, n^1.5 asymptotically)
    a, b = clone_pld.term_counts(10 ** 3, 4.0, 1e-12), clone_pld.term_counts(10 ** 4, 4.0, 1e-12)
    growth = {k: math.log10(b[k] / a[k]) for k in a}
    assert growth["hoeffding2"] < 1.1 < growth["hoeffding1"], growth


def test_validation():
    with pytest.raises(ValueError, match="side"):
        clone_pld.clone_pld(10, 1.0, side="middle")
    with pytest.raises(ValueError, match="n must be <= 3000"):
        clone_pld.clone_pmfs(5000, 1.0)
    with pytest.raises(ValueError, match="tau"):
        clone_pld.clone_pld(10, 1.0, tau=1e-10, side="top")
    with pytest.raises(ValueError, match="max_atoms"):
        clone_pld.clone_pld(10 ** 6, 1.0, max_atoms=1000)
    with pytest.raises(ValueError, match="h must"):
        clone_pld.clone_pld_grid(10, 1.0, 0.0, "upper")
    assert math.isfinite(clone_pld.clone_pld_grid(10 ** 7, 10.0, 1e-3, "upper")[0].losses.max())


def _koskela_exact(n, eps0):
    """60-digit (P, Q) of every atom (s, a) of the koskela pair (Koskela et al. 2021 eq. 5.1, Lemma B.3)."""
    import mpmath as mp
    mp.mp.dps = 60
    p, q = mp.e ** (-mp.mpf(eps0)), 1 / (1 + mp.e ** (-mp.mpf(eps0)))
    c = [mp.binomial(n - 1, k) * p ** k * (1 - p) ** (n - 1 - k) for k in range(n)] + [mp.mpf(0)]
    out = []
    for s in range(n + 1):
        ps = q * (c[s - 1] if s else 0) + (1 - q) * c[s]
        w = q * c[s - 1] / ps if s else mp.mpf(0)
        for a in range(s + 1):
            b = mp.binomial(s, a) / mp.mpf(2) ** s
            out.append((s, a, ps * b * (2 * w * a + (1 - w) * s) / s if s else ps,
                        ps * b * (2 * w * (s - a) + (1 - w) * s) / s if s else ps))
    return out


def test_koskela_atom_masses_against_mpmath_at_eps0_8():
    """1 - w cancelled where the odds are tiny (3e-8 relative at n = 60, eps0 = 8); now every
    atom is within 1e-13 of a 60-digit computation, and the one-round bracket holds the exact delta."""
    import mpmath as mp

    from shuffle_lib.mechanisms.clones.pairs import PAIRS, delta_bracket_single
    from shuffle_lib.mechanisms.clones.pld import atoms_at
    n, eps0 = 60, 8.0
    ex = _koskela_exact(n, eps0)
    s, a = np.array([e[0] for e in ex]), np.array([e[1] for e in ex])
    P, Q = atoms_at(n, eps0, PAIRS["koskela"], s, a)
    rel = max(abs(mp.mpf(float(g)) / e - 1) for col, k in ((P, 2), (Q, 3)) for g, e in
              zip(col, (x[k] for x in ex)) if e > mp.mpf(1e-290))
    assert rel < 1e-13
    for eps in (2.0, 6.0, 10.0):
        exact = max(mp.fsum(max(x[2] - mp.e ** eps * x[3], 0) for x in ex),
                    mp.fsum(max(x[3] - mp.e ** eps * x[2], 0) for x in ex))
        br = delta_bracket_single(n, eps0, eps, "koskela")
        assert mp.mpf(br.lower) <= exact <= mp.mpf(br.upper)


def test_heterogeneous_rounds_never_count_the_truncated_tail_in_the_lower_end():
    """Exact route: the upper PLD is the lower one plus the truncated mass as one atom at
    the top loss; the lower PLD (what the grid-free lower caps read) has no such atom.  And the
    brackets of rounds [(30, 1, 1), (40, 2, 1)] up to the largest composed loss hold the exact delta."""
    from shuffle_lib.mechanisms.clones.compose import _round_plds
    up, low, route, _, _ = _round_plds(30, 1.0, "fmt21", 2, 2e-4)
    assert route == "exact" and up.losses.size == low.losses.size + 1
    _, info = clone_pld.clone_pld(30, 1.0, "fmt21", 1e-18, "lower")
    assert math.isclose(up.probs.sum() - low.probs.sum(), info["dropped"], rel_tol=1e-6, abs_tol=1e-300)
    P1, Q1 = clone_pld.clone_pmfs(30, 1.0)
    P2, Q2 = clone_pld.clone_pmfs(40, 2.0)
    P, Q = np.kron(P1, P2), np.kron(Q1, Q2)
    for eps in (2.9, 2.999, 2.99999):
        exact = pld.delta_exact(P, Q, [eps])[0]
        br = clones.delta_bracket(30, 1.0, [eps], rounds=[(30, 1.0, 1), (40, 2.0, 1)])[0]
        assert br.lower <= exact <= br.upper


def test_atoms_of_subnormal_mass_join_the_dropped_tail():
    """A window at 1e-300 reaches atoms whose masses are subnormal (binom.pmf times the pair's
    weights), whose losses then carry few digits: n = 1e4, eps0 = 4 had atoms of P-mass 2e-314 at
    loss 4.17, above the full pair's largest loss eps0.  They join the dropped mass instead: every
    kept loss is at most eps0 (to rounding), and no mass is lost."""
    from shuffle_lib.mechanisms.clones.pld import TINY_MASS
    low, info = clone_pld.clone_pld(10_000, 4.0, "fmt21", 1e-300, "lower", 10 ** 7)
    assert float(low.losses[-1]) <= 4.0 * (1 + 1e-12) and float(low.probs.min()) >= TINY_MASS
    up, _ = clone_pld.clone_pld(10_000, 4.0, "fmt21", 1e-300, "upper", 10 ** 7)
    assert up.inf_mass >= info["dropped"] > 0.0
