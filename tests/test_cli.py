"""The CLI contract of issue 2: JSON shape, brackets around exact values, clean errors."""

import json

import numpy as np
import pytest

import exact_oracle as oracle
import shuffle_lib as sl


def test_delta_rr_json_brackets_the_binomial_sum(cli):
    r = cli("delta", "rr", "--eps0", "1", "--eps", "0.5", "--compositions", "10", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert set(out) == {"mechanism", "params", "compositions", "results", "seconds"}
    assert out["mechanism"] == "rr" and out["params"] == {"eps0": 1.0} and out["compositions"] == 10
    (res,) = out["results"]
    assert set(res) == {"eps", "delta_lower", "delta_upper", "accuracy_met", "half_width", "limit"}
    exact = sl.rr_delta_exact(1.0, 0.5, 10)
    assert res["delta_lower"] <= exact <= res["delta_upper"]


def test_epsilon_custom_json_brackets_the_exact_value(tmp_path, cli):
    rng = np.random.default_rng(5)
    p, q = rng.dirichlet(np.ones(3)), rng.dirichlet(np.ones(3))
    f = tmp_path / "pair.json"
    f.write_text(json.dumps({"p": p.tolist(), "q": q.tolist()}))
    r = cli("epsilon", "custom", "--pmfs", str(f), "--delta", "1e-3", "1e-6", "--compositions", "4", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    for res in out["results"]:
        assert set(res) == {"delta", "eps_lower", "eps_upper", "accuracy_met", "half_width", "limit"}
        exact = oracle.epsilon(p, q, 4, res["delta"])
        assert res["eps_lower"] <= exact <= res["eps_upper"]


def test_custom_delta_brackets_exact(tmp_path, cli):
    p, q = [0.5, 0.3, 0.2, 0.0], [0.25, 0.25, 0.25, 0.25]
    f = tmp_path / "pair.json"
    f.write_text(json.dumps({"p": p, "q": q}))
    out = json.loads(cli("delta", "custom", "--pmfs", str(f), "--eps", "0", "1", "--compositions", "3", "--json").stdout)
    for res in out["results"]:
        exact = oracle.delta(np.array(p), np.array(q), 3, res["eps"])
        assert res["delta_lower"] <= exact <= res["delta_upper"]


def test_table_output(cli):
    r = cli("delta", "rr", "--eps0", "1", "--eps", "0.5", "1")
    assert r.returncode == 0 and "delta_lower" in r.stdout and r.stdout.count("\n") >= 4


def test_infinite_eps_is_null(tmp_path, cli):
    f = tmp_path / "pair.json"
    f.write_text(json.dumps({"p": [0.5, 0.5], "q": [1.0, 0.0]}))
    out = json.loads(cli("epsilon", "custom", "--pmfs", str(f), "--delta", "0.1", "--json").stdout)
    assert out["results"][0]["eps_upper"] is None


@pytest.mark.parametrize("args, needle", [
    (["delta", "rr", "--eps0", "-1", "--eps", "1"], "eps0"),
    (["delta", "rr", "--eps0", "nan", "--eps", "1"], "eps0"),
    (["delta", "rr", "--eps0", "1", "--eps", "-1"], "eps"),
    (["epsilon", "rr", "--eps0", "1", "--delta", "2"], "delta"),
    (["delta", "rr", "--eps0", "1", "--eps", "1", "--compositions", "0"], "compositions"),
    (["delta", "rr", "--eps"], "expected"),
    (["delta", "nosuch", "--eps", "1"], "invalid choice"),
    (["delta", "custom", "--pmfs", "/nonexistent.json", "--eps", "1"], "cannot read"),
    (["delta", "rr", "--eps0", "1", "--eps", "1", "--accuracy", "0"], "accuracy"),
])
def test_bad_input_exits_2_with_one_line(args, needle, cli):
    r = cli(*args)
    assert r.returncode == 2
    assert r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in r.stderr


@pytest.mark.parametrize("content, needle", [
    ("{not json", "not valid JSON"),
    ('{"p": [0.5, 0.5]}', "must hold an object"),
    ('{"p": [0.5, 0.6], "q": [0.5, 0.5]}', "sum to 1"),
    ('{"p": [0.5, 0.5], "q": [0.2, 0.3, 0.5]}', "same length"),
])
def test_bad_pmf_files(tmp_path, content, needle, cli):
    f = tmp_path / "bad.json"
    f.write_text(content)
    r = cli("delta", "custom", "--pmfs", str(f), "--eps", "1")
    assert r.returncode == 2 and needle in r.stderr and len(r.stderr.strip().splitlines()) == 1
