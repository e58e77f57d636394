"""The numeric randomisers (x + noise, x in [0, 1]) shuffled: the certified bracket against
oracles that do not call the library's route.

* n = 2: the exact delta of the two-user datasets (x, z), x in {0, 1}, by a 2-d midpoint rule on
  a fine grid (the shuffled pair's density is the symmetrised product); the upper end must be >=
  it for every z tried, the lower end (z = 0) <= the z = 0 value.
* The Gaussian sum: the sum of the reports is a post-processing, N(x + sum, n sigma^2), whose
  delta is the Gaussian mechanism's with sensitivity 1 and noise sigma sqrt(n) (closed form,
  Balle & Wang 2018, Thm 8): a lower bound on the true worst case, so the upper end is >= it.
* n = 1: the blanket bound is the local hockey stick, in closed form for both noises.
* Several rounds: the envelope PLD against the Gaussian mechanism's closed form (one and K
  rounds), n = 2 against the two-user pair's loss distribution composed by direct convolution, and
  the K-round Gaussian sum's closed form.

The heavier cases run with ``SHUFFLE_FULL=1``.
"""

import itertools
import json
import math
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from shuffle_lib.cli import main
from shuffle_lib.core.fourier import delta_bracket as fourier_delta
from shuffle_lib.core.pld import hockey_stick
from shuffle_lib.mechanisms.randomizer import noise as N
from shuffle_lib.mechanisms.randomizer import noise_compose as C

FULL = os.environ.get("SHUFFLE_FULL") == "1"


def _two_user_pair(dist, z, cells=3001):
    """The densities (times the cell area) of the multiset {x + Z1, z + Z2}, x = 1 and x = 0, on a
    midpoint grid of cells^2 (the densities smooth: error far below the slack used)."""
    sd = float(dist.std())
    y = np.linspace(-10 * sd - 1, 10 * sd + 2, cells)
    dy = y[1] - y[0]
    r0, r1, rz = dist.pdf(y) * dy, dist.pdf(y - 1) * dy, dist.pdf(y - z) * dy
    p1 = 0.5 * (np.outer(r1, rz) + np.outer(rz, r1))
    p0 = 0.5 * (np.outer(r0, rz) + np.outer(rz, r0))
    return p1, p0


def _two_user_delta(dist, eps, z):
    """delta of the two-user multiset between x = 1 and x = 0, both directions."""
    p1, p0 = _two_user_pair(dist, z)
    e = math.exp(eps)
    return max(np.sum(np.maximum(p1 - e * p0, 0)), np.sum(np.maximum(p0 - e * p1, 0)))


def _gauss_delta(mu, eps):
    """Balle & Wang 2018 Thm 8: delta of N(0,1) vs N(mu,1)."""
    return stats.norm.cdf(mu / 2 - eps / mu) - math.exp(eps) * stats.norm.cdf(-mu / 2 - eps / mu)


@pytest.mark.parametrize(
    "noise,eps",
    [("gaussian", 0.1), ("laplace", 0.5)]
    + ([("gaussian", 0.5), ("gaussian", 1.0), ("laplace", 0.1), ("laplace", 1.0)] if FULL else []),
)
def test_two_users_exact_delta_inside_bracket(noise, eps):
    dist = stats.norm(0, 1.0) if noise == "gaussian" else stats.laplace(0, 1.0)
    br = N.delta_bracket(noise, 2, eps, scale=1.0)
    exact = [_two_user_delta(dist, eps, z) for z in (0.0, 0.5, 1.0)]
    assert br.upper >= max(exact) * (1 + 1e-3)
    assert br.lower <= exact[0] * (1 + 1e-3)
    assert br.lower > 0 or exact[0] < 1e-9  # Laplace b = 1 is 1-DP: delta(1) = 0


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
    exact = max(np.sum(np.maximum(q1 - e * q0, 0)), np.sum(np.maximum(q0 - e * q1, 0))) * dy**3
    br = N.delta_bracket("gaussian", 3, eps, scale=sd)
    assert br.lower <= exact * 1.01 and exact <= br.upper


