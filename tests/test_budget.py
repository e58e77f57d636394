"""The per-query limits of shuffle_lib.core.budget: a time budget that stops a running loop (even
one that swallows the first signal), nested budgets keep the earlier deadline, the work and memory
estimates refuse before a route starts, and the command line turns a spent budget into exit 2
with one line naming --time-limit."""

import math
import time

import numpy as np
import pytest

from shuffle_lib import cli
from shuffle_lib.core import budget, grid


def spin(seconds):
    """Burn ``seconds`` of CPU time in Python bytecode."""
    end = time.process_time() + seconds
    x = 0
    while time.process_time() < end:
        x += 1
    return x


def test_a_spent_budget_stops_a_python_loop():
    t0 = time.process_time()
    with pytest.raises(budget.TimeLimitError, match="time limit of 0.2 CPU seconds"):
        with budget.time_limit(0.2):
            spin(30)
    assert time.process_time() - t0 < 5


def test_a_loop_that_catches_the_first_signal_is_stopped_by_the_next():
    caught = 0
    with pytest.raises(budget.TimeLimitError):
        with budget.time_limit(0.1):
            while True:                  # swallows the signal twice, lets the third through
                try:
                    spin(30)
                except budget.TimeLimitError:
                    caught += 1
                    if caught == 3:
                        raise
    assert caught == 3


def test_nested_budgets_keep_the_earlier_deadline_and_restore_the_outer_one():
    with budget.time_limit(0.3):
        with pytest.raises(budget.TimeLimitError):
            with budget.time_limit(100):
                spin(30)
    assert budget._state["deadline"] == math.inf
    with budget.time_limit(100):
        spin(0.05)                       # well inside: no error


def test_check_time_is_the_cooperative_stop():
    with budget.time_limit(math.inf):
        budget.check_time()
    budget._state["deadline"] = time.process_time() - 1
    try:
        with pytest.raises(budget.TimeLimitError):
            budget.check_time()
    finally:
        budget._state["deadline"] = math.inf


@pytest.mark.parametrize("bad", [0, -1, float("nan")])
def test_a_bad_budget_is_refused_by_name(bad):
    with pytest.raises(ValueError, match="time_limit must lie in"):
        with budget.time_limit(bad):
            pass


def test_the_environment_variable_sets_the_default(monkeypatch):
    monkeypatch.setenv("SHUFFLE_LIB_TIME_LIMIT", "7.5")
    assert budget.default_time_limit() == 7.5
    monkeypatch.setenv("SHUFFLE_LIB_TIME_LIMIT", "inf")
    assert budget.default_time_limit() == math.inf
    monkeypatch.setenv("SHUFFLE_LIB_TIME_LIMIT", "soon")
    with pytest.raises(ValueError, match="SHUFFLE_LIB_TIME_LIMIT"):
        budget.default_time_limit()


def test_work_and_memory_estimates_refuse_before_the_route_starts(monkeypatch):
    budget.check_work(10, 10, "x", "y")
    with pytest.raises(ValueError, match="the route would take about 11 steps, more than the limit of 10; "
                                         "ask for less"):
        budget.check_work(11, 10, "the route", "ask for less")
    monkeypatch.setattr(grid, "MEMORY_LIMIT", 1e6)
    budget.check_bytes(1e6, "x", "y")
    with pytest.raises(ValueError, match="would take about 0.002 GB, more than the memory limit of 0.001"):
        budget.check_bytes(2e6, "the array", "take fewer")


def test_a_time_estimate_is_refused_only_beyond_what_the_budget_has_left():
    budget.check_seconds(1e9, "x", "y")                      # no time limit: nothing to exceed
    with budget.time_limit(50.0):
        budget.check_seconds(1.0, "x", "y")
        want = r"the route would take about 60 CPU seconds, more than the \S+ left of the time "
        with pytest.raises(ValueError, match=want + r"limit of 50 \(--time-limit"):
            budget.check_seconds(60.0, "the route", "ask for less")


def test_the_command_line_refuses_a_spent_budget_in_one_line(capsys):
    """ldp-shuffle at n = 1e5, K = 100: about ten CPU seconds."""
    code = cli.main(["delta", "ldp-shuffle", "--n", "100000", "--eps0", "1", "--eps", "0.1", "--compositions", "100",
                     "--time-limit", "0.2"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1
    assert err.startswith("error: no answer within the time limit of 0.2 CPU seconds (--time-limit")


def test_the_command_line_names_a_bad_time_limit(capsys):
    assert cli.main(["delta", "rr", "--eps0", "1", "--eps", "1", "--time-limit", "-1"]) == 2
    assert capsys.readouterr().err == "error: --time-limit must lie in (0, inf], got --time-limit=-1.0.\n"


def test_a_long_binomial_array_is_interrupted_between_pieces():
    """One call of scipy's binomial kernel cannot be interrupted; at counts near 5e8 it takes
    ~20 us an element near the centre, so 1e6 tails in one call would run past a 1-s budget by
    ~20 s.  The clones' tails go to the kernel in pieces, and the signal stops them in between."""
    from shuffle_lib.mechanisms.clones.pairs import conditional_tails
    s = 500_000_000 + np.arange(1_000_000)
    k = s // 2
    t0 = time.process_time()
    with pytest.raises(budget.TimeLimitError):
        with budget.time_limit(1.0):
            conditional_tails(s, k, 0.3, 0.3, 0.4)
    assert time.process_time() - t0 < 6
