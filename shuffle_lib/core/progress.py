"""Progress on long work: a tqdm bar on stderr for a query that runs longer than ``DELAY`` seconds.

A query (:meth:`shuffle_lib.core.registry.Mechanism.evaluate`, hence the command line and
:func:`shuffle_lib.mechanism_brackets`) opens one :func:`task`; the accountant calls
:func:`advance` for each grid it composes, so the bar counts grids and shows the time elapsed.
Nothing is shown:

* on a stream that is not a terminal (tqdm's ``disable=None``): a pipe, a test's captured stderr, a
  notebook kernel; stdout is never written to;
* for work shorter than ``DELAY`` seconds (tqdm's ``delay``);
* without the optional package tqdm;
* when switched off: :func:`set_progress` (``shuffle_lib.core.progress.set_progress(False)``), the
  environment variable ``SHUFFLE_LIB_PROGRESS=0`` (read at import), or within :func:`quiet`
  (the command line's ``--quiet``).
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import sys
import threading
from collections.abc import Iterator
from typing import Any

DELAY = 2.0
"""Seconds of work before a bar appears."""

_ENABLED = os.environ.get("SHUFFLE_LIB_PROGRESS", "1").strip().lower() not in ("0", "false", "no",
                                                                              "off")
_QUIET: contextvars.ContextVar[bool] = contextvars.ContextVar("progress_quiet", default=False)
_BAR: contextvars.ContextVar[Any] = contextvars.ContextVar("progress_bar", default=None)


def set_progress(enabled: bool) -> None:
    """Switch progress bars on (the default, on a terminal) or off for the whole process."""
    global _ENABLED
    if not isinstance(enabled, bool):
        raise ValueError(f"enabled must be True or False, got enabled={enabled!r}.")
    _ENABLED = enabled


def enabled() -> bool:
    """True when a :func:`task` opened now may show a bar (on a terminal, after ``DELAY``)."""
    return _ENABLED and not _QUIET.get()


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """A block in which no bar is shown (the command line's ``--quiet``)."""
    token = _QUIET.set(True)
    try:
        yield
    finally:
        _QUIET.reset(token)


@contextlib.contextmanager
def task(desc: str, unit: str = "grid") -> Iterator[None]:
    """A block of work whose :func:`advance` calls drive one bar (a nested task reuses the bar of
    the outer one)."""
    if not enabled() or _BAR.get() is not None:
        yield
        return
    try:
        from tqdm import tqdm
    except ModuleNotFoundError:     # tqdm is optional (the book's environment has it): no bar
        yield
        return

    bar = tqdm(desc=desc, unit=unit, delay=DELAY, disable=None, leave=False, file=sys.stderr)
    if bar.disable:                 # not a terminal: no bar, no ticker
        bar.close()
        yield
        return
    stop = threading.Event()
    # one composition can take many seconds: a ticker redraws the bar (its elapsed time) each
    # second once DELAY has passed, so long work is never silent
    ticker = threading.Thread(target=_tick, args=(bar, stop), daemon=True)
    token = _BAR.set(bar)
    ticker.start()
    try:
        yield
    finally:
        stop.set()
        ticker.join()
        _BAR.reset(token)
        bar.close()


def _tick(bar: Any, stop: threading.Event) -> None:
    if stop.wait(DELAY):
        return
    while not stop.is_set():
        bar.refresh()
        stop.wait(1.0)


def advance(n: int = 1) -> None:
    """Count ``n`` units of work on the open task's bar (nothing outside a task)."""
    bar = _BAR.get()
    if bar is not None:
        bar.update(n)