@pytest.mark.parametrize(
    "n,eps", [(100, 0.1)] + ([(100, 0.02), (10_000, 0.02), (10_000, 0.1)] if FULL else [])
)
def test_gaussian_sum_closed_form_below_upper(n, eps):
    lower_truth = _gauss_delta(1.0 / math.sqrt(n), eps)
    assert N.upper_delta("gaussian", n, eps, scale=1.0) >= lower_truth


@pytest.mark.parametrize("eps", [0.0, 0.3, 1.0])
def test_one_user_is_the_local_hockey_stick(eps):
    up = N.upper_delta("gaussian", 1, eps, scale=1.0)
    ex = _gauss_delta(1.0, eps)
    assert ex <= up <= ex * (1 + 1e-3) + 1e-12
    b = 0.7  # Laplace: L in [-1/b, 1/b]; delta = P1(L > eps) - e^eps P0(L > eps), closed form
    t = (b * eps + 1) / 2 if eps < 1 / b else math.inf
    ex_l = stats.laplace.sf(t - 1, scale=b) - math.exp(eps) * stats.laplace.sf(t, scale=b)
    up_l = N.upper_delta("laplace", 1, eps, scale=b)
    assert ex_l <= up_l <= ex_l * (1 + 1e-3) + 1e-12


def test_custom_scipy_family_matches_named():
    """A Noise built from scipy's logistic is accepted; the Gaussian as a custom Noise (numeric
    loss inversion) gives the named route's value to 1e-6."""
    g = N.Noise(stats.norm(0, 1.0))
    assert N.upper_delta(g, 50, 0.2) == pytest.approx(
        N.upper_delta("gaussian", 50, 0.2, scale=1.0), rel=1e-6
    )
    lg = N.Noise(stats.logistic(0, 0.5))
    br = N.delta_bracket(lg, 20, 0.3)
    assert 0 < br.lower <= br.upper < 1


def test_rejects_asymmetric_or_non_log_concave_noise():
    with pytest.raises(ValueError, match="symmetric"):
        N.Noise(stats.gumbel_r(0, 1.0))
    with pytest.raises(ValueError, match="log-concave"):
        N.Noise(stats.t(2))


@settings(max_examples=20 if FULL else 4, deadline=None)
@given(
    st.sampled_from(["gaussian", "laplace"]),
    st.floats(0.3 if FULL else 0.7, 3.0),
    st.integers(1, 300 if FULL else 40),
    st.floats(0.0, 2.0),
)
def test_bracket_ordered_and_monotone(noise, scale, n, eps):
    br = N.delta_bracket(noise, n, eps, scale=scale)
    assert 0 <= br.lower <= br.upper <= 1
    # more noise is more private (the upper end is the blanket of a post-processable family)
    assert N.view_delta(noise, n, eps, scale=2 * scale) <= br.upper


def test_epsilon_bracket_contains_delta_bracket_crossing():
    n = 1000 if FULL else 200
    br = N.epsilon_bracket("laplace", n, 1e-6, scale=1.0)
    assert 0 < br.lower < br.upper
    assert N.upper_delta("laplace", n, br.upper, scale=1.0) <= 1e-6
    assert N.view_delta("laplace", n, br.lower, scale=1.0) > 1e-6


def test_gaussian_n100_has_a_finite_upper_epsilon():
    """The cap ladder keeps the round-off floor below 1e-6 at n = 100 (it was delta = 1: eps inf);
    the search itself (5 s) with SHUFFLE_FULL=1."""
    assert N.upper_delta("gaussian", 100, 1.5, scale=1.0) <= 1e-6
    if FULL:
        up = N.upper_epsilon("gaussian", 100, 1e-6, scale=1.0)
        assert math.isfinite(up) and N.upper_delta("gaussian", 100, up, scale=1.0) <= 1e-6


# ---- several rounds ----


def _gauss_hockey(mu, eps):
    """H_alpha of N(mu, 1) against N(0, 1) at alpha = e^eps, any real eps (Balle & Wang 2018,
    Thm 8; for eps < 0 the same formula holds)."""
    return stats.norm.cdf(mu / 2 - eps / mu) - math.exp(eps) * stats.norm.cdf(-mu / 2 - eps / mu)


