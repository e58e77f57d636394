"""shuffle_lib.accountant: the dp_accounting PrivacyAccountant contract (in the shape of
dp_accounting's own privacy_accountant_test.py), agreement with PLDAccountant, certified brackets
against independent computations, and the refusals."""

import functools
import math
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

dpa = pytest.importorskip("dp_accounting")
from dp_accounting import dp_event as de  # noqa: E402
from dp_accounting.pld import pld_privacy_accountant  # noqa: E402
from dp_accounting.pld import privacy_loss_distribution as dpl  # noqa: E402

import shuffle_lib as sl  # noqa: E402
from shuffle_lib.accountant import ShuffleAccountant, ShuffledEvent  # noqa: E402
from shuffle_lib.mechanisms import clones  # noqa: E402

REPLACE, ADD_REMOVE = dpa.NeighboringRelation.REPLACE_ONE, dpa.NeighboringRelation.ADD_OR_REMOVE_ONE
RR = ShuffledEvent("rr", eps0=1.0)
GAUSS = de.GaussianDpEvent(2.0)


class Unknown(de.DpEvent):
    pass


# ---- the accountant contract ----

@pytest.mark.parametrize("bad", [de.UnsupportedDpEvent(), Unknown(),
                                 de.SampledWithoutReplacementDpEvent(10, 2, de.GaussianDpEvent(1.0)),
                                 de.TruncatedSubsampledGaussianDpEvent(100, 0.1, 20, 1.0)])
@pytest.mark.parametrize("nest", [lambda e: e, lambda e: de.ComposedDpEvent([RR, e]),
                                  lambda e: de.SelfComposedDpEvent(e, 10)])
def test_unsupported_events_are_refused(bad, nest):
    acct = ShuffleAccountant()
    err = acct._maybe_compose(nest(bad), count=1, do_compose=False)
    assert err is not None and err.invalid_event == bad
    assert not acct.supports(nest(bad))
    with pytest.raises(dpa.UnsupportedEventError, match="caused by subevent"):
        acct.compose(nest(bad))
    assert acct.get_delta(1.0) == 0.0   # nothing was composed


def test_no_events_no_op_and_non_private():
    for acct in (ShuffleAccountant(), ShuffleAccountant().compose(de.NoOpDpEvent())):
        assert acct.get_epsilon(1e-12) == acct.get_epsilon(0) == acct.get_epsilon(1) == 0
        assert acct.get_delta(1e-12) == acct.get_delta(0) == acct.get_delta(math.inf) == 0
    for event in (de.NonPrivateDpEvent(), de.ComposedDpEvent([de.NoOpDpEvent(), de.NonPrivateDpEvent()]),
                  de.SelfComposedDpEvent(de.NonPrivateDpEvent(), 10), de.ComposedDpEvent([RR, de.GaussianDpEvent(0)])):
        acct = ShuffleAccountant()
        assert acct.supports(event)
        acct.compose(event)
        assert acct.get_epsilon(0.5) == acct.get_epsilon(0) == math.inf
        assert acct.get_delta(100) == acct.get_delta(0) == 1


def test_order_and_count_do_not_matter():
    krr = ShuffledEvent("krr-strong", n=20, gamma=0.5, k=3)
    a = ShuffleAccountant().compose(RR).compose(krr).compose(GAUSS).compose(RR)
    b = ShuffleAccountant().compose(GAUSS).compose(RR, 2).compose(krr)
    c = ShuffleAccountant().compose(de.ComposedDpEvent([de.SelfComposedDpEvent(RR, 2), krr, GAUSS]))
    ref = a.get_delta_bracket(1.0)
    for other in (b, c):
        got = other.get_delta_bracket(1.0)
        assert got.upper == pytest.approx(ref.upper, rel=1e-9) and got.lower == pytest.approx(ref.lower, rel=1e-9)
    # compose(event, 3) is three times compose(event), and the ledger records what was composed
    x = ShuffleAccountant().compose(RR, 3)
    y = ShuffleAccountant().compose(RR).compose(RR).compose(RR)
    assert x.get_epsilon_bracket(1e-3) == y.get_epsilon_bracket(1e-3)
    assert x.ledger == de.SelfComposedDpEvent(RR, 3)


