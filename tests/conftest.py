"""Shared test set-up, and the chapter check: one execution per chapter, compared as nbval compares.

Every executed copy ``tests/notebooks/NN_slug.ipynb`` is collected as one test,
``tests/notebooks/NN_slug.ipynb::outputs``, that compares the outputs of one execution of
``chapters/NN_slug.md`` with the copy's, cell by cell, under nbval's rules: streams coalesced,
the same output fields compared (PNG/JPEG images, metadata, execution counts skipped), the
regexes of ``tests/nbval_sanitize.cfg`` applied to both sides, the ``NBVAL_*`` comment markers
and cell tags honoured.  A failure shows a unified diff per differing cell.

Which execution: under ``make test`` (environment ``SHUFFLE_EXECUTED=1``) the one that
``tests/execute_chapters.py`` stored in the book's jupyter-cache, which the book build then
renders, so each chapter runs once; a chapter it could not execute fails with its recorded
traceback.  Otherwise (a plain ``pytest``) the test executes the chapter itself, in
``chapters/`` as the build does, so it never compares outputs of an older library.
"""

import copy
import difflib
import json
import os
import pathlib
import re
import subprocess
import sys
from collections import defaultdict

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parent))  # refresh_notebooks is importable by the tests

import execute_chapters  # noqa: E402  (after the path insert)
from hypothesis import settings  # noqa: E402

# ``pytest --hypothesis-profile=deep tests/test_certified_edges.py tests/test_adversarial_*.py``:
# the adversarial strategies scale their case counts by max_examples / 100
# (adversarial_common.examples), 50x the default run: ~1.1 x 10^4 cases over the three files.
# Deep runs draw fresh cases each time (that is their point), so a new defect can show up there.
settings.register_profile("deep", max_examples=5_000, deadline=None, derandomize=False)
# The default run (CI, ``make test``) draws the same cases every time, seeded from each test, so
# its result and its time depend on the code only: a freshly drawn slow or failing case belongs in
# a deep run, not in a landing.  ``--hypothesis-profile`` on the command line overrides this.
settings.register_profile("fixed", derandomize=True, database=None)

HERE = pathlib.Path(__file__).resolve().parent
NOTEBOOKS = HERE / "notebooks"
CHAPTERS = HERE.parent / "chapters"
SANITIZE = HERE / "nbval_sanitize.cfg"

# nbval 0.11's IPyNbFile.skip_compare (without --nbdime): keys never compared
_SKIP = ("metadata", "traceback", "prompt_number", "output_type", "name", "execution_count",
         "application/vnd.jupyter.widget-view+json", "image/png", "image/jpeg")
_NO_CHECK = {"NBVAL_IGNORE_OUTPUT", "PYTEST_VALIDATE_IGNORE_OUTPUT", "NBVAL_SKIP"}
_NO_CHECK_TAGS = {"nbval-ignore-output", "nbval-skip"}


@pytest.fixture(scope="session")
def cli():
    """``cli(*args)``: ``python -m shuffle_lib *args`` in a fresh interpreter, the way a user runs
    it (a ``subprocess.CompletedProcess`` with text output)."""
    def run(*args, timeout=900):
        return subprocess.run([sys.executable, "-m", "shuffle_lib", *args], capture_output=True, text=True,
                              timeout=timeout)
    return run


@pytest.fixture(scope="session")
def cli_brackets():
    """``cli_brackets(*args)``: (lower, upper, accuracy_met, limit) of each result of
    ``python -m shuffle_lib delta|epsilon ... --json``, computed in this process
    (:func:`shuffle_lib.cli.run`, the command line's parse and evaluation)."""
    from shuffle_lib import cli as cli_module

    def run(*args):
        _, out = cli_module.run([str(a) for a in args])
        end = "delta" if args[0] == "delta" else "eps"
        return [(r[f"{end}_lower"], r[f"{end}_upper"], r["accuracy_met"], r["limit"])
                for r in out["results"]]
    return run


@pytest.fixture(scope="session")
def cli_json(cli):
    """``cli_json(*args)``: the JSON object of ``python -m shuffle_lib *args --json`` (exit code 0)."""
    def run(*args):
        r = cli(*args, "--json")
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)
    return run


@pytest.fixture(scope="session")
def build():
    """``build(name, values, compositions=1, accuracy=...)``: a declared mechanism's model, built as
    the command line builds it (:meth:`shuffle_lib.core.registry.Mechanism.model`)."""
    from shuffle_lib import mechanisms

    def run(name, values, compositions=1, **kw):
        return mechanisms.get(name).model(values, compositions, **kw)[1]
    return run


