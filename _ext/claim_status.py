"""Claim boxes show the verification ledger's status: ``claims.csv`` is its one source.

A paper's statement is a MyST admonition with the class ``claim`` and a ``:name:``::

    :::{admonition} Zhilyaev (2020), §5
    :class: claim
    :name: claim-mixnet-fake
    ...
    :::

The ledger's column ``box`` names, for each entry, the claim boxes that state it (``;`` between
two).  At build time this extension

* labels the rows of the ledger's tables: the chapter ``claim_ledger_doc`` shows one table per
  paper, named ``tbl-ledger-<seed>``, whose rows are that paper's entries in the file's order, and
  row ``k`` (from 1) gets the label ``ledger-<seed>-<k>``;
* gives each claim box, from its entries' statuses, a badge per status in its title, the class
  ``claim-<status>`` (one status) or ``claim-mixed`` (several: a statement settled in parts), and
  a last line linking every entry under its status ("Ledger: [refuted] Table 12.3, entries 18
  and 19"; a list of such lines when the statuses differ).

A claim box without an entry, a box carrying a status class the ledger does not give it, an entry
naming a box no chapter has, and a ledger table whose rows are not the file's entries are
warnings, hence failures of the book's ``-W`` build.
"""

from __future__ import annotations

import csv
import dataclasses
import pathlib
import re
from collections.abc import Iterable, Sequence

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms import SphinxTransform
from sphinx.util import logging

logger = logging.getLogger(__name__)

STATUSES = ("reproduced", "refuted", "ambiguous", "out-of-scope")
"""The ledger's statuses, in the order a box shows them."""
CLAIM_CLASS = "claim"
TABLE_PREFIX = "tbl-ledger-"


@dataclasses.dataclass(frozen=True)
class Entry:
    """One ledger entry as a box cites it: its paper (``seed``), its row ``k`` (from 1) in that
    paper's table, and its status."""

    seed: str
    k: int
    status: str

    @property
    def label(self) -> str:
        return f"ledger-{self.seed}-{self.k}"


def read_ledger(path: pathlib.Path) -> list[dict[str, str]]:
    """The rows of ``claims.csv``."""
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def entries_by_box(rows: Iterable[dict[str, str]]) -> dict[str, list[Entry]]:
    """Each box name of the column ``box`` with the entries that name it, in the file's order.

    ``k`` counts the rows of the same ``seed``, as the ledger chapter's table of that paper does.
    Raises ``ValueError`` naming the row when its status is not one of :data:`STATUSES`.
    """
    count: dict[str, int] = {}
    boxes: dict[str, list[Entry]] = {}
    for i, r in enumerate(rows, start=2):          # line 1 is the header
        seed = r["seed"]
        count[seed] = count.get(seed, 0) + 1
        if r["status"] not in STATUSES:
            raise ValueError(f"claims.csv line {i}: status must be one of {STATUSES}, "
                             f"got status={r['status']!r}")
        for name in filter(None, (b.strip() for b in (r.get("box") or "").split(";"))):
            boxes.setdefault(name, []).append(Entry(seed, count[seed], r["status"]))
    return boxes


def by_status(entries: Sequence[Entry]) -> list[tuple[str, list[Entry]]]:
    """The entries grouped by status, in the order of :data:`STATUSES` (each status once)."""
    return [(s, [e for e in entries if e.status == s]) for s in STATUSES
            if any(e.status == s for e in entries)]


def box_class(entries: Sequence[Entry]) -> str:
    """``claim-<status>`` when the entries agree, ``claim-mixed`` when they do not."""
    groups = by_status(entries)
    return f"claim-{groups[0][0]}" if len(groups) == 1 else "claim-mixed"


def badge(status: str) -> nodes.inline:
    """The status as a badge (``_theme/book.css``: ``span.claim-status``)."""
    return nodes.inline(status, status, classes=["claim-status", f"claim-status-{status}"])


def _xref(reftype: str, target: str, text: str, docname: str) -> addnodes.pending_xref:
    return addnodes.pending_xref("", nodes.inline(text, text), refdomain="std", reftype=reftype,
                                 reftarget=target, refexplicit=True, refwarn=True, refdoc=docname)


def _and(items: list[nodes.Node]) -> list[nodes.Node]:
    """``a``, ``a and b``, ``a, b and c``."""
    out: list[nodes.Node] = []
    for i, item in enumerate(items):
        if i:
            out.append(nodes.Text(" and " if i == len(items) - 1 else ", "))
        out.append(item)
    return out


def status_line(status: str, entries: Sequence[Entry], docname: str) -> list[nodes.Node]:
    """"[status] Table T, entries k1 and k2; Table U, entry k3": each table number a link to the
    table, each entry number a link to its row; the papers' tables in the order of their keys."""
    out: list[nodes.Node] = [badge(status)]
    for t, seed in enumerate(sorted({e.seed for e in entries})):
        rows = [e for e in entries if e.seed == seed]
        out.append(nodes.Text("; " if t else " "))
        out.append(_xref("numref", TABLE_PREFIX + seed, "Table %s", docname))
        out.append(nodes.Text(", entries " if len(rows) > 1 else ", entry "))
        out.extend(_and([_xref("ref", e.label, str(e.k), docname) for e in rows]))
    return out


