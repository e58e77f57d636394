"""chapters/booktools.py: the book's captioned tables render as a MyST {table} and as aligned
plain text and reject malformed input; the shared number formats and glue helpers."""

import math
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "chapters"))

from booktools import fmt, glue_num, progress, style, table, tex  # noqa: E402


def test_markdown_is_a_named_myst_table_with_escaped_cells():
    md = table(["n", "note"], [[10, "a|b"], [200, "c"]], "Deltas at $n$", "tbl-demo")._repr_markdown_()
    lines = md.splitlines()
    assert lines[:2] == ["~~~~{table} Deltas at $n$", ":name: tbl-demo"]
    assert lines[3:7] == ["| n | note |", "|--:|:--|", r"| 10 | a\|b |", "| 200 | c |"]
    assert lines[-1] == "~~~~"


def test_plain_text_is_aligned():
    text = repr(table(["n", "note"], [["10", "a"], ["200", "long"]], "c", "tbl-demo"))
    assert text.splitlines() == ["Table (tbl-demo): c", "  n  note", "---  ----", " 10  a", "200  long"]


def test_plain_text_drops_the_escapes():
    from booktools import escape
    text = repr(table(["claim"], [[escape("[11] a_b | $x$")]], "c", "tbl-demo"))
    assert text.splitlines()[-1] == "[11] a_b | $x$"


def test_numbers_with_gaps_are_right_aligned():
    t = table(["n", "bound", "note"], [["1", "--", ""], ["10", "0.5", "x"], ["", "n/a", ""]], "c", "tbl-demo")
    assert t.align == "rrl"


def test_filters_list_each_value_once_and_precede_the_table():
    md = table(["seed", "by"], [["000", "{ref}`Sec <sec-a>`"], ["000", "x"], ["001", "y"]], "c", "tbl-f",
               filters=["seed"])._repr_markdown_()
    assert md.index("<select") < md.index("{table}")
    assert md.count('<option value="000">') == 1 and '<option value="001">' in md
    assert 'getElementById("tbl-f")' in md


@pytest.mark.parametrize("kwargs, word", [
    (dict(rows=[["1"]]), "rows"),
    (dict(label="Tbl_X"), "label"),
    (dict(caption=" "), "caption"),
    (dict(align="lx"), "align"),
    (dict(filters=["nope"]), "filters"),
])
def test_bad_input_names_the_parameter(kwargs, word):
    args = dict(header=["a", "b"], rows=[["1", "2"]], caption="c", label="tbl-ok") | kwargs
    with pytest.raises(ValueError, match=word):
        table(**args)


def test_fmt_gives_fixed_significant_digits_and_names_the_infinities():
    assert fmt(0.000123456) == "0.0001235"
    assert fmt(123456.5, 3) == "1.23e+05"
    assert fmt(math.inf) == "inf" and fmt(-math.inf) == "-inf" and fmt(None) == "--"
    assert fmt(7) == "7"                       # integers stay integers
    assert fmt(7.0) == "7"


def test_tex_writes_powers_of_ten_for_prose():
    assert tex(1.2e-6) == r"1.2 \times 10^{-6}"
    assert tex(1e-6) == r"10^{-6}"
    assert tex(0.25) == "0.25"
    assert tex(1000) == "1000"


@pytest.mark.parametrize("x, out", [
    (10**4, "10^{4}"), (10_000, "10^{4}"), (1e4, "10^{4}"), (10**6, "10^{6}"),
    (5 * 10**4, r"5 \times 10^{4}"), (2.5e5, r"2.5 \times 10^{5}"), (-(10**5), "-10^{5}"),
    (9999, "9999"), (2048, "2048"), (12345, "12345"), (123456, "123456"),
])
def test_tex_writes_large_round_numbers_as_powers_of_ten_and_keeps_other_integers(x, out):
    assert tex(x) == out


def test_tex_takes_numpy_numbers_and_rejects_text():
    import numpy as np
    assert tex(np.int64(10**4)) == "10^{4}" and tex(np.float64(0.25)) == "0.25"
    with pytest.raises(ValueError, match="x must be"):
        tex("1e4")


def test_glue_num_rounds_before_gluing(monkeypatch):
    seen = {}
    monkeypatch.setattr("booktools._glue", lambda name, value, display: seen.update({name: value}))
    glue_num("x", 1 / 3)
    glue_num("y", 1 / 3, digits=2)
    assert seen == {"x": 0.333333, "y": 0.33}


def test_progress_is_silent_outside_jupyterlab(monkeypatch, capsys):
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    assert list(progress(range(3), "quiet")) == [0, 1, 2]
    assert capsys.readouterr().err == ""