@pytest.mark.parametrize("wobble", [0.0, 0.3])
def test_envelope_dominates_the_profile_everywhere(wobble):
    """From upper values of the Gaussian mechanism's profile (exact, or raised by up to 30 % at
    random: not convex), the envelope's hockey stick is >= the exact one at every eps, negative
    ones included, in both directions, and equal to the exact one at the grid when exact."""
    mu = 1.0
    grid = np.linspace(0.0, 5.0, 21)
    u = np.array([_gauss_hockey(mu, e) for e in grid])
    u = np.minimum(1.0, u * (1 + wobble * np.random.default_rng(3).random(u.size)))
    pq, qp = C.envelope_pld(grid, u)
    assert (
        math.fsum(pq.probs) + pq.inf_mass <= 1 + 1e-12
        and math.fsum(qp.probs) + qp.inf_mass <= 1 + 1e-12
    )
    dense = np.linspace(-6.0, 7.0, 521)
    truth = np.array([_gauss_hockey(mu, e) for e in dense])
    for pld in (pq, qp):
        assert np.all(hockey_stick(pld, dense) >= truth - 1e-15)
    if wobble == 0.0:
        assert np.allclose(hockey_stick(pq, grid), u, rtol=1e-9, atol=2e-14)


def test_envelope_composed_dominates_the_k_fold_gaussian():
    """K = 4 rounds of the envelope, composed by the Fourier accountant, stay >= the K-fold
    Gaussian mechanism (mu sqrt K), and within 10 % of it at eps = 1 (a grid of step 0.1)."""
    mu, K = 0.5, 4
    grid = np.linspace(0.0, 4.0, 41)
    pq, qp = C.envelope_pld(grid, np.array([_gauss_hockey(mu, e) for e in grid]))
    eps = [0.25, 0.5, 1.0, 1.5]
    br = fourier_delta([(pq, K)], [(qp, K)], eps)
    for e, b in zip(eps, br):
        exact = _gauss_hockey(mu * math.sqrt(K), e)
        assert b.upper >= exact
    assert br[2].upper <= 1.1 * _gauss_hockey(mu * math.sqrt(K), 1.0)


def _composed_pair_delta(p1, p0, K, eps, shift):
    """delta of K rounds of the pair (p1, p0), direction p1 / p0: the loss distribution binned on a
    grid of 2e-3 with every loss moved ``shift`` (-1: down, a lower value; +1: up, an upper value)
    and composed by direct convolution."""
    keep = (p1 > 0) & (p0 > 0)
    L = np.log(p1[keep] / p0[keep])
    b = 2e-3
    k = np.floor(L / b) if shift < 0 else np.ceil(L / b)
    k0 = int(k.min())
    w = np.bincount((k - k0).astype(int), weights=p1[keep])
    out = w
    for _ in range(K - 1):
        out = np.convolve(out, w)
    loss = (np.arange(out.size) + K * k0) * b
    return float(np.sum(out * np.maximum(-np.expm1(eps - loss), 0.0)))


def test_two_users_composed_inside_bracket():
    """n = 2, Laplace b = 1, K = 2: the two-user dataset (x, 0)'s exact K-round delta (its loss
    distribution composed by convolution, losses binned down / up) lies in the bracket."""
    dist, K, eps = stats.laplace(0, 1.0), 2, [0.3, 0.8]
    p1, p0 = _two_user_pair(dist, 0.0, cells=801)
    br = C.composed_delta("laplace", 2, eps, K, scale=1.0, points=16)
    for e, b in zip(eps, br):
        down = max(_composed_pair_delta(p1, p0, K, e, -1), _composed_pair_delta(p0, p1, K, e, -1))
        up = max(_composed_pair_delta(p1, p0, K, e, +1), _composed_pair_delta(p0, p1, K, e, +1))
        assert b.upper >= down * (1 - 2e-3)  # the 801-cell midpoint rule: allowance 0.2 %
        assert 0 < b.lower <= up * (1 + 2e-3)


