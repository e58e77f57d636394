"""A chapter in JupyterLab, as a reader of the README's "Re-run a chapter" sees it.

JupyterLab runs with the project's settings (the command line of ``make lab``), headless
Chromium drives it over the DevTools protocol (``test_book_browser.DevTools``), and

* ``chapters/00_primer.md`` opens as a notebook on its own (``.jupyter/lab/settings``), its prose
  table renders as a table; after Run All every ``{eval}`` of its prose shows the text the book
  shows (the value glued under the same name in ``tests/notebooks/00_primer.ipynb``), its
  ``booktools.table`` outputs render as tables (not as ``{table}`` directive text), and autosave
  is off, so opening a chapter never rewrites it (JupyterLab marks a chapter as changed when its
  kernel starts);
* ``chapters/02_krr.md`` shows its claim boxes and its ``prf`` box rendered, not as directive text.

jupyterlab-myst reads a markdown cell's ``{eval}`` expressions from the MyST model it builds when
it renders the cell; a long chapter renders its cells over a few seconds after it opens, and a
cell run before then is evaluated without its expressions.  The test waits for every cell's
model before Run All, as the README tells a reader to.  About 40 s; skipped without Chromium.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import secrets
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import pytest
from test_book_browser import browser_session, chromium, stop

ROOT = pathlib.Path(__file__).resolve().parents[1]
JUPYTER = pathlib.Path(sys.executable).with_name("jupyter")
TIMEOUT = 90.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(predicate, seconds: float, what: str):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(0.5)
    raise TimeoutError(f"{what} within {seconds:.0f} s")


def _settle(js, expression: str, want, seconds: float = 30.0) -> None:
    """Wait up to ``seconds`` for ``expression`` to equal ``want``: jupyterlab-myst attaches the
    rendered cells to the page a few seconds after it builds their models."""
    end = time.monotonic() + seconds
    while time.monotonic() < end and js(expression) != want:
        time.sleep(0.5)


def _glued_texts(stem: str) -> dict[str, str]:
    """The texts glued in the reference copy of a chapter, by name (what the book's {eval} shows)."""
    nb = json.loads((ROOT / "tests" / "notebooks" / f"{stem}.ipynb").read_text())
    out = {}
    for cell in nb["cells"]:
        for o in cell.get("outputs", []):
            name = o.get("metadata", {}).get("scrapbook", {}).get("name")
            text = o.get("data", {}).get("application/papermill.record/text/plain")
            if name and text and text[0] in "'\"":
                out[name] = text[1:-1]
    return out


@pytest.fixture(scope="module")
def lab():
    if not JUPYTER.exists():
        pytest.skip(f"no jupyter next to {sys.executable}: run make setup")
    port, token = _free_port(), secrets.token_hex(16)
    why = ("no chromium on this machine: install Debian's package (apt-get install -y "
           "chromium) to check the chapters in JupyterLab")
    with tempfile.TemporaryDirectory(prefix="lab-check-") as tmp:
        tmp_ = pathlib.Path(tmp)
        if chromium() is None:
            pytest.skip(why)
        env = dict(os.environ, PYTHONPATH=str(ROOT), JUPYTER_CONFIG_DIR=str(tmp_ / "config"))
        server = subprocess.Popen(
            [str(JUPYTER), "lab", "--no-browser", f"--port={port}", f"--ServerApp.token={token}",
             f"--ServerApp.root_dir={ROOT}", f"--LabApp.app_settings_dir={ROOT}/.jupyter/lab/settings",
             f"--LabApp.user_settings_dir={tmp_ / 'user'}", f"--LabApp.workspaces_dir={tmp_ / 'ws'}",
             "--LabApp.expose_app_in_browser=True", "--allow-root"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            def up():
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token={token}", timeout=2)
                    return True
                except OSError:
                    return server.poll() is not None and pytest.fail(f"jupyter lab exited ({server.returncode})")
            _wait(up, TIMEOUT, "jupyter lab did not answer")
            with browser_session(tmp_ / "profile", why) as (cdp, session):
                cdp.send("Runtime.enable", session)

                def js(expression: str, seconds: float = TIMEOUT):
                    reply = cdp.send("Runtime.evaluate", session, expression=expression, awaitPromise=True,
                                     returnByValue=True, timeout=int(seconds * 1000))
                    if "exceptionDetails" in reply:
                        raise RuntimeError(reply["exceptionDetails"].get("exception", {}).get("description"))
                    return reply["result"].get("value")

                def open_chapter(rel: str):
                    cdp.send("Page.navigate", session, url=f"http://127.0.0.1:{port}/lab/tree/{rel}?reset&token={token}")
                    _wait(lambda: js("!!(window.jupyterapp && document.querySelector('.jp-NotebookPanel .jp-Cell, .jp-FileEditor'))"),
                          TIMEOUT, f"{rel} did not open")
                    _wait(lambda: js(MODELS_READY), TIMEOUT, f"{rel}: jupyterlab-myst did not render every cell")
                yield js, open_chapter
        finally:
            stop(server, 15.0)


PANEL = "window.jupyterapp.shell.currentWidget"
MARKDOWN = f"{PANEL}.content.widgets.filter(c => c.model.type === 'markdown')"
# every markdown cell rendered by jupyterlab-myst (its MyST model built)
MODELS_READY = (f"!!{PANEL} && !!{PANEL}.content && {PANEL}.content.widgets.length > 0 && "
                f"{MARKDOWN}.every(c => c.mystModel && c.mystModel.mdast)")
STATE = f"""JSON.stringify((() => {{
  const cells = {PANEL}.content.widgets.filter(c => c.model.type === 'code');
  const k = {PANEL}.sessionContext.session && {PANEL}.sessionContext.session.kernel;
  return {{idle: !!k && k.status === 'idle',
           pending: cells.filter(c => c.model.executionCount === null).length}};
}})())"""
EXPRESSIONS = f"""JSON.stringify({MARKDOWN}.map(c => ({{
  source: c.model.sharedModel.getSource(), text: (c.node.querySelector('.myst') || {{textContent: ''}}).textContent,
  results: (c.model.getMetadata('user_expressions') || []).map(u => [u.expression, u.result.status,
            u.result.status === 'ok' ? u.result.data['text/plain'] : u.result.ename + ': ' + u.result.evalue])}})))"""


def test_the_primer_opens_as_a_notebook_and_shows_its_glued_numbers_after_run_all(lab):
    js, open_chapter = lab
    before = (ROOT / "chapters" / "00_primer.md").read_bytes()
    open_chapter("chapters/00_primer.md")
    assert js(f"{PANEL}.content.node.classList.contains('jp-Notebook')"), \
        "00_primer.md did not open as a notebook (.jupyter/lab/settings/overrides.json defaultViewers)"
    autosave = js("window.jupyterapp.serviceManager.settings.fetch('@jupyterlab/docmanager-extension:plugin')"
                  ".then(s => s.schema.properties.autosave.default)")
    assert autosave is False, "autosave must be off: JupyterLab would rewrite a chapter just opened"
    prose_tables = len(re.findall(r"^```\{(?:list-)?table\}", before.decode(), re.M))
    count = f"{PANEL}.content.node.querySelectorAll('.jp-MarkdownCell table').length"
    _settle(js, count, prose_tables)
    assert js(count) == prose_tables > 0, f"prose tables rendered, want {prose_tables}"

    js("window.jupyterapp.commands.execute('notebook:run-all-cells').then(() => true)", 300)
    _wait(lambda: (lambda s: s["idle"] and s["pending"] == 0)(json.loads(js(STATE))), 300,
          "the primer did not finish Run All")
    want = _glued_texts("00_primer")
    def evaluated_and_shown():
        cs = json.loads(js(EXPRESSIONS))
        done = all(len(c["results"]) == c["source"].count("{eval}") for c in cs)
        return done and all(want[n] in c["text"] for c in cs
                            for n in re.findall(r"\{eval\}`([^`]+)`", c["source"])) and cs
    try:
        cells = _wait(evaluated_and_shown, 60, "")
    except TimeoutError:
        cells = json.loads(js(EXPRESSIONS))    # the asserts below say what is missing
    shown = 0
    for cell in cells:
        names = re.findall(r"\{eval\}`([^`]+)`", cell["source"])
        for name, (expr, status, value) in zip(names, cell["results"]):
            assert (expr, status) == (name, "ok"), f"{{eval}}`{name}`: {status} {value}"
            assert value in (repr(want[name]), json.dumps(want[name])), \
                f"{{eval}}`{name}` shows {value} in JupyterLab, the book {want[name]!r}"
            assert want[name] in cell["text"], f"{want[name]!r} not displayed in the cell"
            shown += 1
        assert "{eval}" not in cell["text"]
    assert shown >= 5, f"only {shown} {{eval}} numbers checked"
    tables = js(f"{PANEL}.content.node.querySelectorAll('.jp-OutputArea table').length")
    raw = js(f"[...{PANEL}.content.node.querySelectorAll('.jp-OutputArea')].filter(e => e.innerText.includes('{{table}}')).length")
    assert tables >= 1 and raw == 0, f"{tables} output tables, {raw} outputs showing {{table}} directive text"
    assert (ROOT / "chapters" / "00_primer.md").read_bytes() == before, "the chapter was rewritten"


def test_claim_and_theorem_boxes_render_in_the_krr_chapter(lab):
    js, open_chapter = lab
    open_chapter("chapters/02_krr.md")
    source = (ROOT / "chapters" / "02_krr.md").read_text()
    claims = len(re.findall(r"^:class: claim\b", source, re.M))
    proofs = len(re.findall(r"^:::\{prf:", source, re.M))
    node = f"{PANEL}.content.node"
    count = f"[{node}.querySelectorAll('aside.myst-admonition.claim').length, {node}.querySelectorAll('aside.myst-proof').length]"
    _settle(js, count, [claims, proofs])
    assert js(count) == [claims, proofs] and claims and proofs, "[claim boxes, prf boxes] rendered, want " + str([claims, proofs])
    assert js(f"[...{node}.querySelectorAll('.jp-MarkdownCell')].filter(e => /:::\\{{(prf|admonition)/.test(e.innerText)).length") == 0
