"""The executed copies in tests/notebooks must match their chapters and be fully executed.

Each chapter is executed once (tests/execute_chapters.py under make test, or by the test itself
under a plain pytest) and tests/conftest.py compares its outputs with the copy under nbval's
rules, which skip a reference cell that was never run: an unexecuted copy would make that check
pass vacuously, and a stale one (other code cells) would compare the wrong outputs.
"""

import json
import pathlib

import pytest

from refresh_notebooks import OUT, chapters, load

CHAPTERS = chapters()


def test_every_code_chapter_has_a_copy():
    assert CHAPTERS, "no chapter with code cells found"
    missing = [md.name for md in CHAPTERS if not (OUT / (md.stem + ".ipynb")).exists()]
    assert not missing, f"run tests/refresh_notebooks.py for {missing}"


@pytest.mark.parametrize("md", CHAPTERS, ids=[m.stem for m in CHAPTERS])
def test_copy_is_fresh_and_executed(md):
    copy = json.loads((OUT / (md.stem + ".ipynb")).read_text())
    want = [c.source for c in load(md).cells if c.cell_type == "code"]
    have = ["".join(c["source"]) for c in copy["cells"] if c["cell_type"] == "code"]
    assert have == want, f"{md.name} changed since its copy was executed: run tests/refresh_notebooks.py {md}"
    code = [c for c in copy["cells"] if c["cell_type"] == "code" and "".join(c["source"]).strip()]
    assert all(c["execution_count"] is not None for c in code), f"{md.name}: unexecuted cells in the copy"
    assert not any(o.get("output_type") == "error" for c in code for o in c["outputs"]), f"{md.name}: error output"


def test_chapters_hold_no_control_characters():
    """A control character in TeX changes what renders: a TAB where '\\t' of '\\tfrac' was meant
    printed 'frac1k' in chapter 5 (issue 16)."""
    bad = [(md.name, i + 1) for md in sorted(pathlib.Path(OUT.parent.parent, "chapters").glob("*.md"))
           for i, line in enumerate(md.read_text().splitlines())
           if any(ord(ch) < 32 for ch in line)]
    assert not bad, f"control characters at {bad}"


def test_chapters_with_tables_render_them_as_myst():
    """shuffle_lib.tables shows a table as a MyST {table} directive in text/markdown; myst-nb renders
    that as a table only under render_markdown_format: myst (else the page shows the directive's text)."""
    folder = pathlib.Path(OUT.parent.parent, "chapters")
    users = [md for md in sorted(folder.glob("*.md")) if "shuffle_lib.tables import" in md.read_text()]
    assert users, "no chapter uses shuffle_lib.tables"
    bad = [md.name for md in users if load(md).metadata.get("mystnb", {}).get("render_markdown_format") != "myst"]
    assert not bad, f"set 'mystnb: render_markdown_format: myst' in the header of {bad}"