def test_composed_gaussian_above_the_k_round_sum():
    """K rounds of the Gaussian sum (a post-processing) are the Gaussian mechanism with sensitivity
    sqrt(K) and noise sigma sqrt(n): the composed upper end is >= it; the lower end is >= it too
    (it takes the sum as one of its views) and <= the upper."""
    n, K, sigma = (30, 5, 2.0)
    eps = [0.2, 0.6]
    br = C.composed_delta("gaussian", n, eps, K, scale=sigma, points=12)
    for e, b in zip(eps, br):
        exact = _gauss_hockey(math.sqrt(K / n) / sigma, e)
        assert b.upper >= exact and exact * (1 - 1e-6) <= b.lower <= b.upper
    eb = C.composed_epsilon("gaussian", n, [1e-6], K, scale=sigma, points=12)[0]
    assert 0 < eb.lower <= eb.upper < math.inf


def test_envelope_validation_names_the_argument():
    with pytest.raises(ValueError, match="equal length"):
        C.envelope_pld([0.0, 1.0], [0.5])
    with pytest.raises(ValueError, match="compositions"):
        C.composed_delta("laplace", 2, [0.1], 0, scale=1.0)


def test_fine_binning_limit_against_matrix_route(tmp_path, cli_json):
    """Binning the Laplace report into 2 cells (y <= 1/2, y > 1/2) is a post-processing: the
    finite randomiser's certified lower end (the matrix route) is <= our upper end."""
    b, eps, n = 1.0, 0.2, 50
    p = stats.laplace.sf(0.5, scale=b)
    f = tmp_path / "m.json"
    f.write_text(json.dumps({"matrix": [[1 - p, p], [p, 1 - p]]}))
    out = cli_json("delta", "randomizer", "--matrix", str(f), "--n", str(n), "--eps", str(eps))
    low = out["results"][0]["delta_lower"]
    assert 0 < low <= N.upper_delta("laplace", n, eps, scale=b)


@pytest.mark.parametrize("noise,K", [("gaussian", 1), ("laplace", 1), ("laplace", 2)])
def test_cli_delta_json(noise, K, capsys):
    """In-process (the subprocess route is the bad-input test's)."""
    code = main(
        [
            "delta",
            "randomizer",
            "--noise",
            noise,
            "--scale",
            "1",
            "--n",
            "2",
            "--eps",
            "0.1",
            "0.5",
            "--compositions",
            str(K),
            "--json",
        ]
    )
    assert code == 0
    res = json.loads(capsys.readouterr().out)["results"]
    assert [r["eps"] for r in res] == [0.1, 0.5]
    assert all(0 < r["delta_lower"] <= r["delta_upper"] for r in res)


@pytest.mark.parametrize(
    "args,word",
    [
        (["--scale", "-1"], "--scale"),
        (["--scale", "0"], "--scale"),
        (["--scale", "1", "--compositions", "0"], "--compositions"),
        (["--scale", "1", "--k", "3"], "--noise"),
    ],
)
def test_cli_bad_input(args, word, capsys):
    code = main(["delta", "randomizer", "--noise", "gaussian", "--n", "2", "--eps", "0.1", *args])
    err = capsys.readouterr().err
    assert code == 2 and word in err and err.count("\n") == 1


def test_cli_bad_input_subprocess_exit_code(cli):
    out = cli("delta", "randomizer", "--noise", "gaussian", "--n", "2", "--eps", "0.1",
              "--scale", "0")
    assert out.returncode == 2 and "--scale" in out.stderr and out.stderr.count("\n") == 1


def test_validation_names_the_argument():
    with pytest.raises(ValueError, match="scale"):
        N.upper_delta("gaussian", 10, 0.1, scale=-1.0)
    with pytest.raises(ValueError, match="noise"):
        N.upper_delta("cauchy", 10, 0.1, scale=1.0)
    with pytest.raises(ValueError, match="n"):
        N.upper_delta("gaussian", 0, 0.1, scale=1.0)


def test_accountant_composes_the_noise_event_with_a_gaussian_event():
    """ShuffledEvent('randomizer', noise='gaussian') composed with dp_accounting's GaussianDpEvent:
    the K rounds' sums and the Gaussian event together are the Gaussian mechanism with
    mu^2 = K / (sigma^2 n) + (2 / s)^2 (closed form; the Gaussian event's sensitivity is 2 under
    dp_accounting's REPLACE_ONE, the shuffle rounds' relation): the bracket's upper end is >= it
    (the sum is a post-processing), its lower end (built from the sums) is <= it."""
    from dp_accounting import dp_event

    from shuffle_lib.accountant import ShuffleAccountant, ShuffledEvent

    n, sigma, K, s, eps = 4, 2.0, 2, 3.0, 0.5
    acc = ShuffleAccountant().compose(
        ShuffledEvent("randomizer", noise="gaussian", scale=sigma, n=n), K
    )
    acc.compose(dp_event.GaussianDpEvent(noise_multiplier=s))
    br = acc.get_delta_bracket(eps)
    exact = _gauss_hockey(math.sqrt(K / (sigma**2 * n) + (2 / s) ** 2), eps)
    assert 0 < br.lower <= exact <= br.upper
    assert acc.get_delta(eps) == br.upper


