"""Issue 17's edge cases of the grid accountant as named regression tests, against exact oracles.

Every input here is a double, i.e. a dyadic rational, so where delta is a pure +inf mass (every
finite composed loss below eps) the oracle is exact in ``fractions.Fraction``: the composed +inf
mass of K rounds is T^K - F^K, T the total and F the finite P-mass of one round.  Where finite
atoms count, the oracle is a sandwich computed without the accountant: the losses rounded up
(down) onto a grid of step 1e-3, composed by direct (non-FFT) convolution of non-negative
numbers, whose rounding is relative, bound the exact delta above (below) by monotonicity of
(1 - e^{eps - s})_+ in s (seed 000 Thm 5).
"""

import math
from fractions import Fraction

import numpy as np
import pytest

import shuffle_lib as sl
from shuffle_lib.core import evaluate, registry
from shuffle_lib.core.fourier import delta_bracket, epsilon_bracket


def exact_inf_mass(pld, K):
    """P-mass at +inf of K rounds, exactly: T^K - F^K in rationals."""
    a = Fraction(pld.inf_mass)
    fin = sum((Fraction(float(x)) for x in pld.probs), Fraction(0))
    return (fin + a) ** K - fin ** K


def x_pair(x):
    return [1.0 - x, x], [1.0, 0.0]


def brackets(p, q, K, verb, target):
    pq, qp = sl.pld_from_pmfs(p, q), sl.pld_from_pmfs(q, p)
    fn = delta_bracket if verb == "delta" else epsilon_bracket
    return fn([(pq, K)], [(qp, K)], [target])[0], pq, qp


@pytest.mark.parametrize("x", [1e-13, 3e-16, 1e-17])
def test_tiny_inf_mass_composed_twice_delta(x):
    """p = [1-x, x], q = [1, 0], K = 2, eps = 1: delta is the +inf mass 2x - x^2 (issue 17: relative
    error 3e-4 at 1e-13, 11 % at 3e-16, and [0, 0] at 1e-17 where the exact value is 2e-17)."""
    p, q = x_pair(x)
    br, pq, qp = brackets(p, q, 2, "delta", 1.0)
    exact = max(exact_inf_mass(pq, 2), exact_inf_mass(qp, 2))   # finite losses are <= x < 1 = eps
    assert max(qp.losses) < 1.0 and max(pq.losses) < 1.0
    assert Fraction(br.lower) <= exact <= Fraction(br.upper)
    assert br.upper - br.lower <= 1e-9 * float(exact)          # and tight, not merely [0, 1]


@pytest.mark.parametrize("x", [1e-13, 3e-16, 1e-17])
def test_tiny_inf_mass_no_finite_eps_below_it(x):
    """delta below the composed +inf mass: no finite eps (issue 17: a finite eps came back)."""
    p, q = x_pair(x)
    exact = exact_inf_mass(sl.pld_from_pmfs(p, q), 2)
    br = brackets(p, q, 2, "epsilon", float(exact) / 2)[0]
    assert br.lower == br.upper == math.inf


def test_dyadic_pair_exact_in_rationals():
    """p = [1/4, 3/4 - 2^-30, 2^-30], q = [1/4, 3/4, 0], K = 2, eps = 1: delta = 2^-29 - 2^-60
    exactly (issue 17: both ends 2^-29, relative error 4.7e-10)."""
    a = 2.0 ** -30
    p, q = [0.25, 0.75 - a, a], [0.25, 0.75, 0.0]
    assert Fraction(sum(Fraction(x) for x in p)) == 1
    br, pq, qp = brackets(p, q, 2, "delta", 1.0)
    exact = exact_inf_mass(pq, 2)
    assert exact == 1 - (1 - Fraction(a)) ** 2
    assert Fraction(br.lower) <= exact <= Fraction(br.upper)
    assert br.upper - br.lower <= 1e-11 * float(exact)


KRR = dict(n=225, gamma=0.5, k=4)


@pytest.fixture(scope="module")
def krr_model():
    return registry.get("krr-strong").build(**KRR)


def test_krr_strong_two_rounds_delta_is_the_inf_mass(krr_model):
    """delta krr-strong n=225 gamma=0.5 k=4, eps=11.823, K=2: every finite composed loss is below
    eps, so delta is the exact +inf mass (issue 17: lower end 1.02363e-13 above the exact
    1.022831e-13)."""
    pld = krr_model.pq
    assert krr_model.qp is pld and 2 * float(pld.losses[-1]) < 11.823
    exact = exact_inf_mass(pld, 2)
    br = evaluate.delta_brackets(krr_model, [11.823], compositions=2)[0]
    assert Fraction(br.lower) <= exact <= Fraction(br.upper)
    assert br.upper - br.lower <= 0.01 * float(exact)


