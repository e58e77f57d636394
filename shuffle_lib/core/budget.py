"""Limits on one query's time and work, checked before a route starts and while it runs.

A route that can tell its cost in advance (atoms to enumerate, bytes to allocate) calls
:func:`check_work` / :func:`check_bytes` before it starts and refuses with a ValueError naming the
option to change and the limit; nothing is allocated first.  What cannot be told in advance (a
search whose step count depends on the numbers) runs under :func:`time_limit`: a per-query budget
of CPU seconds (process time, all threads: the measure of ``resource.RLIMIT_CPU``), after which
the query stops with :class:`TimeLimitError`, one line for the user, instead of running until it
is killed.

The budget is enforced by ``signal.setitimer(ITIMER_PROF)`` in the main thread (a pure-Python or
numpy loop is interrupted between two bytecodes; one long C call, a single FFT, finishes first),
re-armed every second after the deadline so that a handler somewhere that catches broad
exceptions cannot swallow it for good; off the main thread only the cooperative
:func:`check_time` applies.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import threading
import time
from collections.abc import Iterator

from shuffle_lib.core import grid
from shuffle_lib.core import validate as v
from shuffle_lib.core.constants import TIME_LIMIT

_REFIRE = 1.0                       # seconds between repeated signals once the budget is spent
_state: dict[str, float] = {"deadline": math.inf, "limit": math.inf}


class TimeLimitError(Exception):
    """A query ran past its time budget.  Not a ValueError on purpose: fallbacks that catch
    ValueError (a refused grid, a search that did not bracket) must not swallow it."""


def default_time_limit() -> float:
    """The budget in CPU seconds: ``SHUFFLE_LIB_TIME_LIMIT`` when set (``inf`` turns it off), else
    :data:`shuffle_lib.core.constants.TIME_LIMIT`."""
    text = os.environ.get("SHUFFLE_LIB_TIME_LIMIT")
    if text is None:
        return TIME_LIMIT
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    return v.real("SHUFFLE_LIB_TIME_LIMIT", value, 0.0, lo_open=True, allow_inf=True)


def _message(limit: float) -> str:
    return (f"no answer within the time limit of {limit:g} CPU seconds (--time-limit, "
            "SHUFFLE_LIB_TIME_LIMIT); ask for fewer compositions or a coarser --accuracy, or allow "
            "more time.")


def check_time() -> None:
    """Raise :class:`TimeLimitError` if the innermost :func:`time_limit` is spent (the cooperative
    check for loops that may run off the main thread)."""
    if time.process_time() > _state["deadline"]:
        raise TimeLimitError(_message(_state["limit"]))


@contextlib.contextmanager
def time_limit(seconds: float | None = None) -> Iterator[None]:
    """Run the body under a budget of ``seconds`` CPU seconds (default :func:`default_time_limit`;
    ``math.inf``: none).  Nested budgets keep the earlier deadline.

    Raises:
        TimeLimitError: when the body is still running at the deadline.
        ValueError: ``seconds`` not in (0, inf].
    """
    seconds = default_time_limit() if seconds is None else v.real("time_limit", seconds, 0.0,
                                                                   lo_open=True, allow_inf=True)
    saved = dict(_state)
    deadline = min(saved["deadline"], time.process_time() + seconds)
    _state.update(deadline=deadline, limit=seconds if deadline < saved["deadline"] else
                  saved["limit"])
    main = threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")
    old_handler, old_timer = None, (0.0, 0.0)
    if main and math.isfinite(deadline):
        def expire(signum, frame):
            raise TimeLimitError(_message(_state["limit"]))
        old_handler = signal.signal(signal.SIGPROF, expire)
        old_timer = signal.setitimer(signal.ITIMER_PROF,
                                     max(deadline - time.process_time(), 1e-3), _REFIRE)
    try:
        yield
    finally:
        if old_handler is not None:
            signal.setitimer(signal.ITIMER_PROF, *old_timer)
            signal.signal(signal.SIGPROF, old_handler)
        _state.update(saved)


def check_work(units: float, limit: float, what: str, advice: str) -> None:
    """Refuse, before it starts, a route whose work (``units``: atoms, terms, grid points) exceeds
    ``limit``: a ValueError with ``what`` and ``advice`` (the option to change)."""
    if not units <= limit:
        raise ValueError(f"{what} would take about {units:.3g} steps, more than the limit of "
                         f"{limit:.3g}; {advice}.")


def check_bytes(need: float, what: str, advice: str) -> None:
    """Refuse, before allocating, ``need`` bytes above the memory limit of the grid accountant
    (:data:`shuffle_lib.core.grid.MEMORY_LIMIT`, ``SHUFFLE_LIB_MEMORY_LIMIT``, read at the call)."""
    if not need <= grid.MEMORY_LIMIT:
        raise ValueError(f"{what} would take about {need / 1e9:.3g} GB, more than the memory "
                         f"limit of {grid.MEMORY_LIMIT / 1e9:.3g} GB (SHUFFLE_LIB_MEMORY_LIMIT); "
                         f"{advice}.")


def check_seconds(seconds: float, what: str, advice: str) -> None:
    """Refuse, before it starts, a route estimated to take more CPU seconds than the innermost
    :func:`time_limit` has left (none outside a time limit): a ValueError with ``what`` and
    ``advice`` (the option to change) instead of a :class:`TimeLimitError` at the limit."""
    left = _state["deadline"] - time.process_time()
    if not seconds <= left:
        raise ValueError(f"{what} would take about {seconds:.3g} CPU seconds, more than the "
                         f"{max(left, 0.0):.3g} left of the time limit of {_state['limit']:g} "
                         f"(--time-limit, SHUFFLE_LIB_TIME_LIMIT); {advice}.")
