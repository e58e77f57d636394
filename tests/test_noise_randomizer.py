"""The numeric randomisers (x + noise, x in [0, 1]) shuffled: the certified bracket against
oracles that do not call the library's route.

* n = 2: the exact delta of the two-user datasets (x, z), x in {0, 1}, by a 2-d midpoint rule on
  a fine grid (the shuffled pair's density is the symmetrised product); the upper end must be >=
  it for every z tried, the lower end (z = 0) <= the z = 0 value.
* The Gaussian sum: the sum of the reports is a post-processing, N(x + sum, n sigma^2), whose
  delta is the Gaussian mechanism's with sensitivity 1 and noise sigma sqrt(n) (closed form,
  Balle & Wang 2018, Thm 8): a lower bound on the true worst case, so the upper end is >= it.
* n = 1: the blanket bound is the local hockey stick, in closed form for both noises.
"""

import json
import math
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from shuffle_lib.mechanisms.randomizer import noise as N


def _two_user_delta(dist, eps, z):
    """delta of the multiset {x + Z1, z + Z2} between x = 1 and x = 0, both directions (2-d grid;
    a midpoint rule on 3001^2 cells, the densities smooth: error far below the slack used)."""
    sd = float(dist.std())
    y = np.linspace(-10 * sd - 1, 10 * sd + 2, 3001)
    dy = y[1] - y[0]
    r0, r1, rz = dist.pdf(y), dist.pdf(y - 1), dist.pdf(y - z)
    p1 = 0.5 * (np.outer(r1, rz) + np.outer(rz, r1))
    p0 = 0.5 * (np.outer(r0, rz) + np.outer(rz, r0))
    e = math.exp(eps)
    return max(np.sum(np.maximum(p1 - e * p0, 0)), np.sum(np.maximum(p0 - e * p1, 0))) * dy * dy


def _gauss_delta(mu, eps):
    """Balle & Wang 2018 Thm 8: delta of N(0,1) vs N(mu,1)."""
    return stats.norm.cdf(mu / 2 - eps / mu) - math.exp(eps) * stats.norm.cdf(-mu / 2 - eps / mu)


@pytest.mark.parametrize("noise", ["gaussian", "laplace"])
@pytest.mark.parametrize("eps", [0.1, 0.5, 1.0])
def test_two_users_exact_delta_inside_bracket(noise, eps):
    dist = stats.norm(0, 1.0) if noise == "gaussian" else stats.laplace(0, 1.0)
    br = N.delta_bracket(noise, 2, eps, scale=1.0)
    exact = [_two_user_delta(dist, eps, z) for z in (0.0, 0.5, 1.0)]
    assert br.upper >= max(exact) * (1 + 1e-3)
    assert br.lower <= exact[0] * (1 + 1e-3)
    assert br.lower > 0 or exact[0] < 1e-9     # Laplace b = 1 is 1-DP: delta(1) = 0


def test_three_users_exact_delta_below_upper():
    """n = 3, others at 0: delta = E over (Z2, Z3) of the two-user-like sum, by a 3-d grid
    (coarse, with a 1 % allowance derived from halving the grid: see the assert)."""
    sd, eps = 1.0, 0.3
    y = np.linspace(-7, 8, 241)
    dy = y[1] - y[0]
    r0, r1 = stats.norm.pdf(y), stats.norm.pdf(y - 1)
    A, B, C = np.ix_(range(y.size), range(y.size), range(y.size))
    q0 = r0[A] * r0[B] * r0[C]
    q1 = (r1[A] * r0[B] * r0[C] + r0[A] * r1[B] * r0[C] + r0[A] * r0[B] * r1[C]) / 3
    e = math.exp(eps)
    exact = max(np.sum(np.maximum(q1 - e * q0, 0)), np.sum(np.maximum(q0 - e * q1, 0))) * dy ** 3
    br = N.delta_bracket("gaussian", 3, eps, scale=sd)
    assert br.lower <= exact * 1.01 and exact <= br.upper


@pytest.mark.parametrize("n", [100, 10_000])
@pytest.mark.parametrize("eps", [0.02, 0.1])
def test_gaussian_sum_closed_form_below_upper(n, eps):
    lower_truth = _gauss_delta(1.0 / math.sqrt(n), eps)
    assert N.upper_delta("gaussian", n, eps, scale=1.0) >= lower_truth


