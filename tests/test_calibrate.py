"""Calibration: the least private setting that meets (eps, delta) by the upper bound, in few queries."""

import json
import math

import mpmath
import pytest

import shuffle_lib as sl
from shuffle_lib.core import calibrate, evaluate, search
from shuffle_lib.mechanisms import clones


RANGES = {"gamma": (1e-9, 1.0, "up"), "q": (1e-9, 0.5, "up"), "eps0": (1e-6, 30.0, "down")}


@pytest.mark.parametrize("param, boundary", [("gamma", 0.3137), ("q", 0.0421), ("eps0", 2.5)])
def test_continuous_search_finds_the_boundary(param, boundary):
    lo, hi, direction = RANGES[param]
    meets = (lambda x: x >= boundary) if direction == "up" else (lambda x: x <= boundary)
    got = calibrate.search(meets, lo, hi, direction, rtol=1e-6, name=param)
    assert meets(got) and abs(got - boundary) <= 2e-6 * boundary


@pytest.mark.parametrize("boundary", [2, 3, 17, 1000, 123457])
def test_integer_search_finds_the_least_n(boundary):
    calls = []
    got = calibrate.search(lambda n: calls.append(n) or n >= boundary, 2, 10 ** 9, "up", integer=True, name="n")
    assert got == boundary and len(calls) <= 2 * math.log2(boundary) + 4


def test_unreachable_and_unknown():
    with pytest.raises(ValueError, match="no gamma"):
        calibrate.search(lambda x: False, 1e-9, 1.0, "up", name="gamma")
    with pytest.raises(ValueError, match="no n in"):
        calibrate.search(lambda x: False, 2, 64, "up", integer=True, name="n")
    with pytest.raises(ValueError, match="direction must be one of"):
        calibrate.search(lambda x: True, 0.0, 1.0, "sideways")