@pytest.mark.parametrize("count", [0, -1, 1.5, "2", 10 ** 8])
def test_bad_counts(count):
    with pytest.raises(ValueError, match="count"):
        ShuffleAccountant().compose(RR, count)
    with pytest.raises(ValueError, match="count"):
        ShuffleAccountant().compose(de.SelfComposedDpEvent(RR, -1))


def test_bad_targets_and_settings():
    acct = ShuffleAccountant().compose(RR, 2)
    with pytest.raises(ValueError, match="target_epsilon"):
        acct.get_delta(-1.0)
    with pytest.raises(ValueError, match="target_delta"):
        acct.get_epsilon(1.5)
    with pytest.raises(ValueError, match="target_delta"):
        acct.get_epsilon(0.0)
    with pytest.raises(ValueError, match="accuracy"):
        ShuffleAccountant(accuracy=0.0)
    with pytest.raises(ValueError, match="neighboring_relation"):
        ShuffleAccountant(neighboring_relation="replace")


def test_events_serialise_like_dp_accountings():
    e = ShuffledEvent("ldp-shuffle", n=100, eps0=1.0)
    assert e.values == {"n": 100, "eps0": 1.0, "pair": "fmt21"}
    tree = de.ComposedDpEvent([de.SelfComposedDpEvent(e, 3), RR, GAUSS])
    assert de.DpEvent.from_named_tuple(tree.to_named_tuple()) == tree
    assert ShuffledEvent("rr", params={"eps0": 1.0}) == RR
    assert hash(RR) == hash(ShuffledEvent("rr", eps0=1))


# ---- agreement with dp_accounting and independent computations ----

@pytest.mark.parametrize("relation", [REPLACE, ADD_REMOVE])
def test_gaussian_pipelines_contain_pld_accountant(relation):
    event = de.ComposedDpEvent([de.SelfComposedDpEvent(de.GaussianDpEvent(3.0), 4),
                                de.PoissonSampledDpEvent(0.1, de.GaussianDpEvent(1.0))])
    ours = ShuffleAccountant(neighboring_relation=relation).compose(event, 2)
    theirs = pld_privacy_accountant.PLDAccountant(relation, value_discretization_interval=1e-4).compose(event, 2)
    d, e = ours.get_delta_bracket(1.0), ours.get_epsilon_bracket(1e-6)
    assert d.lower <= theirs.get_delta(1.0) and theirs.get_delta(1.0) == pytest.approx(d.upper, rel=2e-3)
    assert e.lower <= theirs.get_epsilon(1e-6) and theirs.get_epsilon(1e-6) == pytest.approx(e.upper, rel=2e-3)
    assert ours.get_delta(1.0) == d.upper and ours.get_epsilon(1e-6) == e.upper


def test_gaussian_pipeline_contains_pld_accountant_at_1e5():
    """On a Gaussian-only pipeline our certified bracket contains
    dp_accounting's PLDAccountant answer at discretisation 1e-5 (its pessimistic estimate)."""
    event = de.ComposedDpEvent([de.SelfComposedDpEvent(de.GaussianDpEvent(3.0), 4),
                                de.PoissonSampledDpEvent(0.1, de.GaussianDpEvent(1.0))])
    d = ShuffleAccountant().compose(event, 2).get_delta_bracket(1.0)
    theirs = pld_privacy_accountant.PLDAccountant(REPLACE, value_discretization_interval=1e-5).compose(event, 2)
    assert d.lower <= theirs.get_delta(1.0) <= d.upper, (d, theirs.get_delta(1.0))


