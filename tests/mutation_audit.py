"""The mutation audit of the ledger: does each entry's check fail when its claim is made false?

    python -m tests.mutation_audit                 # every mutation of tests/mutations.csv
    python -m tests.mutation_audit "Lemma B.1"     # only the entries whose item contains the text

For every row of ``tests/mutations.csv`` (a ledger entry, named by the start of its item; the
library function the claim is about, ``module:function``; a mutation of it, in the language of
``tests/mutation_plugin.py``; why that mutation makes the claim false) the audit runs the
entry's cited tests (its settled_by and the tests its note names, as ``tests/verify.py`` finds
them) in a fresh pytest process with the function mutated.  A check *bites* when a test fails;
it *survives* when every test passes.  All the cited tests are first run unmutated (one
process), so that a failure is the mutation's doing.

The audit also lists the ledger entries that are reproduced or refuted and have no row, with
their check kind: symbolic entries (sympy alone proves or refutes them, no library function)
and entries settled by a chapter section, which the chapter build checks.

Not part of the default test run (``python -m pytest`` does not collect this module).  It takes
minutes: 71 mutations of 71 entries, 12.3 min on the 2-core machine while other jobs ran (135 s
of it the unmutated run, then 4-15 s per mutation, mostly pytest's start-up); the time is printed
at the end.  The entries settled by a chapter section alone are not mutated: a chapter runs in its
own kernel, which the plugin does not reach; the chapter build checks them.  Exit 1 when a mutant survives, a mutant is
never called, or a check fails unmutated.
"""

from __future__ import annotations

import csv
import os
import pathlib
import subprocess
import sys
import tempfile
import time

from tests.verify import ROOT, rows, tests_of

TABLE = ROOT / "tests" / "mutations.csv"


def table() -> list[dict]:
    with open(TABLE, newline="") as f:
        return list(csv.DictReader(f))


def entry_of(prefix: str, ledger: list[dict]) -> dict:
    """The one ledger entry whose item is ``prefix``, or else the one whose item starts with it."""
    hits = [r for r in ledger if r["item"] == prefix] or [r for r in ledger if r["item"].startswith(prefix)]
    if len(hits) != 1:
        raise ValueError(f"entry {prefix!r} names {len(hits)} ledger entries, not one")
    return hits[0]


def pytest_run(node_ids: list[str], mutation: str | None, stop_first: bool = True
               ) -> tuple[int, int | None, float, dict[str, str]]:
    """(pytest's exit code, calls of the mutant (None unmutated; minus the failures of the mutation
    itself, when it did not fit a result), seconds, outcome per node) of one fresh process."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("SHUFFLE_MUTATION", None)
    with tempfile.NamedTemporaryFile("r", suffix=".calls") as log:
        if mutation:
            env["SHUFFLE_MUTATION"], env["SHUFFLE_MUTATION_LOG"] = mutation, log.name
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:xdist",
                               *(["-x"] if stop_first else []), "-p", "tests.mutation_plugin", *node_ids],
                              cwd=ROOT, env=env, capture_output=True, text=True)
        calls = log.read().strip() if mutation else ""
    outcomes = {}
    for line in proc.stdout.splitlines():
        word, _, rest = line.partition(" ")
        if word in ("PASSED", "FAILED", "ERROR", "SKIPPED"):
            outcomes[rest.split(" - ")[0].strip()] = word
    n_calls, errors = (int(x) for x in calls.split()) if calls else (None, 0)
    return proc.returncode, (n_calls if not errors else -errors), time.perf_counter() - t0, outcomes


def passed(ids: list[str], outcomes: dict[str, str]) -> bool:
    """Every node of every id (a test, or all its parametrisations) ran and passed."""
    for ref in ids:
        hits = [o for nid, o in outcomes.items() if nid == ref or nid.startswith(ref + "[")]
        if not hits or any(o != "PASSED" for o in hits):
            return False
    return True


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ledger = rows()
    muts = [m for m in table() if not argv or argv[0].lower() in m["entry"].lower()]
    t_start = time.perf_counter()
    bad = []
    every = list(dict.fromkeys(t for m in muts for t in tests_of(entry_of(m["entry"], ledger))))
    _, _, sec, base = pytest_run(every, None, stop_first=False)
    print(f"{len(muts)} mutations of {len({m['entry'] for m in muts})} ledger entries; "
          f"their {len(every)} tests run unmutated in {sec:.0f} s\n")
    for m in muts:
        e = entry_of(m["entry"], ledger)
        ids = tests_of(e)
        if not ids:
            bad.append((m["entry"], "cites no test"))
            print(f"NO TEST   {m['entry'][:70]}")
            continue
        if not passed(ids, base):
            bad.append((m["entry"], "its checks fail unmutated"))
            print(f"FAILS     {m['entry'][:70]}  (unmutated)")
            continue
        code, calls, sec, _ = pytest_run(ids, f"{m['target']}|{m['mutation']}")
        if calls is not None and calls < 0:
            word = "MUTATION ERROR"
            bad.append((m["entry"], f"{m['target']} {m['mutation']}: the mutation does not fit the result"))
        elif code == 1 and calls:
            word = "bites"
        elif code == 0:
            word = "SURVIVES" if calls else "NOT CALLED"
            bad.append((m["entry"], f"{m['target']} {m['mutation']}: {word.lower()}"))
        else:
            word = f"ERROR {code}"
            bad.append((m["entry"], f"pytest exit {code}"))
        print(f"{word:<9} {m['entry'][:60]:<60} {m['target']} [{m['mutation']}] "
              f"({calls} calls, {sec:.1f} s)")
    audited = {entry_of(m["entry"], ledger)["item"] for m in table()}
    rest = [r for r in ledger if r["item"] not in audited and r["status"] in ("reproduced", "refuted")]
    print(f"\nreproduced or refuted entries without a mutation ({len(rest)}): why")
    for r in rest:
        why = ("symbolic: sympy alone settles it, no library function" if r["check"] == "symbolic"
               else "settled by a chapter section: checked by the chapter build" if not tests_of(r)
               else "NO MUTATION DECLARED")
        if why == "NO MUTATION DECLARED":
            bad.append((r["item"], why))
        print(f"  [{r['check']:<10}] {r['item'][:70]}: {why}")
    print(f"\n{len(bad)} entr{'y' if len(bad) == 1 else 'ies'} whose checks do not bite "
          f"({time.perf_counter() - t_start:.0f} s in all)")
    for item, why in bad:
        print(f"  {item[:80]}: {why}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
