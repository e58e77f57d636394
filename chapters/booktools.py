"""The book's helpers, shared by every chapter and kept out of the numerical package.

* :func:`table` -- tables a reader compares, rendered by the book as numbered, captioned tables;
* :func:`fmt` and :func:`tex` -- numbers formatted once: fixed significant digits for printed
  output (nbval compares text), ``1.2 \\times 10^{-6}`` for prose and captions;
* :func:`glue_num` -- a computed number glued for the prose, rounded so nbval compares it stably;
* :func:`glued` -- a formatted value glued under the name of the chapter variable that holds it,
  for the prose's ``{eval}`` role, which shows it in the book and in JupyterLab alike;
* :func:`full_run` -- whether the heavy reproductions run (``SHUFFLE_FULL=1``, the book's one
  switch for them);
* :func:`progress` -- a progress bar on stderr in JupyterLab, silent when the book or the tests
  execute a chapter;
* :func:`style` -- the path of the book's matplotlib style file (``plt.style.use(style())``).

Tables:

A :class:`Table` holds cells that are already text (the chapter formats its computed numbers,
``f"{delta:.3g}"``) and shows itself two ways:

* ``text/markdown``: a MyST ``{table}`` directive with the caption and a ``:name:`` label, so the
  book numbers it ("Table 9.1"), ``{numref}`` cites it and the page gets an HTML ``<table>``
  (chapters that show tables set ``mystnb: render_markdown_format: myst`` in their header);
  optional ``filters`` add a ``<select>`` per named column that hides the rows not matching it
  (inline script, works offline);
* ``text/plain``: the same rows in aligned columns, which nbval compares exactly.

The module imports nothing numerical: it formats what it is given.
"""

from __future__ import annotations

import dataclasses
import html
import json
import numbers
import re
from collections.abc import Sequence
from typing import Any

_LABEL = re.compile(r"^[a-z][a-z0-9-]*$")
_NUMBER = re.compile(
    r"^[-+−]?(?:[0-9][0-9_,]*\.?[0-9]*|\.[0-9]+)(?:e[-+]?[0-9]+)?%?$|^(?:inf|nan|—|-|--|n/a)$"
)


@dataclasses.dataclass(frozen=True)
class Table:
    """A captioned, labelled table of text cells; see the module docstring for how it renders."""

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    caption: str
    label: str
    align: str
    filters: tuple[str, ...] = ()

    def _repr_markdown_(self) -> str:
        def cell(s: str) -> str:
            return re.sub(r"(?<!\\)\|", r"\\|", s).replace("\n", " ")

        rule = {"l": ":--", "r": "--:", "c": ":-:"}
        lines = ["| " + " | ".join(cell(h) for h in self.header) + " |",
                 "|" + "|".join(rule[a] for a in self.align) + "|"]
        lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in self.rows]
        # tildes: the caption may hold `code`
        out = [f"~~~~{{table}} {self.caption}", f":name: {self.label}", "", *lines, "~~~~"]
        if self.filters:      # the selects above the table they filter
            out = ["```{raw} html", self._filter_html(), "```", ""] + out
        return "\n".join(out) + "\n"

    def _filter_html(self) -> str:
        cols = [self.header.index(f) for f in self.filters]
        selects = []
        for f, c in zip(self.filters, cols):
            values = sorted({_plain(r[c]) for r in self.rows})
            opts = "".join(
                f'<option value="{html.escape(v)}">{html.escape(v)}</option>' for v in values
            )
            selects.append(f'<label>{html.escape(f)} <select data-col="{c}">'
                           f'<option value="">all</option>{opts}</select></label>')
        script = (
            "(function(){var t=document.getElementById(%s);var box=document.getElementById(%s);"
            "if(!t||!box)return;var ss=box.querySelectorAll('select');function go(){var n=0;"
            "t.querySelectorAll('tbody tr').forEach(function(r){var ok=true;ss.forEach(function(s){"
            "if(s.value&&r.cells[+s.dataset.col].textContent.trim()!==s.value)ok=false;});"
            "r.style.display=ok?'':'none';if(ok)n++;});box.querySelector('output').textContent=n+' "
            "rows';}"
            "ss.forEach(function(s){s.addEventListener('change',go);});go();})();"
            % (json.dumps(self.label), json.dumps(self.label + "-filter"))
        )
        return (f'<div class="table-filter" id="{self.label}-filter">Show: {" ".join(selects)} '
                f"<output></output></div>\n<script>document.addEventListener('DOMContentLoaded',function(){{"
                f"{script}}});</script>")

    def __repr__(self) -> str:
        rows = [self.header, *(tuple(_unescape(c) for c in r) for r in self.rows)]
        width = [max(len(r[i]) for r in rows) for i in range(len(self.header))]

        def line(r: Sequence[str]) -> str:
            return "  ".join(
                c.ljust(w) if a == "l" else c.rjust(w) for c, w, a in zip(r, width, self.align)
            ).rstrip()

        return "\n".join([f"Table ({self.label}): {self.caption}", line(self.header),
                          "  ".join("-" * w for w in width), *(line(r) for r in rows[1:])])


