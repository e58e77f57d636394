"""Execute MyST chapters and write the executed copies that nbval compares.

    python tests/refresh_notebooks.py [chapters/NN_slug.md ...]   (default: every chapter)

Each chapter is read with jupytext, given stable cell ids, executed with nbclient
in the chapters folder (timings not recorded), stripped of image outputs (nbval
does not compare PNGs and they bloat the repository) and written to
tests/notebooks/NN_slug.ipynb.  tests/test_notebooks_fresh.py fails when a copy is
stale or unexecuted.
"""

import pathlib
import sys

import jupytext
import nbformat
from nbclient import NotebookClient

ROOT = pathlib.Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "notebooks"
_DROP = ("image/png", "image/jpeg", "image/svg+xml")


def chapters():
    """Chapters with code cells, in the order of the folder."""
    return [p for p in sorted((ROOT / "chapters").glob("*.md")) if "{code-cell}" in p.read_text()]


def load(md):
    nb = jupytext.read(md)
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"{md.stem}-{i}"
    return nb


def refresh(md):
    nb = load(md)
    NotebookClient(nb, timeout=900, kernel_name="python3", record_timing=False,
                   resources={"metadata": {"path": str(md.parent)}}).execute()
    for cell in nb.cells:
        if cell.cell_type == "code":
            for out in cell.get("outputs", []):
                for key in _DROP:
                    out.get("data", {}).pop(key, None)
    OUT.mkdir(parents=True, exist_ok=True)
    target = OUT / (md.stem + ".ipynb")
    nbformat.write(nb, target)
    return target


if __name__ == "__main__":
    todo = [pathlib.Path(a).resolve() for a in sys.argv[1:]] or chapters()
    for md in todo:
        print(f"executing {md.relative_to(ROOT)} ...", flush=True)
        print(f"  wrote {refresh(md).relative_to(ROOT)}", flush=True)
