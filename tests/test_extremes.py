"""Certified answers at the extremes of the double range: infinite Renyi divergences stay
infinite, divergences stay in [0, inf], brackets contain values computed here independently
(mpmath at 60 digits, closed forms), and valid input near the ends of the declared ranges gets an
answer or a one-line refusal (exit 2), never a traceback."""

import json
import math

import mpmath as mp
import pytest

from shuffle_lib import cli
from shuffle_lib.mechanisms.clones.pairs import general_pair
from shuffle_lib.mechanisms.clones.renyi import clone_rdp

mp.mp.dps = 60


def run_json(capsys, *argv):
    """(exit code, parsed JSON or None, stderr) of the CLI run in process."""
    code = cli.main([*argv, "--json"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else None), err


def koskela_unmatched_mass(n, eps0):
    """P-mass where Q = 0 in the koskela pair: q (p/2)^(n-1), p = e^-eps0, q = e^eps0/(e^eps0+1)."""
    e = mp.mpf(eps0)
    return mp.e ** e / (mp.e ** e + 1) * (mp.e ** -e / 2) ** (n - 1)


@pytest.mark.parametrize("n, eps0, orders", [(1000, 1, ["2"]), (10_000, 2, ["2", "32"])])
def test_rdp_is_infinite_when_the_unmatched_atom_is_below_the_double_range(capsys, n, eps0, orders):
    mass = koskela_unmatched_mass(n, eps0)
    assert 0 < mass < mp.mpf("1e-400")            # positive, yet it underflows as a double
    code, out, _ = run_json(capsys, "rdp", "ldp-shuffle", "--pair", "koskela", "--n", str(n),
                            "--eps0", str(eps0), "--order", *orders)
    assert code == 0
    assert all(r["rdp_lower"] is None and r["rdp_upper"] is None for r in out["results"])


def test_clone_rdp_of_a_general_pair_with_an_underflowing_unmatched_atom_is_infinite():
    p, u, n = 0.5, 0.5, 3000                       # w = 0: the user adds to a or to nothing
    assert u * (mp.mpf(p) / 2) ** (n - 1) > 0       # ~1e-1806, positive: D_lam = inf for lam > 1
    brs = clone_rdp(n, 1.0, [2.0, 50.0], pair=general_pair(p, u, 0.0))
    assert all(b.lower == math.inf and b.upper == math.inf for b in brs)


def test_rdp_of_a_nearly_non_private_subsampled_shuffle_stays_in_zero_to_eps0(capsys):
    """eps0 = 1e-320: every loss lies in [-eps0, eps0], so 0 <= D_lam <= eps0 for every order; the
    bracket was [-4.4e-16, -4.4e-16] (rounding of a PLD whose masses sum to 1 - 2e-16)."""
    code, out, _ = run_json(capsys, "rdp", "ldp-shuffle-subsampled", "--n", "1000", "--eps0", "1e-320",
                            "--subset", "100", "--order", "2", "64")
    assert code == 0
    for r in out["results"]:
        assert 0.0 <= r["rdp_lower"] <= 1e-320 and r["rdp_upper"] >= max(r["rdp_lower"], 0.0)
        assert r["rdp_upper"] < 1e-12


def test_krr_weak_eps_at_a_subnormal_gamma_is_the_top_view_loss(capsys):
    """gamma = 1e-320 (subnormal): with probability ~1 - 1e-318 no one randomises (b = 0) and the
    view is the n-th report alone, 1 under P w.p. 1 - g + g/k, under Q w.p. g/k; every other view
    has P-mass < 1e-317.  So delta(eps) = P1 - e^eps Q1 up to 1e-317, and eps(1e-6) =
    log((P1 - 1e-6) / Q1) with P1 = (1-g)^(n-1) (1 - g + g/k), Q1 = (1-g)^(n-1) g/k.  brentq raised
    'Failed to converge' on the subnormal losses; then the losses overflowed to +inf."""
    n, k, delta = 100, 4, mp.mpf("1e-6")
    g = mp.mpf(float("1e-320"))                     # the double the CLI parses
    p1, q1 = (1 - g) ** (n - 1) * (1 - g + g / k), (1 - g) ** (n - 1) * g / k
    exact = float(mp.log((p1 - delta) / q1))
    code, out, err = run_json(capsys, "epsilon", "krr-weak", "--n", str(n), "--gamma", "1e-320", "--k", str(k),
                              "--delta", "1e-6")
    assert code == 0 and err == ""
    r = out["results"][0]
    assert r["eps_lower"] <= exact <= r["eps_upper"] and r["eps_upper"] - r["eps_lower"] < 1e-6


def test_eps_search_falls_back_to_bisection_when_brentq_does_not_converge(monkeypatch):
    """Losses -1, +1 with mass 1/2 each: delta(eps) = (1 - e^(eps-1))/2, so eps(delta) = 1 + log(1 - 2 delta)."""
    import numpy as np

    from shuffle_lib.core import pld as pld_mod

    def no_convergence(*args, **kw):
        raise RuntimeError("Failed to converge after 100 iterations.")
    monkeypatch.setattr(pld_mod, "brentq", no_convergence)
    x = pld_mod.PLD(np.array([-1.0, 1.0]), np.array([0.5, 0.5]), 0.0)
    for delta in (0.1, 1e-9):
        exact = float(1 + mp.log(1 - 2 * mp.mpf(delta)))
        got = pld_mod.epsilon_for_delta(x, delta)
        assert exact <= got <= exact + 1e-14


def bitflip_rdp_exact(n, q, lam):
    """max of both directions of D_lam for bitflip with m = 0: the differing user's bit (1 vs 0) is
    reported flipped w.p. q, the other n-1 users' zeros flip w.p. q; the count S is observed."""
    q, lam = mp.mpf(q), mp.mpf(lam)
    b = [mp.binomial(n - 1, j) * q ** j * (1 - q) ** (n - 1 - j) for j in range(n)] + [mp.mpf(0)]
    P = [(1 - q) * (b[s - 1] if s else 0) + q * b[s] for s in range(n + 1)]
    Q = [q * (b[s - 1] if s else 0) + (1 - q) * b[s] for s in range(n + 1)]
    d = [mp.log(mp.fsum(x ** lam * y ** (1 - lam) for x, y in zip(X, Y))) / (lam - 1) for X, Y in ((P, Q), (Q, P))]
    return float(max(d))


def test_rdp_bitflip_at_a_subnormal_flip_probability_brackets_the_exact_divergence(capsys):
    """q = 1e-320: the largest loss log((1-q)/q) ~ 737 is beyond 700; the bracket's allowance for
    the tail cut is taken in log space, so the answer is a bracket, not 'max_loss must lie in
    [0, 700]' (an internal name) after an overflow RuntimeWarning."""
    q = float("1e-320")
    code, out, err = run_json(capsys, "rdp", "bitflip", "--n", "100", "--q", "1e-320", "--order", "2", "64")
    assert code == 0 and err == ""
    for r in out["results"]:
        exact = bitflip_rdp_exact(100, q, r["order"])
        assert r["rdp_lower"] <= exact <= r["rdp_upper"], (r, exact)


MECHANISM_ARGS = [["rr", "--eps0", "1"], ["ldp-shuffle", "--n", "100", "--eps0", "1"],
                  ["randomizer", "--n", "100", "--family", "krr", "--k", "3", "--eps0", "1"],
                  ["randomizer", "--n", "100", "--noise", "gaussian", "--scale", "1"],
                  ["krr-strong", "--n", "100", "--gamma", "0.5", "--k", "4"]]


@pytest.mark.parametrize("mech", MECHANISM_ARGS, ids=lambda m: " ".join(m[:3]))
@pytest.mark.parametrize("eps", ["701", "1e308", "inf"])
def test_every_mechanism_takes_the_same_eps_range(capsys, mech, eps):
    """One limit, constants.EPS_MAX = 700, for every mechanism (the clones' and randomisers' closed
    forms refused eps > 700 while rr answered 1e308): above it the same one-line refusal."""
    assert cli.main(["delta", *mech, "--eps", eps]) == 2
    err = capsys.readouterr().err
    assert err == f"error: --eps must lie in [0, 700], got --eps={float(eps)!r}.\n"


@pytest.mark.parametrize("mech", MECHANISM_ARGS[:3] + MECHANISM_ARGS[4:], ids=lambda m: " ".join(m[:3]))
def test_every_mechanism_answers_at_the_top_of_the_eps_range(capsys, mech):
    """At eps = 700 an answer with nothing on stderr (the Gaussian noise randomiser is left out:
    its blanket sum takes ~70 CPU seconds there)."""
    assert cli.main(["delta", *mech, "--eps", "700"]) == 0
    assert capsys.readouterr().err == ""


def test_calibrate_names_an_unknown_solve_target_as_typed(capsys):
    assert cli.main(["calibrate", "rr", "--eps", "1", "--delta", "1e-6", "--solve", "bogus"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --solve bogus:") and "--bogus" not in err and "eps0" in err
    assert len(err.splitlines()) == 1


@pytest.mark.parametrize("n, eps0, k", [(10 ** 9, 30.0, 1), (1000, 2.0, 3)])
def test_ldp_shuffle_eps_is_capped_by_k_eps0(capsys, n, eps0, k):
    """Every loss of the fmt21 pair is at most eps0, so eps(delta) <= K eps0 for every delta > 0.
    From below: the view C = 0, a = 1 in every round has P-mass m = ((1 - e^-eps0)^(n-1) q)^K and
    loss K eps0, so delta(eps) >= m (1 - e^(eps - K eps0)) and eps(delta) >= K eps0 + log(1 - delta/m).
    Before, the bracket at n = 1e9, eps0 = 30, delta = 1e-300 was [30, inf] (and '--n 1e9' was refused)."""
    delta = mp.mpf("1e-300")
    e = mp.mpf(eps0)
    m = ((1 - mp.e ** -e) ** (n - 1) * mp.e ** e / (mp.e ** e + 1)) ** k
    below = float(k * e + mp.log(1 - delta / m))
    code, out, _ = run_json(capsys, "epsilon", "ldp-shuffle", "--n", f"{n:.0e}" if n >= 1e9 else str(n),
                            "--eps0", str(eps0), "--delta", "1e-300", "--compositions", str(k))
    assert code == 0
    r = out["results"][0]
    assert r["eps_upper"] is not None and below <= r["eps_upper"] <= k * eps0
    assert r["eps_lower"] <= k * eps0


def worst_delta_enumerated(R, n, eps):
    """The shuffled randomiser's exact delta(eps) in mpmath: the worst over the differing user's
    inputs x0 != x1 and the multiset of the others' inputs of sum_h max(P(h) - e^eps Q(h), 0), h the
    histogram of the n reports (the rows of R taken exactly as the doubles given)."""
    import itertools
    R = [[mp.mpf(x) for x in row] for row in R]
    k, m = len(R), len(R[0])
    e = mp.e ** mp.mpf(eps)

    def law(inputs):
        d = {(0,) * m: mp.mpf(1)}
        for x in inputs:
            nd = {}
            for h, p in d.items():
                for o in range(m):
                    hh = h[:o] + (h[o] + 1,) + h[o + 1:]
                    nd[hh] = nd.get(hh, 0) + p * R[x][o]
            d = nd
        return d
    best = mp.mpf(0)
    for others in itertools.combinations_with_replacement(range(k), n - 1):
        for x0, x1 in itertools.permutations(range(k), 2):
            P, Q = law((x0,) + others), law((x1,) + others)
            best = max(best, mp.fsum(max(P[h] - e * Q.get(h, 0), 0) for h in P))
    return best


NEAR_BOTTOM = [[5e-300, 5e-300, 0.999999999995, 5e-12], [0.5, 5e-301, 0.5, 5e-301]]
NEAR_BOTTOM_3 = [[1e-300, 1e-12, 1 - 1e-12], [1e-12, 1 - 1e-12, 1e-300]]


@pytest.mark.parametrize("matrix, n, eps", [(NEAR_BOTTOM, 2, 688.2497992538135), (NEAR_BOTTOM, 2, 680.0),
                                            (NEAR_BOTTOM_3, 5, 700.0)])
def test_randomizer_delta_lower_end_is_below_the_enumerated_delta_for_masses_near_1e_300(matrix, n, eps):
    """A view whose others' T0 mass 1 - 5e-300 rounded to 1 lost their T1 mass: the lower end was
    0.1000000000383 against an exact 0.05 (eps = 688.25), 0.4998954756 against 0.4997909512
    (eps = 680), and 2e-300 against an exact 0 (the 3x3 matrix, n = 5)."""
    from shuffle_lib.mechanisms import randomizer
    exact = worst_delta_enumerated(matrix, n, eps)
    br = randomizer.delta_bracket(n, [eps], matrix=matrix)[0]
    assert br.lower <= exact <= br.upper, (br, exact)


def test_randomizer_eps_lower_end_is_below_the_enumerated_eps_for_masses_near_1e_300():
    from shuffle_lib.mechanisms import randomizer
    lo, hi = mp.mpf(600), mp.mpf(700)            # delta(600) > 0.1 >= delta(700): bisection on the oracle
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if worst_delta_enumerated(NEAR_BOTTOM, 2, mid) > mp.mpf("0.1") else (lo, mid)
    br = randomizer.epsilon_bracket(2, [0.1], matrix=NEAR_BOTTOM)[0]
    assert br.lower <= lo and hi <= br.upper, (br, lo, hi)


def histogram_count_delta(n, n_x0, k, eps0, eps):
    """delta(eps) of the count of x0 in shuffled k-RR, mpmath: S = Bern(p or pbar) + B with
    B = Bin(n_x0, p) + Bin(n-1-n_x0, pbar), p = e^eps0/(e^eps0+k-1), pbar = 1/(e^eps0+k-1)."""
    e0, e = mp.e ** mp.mpf(eps0), mp.e ** mp.mpf(eps)
    p, pb = e0 / (e0 + k - 1), 1 / (e0 + k - 1)
    a = [mp.binomial(n_x0, i) * p ** i * (1 - p) ** (n_x0 - i) for i in range(n_x0 + 1)]
    m = n - 1 - n_x0
    b = [mp.binomial(m, j) * pb ** j * (1 - pb) ** (m - j) for j in range(m + 1)]
    B = [mp.mpf(0)] * (n + 1)
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            B[i + j] += x * y

    def law(t):
        return [t * (B[s - 1] if s else 0) + (1 - t) * B[s] for s in range(n + 1)]
    P, Q = law(p), law(pb)
    return max(mp.fsum(max(x - e * y, 0) for x, y in zip(X, Y)) for X, Y in ((P, Q), (Q, P)))


@pytest.mark.parametrize("n_x0", [0, 500])
def test_histogram_krr_bracket_holds_a_delta_below_the_double_range(capsys, n_x0):
    """n = 1000, k = 10, eps0 = 0.49, eps = 0.3: the exact delta is ~1e-341 (n_x0 = 0) and ~1e-347
    (n_x0 = 500), below the doubles; the bracket was [0, 0] and [1e-323, 1e-323]."""
    exact = histogram_count_delta(1000, n_x0, 10, 0.49, 0.3)
    assert 0 < exact < mp.mpf("1e-330")
    code, out, _ = run_json(capsys, "delta", "histogram-krr", "--n", "1000", "--n-x0", str(n_x0), "--k", "10",
                            "--eps0", "0.49", "--eps", "0.3")
    assert code == 0
    r = out["results"][0]
    assert r["delta_lower"] <= exact <= r["delta_upper"] and r["delta_upper"] < 1e-290


def run_limited_cli(argv, cpu=120):
    """(exit code, stderr) of the CLI in its own process under the contract's limits: ``cpu``
    CPU seconds and a 4 GB address space (a kill is a negative exit code)."""
    import resource
    import subprocess
    import sys

    def limits():
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
        resource.setrlimit(resource.RLIMIT_AS, (4 * 2 ** 30, 4 * 2 ** 30))
    r = subprocess.run([sys.executable, "-m", "shuffle_lib", *argv], capture_output=True, text=True,
                       preexec_fn=limits, timeout=20 * cpu)
    return r.returncode, r.stderr


def assert_one_line_refusal(code, err, *words):
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), (code, err[-2000:])
    assert all(w in lines[0] for w in words), lines[0]


def test_a_subsampled_pair_beyond_the_memory_limit_is_refused_before_allocating():
    """n = 1e8, subset = 1e6: ~5e7 atoms, ~8 GB; died with _ArrayMemoryError (exit 1)."""
    code, err = run_limited_cli(["epsilon", "ldp-shuffle-subsampled", "--n", "100000000", "--eps0", "1",
                                 "--subset", "1000000", "--delta", "1e-6", "--compositions", "10"], cpu=60)
    assert_one_line_refusal(code, err, "--subset", "memory limit of 4 GB")


def test_a_composed_randomiser_round_beyond_the_memory_limit_is_refused_before_allocating():
    """k-RR randomiser, K = 1e7: the composed round's grid had 3e11 points (_ArrayMemoryError)."""
    code, err = run_limited_cli(["epsilon", "randomizer", "--n", "1000", "--family", "krr", "--k", "3",
                                 "--eps0", "1", "--delta", "1e-6", "--compositions", "10000000"], cpu=60)
    assert_one_line_refusal(code, err, "--compositions", "memory limit")


def test_a_thousand_rounds_whose_window_is_larger_than_estimated_stay_under_4_gb():
    """krr-strong, n = 200, k = 2, K = 1000: a 59M-point Chernoff window (3.8 GB estimated) beside
    grids already held died under the 4 GiB address-space limit; the guard now counts the
    resident set and the composition retries twice as coarse.  Here: an answer, no memory death;
    the brackets' soundness is the adversarial suites' business."""
    import resource
    import subprocess
    import sys

    def limits():
        resource.setrlimit(resource.RLIMIT_CPU, (120, 120))
        resource.setrlimit(resource.RLIMIT_AS, (4 * 2 ** 30, 4 * 2 ** 30))
    r = subprocess.run([sys.executable, "-m", "shuffle_lib", "delta", "krr-strong", "--n", "200", "--gamma", "0.5",
                        "--k", "2", "--eps", "0", "700", "--compositions", "1000", "--json"],
                       capture_output=True, text=True, preexec_fn=limits, timeout=2400)
    assert r.returncode == 0 and r.stderr == "", (r.returncode, r.stderr[-2000:])
    res = json.loads(r.stdout)["results"]
    assert all(0 < x["delta_lower"] <= x["delta_upper"] <= 1 for x in res)
    assert res[1]["delta_upper"] < res[0]["delta_lower"]


def test_a_matrix_whose_decompositions_would_take_minutes_is_refused_before_they_start(tmp_path):
    """256 x 15000 (within the declared 256 rows and 4e6 entries): 2.5e11 steps of pair
    decompositions; ran past 300 s at n = 1000 and n = 1e8."""
    import numpy as np
    R = np.random.default_rng(1).random((256, 15000))
    path = tmp_path / "wide.json"
    path.write_text(json.dumps({"matrix": (R / R.sum(axis=1, keepdims=True)).tolist()}))
    for n in ("1000", "1e8"):
        code, err = run_limited_cli(["delta", "randomizer", "--n", n, "--matrix", str(path), "--eps", "1"],
                                    cpu=60)
        assert_one_line_refusal(code, err, "--matrix", "limit of 5e+09")


@pytest.mark.parametrize("argv", [
    ["epsilon", "krr-weak", "--n", "1e8", "--gamma", "0.5", "--k", "4", "--delta", "1e-300"],
    ["epsilon", "randomizer", "--n", "1e8", "--family", "oue", "--d", "100000", "--eps0", "1",
     "--delta", "1e-6", "--compositions", "10"],
    ["calibrate", "krr-strong", "--n", "1e8", "--k", "4", "--eps", "1", "--delta", "1e-300",
     "--compositions", "10", "--solve", "gamma"],
], ids=["krr-weak-1e8", "oue-1e8-K10", "calibrate-krr-strong-1e8"])
def test_a_query_that_ran_for_minutes_answers_or_refuses_within_its_time_limit(argv):
    """Each ran past 120 CPU seconds (or 231 s); under --time-limit 8 it answers (exit 0) or
    stops with one line naming --time-limit, and is never killed (the CPU limit is 60 s)."""
    code, err = run_limited_cli([*argv, "--time-limit", "8"], cpu=60)
    assert code in (0, 2), (code, err[-2000:])
    if code == 2:
        assert_one_line_refusal(code, err, "--time-limit")


@pytest.mark.parametrize("eps", [690.0, 700.0])
def test_randomizer_delta_upper_end_is_capped_by_the_local_randomiser(eps):
    """NEAR_BOTTOM, n = 2: the blanket pair's upper end was 1.0 where the enumerated delta is 0;
    the local randomiser's own delta(eps) (0 from its eps0 = 690.78 on) caps it."""
    from shuffle_lib.mechanisms import randomizer
    exact = worst_delta_enumerated(NEAR_BOTTOM, 2, eps)
    br = randomizer.delta_bracket(2, [eps], matrix=NEAR_BOTTOM)[0]
    assert br.lower <= exact <= br.upper and br.upper <= 1e-300, (br, exact)


@pytest.mark.parametrize("matrix, n, eps", [(NEAR_BOTTOM_3, 5, 680.0), (NEAR_BOTTOM_3, 5, 690.0),
                                            ([[0.5, 0.0, 0.0, 0.5], [1e-310, 0.0, 0.0, 1.0]], 2, 700.0)])
def test_randomizer_view_keeps_the_others_mass_below_the_double_range(matrix, n, eps):
    """The others' mass on a cell of 1e-300 or 1e-310 (1 - r0 rounded to 1, and scipy's binom.pmf
    giving 0 for a subnormal p): lost, it lifted the view's lower end above the enumerated delta
    by 3e-12 (NEAR_BOTTOM_3, n = 5) and by 1e-6 (the subnormal row, e^700 x 1e-310)."""
    from shuffle_lib.mechanisms import randomizer
    exact = worst_delta_enumerated(matrix, n, eps)
    br = randomizer.delta_bracket(n, [eps], matrix=matrix)[0]
    assert br.lower <= exact <= br.upper, (br, exact)


def rr_eps_lower_oracle(eps0, K, delta):
    """A value below the exact eps(delta) of K rounds of rr: eps with delta_K(eps) > delta, by
    bisection on the binomial sum (mpmath, in the bulk +-12 sd where all the mass is)."""
    e0 = mp.mpf(eps0)
    a = 1 / (1 + mp.e ** -e0)
    mu, sd = K * a, mp.sqrt(K * a * (1 - a))
    js = range(max(0, int(mu - 12 * sd)), min(K, int(mu + 12 * sd)) + 1)
    logs = [(j, mp.log(mp.binomial(K, j)) + j * mp.log(a) + (K - j) * mp.log(1 - a)) for j in js]

    def d(eps):
        return mp.fsum(mp.e ** lp * (1 - mp.e ** (eps - e0 * (2 * j - K))) for j, lp in logs
                       if e0 * (2 * j - K) > eps)
    return d


def test_rr_eps_lower_end_at_ten_million_rounds_is_positive():
    """K = 1e7: the grid's lower end was 0; K // 10 rounds give a positive one (dropping rounds is
    post-processing).  Checked: the exact delta_K at the lower end exceeds the target."""
    d = rr_eps_lower_oracle(1.0, 10 ** 7, 1e-6)
    code, out, _ = run_json_none(["epsilon", "rr", "--eps0", "1", "--delta", "1e-6",
                                  "--compositions", "10000000"])
    r = out["results"][0]
    assert code == 0 and r["eps_lower"] > 0
    assert d(mp.mpf(r["eps_lower"])) > mp.mpf("1e-6")


def run_json_none(argv):
    import contextlib
    import io
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = cli.main([*argv, "--json"])
    return code, json.loads(buf.getvalue()), None


def test_the_clones_threshold_at_eps_700_and_a_billion_users_is_silent_and_exact():
    """delta ldp-shuffle --n 1e9 --eps0 1 --eps 700 wrote 'RuntimeWarning: overflow encountered in
    multiply' (the closed-form root s (e^eps (2 al + ga) - ...) overflows for s ~ 1e9): the root is
    +inf there, so the threshold is s + 1 (no a has a loss above 700), and nothing is printed."""
    import warnings

    import numpy as np

    from shuffle_lib.mechanisms.clones.pairs import loss_threshold
    s = np.array([0, 1, 10 ** 6, 10 ** 9], dtype=np.int64)
    e0 = math.exp(1.0)
    al, be, ga = e0 / (e0 + 1) / 2, 1 / (e0 + 1) / 2, 0.0      # the loss is at most log((2 al) / (2 be)) = 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        k = loss_threshold(s, np.full(4, al), np.full(4, be), np.full(4, ga), 700.0)
    assert list(k) == list(s + 1)


def test_an_upper_end_below_the_double_range_is_the_least_positive_double(capsys):
    """histogram-krr n = 40, n_x0 = 0, k = 4, eps0 = 2, K = 1000: the count view's top loss 2 has
    mass 1.6e-40, so delta(700) is positive (700 < 1000 x 2) yet far below the double range; the
    grid read 0 for the upper end (the deep extreme sweep's case).  A certified upper end of a
    positive value is positive: the least positive double, flagged by accuracy_met."""
    code, out, err = run_json(capsys, "delta", "histogram-krr", "--n", "40", "--n-x0", "0", "--k", "4",
                              "--eps0", "2", "--eps", "700", "--compositions", "1000")
    assert code == 0, err
    r = out["results"][0]
    assert r["delta_lower"] == 0.0 and r["delta_upper"] == 5e-324 and r["accuracy_met"] is False