def ledger_line(entries: Sequence[Entry], docname: str) -> nodes.Element:
    """The box's last line, "Ledger: [status] Table T, entry k", or, when its entries differ in
    status, "Ledger:" and a list with one such line per status."""
    groups = by_status(entries)
    head = nodes.paragraph("", "Ledger: ", classes=["claim-ledger"])
    if len(groups) == 1:
        head.extend(status_line(*groups[0], docname))
        return head
    items = nodes.bullet_list(classes=["claim-ledger"])
    for status, mine in groups:
        items += nodes.list_item("", nodes.paragraph("", "", *status_line(status, mine, docname)))
    return nodes.container("", head, items, classes=["claim-ledger"])


def _plain(node: nodes.Element) -> str:
    """A cell's text without its raw HTML, letters and digits only (for comparing with an item)."""
    text = "".join(t.astext() for t in node.findall(nodes.Text)
                   if not isinstance(t.parent, nodes.raw))
    return re.sub(r"\W", "", text)


class ClaimStatus(SphinxTransform):
    """Label the ledger's rows and mark every claim box with its entries' statuses."""

    default_priority = 600      # before SphinxDomains (850) collects the labels of the page

    def apply(self, **kwargs) -> None:
        path = pathlib.Path(self.app.srcdir) / self.config.claim_ledger_csv
        boxes_here = [n for n in self.document.findall(nodes.admonition)
                      if CLAIM_CLASS in n["classes"]]
        ledger_page = self.env.docname == self.config.claim_ledger_doc
        if not (boxes_here or ledger_page):
            return
        self.env.note_dependency(str(path))
        rows = read_ledger(path)
        if ledger_page:
            self.label_rows(rows)
        boxes = entries_by_box(rows)
        seen = self.env.claim_boxes.setdefault(self.env.docname, set())   # type: ignore[attr-defined]
        for box in boxes_here:
            names = box["names"]
            if not names:
                logger.warning("claim box without a :name: (the ledger's column box names it)",
                               location=box)
                continue
            seen.update(names)
            entries = [e for name in names for e in boxes.get(name, [])]
            if not entries:
                logger.warning(f"claim box {names[0]!r} has no ledger entry: name it in the "
                               f"column box of {self.config.claim_ledger_csv}", location=box)
                continue
            self.mark(box, entries)

    def mark(self, box: nodes.admonition, entries: list[Entry]) -> None:
        typed = [c for c in box["classes"] if c.startswith("claim-")]
        want = box_class(entries)
        if typed and typed != [want]:
            logger.warning(f"claim box {box['names'][0]!r} is typed {typed}, the ledger gives "
                           f"{want!r}: drop the typed class", location=box)
        box["classes"] = [c for c in box["classes"] if c not in typed] + [want]
        title = box.next_node(nodes.title)
        if title is not None:
            for status, _ in by_status(entries):
                title += nodes.Text(" ")
                title += badge(status)
        box += ledger_line(entries, self.env.docname)

    def label_rows(self, rows: list[dict[str, str]]) -> None:
        """Row k of the table ``tbl-ledger-<seed>`` gets the label ``ledger-<seed>-<k>``, once its
        text is checked against the k-th entry of that paper (``seed`` a key of the file)."""
        seeds = {TABLE_PREFIX + r["seed"]: r["seed"] for r in rows}
        for table in self.document.findall(nodes.table):
            ids = [i for i in table["ids"] if i in seeds]    # not the page's other tables
            if not ids:
                continue
            seed = seeds[ids[0]]
            items = [r["item"] for r in rows if r["seed"] == seed]
            body = table.next_node(nodes.tbody)
            trs = [] if body is None else [r for r in body.children if isinstance(r, nodes.row)]
            if len(trs) != len(items):
                logger.warning(f"ledger table {ids[0]} has {len(trs)} rows, "
                               f"{self.config.claim_ledger_csv} {len(items)} entries of {seed}",
                               location=table)
                continue
            for k, (tr, item) in enumerate(zip(trs, items), start=1):
                if _plain(tr[0]) != re.sub(r"\W", "", item):
                    logger.warning(f"ledger table {ids[0]} row {k} is not the entry {item[:40]!r}",
                                   location=table)
                    break
                tr["names"].append(Entry(seed, k, "").label)
                self.document.note_explicit_target(tr)


def _purge(app, env, docname: str) -> None:
    getattr(env, "claim_boxes", {}).pop(docname, None)


def _merge(app, env, docnames, other) -> None:
    env.claim_boxes.update({d: other.claim_boxes[d] for d in docnames if d in other.claim_boxes})


def _init(app, env, docnames) -> None:
    if not hasattr(env, "claim_boxes"):
        env.claim_boxes = {}


def _check(app, env) -> None:
    """Every box the ledger names is a claim box of some page."""
    rows = read_ledger(pathlib.Path(app.srcdir) / app.config.claim_ledger_csv)
    have = set().union(*env.claim_boxes.values()) if env.claim_boxes else set()
    for name in sorted(set(entries_by_box(rows)) - have):
        logger.warning(f"{app.config.claim_ledger_csv} names the claim box {name!r}, "
                       "which no page has")


def setup(app):
    app.add_config_value("claim_ledger_csv", "claims.csv", "env")
    app.add_config_value("claim_ledger_doc", "chapters/90_ledger", "env")
    app.add_transform(ClaimStatus)
    app.connect("env-before-read-docs", _init)
    app.connect("env-purge-doc", _purge)
    app.connect("env-merge-info", _merge)
    app.connect("env-check-consistency", _check)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "env_version": 1}
