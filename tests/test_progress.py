"""Progress on long work (shuffle_lib.core.progress): a bar on a terminal's stderr after DELAY
seconds, and none when switched off, quiet, or not on a terminal."""

import io
import sys
import time

import pytest

from shuffle_lib.core import progress


class Terminal(io.StringIO):
    """A stderr that says it is a terminal, 80 columns wide."""

    def isatty(self):
        return True



def _work(seconds, steps=2):
    for _ in range(steps):
        time.sleep(seconds / steps)
        progress.advance()


@pytest.fixture
def terminal(monkeypatch):
    """``terminal()``, called in the test body (pytest's capture re-installs sys.stderr after the
    fixtures run): stderr becomes a :class:`Terminal`, returned; the bar's delay 0.2 s."""
    monkeypatch.setattr(progress, "DELAY", 0.2)
    monkeypatch.setattr(progress, "_ENABLED", True)

    def install():
        out = Terminal()
        monkeypatch.setattr(sys, "stderr", out)
        return out
    return install


def test_long_work_on_a_terminal_shows_a_bar(terminal):
    terminal = terminal()
    with progress.task("delta demo"):
        _work(1.5)
    assert "delta demo" in terminal.getvalue() and "grid" in terminal.getvalue()


def test_short_work_shows_nothing(terminal):
    terminal = terminal()
    with progress.task("delta demo"):
        _work(0.05)
    assert "delta demo" not in terminal.getvalue()


def test_switched_off_or_quiet_shows_nothing(terminal):
    terminal = terminal()
    progress.set_progress(False)
    with progress.task("off"):
        _work(0.6)
    progress.set_progress(True)
    with progress.quiet(), progress.task("quiet"):
        assert not progress.enabled()
        _work(0.6)
    assert terminal.getvalue() == ""
    with pytest.raises(ValueError, match="enabled"):
        progress.set_progress("no")


def test_not_a_terminal_shows_nothing(monkeypatch):
    monkeypatch.setattr(progress, "DELAY", 0.0)
    out = io.StringIO()
    monkeypatch.setattr(sys, "stderr", out)
    with progress.task("pipe"):
        _work(0.3)
    assert out.getvalue() == ""


def test_a_nested_task_reuses_the_outer_bar(terminal):
    terminal = terminal()
    with progress.task("outer"):
        with progress.task("inner"):
            _work(0.6)
    assert "outer" in terminal.getvalue() and "inner" not in terminal.getvalue()


def test_cli_quiet_keeps_stdout_one_json_object(cli_json):
    out = cli_json("delta", "rr", "--eps0", "1", "--eps", "0.5", "--compositions", "10", "--quiet")
    assert out["results"][0]["accuracy_met"] is True


def test_without_tqdm_a_task_shows_nothing_and_runs(terminal, monkeypatch):
    """tqdm is not a run-time dependency (numpy and scipy are): without it a query runs, barless."""
    terminal = terminal()
    monkeypatch.setitem(sys.modules, "tqdm", None)      # import tqdm now raises ModuleNotFoundError
    with progress.task("no tqdm"):
        _work(0.6)
    assert terminal.getvalue() == ""


def test_set_progress_is_in_the_flat_api():
    import shuffle_lib as sl
    assert sl.set_progress is progress.set_progress and "set_progress" in sl.__all__


def _binned():
    from shuffle_lib.mechanisms.clones.pld import clone_pld_binned
    clone_pld_binned(200, 1.0, 1e-3, chunk=200)       # a few chunks: a few steps of its bar


def test_the_clones_builders_bar_honours_the_switches(terminal):
    """clone_pld_binned's own bar (over its chunks of atoms) shows on a terminal, and not when
    switched off (set_progress(False), as SHUFFLE_LIB_PROGRESS=0 at import) or quiet (--quiet)."""
    terminal = terminal()
    _binned()
    assert "clones n=200" in terminal.getvalue()
    terminal.seek(0)
    terminal.truncate()
    progress.set_progress(False)
    try:
        _binned()
    finally:
        progress.set_progress(True)
    with progress.quiet():
        _binned()
    assert terminal.getvalue() == ""


def test_the_environment_switch_is_read_at_import():
    import os
    import subprocess
    env = dict(os.environ, SHUFFLE_LIB_PROGRESS="0")
    r = subprocess.run([sys.executable, "-c", "from shuffle_lib.core import progress\n"
                        "assert not progress.enabled()"], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