def test_style_file_exists_and_sets_a_readable_font():
    from matplotlib import rc_params_from_file
    params = rc_params_from_file(style(), use_default_template=False)
    assert params["font.size"] >= 11 and params["figure.dpi"] >= 150


def test_every_chapter_that_draws_uses_the_book_style():
    """A chapter that imports matplotlib sets the book's one style, ``plt.style.use(style())``,
    before its first figure (font, width and dpi of every figure in one place)."""
    import jupytext

    root = pathlib.Path(__file__).resolve().parents[1] / "chapters"
    drawing = 0
    for md in sorted(root.glob("*.md")):
        code = [c.source for c in jupytext.read(md).cells if c.cell_type == "code"]
        text = "\n".join(code)
        if "import matplotlib" not in text:
            continue
        drawing += 1
        first_fig = min((text.find(k) for k in ("plt.subplots", "plt.figure", "plt.plot")
                         if k in text), default=len(text))
        use = text.find("plt.style.use(style())")
        assert 0 <= use < first_fig, f"{md.name} draws without the book's style first"
    assert drawing >= 10


def test_glued_glues_the_text_under_the_variable_name_and_returns_it(monkeypatch):
    from booktools import glued
    seen = {}
    monkeypatch.setattr("booktools._glue", lambda name, value, display: seen.update({name: value}))
    primer_n = glued("primer_n", "1000")
    assert primer_n == "1000" and seen == {"primer_n": "1000"}


@pytest.mark.parametrize("kwargs, word", [
    (dict(name="primer n", text="1"), "name"),
    (dict(name="primer_n", text=1000), "text"),
])
def test_glued_rejects_a_name_the_prose_cannot_evaluate_and_unformatted_values(kwargs, word):
    from booktools import glued
    with pytest.raises(ValueError, match=word):
        glued(**kwargs)


def test_every_eval_in_the_prose_names_a_variable_glued_under_the_same_name():
    """``{eval}`name``` shows ``name`` in JupyterLab (the kernel evaluates it) and in the book (the
    value glued under ``name``): a chapter that shows one must assign ``name = glued("name", ...)``,
    or the two places would show different things (or one of them nothing)."""
    import re

    import jupytext

    root = pathlib.Path(__file__).resolve().parents[1] / "chapters"
    seen = 0
    for md in sorted(root.glob("*.md")):
        nb = jupytext.read(md)
        shown = {e for c in nb.cells if c.cell_type == "markdown"
                 for e in re.findall(r"\{eval\}`([^`]+)`", c.source)}
        code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
        glued_ = set(re.findall(r"^\s*(\w+) = glued\(\s*\"(\w+)\"", code, flags=re.M))
        bad = [n for n in glued_ if n[0] != n[1]]
        assert not bad, f"{md.name}: variables glued under another name: {bad}"
        missing = shown - {n for n, _ in glued_}
        assert not missing, f"{md.name}: {{eval}} of names not assigned from glued(): {sorted(missing)}"
        seen += len(shown)
    assert seen, "no chapter shows a number with {eval}"


@pytest.mark.parametrize("value, full", [("1", True), ("0", False), ("", False), (None, False)])
def test_full_run_reads_the_one_switch(monkeypatch, value, full):
    from booktools import full_run
    if value is None:
        monkeypatch.delenv("SHUFFLE_FULL", raising=False)
    else:
        monkeypatch.setenv("SHUFFLE_FULL", value)
    assert full_run() is full


def test_glued_markdown_glues_and_returns_a_markdown_object(monkeypatch):
    from IPython.display import Markdown

    from booktools import glued
    seen = {}
    monkeypatch.setattr("booktools._glue", lambda name, value, display: seen.update({name: value}))
    qs_delta = glued("qs_delta", "$10^{-6}$", markdown=True)
    assert isinstance(qs_delta, Markdown) and qs_delta.data == "$10^{-6}$"
    assert seen == {"qs_delta": qs_delta}


def test_every_shown_code_line_fits_the_text_column():
    """A code cell the reader sees (not tagged remove-input or remove-cell) has no line longer than
    76 characters, the text column at the book's code font (tests/wrap_cells.py wraps them; the
    browser check measures the rendered blocks, this catches a long line before a build)."""
    import jupytext

    root = pathlib.Path(__file__).resolve().parents[1] / "chapters"
    long = []
    for md in sorted(root.glob("*.md")):
        for cell in jupytext.read(md).cells:
            tags = set(cell.metadata.get("tags", []))
            if cell.cell_type != "code" or tags & {"remove-input", "remove-cell"}:
                continue
            long += [f"{md.name}: {line[:60]}" for line in cell.source.splitlines() if len(line) > 76]
    assert not long, "\n".join(long)