def test_worst_pair_on_a_grid_is_zero_one():
    """The lemma at finite n (tests/test_noise_pairs.py checks its inequality): over the ordered
    pairs of {0, 1/2, 1} the blanket estimate is largest at (0, 1) / (1, 0), and at (0, 1) it
    agrees with the certified upper end to 0.2 % (two methods)."""
    from shuffle_lib.mechanisms.randomizer import noise_pairs as P

    n, eps = 20, 0.4
    xs = (0.0, 0.5, 1.0)
    vals = {
        (a, b): P.blanket_pair_delta("laplace", n, eps, a, b, scale=1.0)
        for a in xs
        for b in xs
        if a != b
    }
    assert max(vals, key=vals.get) in ((0.0, 1.0), (1.0, 0.0))
    assert vals[0.0, 1.0] == pytest.approx(N.upper_delta("laplace", n, eps, scale=1.0), rel=2e-3)


def test_others_at_zero_is_the_least_private_crowd():
    """The lower end's dataset (x, 0, ..., 0) against others at 1/4 and 1/2 (estimates)."""
    from shuffle_lib.mechanisms.randomizer import noise_pairs as P

    d = [P.others_at_delta("laplace", 50, 0.3, c, scale=1.0, step=0.1) for c in (0.0, 0.25, 0.5)]
    assert d[0] > d[1] > d[2] > 0


def _count_delta_oracle(dist, n, eps, t):
    """The count view's delta by mpmath at 40 digits, exact Binomial sums (no window): the number
    of reports above t under (x, 0, ..., 0), x = 1 against x = 0, both directions."""
    import mpmath as mp

    mp.mp.dps = 40
    if dist.dist.name == "norm":
        qs = [1 - mp.ncdf(mp.mpf(t) - x, 0, dist.std()) for x in (0, 1)]
    else:
        b = mp.mpf(float(dist.std()) / math.sqrt(2))
        qs = [mp.exp(-(mp.mpf(t) - x) / b) / 2 if t >= x else 1 - mp.exp((mp.mpf(t) - x) / b) / 2
              for x in (0, 1)]
    q0 = qs[0]
    B = [mp.binomial(n - 1, k) * q0**k * (1 - q0) ** (n - 1 - k) for k in range(n)] + [0]
    laws = [[B[k] * (1 - qx) + (B[k - 1] * qx if k else 0) for k in range(n + 1)] for qx in qs]
    e = mp.exp(eps)
    d10 = mp.fsum(max(a - e * b, 0) for a, b in zip(laws[1], laws[0]))
    d01 = mp.fsum(max(b - e * a, 0) for a, b in zip(laws[1], laws[0]))
    return float(max(d10, d01))


@pytest.mark.parametrize("noise,n,eps", [("gaussian", 1, 0.2), ("gaussian", 40, 0.1),
                                         ("laplace", 7, 0.3), ("laplace", 300, 0.05)])
def test_count_view_delta_against_exact_binomial_sums(noise, n, eps):
    """count_delta is the count view's exact delta lowered by its stated charges: <= the 40-digit
    oracle, and within 1e-9 of it (the charges are (1 + e^eps)(1e-12 + n 1e-13 q))."""
    nz = N.noise_law(noise, 1.0)
    for q in (0.5, 0.05, 1e-3):
        got = N.count_delta(nz, n, eps, q)
        exact = _count_delta_oracle(nz.dist, n, eps, float(nz.dist.isf(q)))
        assert got <= exact and got >= exact - 1e-9


