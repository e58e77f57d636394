"""The claims ledger (claims.csv): well-formed, and every entry points at something that exists."""

import ast
import csv
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
STATUSES = {"reproduced", "refuted", "ambiguous", "out-of-scope"}
SEEDS = {"000", "001", "002", "003", "004"}


def rows():
    with open(ROOT / "claims.csv", newline="") as f:
        return list(csv.DictReader(f))


def _test_exists(path, name):
    tree = ast.parse((ROOT / path).read_text())
    return any(isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == name for n in ast.walk(tree))


def _label_exists(path, label):
    text = (ROOT / path).read_text()
    return bool(re.search(rf"^\({re.escape(label)}\)=\s*$", text, re.M)
                or re.search(rf":label:\s*{re.escape(label)}\s*$", text, re.M)
                or re.search(rf"name:\s*{re.escape(label)}\s*$", text, re.M))


def test_header_and_values():
    rs = rows()
    assert rs, "the ledger is empty"
    assert list(rs[0].keys()) == ["seed", "item", "status", "settled_by", "note"]
    for r in rs:
        assert r["seed"] in SEEDS, r
        assert r["status"] in STATUSES, r
        assert r["item"].strip() and r["settled_by"].strip(), r


@pytest.mark.parametrize("row", rows(), ids=lambda r: f"{r['seed']}:{r['item'][:40]}")
def test_settled_by_exists(row):
    ref = row["settled_by"].strip()
    if "::" in ref:
        path, name = ref.split("::", 1)
        name = name.split("[")[0]
        assert (ROOT / path).exists(), f"{path} does not exist"
        assert _test_exists(path, name), f"{path} has no test {name}"
    else:
        path, _, label = ref.partition("#")
        assert (ROOT / path).exists(), f"{path} does not exist"
        if label:
            assert _label_exists(path, label), f"{path} has no label {label}"