@pytest.mark.parametrize("sigma", [24.0, 6.0, 0.7])
@pytest.mark.parametrize("h", [1e-2, 2.3e-4, 5e-5])
@pytest.mark.parametrize("pessimistic", [True, False])
def test_the_gaussian_builder_is_dp_accountings_to_the_last_bit(sigma, h, pessimistic):
    """The accountant's array form of dp_accounting's privacy-bucket Gaussian (REPLACE_ONE) gives
    its atoms, masses and +inf mass exactly (the bracket's certificate is dp_accounting's
    construction's; only its loop is replaced)."""
    from shuffle_lib.accountant import _directions, _gaussian_replace
    ref = _directions(dpl.from_gaussian_mechanism(
        sigma, pessimistic_estimate=pessimistic, value_discretization_interval=h,
        use_connect_dots=False, neighboring_relation=REPLACE))
    got = _gaussian_replace(sigma, pessimistic, h)
    for d in ref:
        assert np.array_equal(d.losses, got.losses) and np.array_equal(d.probs, got.probs)
        assert d.inf_mass == got.inf_mass
    assert got.losses.size > 100 and (not pessimistic or got.inf_mass > 0)


@functools.lru_cache
def _gaussian_pld(sigma, pessimistic):
    return dpl.from_gaussian_mechanism(sigma, pessimistic_estimate=pessimistic, value_discretization_interval=2e-5,
                                       use_connect_dots=pessimistic, neighboring_relation=REPLACE)


def _gaussian_delta(sigma, eps, pessimistic):
    """dp_accounting's own Gaussian PLD at a fine step, read at each eps (symmetric: one direction)."""
    eps = np.atleast_1d(eps)
    order = np.argsort(eps)
    out = np.empty(eps.size)
    out[order] = _gaussian_pld(sigma, pessimistic).get_delta_for_epsilon([float(x) for x in eps[order]])
    return out


def _convolved(model, sigma, eps, pessimistic):
    """delta(eps) of (pair) x (Gaussian) by exact convolution with the pair's few atoms:
    H_{A+B}(eps) = inf_A + sum_a P(a) H_B(eps - a), the max over both directions."""
    out = []
    for pld in model.upper[0].plds():
        out.append(pld.inf_mass + float(np.dot(pld.probs, _gaussian_delta(sigma, eps - pld.losses, pessimistic))))
    return max(out)


@pytest.mark.parametrize("event, params", [("rr", {"eps0": 1.0}), ("krr-strong", {"n": 6, "gamma": 0.5, "k": 3})])
def test_a_shuffle_round_with_a_gaussian_is_certified(event, params):
    sigma, eps = 2.0, 1.0
    acct = ShuffleAccountant().compose(de.ComposedDpEvent([ShuffledEvent(event, **params),
                                                           de.GaussianDpEvent(sigma)]))
    br = acct.get_delta_bracket(eps)
    model = sl.mechanism(event).build(**params)
    assert model.lower[0] is model.upper[0] and model.upper[0].tail_cut <= 1e-50   # the convolution below uses the exact pair
    hi, lo = _convolved(model, sigma, eps, True), _convolved(model, sigma, eps, False)
    assert lo <= hi
    assert br.lower <= hi and lo <= br.upper
    assert br.lower <= 0.5 * (lo + hi) <= br.upper
    assert br.upper - br.lower <= 1e-3 * br.upper


def test_ldp_shuffle_rounds_match_the_clones_accountant():
    e = ShuffledEvent("ldp-shuffle", n=100, eps0=1.0)
    ref = clones.delta_bracket(100, 1.0, 1.5, compositions=3)[0]
    for acct in (ShuffleAccountant().compose(e, 3),
                 ShuffleAccountant().compose(de.ComposedDpEvent([e, de.NoOpDpEvent()]), 3)):
        got = acct.get_delta_bracket(1.5)
        assert got.lower <= ref.upper and ref.lower <= got.upper
        assert got.upper == pytest.approx(ref.upper, rel=1e-2)
    # with a Gaussian it composes through its PLDs; the bracket sits above both parts alone
    mixed = ShuffleAccountant().compose(de.ComposedDpEvent([e, GAUSS]), 3).get_delta_bracket(1.5)
    assert mixed.lower <= mixed.upper and mixed.lower >= ref.upper


