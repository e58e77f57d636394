"""The claims ledger (claims.csv): well-formed, every entry points at something that exists,
and every numbered result of the five seeds has an entry.

The numbered results are listed in tests/seed_results.csv (seed, result, the seed lines that
state it, a summary).  That index is checked against the seed texts when they are present
(../shared/seeds next to the repository, or $SHUFFLE_SEEDS): each listed line states the
result, and every line that opens a theorem, lemma, corollary, proposition, remark,
definition, algorithm, property or result, or captions a table or figure, is listed.
Definitions need no ledger entry (they claim nothing); every other result does.
"""

import ast
import csv
import os
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
STATUSES = {"reproduced", "refuted", "ambiguous", "out-of-scope"}
SEEDS = {"000", "001", "002", "003", "004"}
LITERATURE = "lit"   # claims of papers beyond the seeds that a chapter checks (e.g. chapter 10's peers)
CHECKS = {
    "symbolic": "sympy proves the identity",
    "library": "sympy or mpmath against the library's function, over a grid",
    "exhaustive": "an enumeration of every case up to a size",
    "numeric": "a grid or a sample: evidence, not a proof",
    "search": "an adversarial search: no counterexample found, not a proof",
    "none": "nothing to check (an out-of-scope notation table, parameter list or diagram)",
}
"""The kinds of check (column ``check``): what kind of evidence settles the entry."""


def rows():
    with open(ROOT / "claims.csv", newline="") as f:
        return list(csv.DictReader(f))


def index():
    with open(ROOT / "tests" / "seed_results.csv", newline="") as f:
        return list(csv.DictReader(f))


SEED_DIRS = (os.environ.get("SHUFFLE_SEEDS"), ROOT.parent / "shared" / "seeds")
"""Where the seed texts are looked for: $SHUFFLE_SEEDS, then ../shared/seeds beside the repository."""


def _seed_dir():
    for d in SEED_DIRS:
        if d and pathlib.Path(d).is_dir():
            return pathlib.Path(d)
    return None


def _seed_lines(seed):
    (path,) = _seed_dir().glob(f"{seed}_*.txt")
    return path.read_text().splitlines()


_KIND = r"(Theorem|Lemma|Corollary|Proposition|Definition|Remark|Algorithm|Property|Result)"
_NUM = r"((?:[A-Z]{1,3}\.)?[0-9IVX]+(?:\.[0-9]+)?)"
_OPENS = re.compile(rf"^(?:\*\*|#+ )?{_KIND} {_NUM}(?:\.|:|\*\*| \(| The )")
_CAPTION = re.compile(rf"^(?:\*\*)?(?:TABLE|Table|Fig\.|Figure) {_NUM}(?:\*\*)?:")
_SPELLING = {"Figure": r"(?:Fig\.|Figure)", "Table": r"(?:Table|TABLE)"}


def _pattern(result):
    """The seed's spelling of an index label, qualifier '(Sec. 2)' dropped: 'Figure 4' -> Fig. 4 or Figure 4."""
    kind, num = result.split(" (")[0].split(" ", 1)
    return re.compile(rf"(?:^|\W){_SPELLING.get(kind, kind)} {re.escape(num)}(?![0-9.]?[0-9])")


def _key(seed, result):
    return f"{seed}:{result}"


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
    assert list(rs[0].keys()) == ["seed", "item", "status", "settled_by", "results", "note", "check", "box"]
    for r in rs:
        # box: the names of the chapters' claim boxes that state the entry (tests/test_claim_status.py)
        assert all(re.fullmatch(r"[a-z][a-z0-9-]*", b) for b in r["box"].split(";") if b), r
        assert r["seed"] in SEEDS | {LITERATURE}, r
        assert r["status"] in STATUSES, r
        assert r["check"] in CHECKS, r
        assert (r["check"] == "none") <= (r["status"] == "out-of-scope"), r   # every claim is checked somehow
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


def test_index_is_well_formed():
    idx = index()
    keys = [_key(r["seed"], r["result"]) for r in idx]
    assert len(keys) == len(set(keys)), "duplicate results in tests/seed_results.csv"
    for r in idx:
        assert r["seed"] in SEEDS and r["summary"].strip(), r
        assert all(x.isdigit() for x in r["lines"].split(";")), r
    assert {r["seed"] for r in idx} == SEEDS


def test_every_numbered_result_has_an_entry():
    covered = {k.strip() for r in rows() for k in r["results"].split(";") if k.strip()}
    missing = [_key(r["seed"], r["result"]) for r in index()
               if not r["result"].startswith("Definition") and _key(r["seed"], r["result"]) not in covered]
    assert not missing, f"numbered results with no ledger entry: {missing}"


