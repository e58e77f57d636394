"""shuffle_lib.core.evaluate: one evaluator for every model.  The upper end is the max over the
upper components, the lower end the max over the lower ones and at most the upper end, each
component is evaluated once, a cut pair's lower end loses K tail_cut, a method answers only for
the rounds it was built for.  The oracle is binary randomised response composed K times, summed
exactly over the binomial count of matching outputs (it calls no library code)."""

import math

import pytest

from shuffle_lib.core import evaluate
from shuffle_lib.core.types import Bracket, Method, Model, PLDPair


def rr_delta(eps0: float, K: int, eps: float) -> float:
    """delta(eps) of K rounds of binary RR: P = (p, 1-p)^K against Q = (1-p, p)^K, p = e^eps0/(1+e^eps0);
    an outcome with j matches has P = p^j (1-p)^(K-j) and Q = (1-p)^j p^(K-j), C(K, j) of them."""
    p = math.exp(eps0) / (1 + math.exp(eps0))
    return math.fsum(math.comb(K, j) * max(0.0, p ** j * (1 - p) ** (K - j) - math.exp(eps) * (1 - p) ** j * p ** (K - j))
                     for j in range(K + 1))


def rr_pair(eps0: float, **kw) -> PLDPair:
    p = math.exp(eps0) / (1 + math.exp(eps0))
    exact = PLDPair.from_pmfs([p, 1 - p], [1 - p, p])
    return PLDPair(exact.pq, exact.qp, **kw)


def test_the_oracle_matches_one_round_by_hand():
    p = math.exp(1.0) / (1 + math.exp(1.0))
    assert rr_delta(1.0, 1, 0.5) == pytest.approx(p - math.exp(0.5) * (1 - p), rel=1e-15)
    assert rr_delta(1.0, 4, 4.5) == 0.0 and rr_delta(1.0, 4, 0.0) > 0.0


@pytest.mark.parametrize("K, eps", [(1, 0.3), (3, 0.5), (8, 1.0)])
def test_worst_case_upper_and_the_lower_components(K, eps):
    """Two candidate pairs above (the mechanism is the worse, eps0 = 1.2); the milder pair alone
    below: the bracket holds the worse pair's exact delta and its lower end is the milder pair's."""
    mild, worse = rr_pair(0.7), rr_pair(1.2)
    br = evaluate.delta_brackets(Model((mild, worse), (mild,)), [eps], K)[0]
    assert br.upper >= rr_delta(1.2, K, eps) >= br.lower
    assert br.lower <= rr_delta(0.7, K, eps) <= br.lower * (1 + 0.02) + 1e-15
    assert br.upper <= rr_delta(1.2, K, eps) * (1 + 0.02)
    # the model built the other way round (the worse pair first) is the same model
    assert evaluate.delta_brackets(Model((worse, mild), (mild,)), [eps], K)[0] == br


def test_a_component_serving_both_ends_is_evaluated_once():
    calls = []

    def delta(eps):
        calls.append(list(eps))
        return [Bracket(0.1, 0.2) for _ in eps]

    model = Model.of(Method(delta, delta))
    assert evaluate.delta_brackets(model, [0.5, 1.0]) == [Bracket(0.1, 0.2)] * 2
    assert calls == [[0.5, 1.0]]


def test_the_lower_end_is_at_most_the_upper_end():
    upper = Method(lambda t: [Bracket(0.0, 0.3) for _ in t], lambda t: [Bracket(0.0, 2.0) for _ in t])
    lower = Method(lambda t: [Bracket(0.5, 1.0) for _ in t], lambda t: [Bracket(3.0, math.inf) for _ in t])
    model = Model((upper,), (lower,))
    assert evaluate.delta_brackets(model, [1.0]) == [Bracket(0.3, 0.3)]
    assert evaluate.epsilon_brackets(model, [1e-3]) == [Bracket(2.0, 2.0)]
    assert evaluate.delta_brackets(Model((upper,)), [1.0]) == [Bracket(0.0, 0.3)]   # no lower component: 0


def test_a_cut_pair_loses_k_tail_cuts_from_its_lower_end():
    K, cut = 3, 1e-3
    plain = evaluate.delta_brackets(Model.of(rr_pair(1.0)), [0.5, 2.0], K)
    cut_br = evaluate.delta_brackets(Model.of(rr_pair(1.0, tail_cut=cut)), [0.5, 2.0], K)
    assert [b.upper for b in cut_br] == [b.upper for b in plain]
    assert [b.lower for b in cut_br] == [max(0.0, b.lower - K * cut) for b in plain]
    # eps: the lower end is read at delta + K cut, so it can only drop
    a = evaluate.epsilon_brackets(Model.of(rr_pair(1.0)), [0.05], K)[0]
    b = evaluate.epsilon_brackets(Model.of(rr_pair(1.0, tail_cut=cut)), [0.05], K)[0]
    assert b.upper == a.upper and b.lower < a.lower