def _unescape(s: str) -> str:
    """A cell as plain text: the backslashes :func:`escape` added dropped."""
    return re.sub(r"\\([\\`*_{}\[\]<>|$])", r"\1", s)


def _plain(s: str) -> str:
    """The text a browser shows for a cell: MyST roles reduced to their text, markup dropped."""
    s = re.sub(r"\{[a-z:]+\}`([^`<]*?)\s*(?:<[^`>]*>)?`", r"\1", s)
    return re.sub(r"[`*]", "", s).strip()


def escape(text: str) -> str:
    """``text`` with Markdown's punctuation escaped, for a cell that is plain text, not markup
    (a claim such as ``delta_{P/Q}(inf) = (1/2)^(n-1)`` must not turn into emphasis or math)."""
    return re.sub(r"([\\`*_{}\[\]<>|$])", r"\\\1", text)


def table(header: Sequence[str], rows: Sequence[Sequence[object]], caption: str, label: str,
          align: str | None = None, filters: Sequence[str] = ()) -> Table:
    """A :class:`Table` from a header and rows of cells (each turned into text with ``str``).

    ``caption`` may hold MyST markup ($...$ math, roles); ``label`` (lower case, digits, hyphens)
    is the name ``{numref}`` cites; ``align`` has one letter per column, ``l``, ``r`` or ``c``
    (default: ``r`` for a column whose cells all look like numbers, blanks, ``--`` or ``n/a``, else
    ``l``); ``filters`` names columns that get a ``<select>`` in the rendered page.  No paper: this
    is the book's formatting.
    """
    header = tuple(str(h) for h in header)
    cells = tuple(tuple(str(c) for c in r) for r in rows)
    if not header:
        raise ValueError("header must name at least one column, got header=()")
    bad = [i for i, r in enumerate(cells) if len(r) != len(header)]
    if bad:
        raise ValueError(
            f"rows must have {len(header)} cells each (one per header entry); rows {bad} do not"
        )
    if not _LABEL.match(label):
        raise ValueError(
            f"label must be lower case letters, digits and hyphens, got label={label!r}"
        )
    if not caption.strip():
        raise ValueError("caption must be non-empty, got caption=''")
    if align is None:
        align = "".join(
            "r"
            if any(r[i].strip() for r in cells)
            and all(_NUMBER.match(r[i].strip()) or not r[i].strip() for r in cells)
            else "l"
            # numbers (or blanks, --, n/a) right-aligned
            for i in range(len(header))
        )
    if len(align) != len(header) or set(align) - set("lrc"):
        raise ValueError(f"align must have {len(header)} letters from 'lrc', got align={align!r}")
    missing = [f for f in filters if f not in header]
    if missing:
        raise ValueError(f"filters must name header columns {header}, got {missing}")
    return Table(header, cells, caption, label, align, tuple(filters))


# ---- numbers, glue, progress, style ----

