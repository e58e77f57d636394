"""The built book as a reader's browser shows it.

Headless Chromium (Debian's ``chromium``; ``make test`` installs it when missing) loads every page
of ``_build/html`` over the Chrome DevTools Protocol and each page fails on

* a MathJax error (an ``merror``, or an undefined macro that MathJax shows in red), or math that
  MathJax did not typeset (a ``.math`` element without its rendering: MathJax missing or broken);
* a raw ``$…$`` (or a ``$`` before a TeX command) in text outside math and code;
* an image that does not load, a page resource (script, style sheet, font) that fails to load,
  or a JavaScript exception;
* a page wider than the viewport (1280 px): it names the elements that stick out;
* a block wider than the text column: a code cell, an output, a listing, a table or a display
  equation whose content is wider than its box (it scrolls or sticks out) or than the column,
  folded blocks unfolded first; it names the kind, the width and the block's first characters;
* a cell's stream output split over several boxes (the build merges streams: ``nb_merge_streams``);
* a search box in the header strip besides the sidebar's.

``make test`` runs this after the book build, with ``SHUFFLE_BOOK_HTML=_build/html``; without that
variable (a plain ``pytest``) it skips rather than check an older build.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator

import pytest

# only a build named explicitly: a plain pytest would otherwise check whatever older book _build holds
HTML = pathlib.Path(os.environ["SHUFFLE_BOOK_HTML"]).resolve() if os.environ.get("SHUFFLE_BOOK_HTML") else None
WIDTH, HEIGHT = int(os.environ.get("SHUFFLE_BOOK_WIDTH", "1280")), 900
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--remote-debugging-port=0", f"--window-size={WIDTH},{HEIGHT}"]
TIMEOUT = 60.0
# px a block may exceed the text column by: sub-pixel rounding of glyph widths, not a character
TOLERANCE = 2


def pages(html: pathlib.Path) -> list[pathlib.Path]:
    """Every HTML page of the build (not Sphinx's copies of sources and static files)."""
    skip = {"_static", "_sources", "_images", "_sphinx_design_static"}
    return sorted(p for p in html.rglob("*.html") if not skip & set(p.relative_to(html).parts))


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class DevTools:
    """A minimal Chrome DevTools Protocol client over one websocket (flattened sessions)."""

    def __init__(self, url: str):
        import websocket   # websocket-client

        self.ws = websocket.create_connection(url, timeout=TIMEOUT, suppress_origin=True)
        self.next_id, self.events = 0, []

    def send(self, method: str, session: str | None = None, **params):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        self.ws.send(json.dumps(msg))
        while True:
            reply = json.loads(self.ws.recv())
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method: str, deadline: float, **params):
        """The first event ``method`` whose params include ``params`` (e.g. this navigation's loaderId)."""
        while True:
            for i, ev in enumerate(self.events):
                p = ev.get("params", {})
                if ev.get("method") == method and all(p.get(k) == v for k, v in params.items()):
                    return self.events.pop(i)
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {method} within {TIMEOUT:.0f} s")
            self.events.append(json.loads(self.ws.recv()))


def stop(proc: subprocess.Popen, seconds: float = 10.0) -> None:
    """Terminate a child process, killing it if it has not exited after ``seconds``."""
    proc.terminate()
    try:
        proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextlib.contextmanager
