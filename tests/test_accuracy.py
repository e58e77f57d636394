"""The accuracy contract (shuffle_lib.core.accuracy): what meeting ``accuracy`` means, the limits a
missed target names, and how the brackets, the Python API and the command line report it."""

import json
import math
import pickle

import exact_oracle
import pytest

import shuffle_lib as sl
from shuffle_lib.core import accuracy as A
from shuffle_lib.core.types import Bracket


@pytest.mark.parametrize("br, acc, ok", [
    (Bracket(0.5, 0.5004), 2e-4, True),          # half-width 2e-4: absolute on [0.04, 1]
    (Bracket(0.5, 0.50041), 2e-4, False),
    (Bracket(0.0399, 0.04029), 2e-4, True),      # near 0.04: 25 a eps ~ a, the forms meet
    (Bracket(0.0398, 0.0403), 2e-4, False),
    (Bracket(0.00995, 0.01005), 2e-4, True),     # 1 % wide at eps = 0.01: 25 a eps = 5.025e-5
    (Bracket(0.0099, 0.0101), 2e-4, False),      # 2 % wide: absolute a would have taken it
    (Bracket(0.0, 3.9e-6), 2e-4, True),          # the floor a / 100 = 2e-6 near eps = 0
    (Bracket(0.0, 4.1e-6), 2e-4, False),
    (Bracket(0.0, 3.9e-4), 2e-2, True),          # the floor scales with a
    (Bracket(100.0, 100.04), 2e-4, True),        # relative above eps = 1: 2e-4 x 100
    (Bracket(100.0, 100.041), 2e-4, False),
    (Bracket(0.0, 0.0), 1e-9, True),             # equal ends meet any accuracy
    (Bracket(math.inf, math.inf), 1e-9, True),
    (Bracket(3.0, math.inf), 0.5, False),        # an infinite upper end over a finite lower misses
])
def test_eps_accuracy_is_relative_below_0_04_absolute_to_1_relative_above(br, acc, ok):
    assert A.met("epsilon", br, acc) is ok


def test_eps_demand_is_continuous_and_floored():
    a = 2e-4
    assert A.eps_demand(a, 0.04) == pytest.approx(a, rel=1e-12)
    assert A.eps_demand(a, 0.5) == a and A.eps_demand(a, 5.0) == 5 * a
    assert A.eps_demand(a, 0.01) == pytest.approx(25 * a * 0.01, rel=1e-12)
    assert A.eps_demand(a, 1e-5) == pytest.approx(a / 100, rel=1e-12)
    assert A.eps_demand(a, 0.0) == pytest.approx(a / 100, rel=1e-12)
    assert A.eps_demand(a, math.inf) == math.inf
    xs = [10 ** (e / 10) for e in range(-80, 30)]
    ds = [A.eps_demand(a, x) for x in xs]
    assert all(d1 <= d2 for d1, d2 in zip(ds, ds[1:]))           # never less at a larger eps


def test_finer_accuracy_only_below_0_04_and_only_for_a_miss():
    a = 2e-4
    assert A.finer_accuracy(Bracket(0.0099, 0.0101), a) == pytest.approx(25 * a * 0.0101)
    assert A.finer_accuracy(Bracket(0.00995, 0.01005), a) is None        # met
    assert A.finer_accuracy(Bracket(0.3, 0.31), a) is None               # a miss at eps >= 0.04
    assert A.finer_accuracy(Bracket(0.0, 4e-4), a) == pytest.approx(a / 100)          # floor
    assert A.finer_accuracy(Bracket(0.0, math.inf), a) is None
    assert A.finer_accuracy(Bracket(0.01, 0.01), a) is None
    assert A.finer_accuracy(Bracket(0.0099, 0.0101), 2e-5) is None       # wider than 2 x 2a


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


