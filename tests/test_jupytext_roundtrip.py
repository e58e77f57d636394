"""A chapter opened and saved in JupyterLab stays the same chapter (``make lab``).

JupyterLab reads and writes ``chapters/NN_slug.md`` through jupytext's contents manager, which
applies the project's ``jupytext.toml``.  Without its metadata filter a save drops
``mystnb: render_markdown_format: myst`` from every header, and the book then shows the tables'
directive text instead of the tables.  The test saves every chapter as JupyterLab does (the
contents manager, rooted at a folder holding the project's ``jupytext.toml``) and reads both back.
"""

import json
import pathlib
import shutil

import jupytext
import pytest

from refresh_notebooks import ROOT, chapters

CHAPTERS = chapters()


def _semantic(nb):
    """What a save must keep: the header less jupytext's version stamp, and every cell."""
    meta = json.loads(json.dumps(nb.metadata))
    meta.get("jupytext", {}).get("text_representation", {}).pop("jupytext_version", None)
    cells = [(c.cell_type, c.source, dict(c.metadata)) for c in nb.cells]
    return meta, cells


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """Every chapter opened and saved by jupytext's contents manager, as JupyterLab's save does."""
    from jupytext import TextFileContentsManager

    root = tmp_path_factory.mktemp("lab")
    shutil.copy(ROOT / "jupytext.toml", root / "jupytext.toml")
    (root / "chapters").mkdir()
    cm = TextFileContentsManager(root_dir=str(root))
    out = {}
    for md in CHAPTERS:
        shutil.copy(md, root / "chapters" / md.name)
        model = cm.get(f"chapters/{md.name}")
        assert model["type"] == "notebook", f"{md.name} does not open as a notebook"
        cm.save(model, f"chapters/saved_{md.name}")
        out[md.name] = (root / "chapters" / f"saved_{md.name}").read_text()
    return out


@pytest.mark.parametrize("md", CHAPTERS, ids=[m.stem for m in CHAPTERS])
def test_a_chapter_saved_from_jupyterlab_keeps_its_header_and_cells(md, saved):
    before = jupytext.read(md)
    after = jupytext.reads(saved[md.name], fmt="md:myst")
    meta_b, cells_b = _semantic(before)
    meta_a, cells_a = _semantic(after)
    assert meta_a == meta_b, f"{md.name}: a save changes the header"
    assert len(cells_a) == len(cells_b), f"{md.name}: a save changes the number of cells"
    for i, (a, b) in enumerate(zip(cells_a, cells_b)):
        assert a == b, f"{md.name}: a save changes cell {i}"
    if before.metadata.get("mystnb"):
        assert "render_markdown_format: myst" in saved[md.name].split("\n---\n", 1)[0]


def test_the_filter_is_needed():
    """Without the project's jupytext.toml a save drops the MyST-NB header (the check above can fail)."""
    md = next(m for m in CHAPTERS if jupytext.read(m).metadata.get("mystnb"))
    text = jupytext.writes(jupytext.read(md), fmt="md:myst")
    assert "mystnb" not in jupytext.reads(text, fmt="md:myst").metadata


def test_make_lab_opens_markdown_chapters_as_notebooks():
    """The project's JupyterLab defaults (``make lab`` points JupyterLab at them)."""
    overrides = json.loads((ROOT / ".jupyter/lab/settings/overrides.json").read_text())
    viewers = overrides["@jupyterlab/docmanager-extension:plugin"]["defaultViewers"]
    assert viewers["markdown"] == viewers["myst"] == "Jupytext Notebook"
    make = (ROOT / "Makefile").read_text()
    assert "\nlab: setup\n" in make and "--LabApp.app_settings_dir=$(CURDIR)/.jupyter/lab/settings" in make
    pins = (ROOT / "requirements.txt").read_text().splitlines()
    assert any(p.startswith("jupyterlab-myst==") for p in pins)


def test_a_save_after_a_run_leaves_the_evaluated_expressions_out(tmp_path):
    """jupyterlab-myst writes the values of a markdown cell's ``{eval}`` expressions into its
    metadata (``user_expressions``) when the cell runs; a chapter saved after a run must not carry
    them (they are outputs, and would freeze one run's numbers into the source)."""
    from jupytext import TextFileContentsManager

    md = ROOT / "chapters" / "00_primer.md"
    shutil.copy(ROOT / "jupytext.toml", tmp_path / "jupytext.toml")
    shutil.copy(md, tmp_path / md.name)
    cm = TextFileContentsManager(root_dir=str(tmp_path))
    model = cm.get(md.name)
    cells = model["content"]["cells"]
    ran = next(c for c in cells if c["cell_type"] == "markdown" and "{eval}`" in c["source"])
    ran["metadata"]["user_expressions"] = [
        {"expression": "primer_n", "result": {"status": "ok", "data": {"text/plain": "'1000'"}}}
    ]
    cm.save(model, md.name)
    text = (tmp_path / md.name).read_text()
    assert "{eval}`" in text and "user_expressions" not in text
    assert _semantic(jupytext.reads(text, fmt="md:myst"))[1] == _semantic(jupytext.read(md))[1]
