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
    printed 'frac1k' in chapter 5."""
    bad = [(md.name, i + 1) for md in sorted(pathlib.Path(OUT.parent.parent, "chapters").glob("*.md"))
           for i, line in enumerate(md.read_text().splitlines())
           if any(ord(ch) < 32 for ch in line)]
    assert not bad, f"control characters at {bad}"


def test_chapters_with_tables_render_them_as_myst():
    """booktools.table shows a table as a MyST {table} directive in text/markdown; myst-nb renders
    that as a table only under render_markdown_format: myst (else the page shows the directive's text)."""
    folder = pathlib.Path(OUT.parent.parent, "chapters")
    users = [md for md in sorted(folder.glob("*.md")) if "booktools import" in md.read_text()]
    assert users, "no chapter uses booktools.table"
    bad = [md.name for md in users if load(md).metadata.get("mystnb", {}).get("render_markdown_format") != "myst"]
    assert not bad, f"set 'mystnb: render_markdown_format: myst' in the header of {bad}"


# The executor's failures (stop 24: CI printed "not in the book's cache" for all 13 chapters, with
# no error file: an exception outside a cell ended tests/execute_chapters.py after its pool had run
# every chapter, and nothing was cached).  One failure must fail one chapter, with its traceback.

def _notebook():
    import nbformat
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 + 1")])


def test_executor_retries_a_kernel_failure_once_and_says_so(monkeypatch):
    import execute_chapters
    import nbformat

    calls, nb = [], _notebook()

    def flaky(md):
        calls.append(md)
        if len(calls) == 1:
            raise RuntimeError("Kernel didn't respond in 60 seconds")
        return nb, None, 1.5

    monkeypatch.setattr(execute_chapters, "execute", flaky)
    path, text, err, secs, note = execute_chapters._run("chapters/x.md")
    assert (len(calls), err, secs, path) == (2, None, 1.5, "chapters/x.md")
    assert "Kernel didn't respond in 60 seconds" in note
    assert nbformat.reads(text, as_version=4) == nb


def test_executor_reports_a_kernel_that_fails_twice_and_never_raises(monkeypatch):
    import execute_chapters

    calls = []

    def dead(md):
        calls.append(md)
        raise RuntimeError(f"kernel died (attempt {len(calls)})")

    monkeypatch.setattr(execute_chapters, "execute", dead)
    _, text, err, _, note = execute_chapters._run("chapters/x.md")
    assert text is None and len(calls) == 2
    assert "attempt 1" in note and "attempt 1" in err and "attempt 2" in err and "Traceback" in err


def test_executor_does_not_retry_a_failing_cell(monkeypatch):
    import execute_chapters

    calls = []
    monkeypatch.setattr(execute_chapters, "execute",
                        lambda md: calls.append(md) or (_notebook(), "CellExecutionError: boom", 0.25))
    _, text, err, secs, note = execute_chapters._run("chapters/x.md")
    assert (len(calls), err, secs, note) == (1, "CellExecutionError: boom", 0.25, "")
    assert text is not None


def test_a_chapter_that_cannot_be_cached_or_whose_worker_died_fails_alone(monkeypatch, tmp_path):
    import sqlite3
    from concurrent.futures.process import BrokenProcessPool

    import execute_chapters
    import nbformat

    monkeypatch.setattr(execute_chapters, "ERRORS", tmp_path)
    stored = []

    def store(md, nb, secs):
        if md.stem == "00_quickstart":
            raise sqlite3.OperationalError("disk I/O error")
        stored.append((md.stem, secs))

    def killed():
        raise BrokenProcessPool("a process in the pool was terminated abruptly")

    monkeypatch.setattr(execute_chapters, "store", store)
    folder = execute_chapters.ROOT / "chapters"
    text = nbformat.writes(_notebook())
    (tmp_path / "02_krr.error").write_text("stale error of an earlier run")

    err0, _ = execute_chapters.settle(folder / "00_quickstart.md", lambda: ("", text, None, 2.0, ""))
    err1, _ = execute_chapters.settle(folder / "01_background.md", killed)
    err2, secs2 = execute_chapters.settle(folder / "02_krr.md", lambda: ("", text, None, 3.0, ""))

    assert "disk I/O error" in err0 and "free disk under" in err0
    assert "terminated abruptly" in err1
    assert (tmp_path / "00_quickstart.error").read_text() == err0
    assert (tmp_path / "01_background.error").read_text() == err1
    assert (err2, secs2, stored) == (None, 3.0, [("02_krr", 3.0)])
    assert not (tmp_path / "02_krr.error").exists()