def test_entries_name_indexed_results():
    known = {_key(r["seed"], r["result"]) for r in index()}
    unknown = [k for r in rows() for k in r["results"].split(";") if k.strip() and k.strip() not in known]
    assert not unknown, f"ledger entries name results that are not in tests/seed_results.csv: {unknown}"


@pytest.mark.skipif(_seed_dir() is None, reason="seed texts (NNN_*.txt) not found in $SHUFFLE_SEEDS or "
                    f"{ROOT.parent / 'shared' / 'seeds'}: set SHUFFLE_SEEDS to the folder holding them")
@pytest.mark.parametrize("seed", sorted(SEEDS))
def test_index_matches_the_seed_text(seed):
    lines = _seed_lines(seed)
    mine = [r for r in index() if r["seed"] == seed]
    for r in mine:                                         # each listed line states the result
        for ln in map(int, r["lines"].split(";")):
            assert _pattern(r["result"]).search(lines[ln - 1]), (r["result"], ln, lines[ln - 1][:80])
    listed = {int(x) for r in mine for x in r["lines"].split(";")}
    opening = [i for i, text in enumerate(lines, 1) if _OPENS.match(text) or _CAPTION.match(text)]
    unlisted = [(i, lines[i - 1][:60]) for i in opening if i not in listed]
    assert not unlisted, f"seed {seed}: numbered results missing from tests/seed_results.csv: {unlisted}"


def test_mutation_table_is_well_formed():
    """tests/mutations.csv (the mutation audit's table): each row names one ledger entry (its item,
    or the start of it), a library function that exists, and a mutation in the plugin's language."""
    import mutation_plugin   # tests/ is on sys.path (conftest.py)

    with open(ROOT / "tests" / "mutations.csv", newline="") as f:
        table = list(csv.DictReader(f))
    assert table and list(table[0].keys()) == ["entry", "target", "mutation", "why"]
    items = [r["item"] for r in rows()]
    for m in table:
        hits = [i for i in items if i == m["entry"]] or [i for i in items if i.startswith(m["entry"])]
        assert len(hits) == 1, (m["entry"], len(hits))
        assert callable(mutation_plugin.resolve(m["target"])), m
        mutation_plugin.parse(m["mutation"])
        assert m["why"].strip(), m


def test_mutation_plugin_mutates_every_reference():
    """The plugin's code swap reaches a function through every name it is imported under, and its
    mutations do what the table says (scale, an item, an argument, reverse, scale per argument)."""
    import mutation_plugin
    from shuffle_lib.mechanisms.mixnet import bitflip
    from shuffle_lib.mechanisms.mixnet.bitflip import seed_q_lemma45

    want = bitflip.seed_q_lemma45(1000, 1.0, 1e-6)
    code = bitflip.seed_q_lemma45.__code__
    try:
        mutation_plugin.install("shuffle_lib.mechanisms.mixnet.bitflip:seed_q_lemma45", "scale 0.5")
        assert seed_q_lemma45(1000, 1.0, 1e-6) == pytest.approx(want / 2, rel=1e-15)
    finally:
        bitflip.seed_q_lemma45.__code__ = code
    assert seed_q_lemma45(1000, 1.0, 1e-6) == want
    f = lambda x, n=2: (x, 10 * x)  # noqa: E731
    assert mutation_plugin.mutant(f, "item[1] add 1")(1.0) == (1.0, 11.0)
    assert mutation_plugin.mutant(f, "arg[x] scale 3")(1.0) == (3.0, 30.0)
    assert mutation_plugin.mutant(f, "reverse")(1.0) == (10.0, 1.0)
    assert mutation_plugin.mutant(f, "scale 2 per n")(1.0, n=3) == (8.0, 80.0)
    assert mutation_plugin.mutant(lambda: {"a": 1, "b": 2}, "item[a] copy b")() == {"a": 2, "b": 2}
    with pytest.raises(ValueError, match="mutation"):
        mutation_plugin.parse("double it")


def test_verify_finds_a_claims_entries_and_every_cited_test_exists():
    """``python -m tests.verify CLAIM`` runs the tests an entry cites (settled_by and note): each must
    exist, or the command would report it as not collected; a claim finds its entries by item or
    numbered result."""
    import verify   # tests/ is on sys.path (conftest.py)

    for r in rows():
        for ref in verify.tests_of(r):
            path, name = ref.split("::")
            assert (ROOT / path).exists() and _test_exists(path, name), (r["item"][:50], ref)
    prop = verify.matching("Proposition 4.1", rows())
    assert any(r["item"].startswith("Proposition 4.1 (eq. 4.6)") for r in prop)
    assert verify.matching("004:Lemma 4.5", rows()) and not verify.matching("no such claim", rows())
    assert verify.main(["no such claim"]) == 2                   # one line naming the argument, exit 2