def browser_session(profile: pathlib.Path, skip_why: str) -> Iterator[tuple[DevTools, str]]:
    """Headless Chromium with its profile in ``profile``, one page attached over the DevTools
    Protocol: yields (client, session id) and stops the browser afterwards.  Skips the test
    with ``skip_why`` when no chromium is installed."""
    exe = chromium()
    if exe is None:
        pytest.skip(skip_why)
    proc = subprocess.Popen([exe, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        port_file, deadline = pathlib.Path(profile, "DevToolsActivePort"), time.monotonic() + TIMEOUT
        while not (port_file.exists() and len(port_file.read_text().split()) == 2):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"chromium did not start its DevTools endpoint (exit code {proc.poll()})")
            time.sleep(0.1)
        port, path = port_file.read_text().split()
        cdp = DevTools(f"ws://127.0.0.1:{port}{path}")
        target = cdp.send("Target.createTarget", url="about:blank")["targetId"]
        session = cdp.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        yield cdp, session
        cdp.ws.close()
    finally:
        stop(proc)


@pytest.fixture(scope="module")
def page():
    why = ("no chromium on this machine: install Debian's package (apt-get install -y chromium; "
           "make test tries to) to run the browser check")
    with tempfile.TemporaryDirectory(prefix="book-browser-") as profile, \
            browser_session(pathlib.Path(profile), why) as (cdp, session):
        for domain in ("Page", "Runtime", "Network", "Log"):
            cdp.send(f"{domain}.enable", session)
        cdp.send("Page.setLifecycleEventsEnabled", session, enabled=True)
        cdp.send("Emulation.setDeviceMetricsOverride", session, width=WIDTH, height=HEIGHT,
                 deviceScaleFactor=1, mobile=False)
        yield cdp, session


# Runs in the page after its load event; returns a list of problems (strings).
CHECK = r"""
(async () => {
  const TOLERANCE = %TOLERANCE%;
  const problems = [];
  const timeout = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    await Promise.race([MathJax.startup.promise, timeout(30000)]);
  }
  const short = (s) => s.replace(/\s+/g, ' ').trim().slice(0, 120);
  const items = (window.MathJax && MathJax.startup && MathJax.startup.document) ? [...MathJax.startup.document.math] : [];
  const tex = (e) => {   // the TeX source of the formula holding e (CHTML glyphs carry no text)
    const item = items.find((i) => i.typesetRoot === e.closest('mjx-container'));
    return item ? item.math : e.textContent;
  };
  // MathJax: errors, undefined macros (shown in red by the noundefined extension), untypeset math
  for (const e of document.querySelectorAll('mjx-merror, [data-mjx-error]')) {
    problems.push('MathJax error: ' + short((e.getAttribute('data-mjx-error') || '') + ' in ' + tex(e)));
  }
  for (const e of document.querySelectorAll('mjx-container [style*="color: red"]')) {
    problems.push('MathJax undefined macro in ' + short(tex(e)));
  }
  const untypeset = [...document.querySelectorAll('.math')].filter((e) => !e.querySelector('mjx-container'));
  if (untypeset.length) {
    problems.push(untypeset.length + ' math element(s) not typeset by MathJax, e.g. ' + short(untypeset[0].textContent));
  }
  // raw TeX: $...$ or $\command in text outside math and code
  const skip = 'script, style, pre, code, textarea, mjx-container, .math, .MathJax, .highlight';
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (n.parentElement && n.parentElement.closest(skip)) continue;
    const m = n.textContent.match(/\$\$|\$[^\s$][^$]*\$|\$\\[A-Za-z]/);
    if (m) problems.push('raw TeX outside math: ' + short(n.textContent.slice(Math.max(0, m.index - 40), m.index + 60)));
  }
  // images
  await Promise.race([Promise.all([...document.images].map((i) => {
    i.loading = 'eager';
    return i.decode().catch(() => null);
  })), timeout(20000)]);
  for (const i of document.images) {
    if (!(i.complete && i.naturalWidth > 0)) problems.push('image does not load: ' + i.getAttribute('src'));
  }
  // outputs split into several boxes (one cell's stdout in pieces; nb_merge_streams merges them)
  for (const cell of document.querySelectorAll('.cell_output')) {
    const streams = cell.querySelectorAll(':scope > .output.stream').length;
    if (streams > 1) problems.push('one cell output split into ' + streams + ' stream boxes: ' + short(cell.textContent).slice(0, 60));
  }
  // width: the document must not scroll sideways; name the outermost elements that stick out
  const root = document.documentElement, limit = root.clientWidth;
  if (root.scrollWidth > limit + 1) {
    const out = [];
    for (const e of document.body.querySelectorAll('*')) {
      const r = e.getBoundingClientRect(), p = e.parentElement.getBoundingClientRect();
      if (r.right > limit + 1 && p.right <= limit + 1 && r.width > 0) {
        out.push(e.tagName.toLowerCase() + (e.className && typeof e.className === 'string' ? '.' + e.className.trim().split(/\s+/).join('.') : '')
                 + ' (' + Math.round(r.width) + ' px): ' + short(e.textContent).slice(0, 60));
      }
    }
    problems.push('page is ' + root.scrollWidth + ' px wide, viewport ' + limit + ' px; sticking out: ' + out.slice(0, 5).join(' | '));
  }
  // one search box, the sidebar's (pydata-sphinx-theme 0.17 adds one in a header strip by default)
  const headerSearch = document.querySelectorAll('.bd-header .search-button-field').length;
  if (headerSearch) problems.push('a second search box in the header strip (html_theme_options.navbar_persistent)');
  // every block against the text column: code, outputs, tables and display equations must fit
  // the column (a block that scrolls sideways hides its right end from a reader)
  const column = document.querySelector('article.bd-article') || document.querySelector('main');
  if (column) {
    // folded blocks (hide-input cells, dropdowns) measured as a reader who unfolds them sees them
    for (const d of column.querySelectorAll('details')) d.open = true;
    for (const e of column.querySelectorAll('.toggle-hidden')) e.classList.remove('toggle-hidden');
    const cs = getComputedStyle(column);
    const room = column.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
    const kinds = [
      ['code', '.cell_input pre'],
      ['output', '.cell_output pre'],
      ['listing', 'div.highlight pre'],
      ['table', 'table'],
      ['equation', 'mjx-container[display="true"]'],
    ];
    const seen = new Set();
    for (const [kind, sel] of kinds) {
      for (const e of column.querySelectorAll(sel)) {
        if (seen.has(e) || e.closest('.toctree-wrapper, nav, .bd-toc')) continue;
        seen.add(e);
        // content wider than its own box (it scrolls or sticks out), or a box wider than the column
        const need = Math.max(e.scrollWidth, e.getBoundingClientRect().width);
        const box = kind === 'table' ? room : Math.min(room, e.clientWidth);
        if (need > box + TOLERANCE) {
          const text = kind === 'equation' ? tex(e) : e.textContent;
          problems.push(kind + ' wider than the column (' + Math.round(need) + ' px in ' + Math.round(box)
                        + ' px; column ' + Math.round(room) + ' px): ' + short(text).slice(0, 50));
        }
      }
    }
  } else {
    problems.push('no text column (article.bd-article) found: the width check cannot measure the blocks');
  }
  return [...new Set(problems)];
})()
"""


def _problems(cdp: DevTools, session: str, path: pathlib.Path) -> list[str]:
    redirect = re.search(r'http-equiv="refresh" content="\d+;\s*url=([^"]+)"', path.read_text()[:2000], re.I)
    if redirect:   # Jupyter Book's index.html only forwards to the first chapter
        target = (path.parent / redirect.group(1)).resolve()
        return [] if target.exists() else [f"redirects to a missing page: {redirect.group(1)}"]
    url = path.as_uri()
    cdp.events.clear()
    deadline = time.monotonic() + TIMEOUT
    nav = cdp.send("Page.navigate", session, url=url)
    if nav.get("errorText"):
        return [f"navigation failed: {nav['errorText']}"]
    # this navigation's own load event (a late one of the previous page must not count)
    cdp.wait_for("Page.lifecycleEvent", deadline, name="load", loaderId=nav["loaderId"])
    res = cdp.send("Runtime.evaluate", session, expression=CHECK.replace("%TOLERANCE%", str(TOLERANCE)), awaitPromise=True, returnByValue=True,
                   timeout=int(TIMEOUT * 1000))
    if "exceptionDetails" in res:
        return [f"the check script failed: {res['exceptionDetails']}"]
    problems = list(res["result"]["value"])
    requests = {ev["params"]["requestId"]: ev["params"]["request"]["url"]
                for ev in cdp.events if ev.get("method") == "Network.requestWillBeSent"}
    for ev in cdp.events:
        m, p = ev.get("method"), ev.get("params", {})
        if m == "Network.loadingFailed" and not p.get("canceled"):
            problems.append(f"resource failed to load ({p.get('errorText')}): {requests.get(p.get('requestId'), '?')}")
        elif m == "Runtime.exceptionThrown":
            d = p["exceptionDetails"]
            text = d.get("exception", {}).get("description", d.get("text", ""))
            problems.append(f"JavaScript exception: {text}"[:300])
    return problems


PAGES = pages(HTML) if HTML is not None and HTML.is_dir() else []


def test_book_is_built():
    if HTML is None:
        pytest.skip("no book named: make test builds one and runs this check with SHUFFLE_BOOK_HTML=_build/html")
    assert HTML.is_dir(), f"SHUFFLE_BOOK_HTML={HTML} is not a folder"
    assert (HTML / "index.html").exists() and len(PAGES) > 1, f"{HTML} holds no built book"


# Pages that fail today for a cause outside the build configuration, reported to their owners; strict:
# the test fails as soon as one is fixed, so the entry is removed with the fix.
KNOWN_FAILURES: dict[str, str] = {}   # page -> why it fails today (strict xfail)


def _param(p: pathlib.Path):
    rel = str(p.relative_to(HTML))
    marks = [pytest.mark.xfail(reason=KNOWN_FAILURES[rel], strict=True)] if rel in KNOWN_FAILURES else []
    return pytest.param(p, id=rel, marks=marks)


@pytest.mark.parametrize("path", [_param(p) for p in PAGES])
def test_page_reads_in_a_browser(page, path):
    cdp, session = page
    problems = _problems(cdp, session, path)
    assert not problems, f"{path.relative_to(HTML)}:\n  " + "\n  ".join(problems)


def test_claim_badges_match_the_ledger():
    """Every paper's claim box of the built book shows the statuses of its ledger entries
    (``claims.csv``, column ``box``) and links exactly their rows, which the ledger page has
    (``_ext/claim_status.py``); no browser needed."""
    if HTML is None:
        pytest.skip("no book named: make test builds one and runs this check with SHUFFLE_BOOK_HTML=_build/html")
    import sys

    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "_ext"))
    import claim_status

    root = pathlib.Path(__file__).resolve().parents[1]
    want = claim_status.entries_by_box(claim_status.read_ledger(root / "claims.csv"))
    ledger = (HTML / "chapters" / "90_ledger.html").read_text()
    box = re.compile(r'<div class="([^"]*\bclaim\b[^"]*)" id="([^"]+)">(.*?)<p class="claim-ledger">(.*?)</div>',
                     re.S)
    seen = set()
    for path in PAGES:
        for classes, name, head, line in box.findall(path.read_text()):
            seen.add(name)
            entries = want.get(name, [])
            title = re.search(r'<p class="admonition-title">(.*?)</p>', head, re.S)
            shown = re.findall(r'claim-status-([a-z-]+)"', title[1] if title else "")
            assert shown == [s for s, _ in claim_status.by_status(entries)], (path.name, name, shown)
            assert claim_status.box_class(entries) in classes.split(), (path.name, name, classes)
            links = set(re.findall(r'90_ledger\.html#(ledger-[0-9a-z]+-[0-9]+)"', line))
            assert links == {e.label for e in entries}, (path.name, name, links)
            assert all(f'id="{label}"' in ledger for label in links), (name, links)
    assert seen == set(want), f"boxes the ledger names but the book does not show: {set(want) - seen}"
