"""The claim boxes and the ledger (``_ext/claim_status.py``): every paper's claim box has ledger
entries (``claims.csv``, column ``box``), types no status of its own, and shows, once built, the
statuses of its entries, each with links to its rows.

The chapters' boxes are read from their MyST source; the extension is run by Sphinx on a small
synthetic book (a ledger of two papers, a mixed box, a uniform box), whose HTML is read back, and
on faulty versions of it, each of which must warn.  The built book itself is checked by
``tests/test_book_browser.py`` (``test_claim_badges_match_the_ledger``).
"""

from __future__ import annotations

import csv
import io
import pathlib
import re
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))

import claim_status  # noqa: E402

BOX = re.compile(r"^:::\{admonition\} (?P<title>[^\n]*)\n"
                 r"(?P<opts>(?::\w+:[^\n]*\n)+)(?P<body>.*?)^:::$", re.M | re.S)


def chapter_boxes() -> list[dict]:
    """Every admonition of a chapter whose ``:class:`` holds ``claim``: its chapter, title,
    class line, name and body."""
    out = []
    for path in sorted((ROOT / "chapters").glob("*.md")):
        for m in BOX.finditer(path.read_text()):
            opts = dict(re.findall(r"^:(\w+):\s*(.*)$", m["opts"], re.M))
            if "claim" in opts.get("class", "").split():
                out.append({"chapter": path.name, "title": m["title"], "class": opts["class"],
                            "name": opts.get("name", ""), "body": m["body"]})
    return out


def ledger() -> list[dict[str, str]]:
    return claim_status.read_ledger(ROOT / "claims.csv")


def test_the_chapters_have_claim_boxes():
    boxes = chapter_boxes()
    assert len(boxes) >= 20, f"found {len(boxes)} claim boxes: is the pattern still the chapters'?"
    names = [b["name"] for b in boxes]
    assert all(names) and len(set(names)) == len(names), names


def test_every_claim_box_has_a_ledger_entry():
    entries = claim_status.entries_by_box(ledger())
    missing = [f"{b['chapter']}: {b['name']}" for b in chapter_boxes()
               if not entries.get(b["name"])]
    assert not missing, f"claim boxes no entry of claims.csv names (column box): {missing}"


def test_every_box_the_ledger_names_is_a_claim_box():
    have = {b["name"] for b in chapter_boxes()}
    unknown = sorted(set(claim_status.entries_by_box(ledger())) - have)
    assert not unknown, f"claims.csv (column box) names boxes no chapter has: {unknown}"


def test_boxes_type_no_status():
    """The status comes from the ledger only: no box types it in its title or its classes."""
    for b in chapter_boxes():
        assert b["class"].split() == ["claim"], (b["name"], b["class"])
        typed = re.search(r"\*(reproduced|refuted|ambiguous|out-of-scope)\*\s*$", b["title"])
        assert not typed, b["title"]


def test_statuses_a_box_names_are_its_entries():
    """A status word in a box's text (e.g. "Theorem 10: ambiguous"; "not reproduced" is none) is the
    status of one of its entries."""
    entries = claim_status.entries_by_box(ledger())
    for b in chapter_boxes():
        words = r"(?<!not )\b(reproduced|refuted|ambiguous|out-of-scope)\b"
        named = set(re.findall(words, b["body"]))
        have = {e.status for e in entries.get(b["name"], [])}
        assert named <= have, (b["name"], named - have, have)


# ---- the extension's functions, on a synthetic ledger ----

HEADER = "seed,item,status,settled_by,results,note,check,box\n"
LEDGER = HEADER + (
    "000,Lemma 1,refuted,chapters/a.md,,n,numeric,box-mixed\n"
    "001,Lemma 9,reproduced,chapters/a.md,,n,numeric,box-one\n"
    "000,Lemma 2,reproduced,chapters/a.md,,n,numeric,\n"
    "000,Lemma 3,reproduced,chapters/a.md,,n,numeric,box-mixed;box-one\n"
    "000,Lemma 4,refuted,chapters/a.md,,n,numeric,box-mixed\n"
)