def _binned_delta(pld, K, eps, side, g=1e-3):
    """A bound on the exact delta_{P/Q}(eps) of K rounds: losses rounded up ('upper') or down onto
    the grid k g, composed by direct convolution; the +inf mass (exact, rational) added."""
    k = np.ceil(pld.losses / g) if side == "upper" else np.floor(pld.losses / g)
    k0 = int(k.min())
    one = np.bincount((k - k0).astype(np.int64), weights=pld.probs)
    dist = one
    for _ in range(K - 1):
        dist = np.convolve(dist, one)                  # direct: sums of non-negative products
    s = (np.arange(dist.size) + K * k0) * g
    sel = s > eps
    fin = math.fsum(dist[sel] * -np.expm1(eps - s[sel]))
    inf = float(exact_inf_mass(pld, K))
    return (fin + inf) * (1 + 1e-9) if side == "upper" else (fin + inf) * (1 - 1e-9)


def test_krr_strong_three_rounds_eps_is_finite(krr_model):
    """epsilon krr-strong n=225 gamma=0.5 k=4, K=3, delta=1.5348e-13: delta(inf) = 1.53425e-13 is
    below the target, so eps is finite (issue 17: eps_lower = inf).  Each end is checked against
    the binned sandwich of the exact delta."""
    target = 1.5348e-13
    pld = krr_model.pq
    assert exact_inf_mass(pld, 3) < Fraction(target)
    br = evaluate.epsilon_brackets(krr_model, [target], compositions=3)[0]
    assert math.isfinite(br.lower) and math.isfinite(br.upper) and br.lower <= br.upper
    assert _binned_delta(pld, 3, br.upper, "upper") <= target
    assert br.lower == 0.0 or _binned_delta(pld, 3, br.lower, "lower") > target


def test_many_rounds_of_an_inf_mass_pair_answer_without_a_grid():
    """custom pair with +inf mass at K = 1000 (issue 17: grew to 7-14 GB): delta(inf) of the
    composition, computed exactly, already answers eps = inf and delta in [~1, 1]."""
    p, q = [0.5, 0.3, 0.2], [0.6, 0.4, 0.0]
    pq, qp = sl.pld_from_pmfs(p, q), sl.pld_from_pmfs(q, p)
    assert epsilon_bracket([(pq, 1000)], [(qp, 1000)], [1e-6])[0] == (math.inf, math.inf)
    br = delta_bracket([(pq, 1000)], [(qp, 1000)], [1.0])[0]
    assert br.upper == 1.0 and br.lower >= 1 - 1e-11


def test_full_support_pair_at_a_million_rounds_is_refused_above_the_memory_limit(monkeypatch):
    """K = 1e6 of a full-support pair (issue 17: returned [0, 278647]): under a small limit the grid
    is refused before it is allocated, with what it would need."""
    from shuffle_lib.core import grid
    monkeypatch.setattr(grid, "MEMORY_LIMIT", 1e8)
    p, q = [0.5, 0.5], [0.4, 0.6]
    with pytest.raises(ValueError, match="GB"):
        delta_bracket([(sl.pld_from_pmfs(p, q), 10 ** 6)], [(sl.pld_from_pmfs(q, p), 10 ** 6)], [1.0])


@pytest.mark.parametrize("accuracy", [4e-4, 1e-4])
def test_custom_pair_meets_its_accuracy(accuracy):
    """A 3-outcome pair at K = 10 (issue 14 item 4: half-width 1.2e-3 at accuracy 2e-4): the eps
    bracket's half-width is within the accuracy asked, and contains the exact eps."""
    import exact_oracle as oracle
    p, q = [0.5, 0.3, 0.2], [0.2, 0.3, 0.5]
    br = epsilon_bracket([(sl.pld_from_pmfs(p, q), 10)], [(sl.pld_from_pmfs(q, p), 10)], [1e-6],
                         accuracy=accuracy)[0]
    assert (br.upper - br.lower) / 2 <= accuracy * (1 + 1e-6)   # + the certifying search's 1e-12 steps
    assert br.lower <= oracle.epsilon(p, q, 10, 1e-6) <= br.upper