def test_two_asymmetric_pairs_take_the_worse_orientation():
    hist = ShuffledEvent("histogram-krr", n=40, n_x0=10, k=4, eps0=2.0)
    flip = ShuffledEvent("bitflip", n=12, q=0.1, m=3)
    a, b = sl.mechanism("histogram-krr").build(**hist.values), sl.mechanism("bitflip").build(**flip.values)
    got = ShuffleAccountant().compose(de.ComposedDpEvent([hist, flip])).get_delta_bracket(0.5)
    (a_pq, a_qp), (b_pq, b_qp) = a.upper[0].plds(), b.upper[0].plds()
    same = sl.delta_bracket([(a_pq, 1), (b_pq, 1)], [(a_qp, 1), (b_qp, 1)], [0.5])[0]
    cross = sl.delta_bracket([(a_pq, 1), (b_qp, 1)], [(a_qp, 1), (b_pq, 1)], [0.5])[0]
    assert got.upper >= max(same.upper, cross.upper) * (1 - 1e-12)
    assert got.lower >= max(same.lower, cross.lower) - a.lower[0].tail_cut - b.lower[0].tail_cut


# ---- refusals ----

def test_a_worst_case_composes_only_with_itself():
    worst = ShuffledEvent("bitflip", n=8, q=0.2, m="worst")
    alone = ShuffleAccountant().compose(worst, 2)
    ref = sl.core.evaluate.delta_brackets(sl.mechanism("bitflip").build(n=8, q=0.2, m="worst", compositions=2), [1.0], 2)[0]
    assert alone.get_delta_bracket(1.0) == ref
    assert not alone.supports(GAUSS)
    assert not ShuffleAccountant().supports(de.ComposedDpEvent([worst, GAUSS]))
    with pytest.raises(dpa.UnsupportedEventError, match="worst case|own certified method"):   # one round: the blocks method
        ShuffleAccountant().compose(GAUSS).compose(worst)
    assert alone.supports(worst) and alone.supports(de.NoOpDpEvent())


def test_unsupported_neighbouring_relations():
    for rel in (ADD_REMOVE, dpa.NeighboringRelation.REPLACE_SPECIAL):
        acct = ShuffleAccountant(neighboring_relation=rel)
        assert not acct.supports(RR)
        with pytest.raises(dpa.UnsupportedEventError, match="REPLACE_ONE"):
            acct.compose(RR)
        assert acct.supports(de.LaplaceDpEvent(1.0))
    assert not ShuffleAccountant().supports(de.LaplaceDpEvent(1.0))   # as PLDAccountant
    assert ShuffleAccountant().supports(de.RandomizedResponseDpEvent(noise_parameter=0.5, num_buckets=4))


@pytest.mark.parametrize("args, kwargs, name", [
    (("rr",), {"eps0": -1.0}, "eps0"), (("rr",), {}, "eps0"), (("rr",), {"eps0": 1.0, "n": 3}, "'n'"),
    (("krr-strong",), {"n": 1, "gamma": 0.5, "k": 3}, "n"), (("no-such",), {}, "mechanism"),
    (("rr", {"eps0": 1.0}), {"eps0": 2.0}, "eps0"),
])
def test_bad_parameters_name_the_parameter(args, kwargs, name):
    with pytest.raises(ValueError, match=name):
        ShuffledEvent(*args, **kwargs)


def test_the_readme_example_runs_as_written():
    readme = (pathlib.Path(__file__).resolve().parent.parent / "README.md").read_text()
    code = re.search(r"## Composing with other mechanisms: dp_accounting.*?```python\n(.*?)```", readme, re.S).group(1)
    ns = {}
    exec(compile(code, "README.md", "exec"), ns)
    acct = ns["acct"]
    br = acct.get_epsilon_bracket(1e-6)
    assert 0 < br.lower <= br.upper == acct.get_epsilon(1e-6) < math.inf


