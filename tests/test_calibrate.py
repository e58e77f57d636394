"""Calibration (issue 8, item 1): the least private setting that meets (eps, delta) by the upper bound."""

import json
import math

import pytest

import shuffle_lib as sl
from shuffle_lib.core import calibrate
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
    (["calibrate", "rr", "--eps", "1", "--delta", "1e-6", "--solve", "gamma"], "no parameter --gamma"),
    (["calibrate", "rr", "--eps", "1", "--delta", "2", "--solve", "eps0"], "delta must lie in"),
    (["calibrate", "rr", "--eps", "1", "--delta", "1e-6", "--solve", "sigma"], "no parameter --sigma"),
])
def test_cli_errors(args, needle, cli):
    r = cli(*args)
    assert r.returncode == 2 and needle in r.stderr and len(r.stderr.strip().splitlines()) == 1