@pytest.mark.parametrize("eps", [0.0, 0.3, 1.0])
def test_one_user_is_the_local_hockey_stick(eps):
    up = N.upper_delta("gaussian", 1, eps, scale=1.0)
    ex = _gauss_delta(1.0, eps)
    assert ex <= up <= ex * (1 + 1e-3) + 1e-12
    b = 0.7        # Laplace: L in [-1/b, 1/b]; delta = P1(L > eps) - e^eps P0(L > eps), closed form
    t = (b * eps + 1) / 2 if eps < 1 / b else math.inf
    ex_l = stats.laplace.sf(t - 1, scale=b) - math.exp(eps) * stats.laplace.sf(t, scale=b)
    up_l = N.upper_delta("laplace", 1, eps, scale=b)
    assert ex_l <= up_l <= ex_l * (1 + 1e-3) + 1e-12


def test_custom_scipy_family_matches_named():
    """A Noise built from scipy's logistic is accepted; the Gaussian as a custom Noise (numeric
    loss inversion) gives the named route's value to 1e-6."""
    g = N.Noise(stats.norm(0, 1.0))
    assert N.upper_delta(g, 50, 0.2) == pytest.approx(N.upper_delta("gaussian", 50, 0.2, scale=1.0), rel=1e-6)
    lg = N.Noise(stats.logistic(0, 0.5))
    br = N.delta_bracket(lg, 20, 0.3)
    assert 0 < br.lower <= br.upper < 1


def test_rejects_asymmetric_or_non_log_concave_noise():
    with pytest.raises(ValueError, match="symmetric"):
        N.Noise(stats.gumbel_r(0, 1.0))
    with pytest.raises(ValueError, match="log-concave"):
        N.Noise(stats.t(2))


@settings(max_examples=5, deadline=None)
@given(st.sampled_from(["gaussian", "laplace"]), st.floats(0.3, 3.0), st.integers(1, 300),
       st.floats(0.0, 2.0))
def test_bracket_ordered_and_monotone(noise, scale, n, eps):
    br = N.delta_bracket(noise, n, eps, scale=scale)
    assert 0 <= br.lower <= br.upper <= 1
    # more noise is more private (the upper end is the blanket of a post-processable family)
    assert N.view_delta(noise, n, eps, scale=2 * scale) <= br.upper


def test_epsilon_bracket_contains_delta_bracket_crossing():
    br = N.epsilon_bracket("laplace", 1000, 1e-6, scale=1.0)
    assert 0 < br.lower < br.upper
    assert N.upper_delta("laplace", 1000, br.upper, scale=1.0) <= 1e-6
    assert N.view_delta("laplace", 1000, br.lower, scale=1.0) > 1e-6


def test_fine_binning_limit_against_matrix_route(tmp_path):
    """Binning the Laplace report into 2 cells (y <= 1/2, y > 1/2) is a post-processing: the
    finite randomiser's certified lower end (the matrix route) is <= our upper end."""
    b, eps, n = 1.0, 0.2, 50
    p = stats.laplace.sf(0.5, scale=b)
    f = tmp_path / "m.json"
    f.write_text(json.dumps({"matrix": [[1 - p, p], [p, 1 - p]]}))
    out = subprocess.run([sys.executable, "-m", "shuffle_lib", "delta", "randomizer", "--matrix", str(f),
                          "--n", str(n), "--eps", str(eps), "--json"], capture_output=True, text=True, check=True)
    low = json.loads(out.stdout)["results"][0]["delta_lower"]
    assert 0 < low <= N.upper_delta("laplace", n, eps, scale=b)


@pytest.mark.parametrize("noise", ["gaussian", "laplace"])
def test_cli_delta_json(noise):
    out = subprocess.run([sys.executable, "-m", "shuffle_lib", "delta", "randomizer", "--noise", noise, "--scale", "1",
                          "--n", "2", "--eps", "0.1", "0.5", "--json"], capture_output=True, text=True, check=True)
    res = json.loads(out.stdout)["results"]
    assert [r["eps"] for r in res] == [0.1, 0.5]
    assert all(0 < r["delta_lower"] <= r["delta_upper"] for r in res)


@pytest.mark.parametrize("args,word", [(["--scale", "-1"], "--scale"), (["--scale", "0"], "--scale"),
                                       (["--scale", "1", "--compositions", "2"], "--compositions"),
                                       (["--scale", "1", "--k", "3"], "--noise")])
def test_cli_bad_input(args, word):
    out = subprocess.run([sys.executable, "-m", "shuffle_lib", "delta", "randomizer", "--noise", "gaussian", "--n", "2",
                          "--eps", "0.1", *args], capture_output=True, text=True)
    assert out.returncode == 2 and word in out.stderr and out.stderr.count("\n") == 1


def test_validation_names_the_argument():
    with pytest.raises(ValueError, match="scale"):
        N.upper_delta("gaussian", 10, 0.1, scale=-1.0)
    with pytest.raises(ValueError, match="noise"):
        N.upper_delta("cauchy", 10, 0.1, scale=1.0)
    with pytest.raises(ValueError, match="n"):
        N.upper_delta("gaussian", 0, 0.1, scale=1.0)
