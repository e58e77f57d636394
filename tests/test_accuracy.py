"""The accuracy contract (shuffle_lib.core.accuracy): what meeting ``accuracy`` means, the limits a
missed target names, and how the brackets, the Python API and the command line report it."""

import math
import pickle

import pytest

import shuffle_lib as sl
from shuffle_lib.core import accuracy as A
from shuffle_lib.core.types import Bracket


@pytest.mark.parametrize("br, acc, ok", [
    (Bracket(0.5, 0.5004), 2e-4, True),          # half-width 2e-4: absolute below eps = 1
    (Bracket(0.5, 0.50041), 2e-4, False),
    (Bracket(100.0, 100.04), 2e-4, True),        # relative above eps = 1: 2e-4 x 100
    (Bracket(100.0, 100.041), 2e-4, False),
    (Bracket(0.0, 0.0), 1e-9, True),             # equal ends meet any accuracy
    (Bracket(math.inf, math.inf), 1e-9, True),
    (Bracket(3.0, math.inf), 0.5, False),        # an infinite upper end over a finite lower misses
])
def test_eps_accuracy_is_the_half_width_absolute_below_one_relative_above(br, acc, ok):
    assert A.met("epsilon", br, acc) is ok


def test_delta_accuracy_is_the_width_relative_to_the_upper_end():
    br = Bracket(0.99e-6, 1e-6)                        # 1 % wide
    assert A.met("delta", br, 2e-4, compositions=100)
    assert not A.met("delta", Bracket(0.98e-6, 1e-6), 2e-4, compositions=100)
    assert A.met("delta", Bracket(0.96e-6, 1e-6), 2e-4, compositions=101)   # 5 % above 100 rounds
    assert not A.met("delta", br, 2e-4, rtol=1e-3)
    assert A.met("delta", Bracket(0.0, 0.0), 2e-4) and not A.met("delta", Bracket(0.0, 1e-300), 2e-4)
    assert A.delta_rtol(100) == 0.01 and A.delta_rtol(101) == 0.05


@pytest.mark.parametrize("kwargs, msg", [
    (dict(verb="rdp", bracket=Bracket(0, 1), accuracy=0.1), "verb"),
    (dict(verb="delta", bracket=Bracket(0, 1), accuracy=0.0), "accuracy"),
    (dict(verb="delta", bracket=Bracket(0, 1), accuracy=0.1, rtol=2.0), "rtol"),
])
def test_bad_accuracy_arguments_name_the_parameter(kwargs, msg):
    with pytest.raises(ValueError, match=msg):
        A.met(**kwargs)


def test_bracket_carries_its_verdict_without_changing_the_pair():
    plain, checked = Bracket(1.0, 2.0), Bracket(1.0, 2.0, accuracy_met=False, limit="memory")
    assert plain.accuracy_met is None and plain.limit is None
    assert checked == plain and hash(checked) == hash(plain) and repr(checked) == repr(plain)
    back = pickle.loads(pickle.dumps(checked))
    assert back == checked and back.accuracy_met is False and back.limit == "memory"
    with pytest.raises(ValueError, match="lower <= upper"):
        Bracket(2.0, 1.0, accuracy_met=True)


def test_limits_are_recorded_only_inside_collect():
    A.note("delta", [1.0], "memory")                       # no open block: nothing happens
    with A.collect() as notes:
        A.note("delta", [1.0, 2.0], "memory")
        A.note("delta", [1.0], "grid step")               # the first limit noted is kept
    assert notes == {("delta", 1.0): "memory", ("delta", 2.0): "memory"}
    with A.collect() as fresh:
        pass
    assert fresh == {}
    assert A.limit_of("delta", 1.0, Bracket(0, 1), notes) == "memory"
    assert A.limit_of("delta", 3.0, Bracket(0, 1e-12), notes) == "floating-point floor"
    assert A.limit_of("epsilon", 1e-12, Bracket(0, 9), {}) == "floating-point floor"
    assert A.limit_of("epsilon", 1e-6, Bracket(0, 9), {}) == "mechanism bounds"
    assert set(A.LIMITS) == {"memory", "floating-point floor", "grid step", "mechanism bounds"}


def test_the_grid_step_given_is_named_as_the_limit():
    """A caller's fixed grid step h stops the refinement: a loose bracket says so."""
    pq = sl.pld_from_pmfs([0.6, 0.3, 0.1], [0.2, 0.3, 0.5])
    qp = sl.pld_from_pmfs([0.2, 0.3, 0.5], [0.6, 0.3, 0.1])
    with A.collect() as notes:
        br = sl.delta_bracket([(pq, 8)], [(qp, 8)], [0.5], h=0.05)[0]
    assert br.upper - br.lower > 0.01 * br.upper and notes == {("delta", 0.5): "grid step"}


def test_mechanism_brackets_say_whether_each_target_met_its_accuracy():
    met = sl.mechanism_brackets("rr", "delta", [0.5], 10, eps0=1.0)[0]
    assert met.accuracy_met is True and met.limit is None
    eps = sl.mechanism_brackets("rr", "epsilon", [1e-6], 10, eps0=1.0)[0]
    assert eps.accuracy_met is True and eps.upper - eps.lower <= 2 * 2e-4
    # delta(14) ~ 1.2e-146 of 4 clones rounds: about 18 % wide on its own tilted grid, refined
    # below the floor until a refinement no longer halves the width (the FFT's round-off)
    floor = sl.mechanism_brackets("ldp-shuffle", "delta", [14.0], 4, n=10_000, eps0=4)[0]
    assert floor.upper < 1e-140 and floor.upper - floor.lower > 0.01 * floor.upper
    assert floor.accuracy_met is False and floor.limit == "floating-point floor"


def test_cli_reports_the_verdict_in_json_and_text(cli, cli_json):
    args = ("delta", "ldp-shuffle", "--n", "10000", "--eps0", "4", "--eps", "1.9", "14", "--compositions", "4")
    met, floor = cli_json(*args)["results"]
    assert (met["accuracy_met"], met["limit"]) == (True, None)
    assert met["half_width"] == pytest.approx((met["delta_upper"] - met["delta_lower"]) / 2)
    assert (floor["accuracy_met"], floor["limit"]) == (False, "floating-point floor")
    text = cli(*args)
    assert text.returncode == 0, text.stderr
    missed = [line for line in text.stdout.splitlines() if line.startswith("accuracy not met")]
    assert len(missed) == 1 and "eps=14" in missed[0] and "floating-point floor" in missed[0]
