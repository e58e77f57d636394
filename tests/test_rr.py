"""Randomised response: the closed form of Theorem 5 against sympy's exact rationals."""

import math

import mpmath
import numpy as np
import pytest
import sympy as sp

import shuffle_lib as sl


def exact_rational_delta(k, eps0_exp, eps_exp):
    """delta(eps) for e^eps0 = eps0_exp, e^eps = eps_exp (rationals): exact in sympy."""
    a = sp.Rational(eps0_exp) / (1 + sp.Rational(eps0_exp))
    total = sp.Integer(0)
    for j in range(k + 1):
        ratio = sp.Rational(eps0_exp) ** (2 * j - k)  # e^{loss}
        if ratio > eps_exp:
            total += sp.binomial(k, j) * a ** j * (1 - a) ** (k - j) * (1 - sp.Rational(eps_exp) / ratio)
    return total


@pytest.mark.parametrize("k", [1, 2, 3, 5, 8, 13])
def test_binomial_sum_equals_exact_rational(k):
    got = sl.rr_delta_exact(math.log(3), math.log(2), k)
    want = exact_rational_delta(k, 3, 2)
    assert got == pytest.approx(float(want), rel=1e-13)


@pytest.mark.parametrize("k", [1, 2, 4, 7])
def test_binomial_sum_equals_product_pmfs(k):
    P, Q = sl.rr_pmfs(0.7)
    pk, qk = sl.product_pmfs(P, Q, k)
    eps = [0.0, 0.3, 1.0, 2.5]
    assert np.allclose(sl.rr_delta_exact(0.7, eps, k), sl.delta_exact(pk, qk, eps), rtol=1e-13, atol=0)


def test_tail_values_against_mpmath():
    """Deep in the tail (delta ~ 1e-200) the log-space sum keeps its digits."""
    mpmath.mp.dps = 50
    k, eps0, eps = 2000, 1.0, 1900.0
    a = mpmath.mpf(1) / (1 + mpmath.e ** (-eps0))
    want = mpmath.fsum(mpmath.binomial(k, j) * a ** j * (1 - a) ** (k - j) * (1 - mpmath.e ** (eps - eps0 * (2 * j - k)))
                       for j in range(k + 1) if eps0 * (2 * j - k) > eps)
    got = sl.rr_delta_exact(eps0, eps, k)
    assert 1e-300 < got < 1e-30
    assert got == pytest.approx(float(want), rel=1e-10)


def test_large_k_is_a_probability_and_monotone():
    # mean loss ~ k eps0 tanh(eps0/2) = 500, sd ~ 32: eps 0 .. 700 crosses the bulk
    d = sl.rr_delta_exact(0.01, [0.0, 400.0, 500.0, 600.0, 700.0], 10 ** 7)
    assert np.all(np.isfinite(d)) and np.all(np.diff(d) < 0) and d[-1] > 0 and d[0] <= 1.0


@pytest.mark.parametrize("args, msg", [
    ((0.0, 1.0, 1), "eps0 must lie in"),
    ((float("nan"), 1.0, 1), "eps0 must lie in"),
    ((1.0, -1.0, 1), "eps must lie in"),
    ((1.0, 1.0, 0), "k must be an integer"),
    ((1.0, 1.0, 2.5), "k must be an integer"),
])
def test_bad_input(args, msg):
    with pytest.raises(ValueError, match=msg):
        sl.rr_delta_exact(*args)