def pytest_configure(config):
    """The "fixed" profile unless the command line names one.  Not at import: an xdist worker can
    import this file after the hypothesis plugin has loaded ``--hypothesis-profile``."""
    if not config.getoption("hypothesis_profile", default=None):
        settings.load_profile("fixed")


def pytest_collect_file(file_path, parent):
    if file_path.suffix == ".ipynb" and file_path.parent == NOTEBOOKS:
        return ChapterCopy.from_parent(parent, path=file_path)
    return None


class ChapterCopy(pytest.File):
    def collect(self):
        yield ChapterOutputs.from_parent(self, name="outputs")


class ChapterOutputs(pytest.Item):
    def reportinfo(self):
        return self.path, None, f"{self.path.name}: outputs of chapters/{self.path.stem}.md"

    def runtest(self):
        import nbformat

        md = CHAPTERS / (self.path.stem + ".md")
        if not md.exists():
            raise ChapterFailure(f"{self.path.name} has no chapter chapters/{md.name}")
        nb = None
        if os.environ.get("SHUFFLE_EXECUTED") == "1":
            err = execute_chapters.error_file(md)
            if err.exists():
                raise ChapterFailure(f"chapters/{md.name} failed to execute "
                                     f"(tests/execute_chapters.py):\n{err.read_text()}")
            nb = execute_chapters.cached(md)
            if nb is None:
                raise ChapterFailure(f"chapters/{md.name} is not in the book's cache: "
                                     "tests/execute_chapters.py did not execute it in this run")
        if nb is None:
            nb, err, _ = execute_chapters.execute(md)
            if err is not None:
                raise ChapterFailure(f"chapters/{md.name} failed to execute:\n{err}")
        ref = nbformat.read(self.path, as_version=4)
        problems = compare(ref, nb)
        if problems:
            raise ChapterFailure(
                f"chapters/{md.name}: {len(problems)} code cell(s) differ from tests/notebooks/{self.path.name} "
                f"(if the change is intended: tests/refresh_notebooks.py chapters/{md.name})\n\n"
                + "\n\n".join(problems))

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, ChapterFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo)


class ChapterFailure(Exception):
    pass


def _patterns():
    return re.findall(r"^regex: (.*)$\n^replace: (.*)$", SANITIZE.read_text(), flags=re.MULTILINE)


def _flatten(outputs, patterns):
    """nbval's comparison form: coalesced streams keyed by stream name, MIME data flattened, sanitised."""
    from nbval.plugin import coalesce_streams, transform_streams_for_comparison

    def clean(v):
        if isinstance(v, str):
            for regex, replace in patterns:
                v = re.sub(regex, replace, v)
        return v

    flat = defaultdict(list)
    for out in transform_streams_for_comparison(coalesce_streams([copy.deepcopy(o) for o in outputs])):
        for key, value in out.items():
            if key in _SKIP:
                continue
            if key == "data":
                for mime, data in value.items():
                    if mime not in _SKIP:
                        flat[mime].append(clean(data))
            else:
                flat[key].append(clean(value))
    return flat


def _text(values):
    return "\n".join(v if isinstance(v, str) else repr(v) for v in values)


def compare(ref, new) -> list[str]:
    """Readable differences between the reference copy's code cells and a new execution's."""
    import nbformat

    patterns = _patterns()
    ref_cells = [c for c in ref.cells if c.cell_type == "code"]
    new_cells = [nbformat.from_dict(c) for c in new.cells if c.cell_type == "code"]
    if [c.source for c in ref_cells] != [c.source for c in new_cells]:
        return ["the code cells differ from the chapter's: the copy is stale (test_notebooks_fresh.py says which)"]
    problems = []
    for i, (r, n) in enumerate(zip(ref_cells, new_cells)):
        comments = {line.strip().lstrip("#").strip() for line in r.source.splitlines() if line.strip().startswith("#")}
        if comments & _NO_CHECK or set(r.metadata.get("tags", [])) & _NO_CHECK_TAGS:
            continue
        if r.execution_count is None:   # nbval does not compare an unrun reference cell
            continue
        a, b = _flatten(r.outputs, patterns), _flatten(n.get("outputs", []), patterns)
        if a == b:
            continue
        head = f"--- code cell {i + 1}: {r.source.strip().splitlines()[0][:90] if r.source.strip() else ''}"
        lines = [head]
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                lines.append(f"  output field {key!r}:")
                diff = difflib.unified_diff(_text(a.get(key, [])).splitlines(), _text(b.get(key, [])).splitlines(),
                                            "reference (tests/notebooks)", "this execution", lineterm="", n=2)
                lines.extend("    " + d for d in diff)
        problems.append("\n".join(lines))
    return problems