def test_lower_end_below_the_two_user_quadrature():
    """Every view of the lower end, at n = 2, is <= the exact delta of the dataset (x, 0)."""
    for noise, eps in (("gaussian", 0.1), ("laplace", 0.5)):
        dist = stats.norm(0, 1.0) if noise == "gaussian" else stats.laplace(0, 1.0)
        exact = _two_user_delta(dist, eps, 0.0)
        assert N.lower_delta(noise, 2, eps, scale=1.0) <= exact * (1 + 1e-3)
        nz = N.noise_law(noise, 1.0)
        assert max(N.count_delta(nz, 2, eps, q) for q in N.COUNT_TAILS) <= exact * (1 + 1e-3)


@pytest.mark.parametrize("noise,eps", [("gaussian", 0.0025), ("laplace", 0.002)])
def test_lower_end_positive_at_a_million_users(noise, eps):
    """At n = 1e6 the lattice view's round-off bound exceeds 1e-6; the count view (and the
    Gaussian sum) keep the lower end positive, below the certified upper end."""
    lo = N.lower_delta(noise, 10**6, eps, scale=1.0)
    assert N.view_delta(noise, 10**6, eps, scale=1.0) < lo
    assert 1e-6 < lo <= N.upper_delta(noise, 10**6, eps, scale=1.0)


def _discrete_gaussian(sigma=1.0, half=60):
    k = np.arange(-half, half + 1)
    p = np.exp(-(k**2) / (2 * sigma**2))
    return stats.rv_discrete(values=(k, p / p.sum()))


def _two_user_discrete_delta(dist, eps):
    """Exact delta of the two-user multiset {x + Z1, z + Z2}, integer noise, by enumeration over
    pairs of integers (the multiset: i <= j), worst over z in {0, 1}, both directions."""
    ks = np.arange(-90, 92)
    best = 0.0
    for z in (0, 1):
        r = {x: dist.pmf(ks - x) for x in (0, 1)}
        laws = []
        for x in (1, 0):
            a = np.outer(r[x], r[z])
            a = a + a.T  # ordered pairs (i, j) and (j, i) give the same multiset
            laws.append(np.triu(a, 1) + np.diag(np.diag(a)) / 2)
        e = math.exp(eps)
        best = max(best, np.maximum(laws[0] - e * laws[1], 0).sum(),
                   np.maximum(laws[1] - e * laws[0], 0).sum())
    return best


@pytest.mark.parametrize("which", ["dlaplace", "discrete gaussian"])
def test_discrete_noise_two_users_exact_inside_bracket(which):
    from shuffle_lib.mechanisms.randomizer import noise_discrete as D

    dist = stats.dlaplace(1.0) if which == "dlaplace" else _discrete_gaussian()
    for eps in (0.1, 0.5):
        exact = _two_user_discrete_delta(dist, eps)
        br = D.delta_bracket(dist, 2, [eps])[0]
        assert br.lower <= exact <= br.upper
        assert br.lower > 0.5 * exact


def _three_user_discrete_delta(dist, eps, half=40):
    """Exact delta of the three-user multisets {x + Z1, Z2, Z3}, x = 1 against x = 0 and back,
    integer noise, by enumeration of ordered triples on [-half, half + 1] (the pmf outside holds
    < 1e-17 for the laws tested, below the asserted margins): the multiset's law
    is the ordered law symmetrised over the 6 permutations."""
    ks = np.arange(-half, half + 2)
    r = {x: dist.pmf(ks - x) for x in (0, 1)}
    laws = []
    for x in (1, 0):
        a = np.einsum("i,j,k->ijk", r[x], r[0], r[0])
        laws.append(sum(a.transpose(p) for p in itertools.permutations(range(3))))
    e = math.exp(eps)
    return max(np.maximum(laws[0] - e * laws[1], 0).sum(),
               np.maximum(laws[1] - e * laws[0], 0).sum()) / 6


@pytest.mark.parametrize("which", ["dlaplace", "dgauss"])
def test_discrete_lattice_view_below_three_users_exact(which):
    """The lower end is a lower end of the datasets it views, (x, 0, 0), exact by enumeration,
    and close to it (the lattice view nearly sufficient): within 2 % of it at n = 3; the upper
    end is above it."""
    from shuffle_lib.mechanisms.randomizer import noise_discrete as D

    dist = stats.dlaplace(1.0) if which == "dlaplace" else _discrete_gaussian()
    for eps in (0.1, 0.5, 1.0):
        exact = _three_user_discrete_delta(dist, eps)
        br = D.delta_bracket(dist, 3, [eps])[0]
        assert 0.98 * exact - 1e-15 <= br.lower <= exact + 1e-15, (eps, br, exact)
        assert exact <= br.upper, (eps, br, exact)


