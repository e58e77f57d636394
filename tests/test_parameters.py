"""One ``parameters`` cell per chapter drives its numbers; other values give a consistent chapter.

A reader changes the cell tagged ``parameters`` (first after the imports) and re-runs the chapter;
its checks are asserts, so the run either succeeds with captions and prose that name the new
values or fails clearly.  The runs here inject new values after that cell, as papermill does, and
execute the chapter with nbclient: the k-RR chapter at a smaller n and another gamma (another
eps0) by default (~20 s), the quick start and the clones chapter under ``SHUFFLE_FULL=1``.
"""

import os
import pathlib
import re

import nbformat
import pytest
from nbclient import NotebookClient

from refresh_notebooks import ROOT, chapters, load, read_times, times_markdown, START, END

CHAPTERS = chapters()

# Chapters without a parameters cell, each with its reason.
KNOWN_WITHOUT_PARAMETERS = {
    "90_ledger": "renders claims.csv; it has no size, eps0, n or rounds",
}


def _parameters(md):
    nb = load(md)
    code = [c for c in nb.cells if c.cell_type == "code"]
    return nb, code, [i for i, c in enumerate(code) if "parameters" in c.metadata.get("tags", [])]


@pytest.mark.parametrize("md", CHAPTERS, ids=[m.stem for m in CHAPTERS])
def test_each_chapter_has_one_parameters_cell_first_after_the_imports(md):
    _, code, tagged = _parameters(md)
    if md.stem in KNOWN_WITHOUT_PARAMETERS:
        assert not tagged, f"{md.name} has its parameters cell: drop it from KNOWN_WITHOUT_PARAMETERS"
        return
    assert len(tagged) == 1, f"{md.name}: {len(tagged)} cells tagged parameters, want one"
    assert tagged[0] == 1, f"{md.name}: the parameters cell is code cell {tagged[0]}, want the one after the imports"
    assert re.search(r"^(import|from) ", code[0].source, re.M), f"{md.name}: the first code cell imports nothing"


def test_one_switch_for_the_heavy_runs():
    """SHUFFLE_FULL=1 is the only switch, read in one place (``booktools.full_run``): no chapter
    holds a FULL constant or reads the environment itself, and no other variable remains."""
    files = [*ROOT.glob("chapters/*.md"), *ROOT.glob("tests/*.py"), *ROOT.glob("benchmarks/*.py"), ROOT / "README.md"]
    old = re.compile(r"^\s*FULL\s*=\s*(True|False)\b|SHUFFLE_HEAVY|SHUFFLE_LONG_RUNS", re.M)
    me = pathlib.Path(__file__).resolve()
    bad = [f.name for f in files if f.resolve() != me and old.search(f.read_text())]
    assert not bad, f"old switches in {bad}"
    chapters_ = list(ROOT.glob("chapters/*.md"))
    own = [f.name for f in chapters_ if re.search(r"^\s*FULL\s*=|SHUFFLE_FULL\"\)", f.read_text(), re.M)]
    assert not own, f"chapters with their own switch (use booktools.full_run()): {own}"
    users = [f.name for f in chapters_ if "full_run()" in f.read_text()]
    assert {"02_krr.md", "07_gaussian_shuffle.md", "10_randomizers.md"} <= set(users), users


def _run(md, injected):
    """Execute the chapter with ``injected`` after its parameters cell; returns the executed notebook."""
    nb, _, _ = _parameters(md)
    at = next(i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", []))
    nb.cells.insert(at + 1, nbformat.v4.new_code_cell(injected, metadata={"tags": ["injected-parameters"]}))
    NotebookClient(nb, timeout=600, kernel_name="python3", startup_timeout=300,
                   resources={"metadata": {"path": str(md.parent)}}).execute()   # raises on a failed assert
    return nb


def _text(nb):
    out = []
    for c in nb.cells:
        for o in c.get("outputs", []):
            out.append(o.get("text", ""))
            out.extend(v for v in o.get("data", {}).values() if isinstance(v, str))
    return "\n".join(out)


def test_krr_chapter_at_other_parameters_runs_and_names_them():
    nb = _run(ROOT / "chapters" / "02_krr.md",
              "FIG1 = dict(n=300, gamma=0.5, k=3)\nNC = [1, 10]\nBRUTE = [(3, 2), (4, 2)]")
    text = _text(nb)
    assert "$n$ = 300, $\\gamma$ = 0.5, $k$ = 3" in text      # the table captions follow
    assert "A_w PLD at n=300" in text and "at n=1000" not in text
    glued = {o["metadata"]["scrapbook"]["name"]: o["data"]["application/papermill.record/text/plain"]
             for c in nb.cells for o in c.get("outputs", []) if "scrapbook" in o.get("metadata", {})}
    assert glued["krr_n"] == "'300'" and glued["krr_gamma"] == "'0.5'"   # the prose's {eval} texts


@pytest.mark.skipif(os.environ.get("SHUFFLE_FULL") != "1", reason="minutes: SHUFFLE_FULL=1")
def test_quickstart_at_other_parameters_runs():
    nb = _run(ROOT / "chapters" / "00_quickstart.md", "N = 2000\nEPS0 = 2.0\nROUNDS = 4")
    assert "--n 2000 --eps0 2 --delta 1e-6 --compositions 4" in _text(nb)


@pytest.mark.skipif(os.environ.get("SHUFFLE_FULL") != "1", reason="minutes: SHUFFLE_FULL=1")
def test_clones_chapter_at_other_parameters_runs():
    nb = _run(ROOT / "chapters" / "03_clones.md", "FIG2 = dict(n=3000, eps0=2.0)\nFIG2_ROUNDS = [1, 8]")
    assert "$n = 3000$, $\\varepsilon_0 = 2$" in _text(nb)


def test_chapter_times_are_recorded_and_the_readme_shows_them():
    times = read_times()
    missing = [md.stem for md in CHAPTERS if md.stem not in times]
    assert not missing, f"no recorded time for {missing}: run tests/refresh_notebooks.py on them"
    assert all(float(r["seconds"]) > 0 for r in times.values())
    readme = (ROOT / "README.md").read_text()
    assert START + "\n" + times_markdown() + END in readme, "README's times differ from the CSV"
