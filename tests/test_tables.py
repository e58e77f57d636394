"""shuffle_lib.tables: the book's captioned tables (issue 16) render as a MyST {table} and as
aligned plain text, and reject malformed input."""

import pytest

from shuffle_lib.tables import table


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
    from shuffle_lib.tables import escape
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
