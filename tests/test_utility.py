"""Tests for shuffle_lib.analyses.utility: matrix inversion, simplex projection, analytic Gaussian."""

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize

from shuffle_lib.analyses import utility as u


@pytest.mark.parametrize("eps,delta", [(1.0, 1e-5), (0.1, 1e-10), (4.0, 1e-22), (0.5, 1e-100), (0.0, 0.1)])
def test_analytic_gaussian_against_mpmath(eps, delta):
    s = u.analytic_gaussian_sigma(eps, delta)
    mpmath.mp.dps = 50
    S, D = mpmath.mpf(s), mpmath.sqrt(2)
    d = mpmath.ncdf(D / (2 * S) - eps * S / D) - mpmath.e ** eps * mpmath.ncdf(-D / (2 * S) - eps * S / D)
    assert abs(float(d / delta) - 1) < 1e-9
    assert u.analytic_gaussian_delta(s * 1.001, eps) < delta < u.analytic_gaussian_delta(s * 0.999, eps)


def test_analytic_gaussian_against_dp_accounting():
    import dp_accounting
    from dp_accounting.pld import pld_privacy_accountant
    for eps, delta in [(1.0, 1e-5), (0.3, 1e-8)]:
        acc = pld_privacy_accountant.PLDAccountant()
        acc.compose(dp_accounting.GaussianDpEvent(noise_multiplier=u.analytic_gaussian_sigma(eps, delta, 1.0)))
        assert abs(acc.get_delta(eps) / delta - 1) < 1e-3


def test_analytic_beats_classical():
    for eps, delta in [(0.5, 1e-5), (0.9, 1e-12)]:
        assert u.analytic_gaussian_sigma(eps, delta) < u.classical_gaussian_sigma(eps, delta)


def test_matrix_inversion_against_numpy_inverse():
    rng = np.random.default_rng(3)
    for k, eps0 in [(2, 0.5), (5, 2.0), (15, 4.0)]:
        counts = rng.integers(0, 50, k).astype(float) + 1
        R = u.krr_channel(eps0, k)
        assert np.allclose(R.sum(axis=1), 1)
        ref = (counts / counts.sum()) @ np.linalg.inv(R)
        assert np.allclose(u.matrix_inversion(counts, eps0, k), ref, atol=1e-12)
        pi = rng.dirichlet(np.ones(k))
        assert np.allclose(u.matrix_inversion(pi @ R, eps0, k), pi, atol=1e-12)   # eq. 7


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-5, 5), min_size=1, max_size=12))
def test_projection_is_the_euclidean_projection(y):
    y = np.array(y)
    x = u.project_simplex(y)
    assert np.all(x >= 0) and abs(x.sum() - 1) < 1e-12
    # oracle: generic constrained minimisation from the projection's neighbourhood
    cons = ({"type": "eq", "fun": lambda z: z.sum() - 1},)
    res = minimize(lambda z: ((z - y) ** 2).sum(), np.full(y.size, 1 / y.size), bounds=[(0, None)] * y.size,
                   constraints=cons, method="SLSQP", options={"ftol": 1e-14, "maxiter": 500})
    assert ((x - y) ** 2).sum() <= ((res.x - y) ** 2).sum() + 1e-8


def test_privatize_is_krr():
    rng = np.random.default_rng(7)
    k, eps0 = 4, 1.0
    y = u.krr_privatize(np.zeros(200_000, dtype=int), eps0, k, rng)
    freq = np.bincount(y, minlength=k) / y.size
    assert np.allclose(freq, u.krr_channel(eps0, k)[0], atol=4e-3)


def test_seeded_and_shapes():
    a = u.utility_runs(u.discretised_normal(500, 15, np.random.default_rng(1)), 15, 2.0, 3.0, 3, seed=5)
    b = u.utility_runs(u.discretised_normal(500, 15, np.random.default_rng(1)), 15, 2.0, 3.0, 3, seed=5)
    assert a.shape == (3, 3) and np.array_equal(a, b) and np.all((a >= 0) & (a <= 1.5))
    c = u.synthetic_checkins(1000, (16, 12), np.random.default_rng(2))
    assert c.min() >= 0 and c.max() < 16 * 12


def test_validation():
    with pytest.raises(ValueError, match="delta"):
        u.analytic_gaussian_sigma(1.0, 0.0)
    with pytest.raises(ValueError, match="eps0"):
        u.krr_channel(-1.0, 3)
    with pytest.raises(ValueError, match="counts"):
        u.matrix_inversion([1, 2], 1.0, 3)
    with pytest.raises(ValueError, match="values"):
        u.krr_privatize([0, 5], 1.0, 3, np.random.default_rng(0))
    with pytest.raises(ValueError, match="shape"):
        u.tv_distance([0.5, 0.5], [1.0])
    assert math.isclose(u.tv_distance([1, 0], [0, 1]), 1.0)