def test_discrete_gaussian_lower_end_is_the_lattice_views():
    """For the discrete Gaussian (an unbounded likelihood ratio) the count view of the finite
    route loses most of the ratio; the lattice view closes the bracket to the blanket's width:
    eps(1e-6) at n = 100 has its lower end above 0.75 (the count view's: 0.386) and within 20 %
    of the upper end."""
    from shuffle_lib.mechanisms.randomizer import noise_discrete as D

    br = D.epsilon_bracket(_discrete_gaussian(), 100, [1e-6])[0]
    assert 0.75 < br.lower <= br.upper < 1.2 * br.lower, br


def test_discrete_noise_against_the_matrix_route(tmp_path, cli_json):
    """The lumped randomiser written as a --matrix file: the CLI's finite route gives a lower end
    no larger than ours (up to eq. (2)'s movement; ours also takes the lattice view) and an
    upper end no smaller than ours minus the tail charge (ours is the smaller of two routes);
    at n = 1e4 the discrete Gaussian's upper end is the blanket sum's, within 1 % of the
    continuous Gaussian's (the same blanket, sigma = 1)."""
    from shuffle_lib.mechanisms.randomizer import noise_discrete as D

    n, eps = 100, 0.3
    for dist in (stats.dlaplace(1.0), _discrete_gaussian()):
        M, tail = D.discrete_matrix(dist, n)
        f = tmp_path / "m.json"
        f.write_text(json.dumps({"matrix": M.tolist()}))
        out = cli_json("delta", "randomizer", "--matrix", str(f), "--n", str(n), "--eps", str(eps))
        row = out["results"][0]
        br = D.delta_bracket(dist, n, [eps])[0]
        assert br.lower >= row["delta_lower"] * (1 - 1e-6)  # ours adds the lattice view
        assert br.upper <= row["delta_upper"] * (1 + 1e-6) + tail + 1e-12
    dg = D.delta_bracket(_discrete_gaussian(), 10**4, [0.05])[0].upper
    assert dg == pytest.approx(N.upper_delta("gaussian", 10**4, 0.05, scale=1.0), rel=1e-2)


def test_discrete_noise_rejects_what_it_cannot_take():
    from shuffle_lib.mechanisms.randomizer import noise_discrete as D

    with pytest.raises(ValueError, match="noise"):
        D.delta_bracket(stats.dlaplace, 10, [0.5])  # needs its shape parameter a
    with pytest.raises(ValueError, match="noise"):
        D.delta_bracket(stats.norm(0, 1), 10, [0.5])  # continuous: the Noise route's


# ---- the local randomiser's own delta(eps): a cap on the shuffled one ---------------------------

def _gauss_delta_mp(mu, eps):
    """Balle & Wang 2018 Thm 8 in mpmath at 60 digits (no underflow, no cancellation)."""
    import mpmath
    with mpmath.workdps(60):
        mu, eps = mpmath.mpf(mu), mpmath.mpf(eps)
        return mpmath.ncdf(mu / 2 - eps / mu) - mpmath.exp(eps) * mpmath.ncdf(-mu / 2 - eps / mu)


@pytest.mark.parametrize("sigma", [0.1, 1.0, 5.0])
@pytest.mark.parametrize("K", [1, 4, 100])
def test_local_gaussian_delta_is_an_upper_end_that_stays_positive(sigma, K):
    """local_delta against the closed form in mpmath: >= it, within 1e-8 relative where it is a
    double, and the least positive double (not 0) where it underflows (eps = 700, sigma = 1: the
    tight value 5e-106257 is positive)."""
    for eps in (0.0, 0.5, 3.0, 30.0, 300.0, 700.0):
        up = N.local_delta("gaussian", eps, K, scale=sigma)
        exact = _gauss_delta_mp(math.sqrt(K) / sigma, eps)
        assert exact <= up, (sigma, K, eps, up, exact)
        if exact > 1e-300:
            assert up <= exact * (1 + 1e-8), (sigma, K, eps, up, exact)
        else:
            assert 0.0 < up <= max(float(exact) * (1 + 1e-8), 5e-324), (sigma, K, eps, up)