def test_cli_rr_eps0_is_the_largest_that_meets(cli):
    r = cli("calibrate", "rr", "--eps", "0.5", "--delta", "1e-3", "--solve", "eps0", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert set(out) == {"mechanism", "params", "solve", "value", "achieved", "seconds"}
    e0 = out["value"]
    assert out["achieved"]["delta_upper"] <= 1e-3
    assert sl.rr_delta_exact(e0, 0.5, 1) <= 1e-3 < sl.rr_delta_exact(e0 * (1 + 1e-3), 0.5, 1)


def test_cli_ldp_shuffle_least_n(cli):
    r = cli("calibrate", "ldp-shuffle", "--eps0", "2", "--eps", "0.5", "--delta", "1e-6", "--solve", "n", "--json")
    assert r.returncode == 0, r.stderr
    n = json.loads(r.stdout)["value"]
    assert clones.delta_bracket_single(n, 2.0, 0.5).upper <= 1e-6
    assert clones.delta_bracket_single(n - 1, 2.0, 0.5).upper > 1e-6


@pytest.mark.parametrize("args, needle", [
    (["calibrate", "rr", "--eps", "1", "--delta", "1e-6", "--solve", "gamma"], "--solve gamma: rr has no parameter of that name"),
    (["calibrate", "rr", "--eps", "1", "--delta", "2", "--solve", "eps0"], "delta must lie in"),
    (["calibrate", "rr", "--eps", "1", "--delta", "1e-6", "--solve", "sigma"], "--solve sigma: rr has no parameter of that name"),
])
def test_cli_errors(args, needle, cli):
    r = cli(*args)
    assert r.returncode == 2 and needle in r.stderr and len(r.stderr.strip().splitlines()) == 1


# ---- the secant search every calibration takes (core.search.secant_from_guess) ----

def _curves():
    """Non-increasing test functions g(t) with a known root: linear, curved, and with a small
    wiggle (the grid's rounding in a real delta_upper)."""
    return {
        "linear": lambda r: (lambda t: -20 * (t - r)),
        "curved": lambda r: (lambda t: -(20 * (t - r) + 40 * (t - r) ** 2 + 30 * (t - r) ** 3)),
        "wiggle": lambda r: (lambda t: -20 * (t - r) + 1e-3 * math.sin(1e4 * t)),
    }


@pytest.mark.parametrize("kind", ["linear", "curved", "wiggle"])
@pytest.mark.parametrize("root", [0.3, 1.7, 2.5])
def test_secant_search_ends_on_the_meeting_side_within_tol(kind, root):
    calls = []
    g = _curves()[kind](root)
    yes, no = search.secant_from_guess(lambda t: calls.append(t) or g(t), -14.0, 4.0, 0.0,
                                       lambda a, b: b - a <= 1e-4, tol=1e-4)
    assert g(yes) <= 0                                     # the point returned meets
    slack = 1e-3 / 20 if kind == "wiggle" else 0.0          # the wiggle moves the sign change
    assert abs(yes - root) <= 1e-4 + slack
    assert no is None or (g(no) > 0 and no < yes)
    assert len(calls) <= 14


def test_secant_search_with_a_good_guess_takes_two_evaluations():
    """A guess within 1e-3 of the root and its slope: one step, aimed a quarter of tol to the
    meeting side, pins the root (the calibration's usual case)."""
    calls = []
    g = _curves()["curved"](1.2345)
    yes, _ = search.secant_from_guess(lambda t: calls.append(t) or g(t), -14.0, 4.0, 1.2355,
                                      lambda a, b: b - a <= 1e-4, slope=-20.0, tol=1e-4)
    assert g(yes) <= 0 and yes - 1.2345 <= 1e-4 and len(calls) <= 3


def test_secant_search_on_integers_ends_between_adjacent_integers():
    for root in (7, 1000, 123457):
        calls = []
        g = lambda t: math.log(root) - t          # noqa: E731  (g <= 0 from n = root on)
        snap = lambda t: math.log(round(math.exp(t)))  # noqa: E731
        yes, no = search.secant_from_guess(lambda t: calls.append(t) or g(t), 0.0, math.log(1e9),
                                           math.log(50.0),
                                           lambda a, b: round(math.exp(b)) - round(math.exp(a)) <= 1,
                                           snap=snap)
        assert round(math.exp(yes)) == root and round(math.exp(no)) == root - 1
        assert len(calls) <= 2 * math.log2(root) + 6


def test_secant_search_reports_an_unreachable_target():
    yes, no = search.secant_from_guess(lambda t: 1.0, 0.0, 3.0, 1.0, lambda a, b: b - a <= 1e-4,
                                       tol=1e-4)
    assert yes is None and no == 3.0
    yes, no = search.secant_from_guess(lambda t: -1.0, 0.0, 3.0, 1.0, lambda a, b: b - a <= 1e-4,
                                       tol=1e-4)
    assert yes == 0.0 and no is None


# ---- calibration of K rounds: few full queries, certified ----

def _rr_delta(eps0, K, eps):
    """Tight delta(eps) of K rounds of binary randomised response: the binomial sum over the
    number of truthful reports, 50 digits (mpmath; no library call)."""
    with mpmath.workdps(50):
        a = 1 / (1 + mpmath.exp(-mpmath.mpf(eps0)))
        e = mpmath.exp(mpmath.mpf(eps))
        return float(mpmath.fsum(mpmath.binomial(K, i) * max(a ** i * (1 - a) ** (K - i)
                                                             - e * a ** (K - i) * (1 - a) ** i, 0)
                                 for i in range(K + 1)))


def test_rr_composed_eps0_is_certified_and_least_by_the_exact_oracle():
    K, eps, delta = 20, 1.0, 1e-5
    _, e0, d_up = calibrate.calibrate_mechanism(sl.mechanism("rr"), "eps0", eps, delta, {}, K)
    assert d_up <= delta and _rr_delta(e0, K, eps) <= delta
    assert _rr_delta(e0 * (1 + 2e-3), K, eps) > delta       # 0.2 % less private fails exactly


def _counting(monkeypatch):
    """The number of full (K > 1) and one-round queries a calibration makes."""
    seen = {"full": 0, "one": 0}
    orig = evaluate.delta_brackets

    def counted(model, eps, compositions=1, **kw):
        seen["full" if compositions > 1 else "one"] += 1
        return orig(model, eps, compositions, **kw)
    monkeypatch.setattr(calibrate.evaluate, "delta_brackets", counted)
    return seen


def test_ldp_shuffle_calibration_costs_at_most_four_full_queries(monkeypatch):
    """The calibration of the issue (n = 1e5, K = 100, (1, 1e-6)): a bisection over (0, 30]
    took 20 full queries, among them eps0 = 30, itself ~60x the cost of a query at the answer."""
    seen = _counting(monkeypatch)
    mech = sl.mechanism("ldp-shuffle")
    _, e0, d_up = calibrate.calibrate_mechanism(mech, "eps0", 1.0, 1e-6, {"n": 100000}, 100)
    assert seen["full"] <= 4, seen
    assert d_up <= 1e-6
    monkeypatch.undo()
    _, model = mech.model({"n": 100000, "eps0": e0 * (1 + 1e-3)}, 100)
    assert evaluate.delta_brackets(model, [1.0], 100)[0].upper > 1e-6


def test_least_n_of_a_composition_is_between_adjacent_integers(monkeypatch):
    seen = _counting(monkeypatch)
    mech = sl.mechanism("ldp-shuffle")
    _, n, d_up = calibrate.calibrate_mechanism(mech, "n", 1.0, 1e-6, {"eps0": 2.0}, 10)
    assert d_up <= 1e-6 and seen["full"] <= 6, seen
    monkeypatch.undo()
    _, model = mech.model({"n": n - 1, "eps0": 2.0}, 10)
    assert evaluate.delta_brackets(model, [1.0], 10)[0].upper > 1e-6


# ---- k-RR's --eps0, and --solve eps0 / scale for the randomisers ----

def test_krr_eps0_is_gamma_k_over_e_eps0_plus_k_minus_1(cli_json):
    eps0, k = 2.0, 4
    gamma = k / (math.exp(eps0) + k - 1)            # P[y = x] = e^eps0 / (e^eps0 + k - 1)
    a = cli_json("delta", "krr-strong", "--n", "500", "--eps0", str(eps0), "--k", str(k), "--eps", "0.5")
    b = cli_json("delta", "krr-strong", "--n", "500", "--gamma", repr(gamma), "--k", str(k), "--eps", "0.5")
    assert a["results"] == b["results"] and a["params"]["eps0"] == eps0
    assert a["params"]["gamma"] == pytest.approx(gamma, rel=1e-15)


@pytest.mark.parametrize("name", ["krr-strong", "krr-weak"])
def test_krr_solve_eps0_meets_and_matches_solve_gamma(name, cli_json):
    base = [name, "--n", "100", "--k", "4", "--eps", "1", "--delta", "1e-3", "--compositions", "2"]
    e = cli_json("calibrate", *base, "--solve", "eps0")
    g = cli_json("calibrate", *base, "--solve", "gamma")
    assert e["achieved"]["delta_upper"] <= 1e-3 and g["achieved"]["delta_upper"] <= 1e-3
    gamma_of_eps0 = 4 / (math.exp(e["value"]) + 3)
    assert gamma_of_eps0 == pytest.approx(g["value"], rel=1e-3)   # one answer, two spellings


@pytest.mark.parametrize("family, size", [("krr", ["--k", "4"]), ("sue", ["--d", "8"]), ("oue", ["--d", "8"]),
                                          ("olh", ["--d", "8"]), ("blh", ["--d", "8"]), ("hr", ["--d", "8"])])
def test_randomizer_families_solve_eps0(family, size, cli_json):
    base = ["randomizer", "--n", "1000", "--family", family, *size, "--eps", "1", "--delta", "1e-6"]
    out = cli_json("calibrate", *base, "--solve", "eps0")
    e0 = out["value"]
    assert out["achieved"]["delta_upper"] <= 1e-6
    again = sl.mechanism_brackets("randomizer", "delta", [1.0], 1, n=1000, family=family, eps0=e0,
                                  **{size[0][2:]: int(size[1])})
    assert again[0].upper <= 1e-6
    less = sl.mechanism_brackets("randomizer", "delta", [1.0], 1, n=1000, family=family,
                                 eps0=e0 * (1 + 1e-3), **{size[0][2:]: int(size[1])})
    assert less[0].upper > 1e-6


@pytest.mark.parametrize("args, needle", [
    (["--matrix", "M", "--solve", "eps0"], "--solve eps0 needs --family"),
    (["--noise", "gaussian", "--solve", "eps0"], "--solve eps0: a --noise randomiser has no eps0"),
    (["--family", "krr", "--k", "3", "--eps0", "1", "--solve", "scale"], "--solve scale needs --noise"),
    (["--family", "krr", "--k", "3", "--solve", "eps0", "--eps0", "1"], "give --eps0 no value"),
])
def test_randomizer_solve_refusals(args, needle, cli, tmp_path):
    f = tmp_path / "m.json"
    f.write_text(json.dumps({"matrix": [[0.75, 0.25], [0.25, 0.75]]}))
    args = [str(f) if x == "M" else x for x in args]
    r = cli("calibrate", "randomizer", "--n", "100", "--eps", "1", "--delta", "1e-6", *args)
    assert r.returncode == 2 and needle in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_noise_solve_scale_is_the_least_scale_that_meets(cli_json):
    out = cli_json("calibrate", "randomizer", "--noise", "laplace", "--n", "20", "--eps", "1",
                   "--delta", "1e-3", "--solve", "scale")
    b = out["value"]
    assert out["achieved"]["delta_upper"] <= 1e-3
    less = sl.mechanism_brackets("randomizer", "delta", [1.0], 1, n=20, noise="laplace", scale=b * (1 - 1e-3))
    assert less[0].upper > 1e-3


def test_krr_strong_calibration_takes_few_evaluations_in_mu_gdp_coordinates(monkeypatch):
    """krr-strong, n = 1e4, k = 4, K = 10, (1, 1e-6): each evaluation builds the k-RR PLD, one
    round or ten costing about the same; the secant on the mu-GDP distance (a slope carried from
    one round to K) takes at most 8 of them where the secant on log delta took 17."""
    seen = _counting(monkeypatch)
    mech = sl.mechanism("krr-strong")
    _, g, d_up = calibrate.calibrate_mechanism(mech, "gamma", 1.0, 1e-6, {"n": 10_000, "k": 4}, 10)
    assert seen["full"] + seen["one"] <= 8, seen
    assert d_up <= 1e-6
    monkeypatch.undo()
    _, model = mech.model({"n": 10_000, "k": 4, "gamma": g * (1 - 1e-3)}, 10)
    assert evaluate.delta_brackets(model, [1.0], 10)[0].upper > 1e-6
