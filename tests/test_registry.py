"""One contract over every registered mechanism: the CLI answers all four verbs from the
declaration, agrees with the library's evaluation of the same build, calibrates only declared privacy
settings, and refuses what it cannot do with one clear line."""

import json
import math
import subprocess
import sys

import mpmath
import pytest

import shuffle_lib as sl
from shuffle_lib import cli, mechanisms
from shuffle_lib.core import evaluate, registry
from shuffle_lib.mechanisms import clones, krr

NAMES = [n for n in sl.mechanism_names() if sl.mechanism(n).example]


def _argv(mech, values):
    out = []
    for k, val in values.items():
        out += [mech.param(k).option, str(val)]
    return out


def test_every_mechanism_has_an_example_but_custom():
    assert set(sl.mechanism_names()) - set(NAMES) == {"custom"}     # custom needs a file: tested in test_cli
    for name in sl.mechanism_names():
        mech = sl.mechanism(name)
        assert mech.summary and mech.source and mech.params, name


def test_help_lists_the_four_verbs_and_every_mechanism():
    r = subprocess.run([sys.executable, "-m", "shuffle_lib", "--help"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0
    for verb in ("delta", "epsilon", "calibrate", "rdp"):
        assert verb in r.stdout
    r = subprocess.run([sys.executable, "-m", "shuffle_lib", "rdp", "--help"], capture_output=True, text=True,
                       timeout=120)
    for name in sl.mechanism_names():
        assert name in r.stdout


@pytest.mark.parametrize("name", NAMES)
def test_delta_and_epsilon_agree_with_the_library(name):
    mech = sl.mechanism(name)
    _, out = cli.run(["delta", name, *_argv(mech, mech.example), "--eps", "0.5", "1.5", "--compositions", "2"])
    params, model = mech.model(mech.example, compositions=2)
    lib = evaluate.delta_brackets(model, [0.5, 1.5], 2)
    assert [(r["delta_lower"], r["delta_upper"]) for r in out["results"]] == [tuple(b) for b in lib]
    for r in out["results"]:
        assert 0.0 <= r["delta_lower"] <= r["delta_upper"] <= 1.0
    assert out["results"][1]["delta_upper"] <= out["results"][0]["delta_upper"]      # delta decreases in eps
    d = max(out["results"][0]["delta_upper"], 1e-12)
    _, out = cli.run(["epsilon", name, *_argv(mech, mech.example), "--delta", str(d), "--compositions", "2"])
    r = out["results"][0]
    assert r["eps_lower"] is not None and r["eps_lower"] <= 0.5 + 1e-6     # eps(delta(0.5)) <= 0.5
    assert out["params"] == params


@pytest.mark.parametrize("name", NAMES)
def test_rdp_brackets_are_ordered(name):
    mech = sl.mechanism(name)
    _, out = cli.run_rdp([name, *_argv(mech, mech.example), "--order", "2", "4"])
    for r in out["results"]:
        lo, hi = (math.inf if x is None else x for x in (r["rdp_lower"], r["rdp_upper"]))   # null: +inf
        assert 0.0 <= lo <= hi * (1 + 1e-12), (name, r)


@pytest.mark.parametrize("name", NAMES)
def test_calibrate_each_declared_privacy_setting(name):
    """The solved value meets the target by the upper bound; one step less private does not (or is
    the end of the range)."""
    mech = sl.mechanism(name)
    for p in mech.privacy_settings:
        spellings = {x.name for x in cli._related(mech, mech.param(p))}   # --eps0 is also --gamma
        fixed = {k: val for k, val in mech.example.items() if k not in spellings}
        if mech.calibration_range is not None:
            try:
                mech.calibration_range(p, fixed)
            except ValueError as err:            # a setting that does not apply to the example
                assert f"--solve {p.replace('_', '-')}" in str(err), err
                continue
        _, base = cli.run(["delta", name, *_argv(mech, mech.example), "--eps", "1"])
        target = min(max(base["results"][0]["delta_upper"], 1e-10), 0.5)
        _, out = cli.run_calibrate([name, *_argv(mech, fixed), "--eps", "1", "--delta", str(target), "--solve", p])
        value = out["value"]
        assert out["achieved"]["delta_upper"] <= target
        params, model = mech.model(dict(fixed, **{p: value}))
        assert evaluate.delta_brackets(model, [1.0])[0].upper <= target
        param = mech.param(p)
        step = (1 if param.kind is int else value * 1e-3) * (1 if param.more_private == "down" else -1)
        less = value + step
        try:
            _, model = mech.model(dict(fixed, **{p: less}))
        except ValueError:
            continue                                   # the least private end of the range
        assert evaluate.delta_brackets(model, [1.0])[0].upper > target, (name, p, value)


@pytest.mark.parametrize("args, needle", [
    (["calibrate", "bitflip", "--n", "50", "--q", "0.2", "--eps", "1", "--delta", "1e-3", "--solve", "m"],
     "not a privacy setting"),
    (["calibrate", "krr-strong", "--n", "50", "--gamma", "0.5", "--eps", "1", "--delta", "1e-3", "--solve", "k"],
     "not a privacy setting"),
    (["calibrate", "rr", "--eps0", "1", "--eps", "1", "--delta", "1e-3", "--solve", "eps0"], "give --eps0 no value"),
    (["calibrate", "krr-strong", "--k", "4", "--eps", "1", "--delta", "1e-3", "--solve", "n"], "needs --gamma"),
    (["delta", "krr-strong", "--n", "1", "--gamma", "0.5", "--k", "4", "--eps", "1"], "n must"),
    (["delta", "ldp-shuffle", "--n", "10", "--eps0", "31", "--eps", "1"], "eps0 must"),
    (["delta", "bitflip", "--n", "10", "--q", "0.1", "--m", "12", "--eps", "1"], "m must"),
])
def test_refusals_are_one_clear_line(args, needle):
    r = subprocess.run([sys.executable, "-m", "shuffle_lib", *args], capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and needle in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_histogram_calibrates_n_above_n_x0():
    """The global range used to start below n_x0; the declared range starts at n_x0 + 1."""
    _, out = cli.run_calibrate(["histogram-krr", "--n-x0", "5", "--k", "4", "--eps0", "1", "--eps", "1",
                                "--delta", "1e-2", "--solve", "n"])
    assert out["value"] > 5 and out["achieved"]["delta_upper"] <= 1e-2


def test_library_and_cli_share_the_krr_route():
    """krr.delta_bracket and the CLI's krr-strong give the same brackets (one code path)."""
    lib = krr.delta_bracket("strong", 200, 0.3, 4, [0.5, 1.0], compositions=3)
    _, out = cli.run(["delta", "krr-strong", "--n", "200", "--gamma", "0.3", "--k", "4", "--eps", "0.5", "1.0",
                      "--compositions", "3"])
    assert [(r["delta_lower"], r["delta_upper"]) for r in out["results"]] == [tuple(b) for b in lib]
    lib = clones.epsilon_bracket(300, 1.0, [1e-6], compositions=4)
    _, out = cli.run(["epsilon", "ldp-shuffle", "--n", "300", "--eps0", "1", "--delta", "1e-6", "--compositions", "4"])
    assert (out["results"][0]["eps_lower"], out["results"][0]["eps_upper"]) == tuple(lib[0])


def test_mechanism_brackets_is_the_cli():
    got = sl.mechanism_brackets("krr-weak", "epsilon", [1e-6], 4, n=60, gamma=0.4, k=3)
    _, out = cli.run(["epsilon", "krr-weak", "--n", "60", "--gamma", "0.4", "--k", "3", "--delta", "1e-6",
                      "--compositions", "4"])
    assert (out["results"][0]["eps_lower"], out["results"][0]["eps_upper"]) == tuple(got[0])


def _rr_exact(eps0, K, eps):
    """Tight delta(eps) of K rounds of binary randomised response, by the binomial sum over the
    number of truthful reports (mpmath, 60 digits); both directions are equal by symmetry."""
    with mpmath.workdps(60):
        a = 1 / (1 + mpmath.exp(-mpmath.mpf(eps0)))
        e = mpmath.exp(mpmath.mpf(eps))
        return mpmath.fsum(mpmath.binomial(K, i) * max(a ** i * (1 - a) ** (K - i) - e * a ** (K - i) * (1 - a) ** i, 0)
                           for i in range(K + 1))


def _rr_rdp_exact(eps0, K, lam):
    """K D_lam(P||Q) of binary randomised response (additive over rounds), mpmath."""
    with mpmath.workdps(60):
        a = 1 / (1 + mpmath.exp(-mpmath.mpf(eps0)))
        lam = mpmath.mpf(lam)
        return K * mpmath.log(a ** lam * (1 - a) ** (1 - lam) + (1 - a) ** lam * a ** (1 - lam)) / (lam - 1)


def test_the_cli_against_an_independent_computation(cli_json):
    """delta, epsilon and rdp of K rounds of rr from the command line bracket the exact values,
    computed here by the binomial sum and the closed-form Renyi divergence (no library call), and
    the JSON equals mechanism_brackets for each verb."""
    eps0, K = 0.8, 5
    out = cli_json("delta", "rr", "--eps0", str(eps0), "--eps", "0.3", "1.2", "--compositions", str(K))
    lib = sl.mechanism_brackets("rr", "delta", [0.3, 1.2], K, eps0=eps0)
    assert [(r["delta_lower"], r["delta_upper"]) for r in out["results"]] == [tuple(b) for b in lib]
    for r in out["results"]:
        exact = _rr_exact(eps0, K, r["eps"])
        assert r["delta_lower"] <= exact * (1 + 1e-12) and exact <= r["delta_upper"] * (1 + 1e-12), (r, exact)
    delta = 1e-3
    out = cli_json("epsilon", "rr", "--eps0", str(eps0), "--delta", str(delta), "--compositions", str(K))
    lib = sl.mechanism_brackets("rr", "epsilon", [delta], K, eps0=eps0)
    r = out["results"][0]
    assert (r["eps_lower"], r["eps_upper"]) == tuple(lib[0])
    lo, hi = 0.0, K * eps0                       # exact delta is decreasing in eps: bisect it
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if _rr_exact(eps0, K, mid) > delta else (lo, mid)
    assert r["eps_lower"] <= hi and lo <= r["eps_upper"], (r, lo, hi)
    orders = [2.0, 8.0]
    out = cli_json("rdp", "rr", "--eps0", str(eps0), "--order", *map(str, orders))
    lib = sl.mechanism_brackets("rr", "rdp", orders, 1, eps0=eps0)
    assert [(r["rdp_lower"], r["rdp_upper"]) for r in out["results"]] == [tuple(b) for b in lib]
    composed = sl.mechanism_brackets("rr", "rdp", orders, K, eps0=eps0)
    for lam, one, many in zip(orders, lib, composed):
        for k, b in ((1, one), (K, many)):
            exact = _rr_rdp_exact(eps0, k, lam)
            assert b.lower <= exact * (1 + 1e-12) and exact <= b.upper * (1 + 1e-12), (lam, k, b, exact)



def test_unknown_mechanism_and_parameter():
    with pytest.raises(ValueError, match="mechanism must be one of"):
        mechanisms.get("nosuch")
    with pytest.raises(ValueError, match="no parameter --sigma"):
        sl.mechanism("rr").param("sigma")
    with pytest.raises(ValueError, match="needs --eps0"):
        sl.mechanism("rr").checked({})


def test_json_output_is_the_contract():
    r = subprocess.run([sys.executable, "-m", "shuffle_lib", "delta", "krr-weak", "--n", "40", "--gamma", "0.5",
                        "--k", "3", "--eps", "1", "--json"], capture_output=True, text=True, timeout=300)
    out = json.loads(r.stdout)
    assert set(out) == {"mechanism", "params", "compositions", "results", "seconds"}
    assert set(out["results"][0]) == {"eps", "delta_lower", "delta_upper", "accuracy_met", "half_width",
                                      "limit"}
    assert math.isfinite(out["results"][0]["delta_upper"])


def test_the_readme_example_mechanism_works_everywhere():
    """The README's 'Adding a mechanism' example, executed as written: the four verbs answer for it."""
    import pathlib
    import re
    readme = (pathlib.Path(__file__).resolve().parent.parent / "README.md").read_text()
    code = re.search(r"## Adding a mechanism.*?```python\n(.*?)```", readme, re.S).group(1)
    try:
        exec(compile(code, "README.md", "exec"), {})
        _, out = cli.run(["epsilon", "clipped-geometric", "--alpha", "0.5", "--m", "10", "--delta", "1e-6",
                          "--compositions", "50"])
        r = out["results"][0]
        assert 0 < r["eps_lower"] <= r["eps_upper"]
        _, out = cli.run_rdp(["clipped-geometric", "--alpha", "0.5", "--m", "10", "--order", "2"])
        assert out["results"][0]["rdp_upper"] > 0
        _, out = cli.run_calibrate(["clipped-geometric", "--m", "10", "--eps", "1", "--delta", "1e-6",
                                    "--compositions", "5", "--solve", "alpha"])
        assert out["achieved"]["delta_upper"] <= 1e-6
    finally:
        registry.REGISTRY.pop("clipped-geometric", None)
