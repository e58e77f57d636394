"""Any finite randomiser, shuffled (shuffle_lib.mechanisms.randomizer).

* the brackets against the exact oracle (tests/randomizer_oracle.py: every dataset, every pair)
  on 500 random matrices with zeros, one and two rounds;
* the named families' closed forms against the decomposition of their explicit matrices;
* k-RR against the seeds' strong adversary and binary RR against the bit-flip chapter's exact
  worst case; every family below the generic FMT21 clones bound;
* the CLI contract and bad matrices.
"""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from randomizer_oracle import worst_delta
from shuffle_lib.core.pld import pld_from_pmfs
from shuffle_lib.mechanisms import clones, krr
from shuffle_lib.mechanisms import randomizer as rz
from shuffle_lib.mechanisms.mixnet import bitflip
from shuffle_lib.mechanisms.randomizer.decompose import (check_matrix, family_decomposition, matrix_decompositions,
                                                       matrix_eps0, olh_g)

# the oracle sums in floats (math.fsum over <= 2401 cells): its own error is ~1e-15 relative;
# a bracket end may differ from the exact value on the wrong side by at most this much
ORACLE_SLACK = 1e-12


def _contains(br, exact):
    return br.lower <= exact * (1 + ORACLE_SLACK) + 1e-15 and exact <= br.upper * (1 + ORACLE_SLACK) + 1e-15


@st.composite
def matrices(draw, max_inputs=3, max_outputs=4):
    k = draw(st.integers(2, max_inputs))
    m = draw(st.integers(2, max_outputs))
    cell = st.one_of(st.just(0.0), st.floats(1e-6, 1.0), st.floats(0.2, 1.0))
    rows = []
    for _ in range(k):
        r = np.array(draw(st.lists(cell, min_size=m, max_size=m)))
        if r.sum() == 0:
            r[draw(st.integers(0, m - 1))] = 1.0
        rows.append(r / math.fsum(r))
    return np.array(rows)