def rows_of(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def test_entries_by_box_numbers_rows_per_paper():
    E = claim_status.Entry
    boxes = claim_status.entries_by_box(rows_of(LEDGER))
    assert boxes == {
        "box-mixed": [E("000", 1, "refuted"), E("000", 3, "reproduced"), E("000", 4, "refuted")],
        "box-one": [E("001", 1, "reproduced"), E("000", 3, "reproduced")],
    }
    assert E("000", 3, "reproduced").label == "ledger-000-3"
    with pytest.raises(ValueError, match="claims.csv line 2: status"):
        claim_status.entries_by_box(rows_of(HEADER + "000,x,proved,a,,n,numeric,b\n"))


def test_a_mixed_box_shows_each_status_with_its_rows():
    boxes = claim_status.entries_by_box(rows_of(LEDGER))
    mixed, one = boxes["box-mixed"], boxes["box-one"]
    assert claim_status.box_class(mixed) == "claim-mixed"
    assert claim_status.box_class(one) == "claim-reproduced"
    assert [(s, [e.k for e in es]) for s, es in claim_status.by_status(mixed)] == [
        ("reproduced", [3]), ("refuted", [1, 4])]
    line = claim_status.ledger_line(mixed, "chapters/a")
    from docutils import nodes
    from sphinx import addnodes
    assert [i.astext() for i in line.findall(nodes.list_item)] == [
        "reproduced Table %s, entry 3", "refuted Table %s, entries 1 and 4"]
    refs = [(x["reftype"], x["reftarget"]) for x in line.findall(addnodes.pending_xref)]
    assert refs == [("numref", "tbl-ledger-000"), ("ref", "ledger-000-3"),
                    ("numref", "tbl-ledger-000"), ("ref", "ledger-000-1"), ("ref", "ledger-000-4")]
    two_papers = claim_status.ledger_line(one, "chapters/a").astext()
    assert two_papers == "Ledger: reproduced Table %s, entry 3; Table %s, entry 1"


# ---- the extension run by Sphinx on a synthetic book ----

INDEX = """\
Chapter
=======

.. admonition:: Paper (2020), Lemmas 1, 3 and 4
   :class: claim
   :name: box-mixed

   A statement.

.. admonition:: Paper (2021), Lemma 9
   :class: claim
   :name: box-one

   Another.

.. toctree::

   ledger
"""


def ledger_page(items_000=("Lemma 1", "Lemma 2", "Lemma 3", "Lemma 4")) -> str:
    def table(seed, items):
        rows = "".join(f"   * - {i}\n     - x\n" for i in items)
        return (f".. list-table:: Paper {seed}\n   :name: tbl-ledger-{seed}\n   :header-rows: 1\n\n"
                f"   * - claim\n     - status\n{rows}\n")
    # tbl-ledger-counts: a table of the page that is no paper's
    return ("Ledger\n======\n\n" + table("counts", ["7"]) + table("000", items_000)
            + table("001", ["Lemma 9"]))


def build(tmp_path: pathlib.Path, index: str = INDEX, ledger_rst: str | None = None,
          csv_text: str = LEDGER) -> tuple[str, str]:
    """Build the synthetic book; return the chapter's HTML and Sphinx's warnings."""
    from sphinx.application import Sphinx

    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text(
        f"import sys\nsys.path.insert(0, {str(ROOT / '_ext')!r})\n"
        "extensions = ['claim_status']\nnumfig = True\nclaim_ledger_doc = 'ledger'\n")
    (src / "index.rst").write_text(index)
    (src / "ledger.rst").write_text(ledger_page() if ledger_rst is None else ledger_rst)
    (src / "claims.csv").write_text(csv_text)
    warnings = io.StringIO()
    app = Sphinx(str(src), str(src), str(tmp_path / "html"), str(tmp_path / "doctrees"), "html",
                 status=None, warning=warnings, freshenv=True)
    app.build()
    return (tmp_path / "html" / "index.html").read_text(), warnings.getvalue()


def badges(html: str, name: str) -> list[str]:
    """The statuses in the title of the box ``name``."""
    box = re.search(rf'<div class="([^"]*)" id="{name}">\s*<p class="admonition-title">(.*?)</p>',
                    html, re.S)
    assert box, f"no box {name}"
    return re.findall(r'class="claim-status claim-status-([a-z-]+)"', box[2])


def test_sphinx_marks_boxes_and_links_rows(tmp_path):
    html, warnings = build(tmp_path)
    assert not warnings.strip(), warnings
    assert badges(html, "box-mixed") == ["reproduced", "refuted"]
    assert badges(html, "box-one") == ["reproduced"]
    assert re.search(r'<div class="claim claim-mixed admonition" id="box-mixed">', html)
    assert re.search(r'<div class="claim claim-reproduced admonition" id="box-one">', html)
    # each entry's number links its row; each table number its table
    for k in (1, 3, 4):
        assert re.search(rf'href="ledger.html#ledger-000-{k}"[^>]*><span[^>]*>{k}</span>', html), k
    assert 'href="ledger.html#ledger-001-1"' in html
    assert re.search(r'href="ledger.html#tbl-ledger-000"[^>]*><span[^>]*>Table 2</span>', html)
    page = (tmp_path / "html" / "ledger.html").read_text()
    assert re.search(r'<tr[^>]* id="ledger-000-3"', page)
    assert re.search(r'<tr[^>]* id="ledger-001-1"', page)


@pytest.mark.parametrize("fault, message", [
    ("box without entry", "claim box 'box-new' has no ledger entry"),
    ("typed status", "is typed ['claim-refuted'], the ledger gives 'claim-reproduced'"),
    ("unknown box", "names the claim box 'box-gone', which no page has"),
    ("row differs", "ledger table tbl-ledger-000 row 2 is not the entry 'Lemma 2'"),
    ("row missing", "ledger table tbl-ledger-000 has 3 rows"),
])
def test_sphinx_warns_on_a_ledger_the_boxes_disagree_with(tmp_path, fault, message):
    index, ledger_rst, csv_text = INDEX, None, LEDGER
    if fault == "box without entry":
        index = INDEX.replace(":name: box-one", ":name: box-new")
        csv_text = LEDGER.replace("box-mixed;box-one", "box-mixed")
        csv_text = csv_text.replace(",box-one\n", ",\n")
    elif fault == "typed status":
        index = INDEX.replace(":class: claim\n   :name: box-one",
                              ":class: claim claim-refuted\n   :name: box-one")
    elif fault == "unknown box":
        csv_text = LEDGER.replace("Lemma 2,reproduced,chapters/a.md,,n,numeric,",
                                  "Lemma 2,reproduced,chapters/a.md,,n,numeric,box-gone")
    elif fault == "row differs":
        ledger_rst = ledger_page(("Lemma 1", "Lemma 7", "Lemma 3", "Lemma 4"))
    else:
        ledger_rst = ledger_page(("Lemma 1", "Lemma 2", "Lemma 3"))
    _, warnings = build(tmp_path, index, ledger_rst, csv_text)
    assert message in warnings, warnings