def test_shuffle_lib_imports_without_dp_accounting():
    code = ("import sys; sys.modules['dp_accounting'] = None\n"
            "import shuffle_lib as sl\n"
            "assert sl.rr_pmfs(1.0)\n"
            "try:\n    sl.ShuffleAccountant\nexcept ImportError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=pathlib.Path(__file__).resolve().parent.parent, check=True).stdout
    assert "pip install shuffle-lib[dp-accounting]" in out


# ---- the accuracy contract: the command line's refinement, and accuracy_met ----

def _custom(tmp_path, p, q, name):
    f = tmp_path / f"{name}.json"
    f.write_text(f'{{"p": {list(p)}, "q": {list(q)}}}')
    return ShuffledEvent("custom", pmfs=str(f))


def _exact_eps(p, q, K, delta):
    """eps(delta) of K rounds of the pair, max over both directions, by exact enumeration."""
    import exact_oracle as oracle
    p, q = np.asarray(p, float), np.asarray(q, float)
    return max(oracle.epsilon(p, q, K, delta), oracle.epsilon(q, p, K, delta))


P1, Q1 = [0.5, 0.3, 0.2], [0.49, 0.3, 0.21]
P2, Q2 = [0.4, 0.35, 0.25], [0.395, 0.345, 0.26]


@pytest.mark.parametrize("alone", [True, False])
def test_an_eps_query_below_004_is_refined_to_the_contract(tmp_path, alone):
    """eps(1e-2) ~ 0.016 of two rounds (one pair twice, or two pairs once each) at accuracy 1e-3:
    the first grid's bracket is wider than the contract's relative half-width 25 x 1e-3 x upper
    (the accountant's answer before it went through the refinement); the accountant's answer now
    meets it, says so, lies inside the first bracket and holds the exact eps (enumeration)."""
    from shuffle_lib.core import evaluate
    acc, delta = 1e-3, 1e-2
    a = _custom(tmp_path, P1, Q1, "a")
    if alone:
        acct = ShuffleAccountant(accuracy=acc).compose(a, 2)
        model = acct._model(a, 2)
        first = evaluate.brackets(model, "epsilon", [delta], 2, accuracy=acc)[0]
        exact = _exact_eps(P1, Q1, 2, delta)
    else:
        b = _custom(tmp_path, P2, Q2, "b")
        acct = ShuffleAccountant(accuracy=acc).compose(de.ComposedDpEvent([a, b]))
        first = evaluate.brackets(acct._orientation_model(0, acc), "epsilon", [delta],
                                  accuracy=acc)[0]
        exact = _exact_eps(np.kron(P1, P2), np.kron(Q1, Q2), 1, delta)
    demand = lambda br: 25 * acc * br.upper  # noqa: E731  (the half-width asked below eps 0.04)
    assert first.upper < 0.04 and (first.upper - first.lower) / 2 > demand(first), first
    br = acct.get_epsilon_bracket(delta)
    assert br.accuracy_met is True and br.limit is None, br
    assert (br.upper - br.lower) / 2 <= demand(br), br
    assert first.lower <= br.lower <= exact <= br.upper <= first.upper, (first, br, exact)
    assert acct.get_epsilon(delta) == br.upper


def test_every_answer_says_whether_it_met_the_contract():
    """delta and eps answers carry accuracy_met (and limit None when met), as the command line's
    do; the ones without computation (no events, delta = 1) are met by definition."""
    acct = ShuffleAccountant().compose(de.ComposedDpEvent([RR, GAUSS]), 3)
    for br in (acct.get_delta_bracket(1.0), acct.get_epsilon_bracket(1e-6)):
        assert br.accuracy_met is True and br.limit is None, br
    empty = ShuffleAccountant()
    assert empty.get_delta_bracket(1.0).accuracy_met is True
    assert acct.get_epsilon_bracket(1.0).accuracy_met is True