@pytest.mark.parametrize("b", [0.5, 0.7, 2.0])
def test_local_laplace_delta_is_the_closed_form(b):
    """One round: 1 - e^((eps - 1/b)/2) below 1/b (as test_one_user_is_the_local_hockey_stick's
    closed form), 0 from 1/b on; K rounds: 0 from K/b on, no cap (1) below."""
    for eps in (0.0, 0.3, 0.999 / b, 1 / b, 1.5 / b):
        t = (b * eps + 1) / 2 if eps < 1 / b else math.inf
        exact = stats.laplace.sf(t - 1, scale=b) - math.exp(eps) * stats.laplace.sf(t, scale=b)
        up = N.local_delta("laplace", eps, 1, scale=b)
        assert exact * (1 - 1e-9) <= up <= exact * (1 + 1e-9) + 1e-11, (b, eps, up, exact)
    assert N.local_delta("laplace", 3.0001 / b, 3, scale=b) == 0.0
    assert N.local_delta("laplace", 2.9 / b, 3, scale=b) == 1.0


def test_local_epsilon_is_where_the_local_delta_falls_below_the_target():
    for noise, delta in (("gaussian", 1e-6), ("gaussian", 1e-300), ("laplace", 1e-3)):
        e = N.local_epsilon(noise, delta, 1, scale=1.0)
        assert N.local_delta(noise, e, 1, scale=1.0) <= delta < N.local_delta(noise, e * 0.999,
                                                                                   1, scale=1.0)


@pytest.mark.parametrize("noise, upper", [("gaussian", 5e-324), ("laplace", 0.0)])
def test_cli_delta_at_eps_700_is_fast_and_positive_where_the_truth_is(noise, upper, cli_json):
    """delta(700) of a shuffled sigma = 1 Gaussian (n = 1000) took 70 CPU-s for an upper end of 1;
    the local cap settles it before the blanket's FFT: the least positive double (the tight value
    is positive, below the double range); Laplace's is exactly 0 (every loss <= 1/b)."""
    out = cli_json("delta", "randomizer", "--noise", noise, "--scale", "1", "--n", "1000",
                   "--eps", "700")
    r = out["results"][0]
    assert (r["delta_lower"], r["delta_upper"]) == (0.0, upper)
    assert out["seconds"] < 5.0


def test_the_local_cap_lowers_a_loose_blanket_upper_end():
    """Two users at eps = 6 (sigma = 1): the blanket's upper end alone, 7.6e-6, is above the local
    randomiser's own delta, 2.8e-9, which the model's bracket does not exceed."""
    cap = N.local_delta("gaussian", 6.0, 1, scale=1.0)
    assert N.upper_delta("gaussian", 2, 6.0, scale=1.0) > 100 * cap
    b = C.noise_model(2, "gaussian", 1.0).upper[0].delta([6.0])[0]
    assert b.upper == cap and b.lower <= b.upper


@pytest.mark.parametrize("mu", [1e-3, 0.01, 0.1, 1.0, 5.0, 30.0])
def test_gaussian_sum_delta_is_a_lower_end_even_where_its_terms_cancel(mu):
    """gauss_sum_delta (the reports' sum's delta, a certified lower end) against the closed form in
    mpmath at 60 digits: never above it, also at large eps where Phi(mu/2 - eps/mu) and
    e^eps Phi(-mu/2 - eps/mu) nearly cancel (a relative margin on their difference is no bound
    there), and within 1e-6 relative where the value is above 1e-250."""
    for eps in (0.0, 0.01, 0.5, 3.0, 30.0, 120.0, 300.0, 700.0):
        low = N.gauss_sum_delta(mu, eps)
        exact = _gauss_delta_mp(mu, eps)
        assert low <= exact, (mu, eps, low, exact)
        if exact > 1e-250 and eps <= mu * mu:
            assert low >= exact * (1 - 1e-6), (mu, eps, low, exact)