def fmt(x: float | int | None, digits: int = 4) -> str:
    """``x`` with ``digits`` significant digits (``g`` format); integers (and integral floats) as
    integers, ``inf``/``-inf`` as such, ``None`` as ``--``."""
    if x is None:
        return "--"
    if isinstance(x, int) or (isinstance(x, float) and x.is_integer() and abs(x) < 1e15):
        return str(int(x))
    if x != x or x in (float("inf"), float("-inf")):
        return str(x)
    return f"{x:.{digits}g}"


def tex(x: float | int, digits: int = 3) -> str:
    """``x`` for prose and captions in TeX: ``1.2 \\times 10^{-6}``, ``10^{-6}``, ``0.25``.

    Integers below ``10**4`` are written out (``1000``, ``2048``); from ``10**4`` on, a number
    with at most ``digits`` significant digits is written as a power of ten (``10^{4}``,
    ``5 \\times 10^{4}``), so a size reads the same whether the chapter holds it as ``10**4``,
    ``10_000`` or ``1e4``.  A larger number with more digits than that stays written out
    (``123456``): rounding it would print a different number.
    """
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise ValueError(f"x must be a real number, got x={x!r}")
    if float(x).is_integer() and abs(x) < 1e15:
        i = int(x)
        if abs(i) < 10**4 or len(str(abs(i)).rstrip("0")) > digits:
            return str(i)
    mant, _, exp = f"{x:.{digits}g}".partition("e")
    if not exp:
        return mant
    power = f"10^{{{int(exp)}}}"
    if float(mant) in (1.0, -1.0):
        return ("-" if mant.startswith("-") else "") + power
    return f"{mant} \\times {power}"


def _glue(name: str, value: object, display: bool) -> None:
    from myst_nb import glue
    glue(name, value, display=display)


def glued(name: str, text: str, markdown: bool = False) -> Any:
    """Glue ``text`` under ``name`` and return it, for a chapter variable of the same name, so
    that the prose's ``{eval}`name``` shows it both in the book and in JupyterLab::

        primer_n = glued("primer_n", f"{N}")
        qs_delta = glued("qs_delta", f"${tex(DELTA)}$", markdown=True)

    JupyterLab (jupyterlab-myst) evaluates ``primer_n`` in the kernel; the book, which renders
    cached outputs where MyST-NB cannot evaluate, reads the value glued under the same name
    (``_ext/glued_eval.py``).  ``text`` is the number as the prose shows it, formatted by the
    chapter; both sides show it without quotes.  With ``markdown=True`` ``text`` is MyST (math
    between dollars) and the value an IPython ``Markdown``, which JupyterLab renders and the book
    parses as MyST (the chapter's ``mystnb: render_markdown_format: myst``).
    """
    if not name.isidentifier():
        raise ValueError(
            f"name must be a Python identifier (the prose evaluates it), got name={name!r}"
        )
    if not isinstance(text, str):
        raise ValueError(f"text must be the formatted value (a str), got text={text!r}")
    if markdown:
        from IPython.display import Markdown
        value = Markdown(text)
        _glue(name, value, display=False)
        return value
    _glue(name, text, display=False)
    return text


def glue_num(name: str, x: float, digits: int = 6) -> None:
    """Glue a computed number for the prose, rounded to ``digits`` significant digits so nbval
    compares it stably."""
    _glue(name, float(f"{x:.{digits}g}"), display=False)


def full_run() -> bool:
    """Whether this execution runs the heavy reproductions: ``SHUFFLE_FULL=1`` in the
    environment (``SHUFFLE_FULL=1 make lab``, ``make book``, ``make test``).  Every chapter asks
    here, so one switch turns them all on; without it a chapter runs its default sizes."""
    import os
    return os.environ.get("SHUFFLE_FULL") == "1"


def progress(iterable, desc: str):
    """A progress bar (tqdm, stderr) in JupyterLab; none when the book or the tests execute the
    chapter (their kernels have no ``JPY_SESSION_NAME``), so no output changes."""
    import os

    from tqdm import tqdm
    return tqdm(iterable, desc=desc, disable="JPY_SESSION_NAME" not in os.environ)


def style() -> str:
    """The path of the book's matplotlib style file, ``chapters/book.mplstyle``."""
    import pathlib
    return str(pathlib.Path(__file__).with_name("book.mplstyle"))
