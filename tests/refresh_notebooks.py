"""Execute MyST chapters and write the executed copies that nbval compares.

    python tests/refresh_notebooks.py [--times-only] [chapters/NN_slug.md ...]   (default: every chapter)

Each chapter is read with jupytext, given stable cell ids, executed with nbclient
in the chapters folder (timings not recorded), stripped of image outputs (nbval
does not compare PNGs and they bloat the repository) and written to
tests/notebooks/NN_slug.ipynb.  tests/test_notebooks_fresh.py fails when a copy is
stale or unexecuted.

Each execution's wall time is written to chapters/data/chapter_times.csv (one row per chapter, with
the date and the machine's load average), which the book's introduction shows and the README's
table between its ``chapter-times`` markers repeats; ``--times-only`` executes and times without
writing the copy.
"""

import csv
import datetime
import os
import pathlib
import sys
import time

import jupytext
import nbformat
from nbclient import NotebookClient

ROOT = pathlib.Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "notebooks"
TIMES = ROOT / "chapters" / "data" / "chapter_times.csv"
README = ROOT / "README.md"
_FIELDS = ["chapter", "seconds", "measured", "load_average"]
_DROP = ("image/png", "image/jpeg", "image/svg+xml")


def chapters():
    """Chapters with code cells, in the order of the folder."""
    return [p for p in sorted((ROOT / "chapters").glob("*.md")) if "{code-cell}" in p.read_text()]


def load(md):
    nb = jupytext.read(md)
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"{md.stem}-{i}"
    return nb


def refresh(md, write=True):
    nb = load(md)
    start = time.monotonic()
    NotebookClient(nb, timeout=900, kernel_name="python3", record_timing=False,
                   resources={"metadata": {"path": str(md.parent)}}).execute()
    record_time(md, time.monotonic() - start)
    if not write:
        return None
    for cell in nb.cells:
        if cell.cell_type == "code":
            for out in cell.get("outputs", []):
                for key in _DROP:
                    out.get("data", {}).pop(key, None)
    OUT.mkdir(parents=True, exist_ok=True)
    target = OUT / (md.stem + ".ipynb")
    nbformat.write(nb, target)
    return target


def read_times():
    if not TIMES.exists():
        return {}
    with open(TIMES, newline="") as fh:
        return {row["chapter"]: row for row in csv.DictReader(fh)}


def record_time(md, seconds):
    """Put this execution's wall time into the times table, and the table into the README."""
    rows = read_times()
    rows[md.stem] = {"chapter": md.stem, "seconds": f"{seconds:.0f}",
                     "measured": datetime.date.today().isoformat(), "load_average": f"{os.getloadavg()[0]:.1f}"}
    TIMES.parent.mkdir(parents=True, exist_ok=True)
    with open(TIMES, "w", newline="") as fh:
        out = csv.DictWriter(fh, _FIELDS, lineterminator="\n")
        out.writeheader()
        out.writerows(rows[k] for k in sorted(rows))
    text = README.read_text()
    if START in text and END in text:
        head, rest = text.split(START, 1)
        README.write_text(head + START + "\n" + times_markdown() + END + rest.split(END, 1)[1])


START, END = "<!-- chapter-times: written by tests/refresh_notebooks.py -->", "<!-- /chapter-times -->"


def times_markdown():
    """The README's table of execution times, from chapters/data/chapter_times.csv."""
    lines = ["| chapter | seconds | measured | load average |", "| --- | --: | --- | --: |"]
    lines += [f"| `{r['chapter']}` | {r['seconds']} | {r['measured']} | {r['load_average']} |"
              for r in read_times().values()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    args = sys.argv[1:]
    write = "--times-only" not in args
    todo = [pathlib.Path(a).resolve() for a in args if a != "--times-only"] or chapters()
    for md in todo:
        print(f"executing {md.relative_to(ROOT)} ...", flush=True)
        target = refresh(md, write)
        print(f"  wrote {target.relative_to(ROOT)}" if target else "  timed only", flush=True)