def test_small_eps_bracket_is_refined_to_the_relative_demand_and_contains_the_exact_eps(tmp_path):
    """A 3-outcome pair off every lattice (a lattice pair composes exactly), 30 rounds,
    eps(1e-6) ~ 0.0030: the first grid (absolute half-width 2e-4) leaves it ~12 % wide; the
    query refines it to within 1 %, around the exact eps of the multinomial enumeration
    (tests/exact_oracle.py, no library call)."""
    from shuffle_lib.core import evaluate
    from shuffle_lib.mechanisms import get

    p, q = [0.3334, 0.3333, 0.3333], [0.33331, 0.33333, 0.33336]
    path = tmp_path / "pq.json"
    path.write_text(json.dumps({"p": p, "q": q}))
    exact = exact_oracle.epsilon(p, q, 30, 1e-6)
    first = evaluate.epsilon_brackets(get("custom").model({"pmfs": str(path)})[1], [1e-6], 30)[0]
    assert first.upper - first.lower > 0.05 * first.upper            # the case needs refining
    br = sl.mechanism_brackets("custom", "epsilon", [1e-6], 30, pmfs=str(path))[0]
    assert br.lower <= exact <= br.upper
    assert br.upper - br.lower <= 0.01 * br.upper and br.accuracy_met and br.limit is None
    assert first.lower <= br.lower and br.upper <= first.upper


def test_mechanism_bounds_wider_than_a_grid_explains_are_named_without_a_refinement(
        monkeypatch):
    """OLH (d = 100, eps0 = 0.7, n = 1e4, K = 2): the upper and lower views differ by ~20 % at
    eps ~ 0.028, a half-width over twice the accuracy, more than the first grid's rounding: the
    query evaluates no finer grid and says why."""
    from shuffle_lib.core import evaluate

    calls = []
    real = evaluate.epsilon_brackets
    monkeypatch.setattr(evaluate, "epsilon_brackets",
                        lambda *a, **k: calls.append(k.get("accuracy")) or real(*a, **k))
    br = sl.mechanism_brackets("randomizer", "epsilon", [1e-6], 2, n=10_000, family="olh",
                               d=100, eps0=0.7)[0]
    assert br.upper < 0.03 and br.upper - br.lower > 0.1 * br.upper
    assert br.accuracy_met is False and br.limit == "mechanism bounds" and calls == []
    assert A.finer_accuracy(br, 2e-4) is None


def test_krr_strong_ten_rounds_at_ten_million_users_is_within_one_percent():
    """krr-strong, n = 1e7, gamma = 0.853, k = 4, K = 10, eps(1e-6) ~ 0.0043: at most 1 % wide
    by default (the absolute half-width 2e-4 left it 3.2 % wide)."""
    br = sl.mechanism_brackets("krr-strong", "epsilon", [1e-6], 10, n=10 ** 7, gamma=0.853, k=4)[0]
    assert br.accuracy_met is True and br.limit is None
    assert 0 < br.upper - br.lower <= 0.01 * br.upper and br.upper < 0.005


def test_an_eps_bracket_above_0_04_that_misses_within_the_grid_is_refined():
    """krr-strong, n = 1e5, gamma = 0.3, k = 4, K = 2, delta = 1e-4 (eps ~ 0.0465, where the
    demand is the absolute accuracy a = 2e-4): the first grid leaves a half-width above a (its
    tail and rounding allowances), within what the grid explains; the answer is evaluated again
    and meets the contract, inside the first bracket."""
    from shuffle_lib.core import evaluate
    from shuffle_lib.core.fourier import DEFAULT_ACCURACY
    from shuffle_lib.mechanisms import krr

    first = evaluate.epsilon_brackets(krr.krr_route("strong", 100_000, 0.3, 4, 2), [1e-4], 2,
                                      accuracy=DEFAULT_ACCURACY)[0]
    assert first.lower > 0.04 and not A.met("epsilon", first, DEFAULT_ACCURACY, 2), first
    assert A.finer_accuracy(first, DEFAULT_ACCURACY) == A.eps_demand(DEFAULT_ACCURACY, first.upper)
    got = sl.mechanism_brackets("krr-strong", "epsilon", [1e-4], 2, n=100_000, gamma=0.3, k=4)[0]
    assert got.accuracy_met and A.met("epsilon", got, DEFAULT_ACCURACY, 2), got
    assert first.lower <= got.lower <= got.upper <= first.upper