def test_eps_cap_clamps_both_ends():
    wide = Method(lambda t: [Bracket(0.0, 1.0) for _ in t], lambda t: [Bracket(4.0, 9.0) for _ in t])
    assert evaluate.epsilon_brackets(Model.of(wide, eps_cap=3.0), [1e-6]) == [Bracket(3.0, 3.0)]
    assert evaluate.delta_brackets(Model.of(wide, eps_cap=3.0), [1.0]) == [Bracket(0.0, 1.0)]


def test_a_method_answers_only_for_its_rounds():
    model = Model.of(Method.constant(0.0, 0.0, rounds=2))
    assert evaluate.delta_brackets(model, [1.0], 2) == [Bracket(0.0, 0.0)]
    with pytest.raises(ValueError, match="compositions"):
        evaluate.delta_brackets(model, [1.0], 3)


def test_only_one_dominating_and_one_dominated_pair_compose_with_other_events():
    pair = rr_pair(1.0)
    assert Model.of(pair).composable and Model.of(pair).pairs_for_composing(2, 1e-3) == (pair, pair)
    worst = Model((pair, rr_pair(2.0)), (pair,))
    alone = Model.of(Method.constant(0.0, 0.0))
    for model in (worst, alone, Model((pair,))):
        assert not model.composable
        with pytest.raises(ValueError, match="composes only alone"):
            model.pairs_for_composing(2, 1e-3)
    lazy = Model.of(Method.constant(0.0, 0.0), round_pairs=lambda k, acc: (pair, pair))
    assert lazy.composable and lazy.pairs_for_composing(5, 1e-3) == (pair, pair)


def test_bad_models_are_refused():
    with pytest.raises(ValueError, match="upper component"):
        Model(())
    with pytest.raises(ValueError, match="tail_cut"):
        rr_pair(1.0, tail_cut=1.5)
    with pytest.raises(ValueError, match="rounds"):
        Method.constant(0.0, 0.0, rounds=0)


def test_clones_functions_answer_as_the_command_line():
    """clones.epsilon_bracket / delta_bracket take the command line's path (evaluate.answer): the
    same brackets as Mechanism.evaluate, with accuracy_met; an eps(1e-6) ~ 0.016 that the first
    grid at accuracy 1e-3 leaves 12 % wide (over the contract's 2 x 25 x 1e-3 = 5 %) comes back
    within it, inside the first grid's bracket."""
    from shuffle_lib import mechanisms
    from shuffle_lib.mechanisms import clones
    from shuffle_lib.mechanisms.clones.compose import clone_model
    acc, delta = 1e-3, 1e-6
    first = evaluate.brackets(clone_model(10_000, 0.3, 2, "fmt21", acc), "epsilon", [delta], 2,
                              accuracy=acc)[0]
    assert first.upper < 0.04 and first.upper - first.lower > 2 * 25 * acc * first.upper, first
    got = clones.epsilon_bracket(10_000, 0.3, [delta], compositions=2, accuracy=acc)[0]
    cli = mechanisms.get("ldp-shuffle").evaluate("epsilon", [delta], {"n": 10_000, "eps0": 0.3},
                                                  2, acc)[1][0]
    assert tuple(got) == tuple(cli) and got.accuracy_met is cli.accuracy_met is True, (got, cli)
    assert first.lower <= got.lower <= got.upper <= first.upper
    assert got.upper - got.lower <= 2 * 25 * acc * got.upper
    d = clones.delta_bracket(10_000, 0.3, [got.upper], compositions=2, accuracy=acc)[0]
    # delta at the eps upper end is at most delta, so its certified lower end is too
    assert d.accuracy_met is not None and d.lower <= delta, d


def test_a_dominated_pair_reuses_the_steering_and_still_holds_the_exact_eps(monkeypatch):
    """A model of one dominating and one dominated pair (here the exact pair twice, as two
    objects) steers its eps grid once: the dominated pair adds only its fine grids (one per
    direction) to the compositions of the dominating pair alone, and the bracket is that of the
    pair serving both ends, holding the exact eps (enumeration) within the accuracy's width."""
    import exact_oracle as oracle
    import numpy as np

    from shuffle_lib.core import fourier
    p, q, K, delta = [0.5, 0.3, 0.2], [0.45, 0.25, 0.3], 6, 1e-3
    model = Model((PLDPair.from_pmfs(p, q),), (PLDPair.from_pmfs(p, q),))
    calls = []
    compose = fourier.compose
    monkeypatch.setattr(fourier, "compose", lambda *a, **k: calls.append(k) or compose(*a, **k))
    alone = evaluate.epsilon_brackets(Model.from_pmfs(p, q), [delta], K, accuracy=1e-3)[0]
    steered = len(calls)          # steering and fine grids of one pair, both directions
    calls.clear()
    br = evaluate.epsilon_brackets(model, [delta], K, accuracy=1e-3)[0]
    assert len(calls) == steered + 2, (len(calls), steered)    # + the fine grids of the other
    assert br == alone, (br, alone)
    exact = max(oracle.epsilon(np.array(p), np.array(q), K, delta),
                oracle.epsilon(np.array(q), np.array(p), K, delta))
    assert br.lower <= exact <= br.upper and br.upper - br.lower <= 2e-3, (br, exact)