@settings(max_examples=350, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(matrices(), st.integers(1, 6), st.floats(0.0, 2.5))
def test_one_round_brackets_the_exact_worst_case(R, n, eps):
    br = rz.delta_bracket(n, eps, matrix=R)[0]
    assert _contains(br, worst_delta(R, n, eps)), (R.tolist(), n, eps, br)


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(matrices(3, 3), st.integers(1, 4), st.floats(0.0, 3.0))
def test_two_rounds_bracket_the_exact_worst_case(R, n, eps):
    br = rz.delta_bracket(n, eps, compositions=2, matrix=R)[0]
    assert _contains(br, worst_delta(R, n, eps, rounds=2)), (R.tolist(), n, eps, br)


def test_epsilon_brackets_invert_the_oracle():
    """eps brackets: delta_exact(eps_upper) <= delta and delta_exact(eps_lower) >= delta."""
    rng = np.random.default_rng(7)
    for _ in range(12):
        R = rng.dirichlet(np.ones(3), size=3)
        n, delta = int(rng.integers(2, 6)), float(10 ** rng.uniform(-4, -1))
        br = rz.epsilon_bracket(n, delta, matrix=R)[0]
        assert br.lower <= br.upper
        if math.isfinite(br.upper):
            assert worst_delta(R, n, br.upper) <= delta * (1 + ORACLE_SLACK)
        if br.lower > 0:
            assert worst_delta(R, n, br.lower) >= delta * (1 - ORACLE_SLACK)


def test_issue_example_krr_n5():
    """n = 5, k = 3, gamma = 0.5 (eps0 = log 4), eps = 1: exact worst case 0.0465 (the oracle),
    below our upper end; the weak adversary's delta 0.0519 and the strong one's 0.2434 above it."""
    e0 = math.log(4)
    R = (np.full((3, 3), 1.0) + (math.exp(e0) - 1) * np.eye(3)) / (math.exp(e0) + 2)
    exact = worst_delta(R, 5, 1.0)
    fam = rz.delta_bracket(5, 1.0, family="krr", k=3, eps0=e0)[0]
    mat = rz.delta_bracket(5, 1.0, matrix=R)[0]
    strong = krr.delta_bracket("strong", 5, 0.5, 3, 1.0)[0]
    weak = krr.delta_bracket("weak", 5, 0.5, 3, 1.0)[0]
    assert _contains(fam, exact) and _contains(mat, exact)
    assert fam.upper <= weak.lower * (1 + 1e-9) and fam.upper < strong.lower
    assert exact < weak.lower < strong.lower


# ---- the families ----

def _krr(k, e0):
    return (np.ones((k, k)) + (math.exp(e0) - 1) * np.eye(k)) / (math.exp(e0) + k - 1)


def _sue(d, e0):
    p = 1 / (1 + math.exp(-e0 / 2))
    outs = list(itertools.product((0, 1), repeat=d))
    return np.array([[math.prod(p if b == (j == x) else 1 - p for j, b in enumerate(o)) for o in outs] for x in range(d)])


def _oue(d, e0):
    q = 1 / (math.exp(e0) + 1)
    outs = list(itertools.product((0, 1), repeat=d))
    return np.array([[math.prod(0.5 if j == x else (q if b else 1 - q) for j, b in enumerate(o)) for o in outs]
                     for x in range(d)])


def _lh(d, e0, g):
    """Local hashing with the family of all functions [d] -> [g] (3-wise independent)."""
    e, hashes = math.exp(e0), list(itertools.product(range(g), repeat=d))
    Z = e + g - 1
    return np.array([[(e if h[x] == y else 1.0) / (Z * len(hashes)) for h in hashes for y in range(g)]
                     for x in range(d)])


def _hr(d, e0):
    K = 1 << math.ceil(math.log2(d + 1))
    H = np.array([[(-1) ** bin(i & j).count("1") for j in range(K)] for i in range(K)])
    e = math.exp(e0)
    return np.array([[(2 * e if H[x + 1, o] == 1 else 2.0) / (K * (e + 1)) for o in range(K)] for x in range(d)])


FAMILY_CASES = [("krr", dict(k=3), lambda e0: _krr(3, e0)), ("krr", dict(k=5), lambda e0: _krr(5, e0)),
                ("sue", dict(d=3), lambda e0: _sue(3, e0)), ("sue", dict(d=4), lambda e0: _sue(4, e0)),
                ("oue", dict(d=3), lambda e0: _oue(3, e0)), ("oue", dict(d=5), lambda e0: _oue(5, e0)),
                ("olh", dict(d=3), lambda e0: _lh(3, e0, olh_g(e0))), ("blh", dict(d=3), lambda e0: _lh(3, e0, 2)),
                ("hr", dict(d=3), lambda e0: _hr(3, e0)), ("hr", dict(d=6), lambda e0: _hr(6, e0))]


@pytest.mark.parametrize("family,kw,matrix", FAMILY_CASES, ids=[f"{f}-{kw}" for f, kw, _ in FAMILY_CASES])
@pytest.mark.parametrize("e0", [0.7, 2.0])
def test_family_closed_forms_match_their_matrices(family, kw, matrix, e0):
    R = check_matrix(matrix(e0))
    assert matrix_eps0(R) == pytest.approx(e0, rel=1e-12)
    fam = family_decomposition(family, e0, **kw)
    decs = matrix_decompositions(R)
    assert decs, "a non-constant randomiser has a differing pair"
    for dec in decs:
        # the closed forms are safe for every pair (beta no smaller, the blankets no larger) ...
        assert fam.beta >= dec.beta * (1 - 1e-12)
        for name in ("s", "a", "c"):
            assert getattr(fam, name) <= getattr(dec, name) * (1 + 1e-12) + 1e-300, name
        # ... and exact, except the Walsh code with d = 3 (K = 4), where every third input is
        # x0 ^ x1 and the others' blanket c of the common part is larger than the closed form's
        exact = ("beta", "s", "a") if (family, kw.get("d")) == ("hr", 3) else ("beta", "s", "a", "c")
        for name in exact:
            assert getattr(dec, name) == pytest.approx(getattr(fam, name), rel=1e-9, abs=1e-15), name
    # the family's symmetric view is a view the matrix offers for some pair (same r, u, w)
    sym = fam.views[0]
    found = [w for dec in decs for w in dec.views if w.symmetric and w.r0 == pytest.approx(sym.r0, rel=1e-9)
             and w.u0 == pytest.approx(sym.u0, rel=1e-9) and w.w0 == pytest.approx(sym.w0, rel=1e-9)]
    assert found, [w for dec in decs for w in dec.views]


@pytest.mark.parametrize("family,kw,matrix", [c for c in FAMILY_CASES if c[0] != "hr" or c[1]["d"] == 3][:9],
                         ids=[f"{f}-{kw}" for f, kw, _ in FAMILY_CASES][:9])
def test_family_brackets_contain_small_exact_cases(family, kw, matrix):
    """The family route (closed forms) brackets the oracle on its explicit matrix."""
    e0 = 1.2
    R = matrix(e0)
    if family == "olh":
        e0 = 0.7                     # g = 3: 27 hashes x 3 values = 81 outputs
    R = matrix(e0)
    for n, eps in ((2, 0.3), (3, 0.1))[: 1 if R.shape[1] > 16 else 2]:
        exact = worst_delta(R, n, eps)
        assert _contains(rz.delta_bracket(n, eps, family=family, eps0=e0, **kw)[0], exact)


@pytest.mark.parametrize("k", [3, 4, 10])
@pytest.mark.parametrize("n", [1000, 10000])
def test_krr_upper_below_strong_adversary_and_bracket_within_two(k, n):
    """The k-RR upper end <= the strong adversary's exact delta; upper/lower <= 2."""
    e0, eps = 1.0, 0.05 if n == 10000 else 0.15
    gamma = krr.gamma_from_eps0(e0, k)
    br = rz.delta_bracket(n, eps, family="krr", k=k, eps0=e0)[0]
    strong = krr.delta_bracket("strong", n, gamma, k, eps)[0]
    assert br.upper <= strong.lower
    assert 0 < br.lower <= br.upper <= 2 * br.lower


@pytest.mark.parametrize("n,e0", [(10, 1.0), (50, 0.5), (200, 2.0), (400, 1.0)])
def test_binary_rr_contains_bitflip_exact_worst_case(n, e0):
    """k = 2 (binary RR): the bracket contains the bit-flip chapter's exact max over m."""
    q = 1 / (math.exp(e0) + 1)
    for eps in (0.05, 0.3):
        exact = float(bitflip.delta_worst(n, q, [eps])[0])
        br = rz.delta_bracket(n, eps, family="krr", k=2, eps0=e0)[0]
        assert br.lower * (1 - 1e-9) <= exact <= br.upper * (1 + 1e-9), (eps, exact, br)


@pytest.mark.parametrize("family,kw", [("krr", dict(k=10)), ("sue", dict(d=100)), ("oue", dict(d=100)),
                                       ("olh", dict(d=100)), ("blh", dict(d=100)), ("hr", dict(d=100))])
@pytest.mark.parametrize("e0", [1.0, 3.0])
def test_families_beat_generic_clones(family, kw, e0):
    """Every family's upper end <= the FMT21 clones bound at the same eps0."""
    n, delta = 10000, 1e-6
    ours = rz.epsilon_bracket(n, delta, family=family, eps0=e0, **kw)[0]
    generic = clones.epsilon_bracket(n, e0, delta)[0]
    assert ours.upper <= generic.lower


def test_constant_and_disjoint_randomisers():
    assert rz.delta_bracket(5, 0.0, matrix=[[0.5, 0.5], [0.5, 0.5]])[0] == (0.0, 0.0)
    br = rz.delta_bracket(3, 2.0, matrix=[[1.0, 0.0], [0.0, 1.0]])[0]      # no privacy at all
    assert br.upper == 1.0 and br.lower == pytest.approx(1.0)


# ---- the contract ----

@pytest.mark.parametrize("bad,msg", [
    ([[0.5, 0.6], [0.5, 0.5]], "sums to"), ([[0.5, 0.5]], "at least 2 rows"), ([[1.0, -0.0 - 1e-3], [0.5, 0.5]], ">= 0"),
    ([[float("nan"), 1.0], [0.5, 0.5]], "finite"), ("abc", "rows of numbers"), ([1.0, 0.0], "2-d array"), ([[0.5, "x"], [0.5, 0.5]], "rows of numbers"),
    ([[0.5, 0.5 + 2e-12], [0.5, 0.5]], "within 1e-12")])
def test_bad_matrices_are_refused(bad, msg):
    with pytest.raises(ValueError, match=msg):
        check_matrix(bad)


def test_rows_within_tolerance_are_accepted():
    R = check_matrix([[0.5, 0.5 + 5e-13], [0.25, 0.75]])
    assert abs(math.fsum(R[0]) - 1) < 1e-15


def test_eps0_from_matrix():
    assert matrix_eps0([[0.75, 0.25], [0.25, 0.75]]) == pytest.approx(math.log(3))
    assert matrix_eps0([[1.0, 0.0], [0.5, 0.5]]) == math.inf


def test_cli_matrix_and_families(tmp_path, cli):
    f = tmp_path / "m.json"
    R = _krr(3, 1.0)
    f.write_text(json.dumps({"matrix": R.tolist()}))
    out = cli("delta", "randomizer", "--matrix", str(f), "--n", "50", "--eps", "0.2", "--json")
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    lib = rz.delta_bracket(50, 0.2, matrix=R)[0]
    assert (got["results"][0]["delta_lower"], got["results"][0]["delta_upper"]) == pytest.approx(tuple(lib), rel=1e-12)
    assert got["params"]["eps0"] == pytest.approx(1.0)
    for fam, extra in (("krr", ["--k", "4"]), ("sue", ["--d", "10"]), ("oue", ["--d", "1000"]),
                       ("olh", ["--d", "50"]), ("blh", ["--d", "50"]), ("hr", ["--d", "50"])):
        out = cli("epsilon", "randomizer", "--family", fam, *extra, "--eps0", "2", "--n", "1000", "--delta", "1e-6",
                  "--json")
        assert out.returncode == 0, (fam, out.stderr)
        r = json.loads(out.stdout)["results"][0]
        assert 0 < r["eps_lower"] <= r["eps_upper"] < 2


@pytest.mark.parametrize("content,msg", [('{"matrix": [[0.5, 0.6], [0.5, 0.5]]}', "sums to"),
                                         ('{"m": 1}', "must hold an object"), ("[1,", "not valid JSON")])
def test_cli_bad_matrix_file(tmp_path, content, msg, cli):
    f = tmp_path / "m.json"
    f.write_text(content)
    out = cli("delta", "randomizer", "--matrix", str(f), "--n", "5", "--eps", "1")
    assert out.returncode != 0 and msg in out.stderr and "Traceback" not in out.stderr


@pytest.mark.parametrize("args,msg", [(["--family", "sue", "--eps0", "1"], "needs --d"),
                                      (["--family", "krr", "--k", "3"], "needs --eps0"),
                                      (["--family", "krr", "--eps0", "1"], "needs --k"),
                                      (["--eps0", "1"], "belong to --family"),
                                      ([], "needs --matrix")])
def test_cli_missing_or_mixed_options(args, msg, cli):
    out = cli("delta", "randomizer", "--n", "5", "--eps", "1", *args)
    assert out.returncode != 0 and msg in out.stderr and "Traceback" not in out.stderr


def test_library_enumeration_equals_the_oracle():
    """shuffle_lib's exact enumeration (the book's ground truth) against the independent oracle."""
    from shuffle_lib.mechanisms.randomizer.exact import exact_worst_delta
    rng = np.random.default_rng(3)
    for _ in range(20):
        k, m, n = int(rng.integers(2, 4)), int(rng.integers(2, 5)), int(rng.integers(1, 6))
        R = rng.dirichlet(np.ones(m), size=k)
        eps, K = float(rng.uniform(0, 2)), int(rng.integers(1, 3))
        if K == 2:
            n = min(n, 3)
        assert exact_worst_delta(R, n, eps, K) == pytest.approx(worst_delta(R, n, eps, K), rel=1e-12, abs=1e-16)
    with pytest.raises(ValueError, match="cells"):
        exact_worst_delta(np.full((4, 6), 1 / 6), 12, 1.0)


def test_dataset_delta_equals_the_oracle_and_bounds_the_worst_case_below():
    """exact.dataset_delta (one neighbouring pair) against the oracle's histogram laws, and at
    most the worst case."""
    from randomizer_oracle import histogram_law, hockey

    from shuffle_lib.mechanisms.randomizer.exact import dataset_delta, exact_worst_delta
    rng = np.random.default_rng(5)
    for _ in range(15):
        k, m, n = int(rng.integers(2, 4)), int(rng.integers(2, 5)), int(rng.integers(1, 6))
        R = rng.dirichlet(np.ones(m), size=k)
        others = [int(y) for y in rng.integers(0, k, size=n - 1)]
        eps = float(rng.uniform(0, 2))
        rest = [R[y] for y in others]
        laws = [histogram_law([R[x]] + rest, m) for x in (0, 1)]
        want = max(hockey(laws[0], laws[1], eps), hockey(laws[1], laws[0], eps))
        got = dataset_delta(R, others, eps)
        assert got == pytest.approx(want, rel=1e-12, abs=1e-16)
        assert got <= exact_worst_delta(R, n, eps) * (1 + 1e-12) + 1e-16
    with pytest.raises(ValueError, match="others"):
        dataset_delta(np.full((2, 2), 0.5), [2], 1.0)


def _hockey_both(P, Q, eps):
    """max of both directions' sum max(P - e^eps Q, 0), on laws given as arrays."""
    e = math.exp(eps)
    return max(math.fsum(np.maximum(P - e * Q, 0.0)), math.fsum(np.maximum(Q - e * P, 0.0)))


@pytest.mark.parametrize("k,m", [(3, 3), (2, 4)])
def test_dataset_delta_ordered_and_histogram_laws_agree_with_the_oracle(k, m):
    """Both exact representations of exact.dataset_delta (the histogram index and the ordered
    outputs labelled by their histogram) against the oracle's histogram laws, n = 2..4, and the
    public function (either route, by size) on a sequence of eps equal to its calls one eps at a
    time, each a float."""
    from randomizer_oracle import histogram_law, hockey

    from shuffle_lib.mechanisms.randomizer import exact
    rng = np.random.default_rng(11 + m)
    epss = [0.0, 0.05, 0.3, 1.0, 2.5]
    for n in (2, 3, 4):
        for _ in range(3):
            R = rng.dirichlet(np.ones(m), size=k)
            others = tuple(int(y) for y in rng.integers(0, k, size=n - 1))
            laws = [histogram_law([R[x]] + [R[y] for y in others], m) for x in (0, 1)]
            want = [max(hockey(laws[0], laws[1], e), hockey(laws[1], laws[0], e)) for e in epss]
            hist = exact._laws(R, others, (0, 1))
            ordered = exact._ordered_laws(R, others)
            assert ordered[0].size == math.comb(n + m - 1, m - 1)   # one cell per histogram
            got = exact.dataset_delta(R, list(others), epss)
            assert isinstance(got, np.ndarray) and got.shape == (len(epss),)
            for i, e in enumerate(epss):
                for P, Q in (hist, ordered):
                    assert _hockey_both(P, Q, e) == pytest.approx(want[i], rel=1e-12, abs=1e-16)
                one = exact.dataset_delta(R, list(others), e)
                assert isinstance(one, float) and one == got[i]
                assert one == pytest.approx(want[i], rel=1e-12, abs=1e-16)


@pytest.mark.parametrize("family,matrix", [("sue", _sue), ("oue", _oue)])
def test_dataset_delta_of_a_unary_encoding_beyond_the_histogram_index(family, matrix):
    """d = 4, n = 4: 5^15 histogram cells, past MAX_CELLS; the ordered outputs (16^4) answer,
    and agree with a brute-force sum over every ordered output written here (a dict keyed by the
    sorted tuple; the test's own matrix, whose columns are in another order)."""
    from shuffle_lib.mechanisms.randomizer.exact import MAX_CELLS, dataset_delta
    d, n, e0, others, epss = 4, 4, 3.0, (2, 2, 1), [0.1, 0.5, 1.5]
    assert (n + 1) ** (2 ** d - 1) > MAX_CELLS
    R = matrix(d, e0)
    laws = []
    for x in (0, 1):
        terms: dict[tuple[int, ...], list[float]] = {}
        for outs in itertools.product(range(2 ** d), repeat=n):
            pr = math.prod(R[y][o] for y, o in zip((x,) + others, outs))
            terms.setdefault(tuple(sorted(outs)), []).append(pr)
        laws.append({h: math.fsum(t) for h, t in terms.items()})
    keys = sorted(laws[0])
    P, Q = (np.array([law[h] for h in keys]) for law in laws)
    got = dataset_delta(R, list(others), epss)
    for e, g in zip(epss, got):
        assert g == pytest.approx(_hockey_both(P, Q, e), rel=1e-12, abs=1e-16)
    assert got[0] > got[1] > got[2] > 0


def test_dataset_delta_refuses_n_past_both_representations():
    """16 outputs and n = 6: 7^15 histogram cells and 16^6 ordered outputs, both past MAX_CELLS:
    a ValueError naming n; a negative eps in a sequence is refused by name."""
    from shuffle_lib.mechanisms.randomizer.exact import dataset_delta
    R = np.full((2, 16), 1 / 16)
    with pytest.raises(ValueError, match="n=6"):
        dataset_delta(R, [0] * 5, 1.0)
    with pytest.raises(ValueError, match="eps"):
        dataset_delta(R, [0], [0.5, -1.0])


def test_sue_decomposition_blanket_stays_below_its_exact_value_at_large_eps0():
    """family_decomposition('sue'): s = a = q^2, rounded down by SHRINK (1 - 1e-13), with
    q = 1 / (1 + e^(eps0/2)) (Wang et al. 2017, Sec. 4.3).  Against q^2 at 50 digits on
    eps0 in [10, 30], where q < 7e-3: the float s never exceeds the exact value, which needs q
    itself accurate to ~1e-14 relative (1 - p there loses up to 4e-10)."""
    import mpmath as mp
    with mp.workdps(50):
        for e0 in np.linspace(10.0, 30.0, 201):
            dec = family_decomposition("sue", float(e0), d=5)
            q = 1 / (1 + mp.exp(mp.mpf(float(e0)) / 2))
            assert mp.mpf(dec.s) <= q ** 2 and mp.mpf(dec.a) <= q ** 2, e0


def _answered(brackets):
    return [(b.lower, b.upper, b.accuracy_met, b.limit) for b in brackets]


def test_randomizer_brackets_are_the_command_lines_composed(cli_brackets):
    """delta_bracket / epsilon_bracket and ``python -m shuffle_lib delta|epsilon randomizer``
    return the same brackets, accuracy_met and limit, K = 2 rounds (the epsilon case is refined on a
    model built again at a finer accuracy, and still held by the mechanism's bounds)."""
    args = ("--n", 2000, "--family", "krr", "--k", 3, "--eps0", 0.5, "--compositions", 2)
    lib = rz.delta_bracket(2000, [0.05, 0.2], 2, family="krr", k=3, eps0=0.5)
    assert _answered(lib) == cli_brackets("delta", "randomizer", *args, "--eps", 0.05, 0.2)
    lib = rz.epsilon_bracket(2000, [1e-3], 2, family="krr", k=3, eps0=0.5)
    assert _answered(lib) == cli_brackets("epsilon", "randomizer", *args, "--delta", 1e-3)
    assert all(b.accuracy_met is not None for b in lib)


def test_randomizer_epsilon_bracket_refines_what_the_first_grid_leaves_too_wide():
    """k-RR, k = 3, eps0 = 0.5, n = 1e4, K = 2, delta = 1e-4: the first grid
    (evaluate.epsilon_brackets on randomizer_model) gave [0.0119601, 0.0124205], half-width
    2.3e-4 against the contract's 25 a eps = 6.2e-5 at a = 2e-4; epsilon_bracket, with the model
    built again finer, now answers [0.0121283, 0.0122405] (width 1.1e-4), inside the first
    bracket and meeting the contract."""
    from shuffle_lib.core import accuracy, evaluate
    from shuffle_lib.core.fourier import DEFAULT_ACCURACY

    model = rz.randomizer_model(10 ** 4, "krr", None, 3, 0, 0.5, 2, DEFAULT_ACCURACY)
    first = evaluate.epsilon_brackets(model, [1e-4], 2, accuracy=DEFAULT_ACCURACY)[0]
    assert not accuracy.met("epsilon", first, DEFAULT_ACCURACY, 2), first
    got = rz.epsilon_bracket(10 ** 4, [1e-4], 2, family="krr", k=3, eps0=0.5)[0]
    assert got.accuracy_met and accuracy.met("epsilon", got, DEFAULT_ACCURACY, 2), got
    assert first.lower <= got.lower <= got.upper <= first.upper
    assert got.upper - got.lower < first.upper - first.lower


KRR3 = dict(family="krr", k=3, eps0=1.0)


def test_blocks_composed_at_large_n_are_refused_on_their_estimate_naming_the_option():
    """k-RR (k = 3) at n = 1e8, ten rounds: each of the eight blocks' PLDs lies on ~2.9e7 grid
    cells of Boost's tails (~30 CPU s a block); the estimate refuses before the first block,
    naming --compositions, instead of running into the time limit."""
    from shuffle_lib.core import budget
    with budget.time_limit(20.0):
        with pytest.raises(ValueError, match=r"blocks' PLDs on .* grid cells each would take about "
                                             r".* CPU seconds.*--compositions"):
            rz.epsilon_bracket(10 ** 8, 0.5, compositions=10, **KRR3)


def test_blocks_refuse_on_their_memory_estimate_naming_n(monkeypatch):
    """The blocks' arrays at n = 1e9 (~4.75e6 values of s, ~0.76 GB) against a 0.1 GB limit."""
    from shuffle_lib.core import grid
    monkeypatch.setattr(grid, "MEMORY_LIMIT", 1e8)
    dec = rz.decompositions(**KRR3)[0][0]
    with pytest.raises(ValueError, match=r"blocks' .* values of s would take about .* GB.*--n"):
        rz._Blocks(dec, 10 ** 9, rz.BLOCKS)


def test_blocks_by_the_walk_contain_the_blocks_by_direct_tails():
    """At n = 2e6 (s ~ 1.3e6, on the walk) the blocks' delta with the walk's tails against the same
    sums with Boost's tails at every s: the brackets overlap, and the walk's is at most a 1e-9 of
    the summed magnitudes wider."""
    dec = rz.decompositions(**KRR3)[0][0]
    bl = rz._Blocks(dec, 2 * 10 ** 6, rz.BLOCKS)
    for eps in (0.0, 0.002, 0.01):
        lo, hi = bl.delta(eps)
        k = clones.loss_threshold(bl.s, bl.al, bl.be, bl.ga, eps, ties="count")
        tp, tq = clones.conditional_tails(bl.s, k, bl.al, bl.be, bl.ga)
        d = np.add.reduceat(bl.ps * np.maximum(tp - math.exp(eps) * tq, 0.0), bl.starts)
        mag = np.add.reduceat(bl.ps * (tp + math.exp(eps) * tq), bl.starts)
        tiny, rt = bl.sizes * 1e-307, max(1e-12, 2 * bl.rtol)   # the blocks' own allowances
        up = math.fsum(bl.mass * np.minimum(1.0, d + bl.rtol * mag + tiny + bl.cut)[:bl.mass.size])
        up = min(1.0, (up + bl.out) * bl.keep * (1 + rt))
        low = math.fsum(bl.mass * np.maximum(0.0, d - bl.rtol * mag - tiny)[1:])
        low = max(0.0, low * bl.keep * (1 - rt))
        assert lo <= up and low <= hi
        assert hi - lo <= up - low + 1e-9 * math.fsum(bl.mass * mag[:bl.mass.size])


def test_the_views_lower_end_charges_boosts_error_at_its_count_of_trials():
    """A view's PMFs of binomial counts of N trials carry Boost's relative error rho(N)
    (boost_rtol): certified_lower takes max(1e-12, 3 rho) of the P-mass above eps off the hockey
    stick, which at N = 1e9 is 3 x 64 sqrt(1e9) 2^-53 (rho is 1e-12 at N <= ~2e4)."""
    pl = pld_from_pmfs([0.5, 0.3, 0.2], [0.2, 0.3, 0.5])
    eps = 0.1
    near = 0.5           # P-mass with loss > eps - 1e-9: only the first atom (loss log 2.5)
    base = rz.certified_lower(pl, eps)
    for trials in (100, 10 ** 9):
        rho = max(1e-12, 64 * math.sqrt(trials) * 2.0 ** -53)
        got = base - rz.certified_lower(pl, eps, trials)
        assert math.isclose(got, (max(1e-12, 3 * rho) - 1e-12) * near * (1 + 1e-9),
                            rel_tol=1e-3, abs_tol=1e-17)   # a difference of two ~0.3
