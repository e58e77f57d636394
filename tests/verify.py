"""Verify a claim of the ledger with one command: its entries' checks, in one pytest process.

    python -m tests.verify "Proposition 4.1"            # or: make verify CLAIM="Proposition 4.1"
    python -m tests.verify "Lemma B.1" --chapters        # also compare the chapters the entries cite

The claim is matched, ignoring case, against each entry's item and its numbered results
(``claims.csv`` columns ``item`` and ``results``, e.g. ``004:Proposition 4.1``).  An entry's
checks are the test in its ``settled_by`` and every test its note names
(``tests/test_x.py::test_y``).  A chapter section (``chapters/NN_slug.md#label``) is checked by
the chapter build: ``--chapters`` executes the chapter and compares its outputs with
``tests/notebooks/NN_slug.ipynb`` (the test the full run uses), which takes a minute or more.
Prints, per entry: its status, the kind of its check (column ``check``) and the result of its
checks.  Exit 0 when every check ran and passed, 1 when one failed, 2 when no entry matches.
"""

from __future__ import annotations

import argparse
import csv
import os
import pathlib
import re
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
TEST_REF = re.compile(r"tests/test_[0-9a-z_]+\.py::[A-Za-z_][A-Za-z0-9_]*")
CHAPTER_REF = re.compile(r"chapters/[0-9a-z_]+\.md(?:#[0-9a-z-]+)?")


def rows() -> list[dict]:
    with open(ROOT / "claims.csv", newline="") as f:
        return list(csv.DictReader(f))


def matching(claim: str, entries: list[dict]) -> list[dict]:
    """The entries whose item or numbered results contain ``claim`` (case ignored)."""
    c = claim.lower()
    return [r for r in entries if c in r["item"].lower() or c in r["results"].lower()]


def tests_of(row: dict) -> list[str]:
    """The test node ids an entry cites: its settled_by (when a test) and the tests its note names."""
    refs = [row["settled_by"].strip()] if "::" in row["settled_by"] else []
    refs += TEST_REF.findall(row["note"])
    return list(dict.fromkeys(refs))


def chapters_of(row: dict) -> list[str]:
    """The chapter sections an entry cites (settled_by first), as ``chapters/NN_slug.md#label``."""
    refs = [row["settled_by"].strip()] if row["settled_by"].startswith("chapters/") else []
    refs += CHAPTER_REF.findall(row["note"])
    return list(dict.fromkeys(refs))


def notebook_test(chapter_ref: str) -> str:
    """The test that compares a chapter's outputs with its executed copy (tests/conftest.py)."""
    stem = pathlib.Path(chapter_ref.partition("#")[0]).stem
    return f"tests/notebooks/{stem}.ipynb::outputs"


class _Outcomes:
    """pytest plugin: the outcome of every node, and the call's duration."""

    def __init__(self):
        self.by_node: dict[str, str] = {}

    def pytest_runtest_logreport(self, report):
        if report.failed:
            self.by_node[report.nodeid] = "failed"
        elif report.when == "call" or (report.skipped and report.nodeid not in self.by_node):
            self.by_node.setdefault(report.nodeid, "passed" if report.passed else "skipped")


def run(node_ids: list[str], extra: list[str] | None = None) -> dict[str, str]:
    """Run the node ids in this process (one pytest session); outcome per node id given."""
    import pytest

    plugin = _Outcomes()
    os.chdir(ROOT)
    pytest.main(["-q", "-p", "no:xdist", "-p", "no:randomly", *(extra or []), *node_ids], plugins=[plugin])
    out = {}
    for ref in node_ids:
        hits = [o for nid, o in plugin.by_node.items() if nid == ref or nid.startswith(ref + "[")]
        out[ref] = ("not collected" if not hits else "failed" if "failed" in hits
                    else "passed" if "passed" in hits else "skipped")
    return out


def verdict(results: list[str], chapters: list[str]) -> str:
    if not results:
        return "checked by the chapter build (not run here)" if chapters else "no check cited"
    for word in ("failed", "not collected", "skipped"):
        if word in results:
            return word.upper() if word == "failed" else word
    return "passed"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.verify", description=__doc__.split("\n")[0])
    ap.add_argument("claim", help="text of the claim, e.g. 'Proposition 4.1' or '004:Lemma 4.5'")
    ap.add_argument("--chapters", action="store_true",
                    help="also execute the cited chapters and compare their outputs (slow)")
    args = ap.parse_args(argv)
    if not args.claim.strip():
        ap.error("argument claim: must not be empty")
    entries = matching(args.claim, rows())
    if not entries:
        print(f"python -m tests.verify: error: argument claim: no ledger entry matches {args.claim!r}",
              file=sys.stderr)
        return 2
    nodes = list(dict.fromkeys(t for r in entries for t in tests_of(r)))
    if args.chapters:
        nodes += list(dict.fromkeys(notebook_test(c) for r in entries for c in chapters_of(r)))
    t0 = time.perf_counter()
    outcome = run(nodes) if nodes else {}
    seconds = time.perf_counter() - t0
    failed = False
    print(f"\n{len(entries)} ledger entr{'y matches' if len(entries) == 1 else 'ies match'} {args.claim!r} "
          f"({len(nodes)} checks, one pytest process, {seconds:.1f} s):")
    for r in entries:
        tests = tests_of(r)
        results = [outcome[t] for t in tests]
        chapters = chapters_of(r)
        if args.chapters:
            results += [outcome[notebook_test(c)] for c in chapters]
        v = verdict(results, chapters)
        failed |= v in ("FAILED", "not collected")
        print(f"\n* [{r['seed']}] {r['item']}\n  status: {r['status']}; check: {r.get('check', '?')}; "
              f"result: {v}")
        for t in tests:
            print(f"    {outcome[t]:>13}  {t}")
        for c in chapters:
            note = outcome[notebook_test(c)] if args.chapters else "checked by the chapter build"
            print(f"    {note:>13}  {c}" + ("" if args.chapters else
                                             f"  (run: python -m tests.verify {args.claim!r} --chapters)"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
