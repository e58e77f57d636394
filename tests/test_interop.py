"""Export to dp_accounting: composing there and here agree within both brackets."""

import numpy as np
import pytest

import shuffle_lib as sl
from shuffle_lib.interop import to_dp_accounting


def pair():
    rng = np.random.default_rng(8)
    p, q = rng.dirichlet(np.ones(6)), rng.dirichlet(np.ones(6))
    q[0] = 0.0  # an infinite loss in one direction
    q /= q.sum()
    return sl.pld_from_pmfs(p, q), sl.pld_from_pmfs(q, p), p, q


def test_one_round_brackets_the_exact_delta():
    pq, qp, p, q = pair()
    up, low = to_dp_accounting(pq, qp, 1e-4, True), to_dp_accounting(pq, qp, 1e-4, False)
    for e in (0.0, 0.5, 1.0, 2.0):
        exact = sl.delta_exact(p, q, [e])[0]
        assert low.get_delta_for_epsilon(e) <= exact * (1 + 1e-9) + 1e-15
        assert up.get_delta_for_epsilon(e) >= exact * (1 - 1e-9) - 1e-15


def test_compositions_agree_with_our_bracket():
    pq, qp, _, _ = pair()
    K, eps = 8, [1.0, 3.0]
    ours = sl.delta_bracket([(pq, K)], [(qp, K)], eps)
    up = to_dp_accounting(pq, qp, 1e-4, True).self_compose(K)
    low = to_dp_accounting(pq, qp, 1e-4, False).self_compose(K)
    for e, b in zip(eps, ours):
        assert up.get_delta_for_epsilon(e) >= b.lower
        assert low.get_delta_for_epsilon(e) <= b.upper


def test_composes_with_a_gaussian_inside_dp_accounting():
    from dp_accounting.pld import privacy_loss_distribution as dpa

    P, Q = sl.rr_pmfs(0.5)
    pq, qp = sl.pld_from_pmfs(P, Q), sl.pld_from_pmfs(Q, P)
    shuffle = to_dp_accounting(pq, qp, 1e-4, True)
    gauss = dpa.from_gaussian_mechanism(3.0, value_discretization_interval=1e-4)
    both = shuffle.compose(gauss)
    alone = [shuffle.get_delta_for_epsilon(1.0), gauss.get_delta_for_epsilon(1.0)]
    assert max(alone) <= both.get_delta_for_epsilon(1.0) <= 1.0


def test_bad_interval():
    pq, qp, _, _ = pair()
    with pytest.raises(ValueError, match="value_discretization_interval"):
        to_dp_accounting(pq, qp, 0.0)
