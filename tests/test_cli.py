"""The CLI contract: JSON shape, brackets around exact values, clean errors."""

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


# ---- the command line's own words: help, the parameter line, CSV, rdp of K rounds ----

def _option_helps(parser):
    """(option, help) of every option of every verb's every mechanism parser."""
    import argparse
    for verb_action in parser._subparsers._group_actions:
        for verb, vp in verb_action.choices.items():
            for mech_action in vp._subparsers._group_actions:
                for name, mp in mech_action.choices.items():
                    for act in mp._actions:
                        if act.option_strings and not isinstance(act, argparse._HelpAction):
                            text = mp._get_formatter()._expand_help(act) if act.help else ""
                            yield f"{verb} {name} {act.option_strings[0]}", text


def test_every_option_has_help_and_no_placeholder_default():
    from shuffle_lib import cli
    seen = 0
    for where, text in _option_helps(cli._parser()):
        seen += 1
        assert text.strip(), f"{where} has no help text"
        assert "(default )" not in text, where
        assert text.count("default") <= 1, f"{where} names its default twice: {text}"
    assert seen > 100
    for name in sl.mechanism_names():           # a default that means "not given" is not shown
        for p in sl.mechanism(name).params:
            if p.placeholder:
                assert "(default" not in cli._help(p), (name, p.name)


def test_parameter_line_is_name_value_pairs(cli):
    r = cli("delta", "randomizer", "--n", "100", "--family", "krr", "--k", "3", "--eps0", "1", "--eps", "0.5")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == "randomizer n=100 family=krr k=3 eps0=1 compositions=1"
    r = cli("delta", "ldp-shuffle", "--n", "1e4", "--eps0", "2", "--eps", "0.5")
    assert r.stdout.splitlines()[0] == "ldp-shuffle n=10000 eps0=2 pair=fmt21 compositions=1"


def test_csv_has_a_header_and_one_row_per_target(cli, cli_json):
    args = ["delta", "rr", "--eps0", "1", "--eps", "0.2", "0.5", "1", "--compositions", "3"]
    r = cli(*args, "--csv")
    assert r.returncode == 0, r.stderr
    rows = [line.split(",") for line in r.stdout.strip().splitlines()]
    assert rows[0][:3] == ["eps", "delta_lower", "delta_upper"] and len(rows) == 4
    assert rows[0][3:] == ["accuracy_met", "half_width", "limit"]   # the accuracy contract
    js = cli_json(*args)["results"]
    assert [[float(x) for x in row[:3]] for row in rows[1:]] == [[j["eps"], j["delta_lower"], j["delta_upper"]] for j in js]
    assert [row[3] for row in rows[1:]] == [str(j["accuracy_met"]).lower() for j in js]


def test_rdp_of_k_rounds_is_k_times_one(cli_json):
    one = cli_json("rdp", "rr", "--eps0", "0.7", "--order", "2", "5")
    many = cli_json("rdp", "rr", "--eps0", "0.7", "--order", "2", "5", "--compositions", "7")
    assert "compositions" not in one and many["compositions"] == 7
    for a, b in zip(one["results"], many["results"]):
        assert b["rdp_lower"] == 7 * a["rdp_lower"] and b["rdp_upper"] == 7 * a["rdp_upper"]
    eps0 = 0.7
    p = 1 / (1 + np.exp(-eps0))
    exact2 = 7 * np.log(p ** 2 / (1 - p) + (1 - p) ** 2 / p)        # 7 D_2 of binary RR
    assert many["results"][0]["rdp_lower"] <= exact2 * (1 + 1e-12) and exact2 <= many["results"][0]["rdp_upper"] * (1 + 1e-12)


def test_an_infinite_eps0_says_which_entry(tmp_path, cli):
    f = tmp_path / "m.json"
    f.write_text(json.dumps({"matrix": [[0.5, 0.3, 0.2, 0.0], [0.1, 0.2, 0.3, 0.4]]}))
    r = cli("epsilon", "randomizer", "--matrix", str(f), "--n", "100", "--delta", "1e-6")
    assert r.returncode == 0, r.stderr
    assert "row 1 has a zero in column 4 where row 2 has mass 0.4, so no finite eps0 holds" in r.stdout


def test_messages_show_numbers_not_numpy_reprs():
    from shuffle_lib import cli
    msg = cli.user_words("eps0 must lie in (0, 30], got eps0=np.float64(31.5) and np.int64(3).", ["delta", "rr"])
    assert msg == "--eps0 must lie in (0, 30], got --eps0=31.5 and 3."
