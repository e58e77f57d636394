"""The shuffled Gaussian mechanism by Monte Carlo: intervals against exact values."""

import math

import numpy as np
import pytest
from scipy.stats import norm

from shuffle_lib.mechanisms import gaussian_shuffle as gs


@pytest.mark.parametrize("sigma, eps", [(0.5, 0.5), (1.0, 0.2), (2.0, 0.1)])
def test_n1_is_the_gaussian_mechanism(sigma, eps):
    est, lo, hi, se = gs.delta_mc(1, sigma, eps, samples=200_000, seed=1)
    exact = gs.gaussian_delta(sigma, eps)
    assert lo <= exact <= hi and abs(est - exact) <= 5 * se


def test_gaussian_delta_against_the_definition():
    # hockey-stick of N(1, s^2) vs N(0, s^2) by quadrature of the positive part
    s, e = 0.8, 0.7
    x = np.linspace(-12, 13, 2_000_001)
    integrand = np.maximum(norm.pdf(x, 1, s) - math.exp(e) * norm.pdf(x, 0, s), 0)
    assert gs.gaussian_delta(s, e) == pytest.approx(np.trapezoid(integrand, x), rel=1e-8)


def test_n2_against_quadrature():
    """Two users: the 2-d hockey-stick integral on a fine grid, both directions."""
    sigma, eps = 0.6, 0.3
    t = np.linspace(-6 * sigma, 1 + 6 * sigma, 1601)
    y1, y2 = np.meshgrid(t, t, indexing="ij")
    f = norm.pdf(y1, 0, sigma) * norm.pdf(y2, 0, sigma)
    fp = 0.5 * (norm.pdf(y1, 1, sigma) * norm.pdf(y2, 0, sigma) + norm.pdf(y1, 0, sigma) * norm.pdf(y2, 1, sigma))
    dA = (t[1] - t[0]) ** 2
    exact = max(np.maximum(fp - math.exp(eps) * f, 0).sum() * dA, np.maximum(f - math.exp(eps) * fp, 0).sum() * dA)
    est, lo, hi, se = gs.delta_mc(2, sigma, eps, samples=200_000, seed=2)
    assert lo <= exact <= hi and abs(est - exact) <= 5 * se


def test_log_ratio_is_permutation_invariant_and_matches_densities():
    rng = np.random.default_rng(3)
    y = rng.normal(size=(5, 7))
    sigma = 0.9
    assert np.allclose(gs.log_ratio(y, sigma), gs.log_ratio(y[:, ::-1], sigma), rtol=1e-14)
    fp = np.mean([np.prod(norm.pdf(y - np.eye(7)[i], 0, sigma), axis=1) for i in range(7)], axis=0)
    f = np.prod(norm.pdf(y, 0, sigma), axis=1)
    assert np.allclose(gs.log_ratio(y, sigma), np.log(fp / f), rtol=1e-12)


def test_more_users_more_privacy():
    d = [gs.delta_mc(n, 0.5, 0.5, samples=50_000, seed=4)[0] for n in (1, 4, 16)]
    assert d[0] > d[1] > d[2]


@pytest.mark.parametrize("kw, msg", [(dict(n=0), "n must be"), (dict(sigma=0.0), "sigma must"),
                                     (dict(eps=-1.0), "eps must"), (dict(samples=10), "samples must")])
def test_bad_input(kw, msg):
    args = dict(n=3, sigma=1.0, eps=0.5, samples=1000)
    args.update(kw)
    with pytest.raises(ValueError, match=msg):
        gs.delta_mc(**args)
