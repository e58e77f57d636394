"""shuffle_lib.analyses.sgd: Chen et al. 2024 Algorithm 1 (shuffled noisy SGD with Laplace noise) and its budget."""

import math

import numpy as np
import pytest

from shuffle_lib.analyses import sgd
from shuffle_lib.bounds import renyi as renyi_bounds

LAM = [2, 3, 4, 8, 16, 32, 64]


def _blobs(n=240, p=3, K=3, seed=0):
    """K well-separated Gaussian classes in p dimensions, with an intercept column."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % K
    centres = 2.0 * rng.normal(size=(K, p))
    X = centres[y] + 0.5 * rng.normal(size=(n, p))
    return np.hstack([X / np.abs(X).sum(axis=1).mean(), np.ones((n, 1))]), y


def test_clip_l1_norm_at_most_C():
    rng = np.random.default_rng(1)
    g = rng.standard_cauchy(size=(500, 7))
    for C in (0.1, 1.0, 10.0):
        c = sgd.clip_l1(g, C)
        norms, raw = np.abs(c).sum(axis=1), np.abs(g).sum(axis=1)
        assert np.all(norms <= C * (1 + 1e-12))
        assert np.allclose(c[raw <= C], g[raw <= C])                 # short rows untouched
        assert np.allclose(norms[raw > C], C)                        # long rows scaled onto the sphere
        assert np.allclose(c[raw > C] * raw[raw > C, None], g[raw > C] * C)   # same direction


def test_clipped_gradient_sum_equals_per_record_outer_products():
    """||x r^T||_1 = ||x||_1 ||r||_1: the fast sum against explicit per-record gradients clipped by clip_l1."""
    X, y = _blobs(n=30, p=4, K=3)
    theta = np.random.default_rng(2).normal(size=(5, 3))
    z = X @ theta
    P = np.exp(z - z.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    R = P - np.eye(3)[y]
    g = np.stack([np.outer(X[j], R[j]).ravel() for j in range(30)])
    for C in (0.05, 0.5, 50.0):
        want = sgd.clip_l1(g, C).sum(axis=0).reshape(5, 3)
        assert np.allclose(sgd.clipped_gradient_sum(theta, X, y, C), want, rtol=1e-12, atol=1e-14)


def test_laplace_noise_variance_is_two_scale_squared():
    """Var Lap(b) = 2 b^2; 4000 reports x 15 coordinates: relative sd of the sample variance is
    sqrt(5/60000) = 0.9% (kurtosis 6); tolerance 4% (> 4 sd)."""
    X, y = _blobs(n=4, p=4, K=3)
    theta = np.zeros((5, 3))
    C, eps0, m = 1.0, 0.7, 10
    rng = np.random.default_rng(3)
    mean = sgd.clipped_gradient_sum(theta, X, y, C) / m
    noise = np.stack([sgd.laplace_ldp_gradient(theta, X, y, C, eps0, m, rng) - mean for _ in range(4000)])
    b = sgd.laplace_scale(C, eps0, m, k=4)
    assert b == pytest.approx(2 * C * 4 / (eps0 * m))
    assert np.var(noise) == pytest.approx(2 * b ** 2, rel=0.04)
    assert abs(np.mean(noise)) < 0.02 * b


def _log_ratio(o, s0, s1, b):
    """log of the product Laplace density of the report at o, centred s0 over centred s1."""
    return (np.abs(o - s1).sum(axis=-1) - np.abs(o - s0).sum(axis=-1)) / b


def test_ldp_ratio_bounded_by_exp_eps0():
    """Any two blocks of k records (arbitrary, not only neighbours): log density ratio <= eps0 (Prop. 3)."""
    rng = np.random.default_rng(4)
    C, eps0, m, k = 1.0, 1.3, 20, 3
    b = sgd.laplace_scale(C, eps0, m, k)
    worst = 0.0
    for _ in range(200):
        g0, g1 = rng.standard_cauchy(size=(2, k, 6))
        s0, s1 = sgd.clip_l1(g0, C).sum(axis=0) / m, sgd.clip_l1(g1, C).sum(axis=0) / m
        o = s0 + rng.laplace(0, 3 * b, size=(500, 6))
        worst = max(worst, float(np.max(np.abs(_log_ratio(o, s0, s1, b)))))
    assert worst <= eps0 + 1e-12
    assert worst > 0.5 * eps0                     # attained by opposite blocks: next test


def test_seed_record_scale_is_not_block_ldp():
    """The seed's scale 2C/(eps0 m) (k = 1) on a block of k = 5 records: opposite blocks reach 5 eps0."""
    C, eps0, m, k = 1.0, 1.0, 20, 5
    b_seed = sgd.laplace_scale(C, eps0, m)        # Alg. 1 line 6
    e = np.zeros(4)
    e[0] = C
    s0, s1 = k * e / m, -k * e / m                # every record's clipped gradient +C e_1, resp. -C e_1
    o = s0 + np.array([[0.1, 0, 0, 0]])           # beyond s0 on the e_1 axis: the ratio is maximal
    assert _log_ratio(o, s0, s1, b_seed)[0] == pytest.approx(k * eps0)
    assert _log_ratio(o, s0, s1, sgd.laplace_scale(C, eps0, m, k))[0] == pytest.approx(eps0)


def test_training_beats_chance():
    X, y = _blobs(n=240, p=3, K=3)
    _, acc_np = sgd.shuffled_sgd(X, y, m=240, T=3, eps0=math.inf, C=1.0, eta=20.0, seed=5)
    _, acc_p = sgd.shuffled_sgd(X, y, m=240, T=3, eps0=4.0, C=1.0, eta=20.0, seed=5)
    assert acc_np[-1] > 0.9 and acc_p[-1] > 0.6        # chance is 1/3
    _, acc_blocks = sgd.shuffled_sgd(X, y, m=24, T=3, eps0=math.inf, C=1.0, eta=20.0, seed=5)
    assert acc_blocks[-1] > 0.8                        # m < n: blocks of 10 records, 10x fewer steps


def test_one_epoch_is_algorithm_1_by_hand():
    """T = 1: the loop equals Alg. 1 written out with the same generator calls (split, order, noise)."""
    X, y = _blobs(n=12, p=3, K=3)
    m, C, eps0, eta = 4, 0.5, 1.5, 3.0
    theta, _ = sgd.shuffled_sgd(X, y, m, 1, eps0, C, eta, seed=9)
    rng = np.random.default_rng(9)
    blocks = rng.permutation(12).reshape(m, 3)
    order = rng.permutation(m)
    noise = rng.laplace(0.0, 2 * C * 3 / (eps0 * m), size=(m, 4, 3))
    want = np.zeros((4, 3))
    for s, i in enumerate(order):
        g = np.stack([np.outer(X[j], np.exp(X[j] @ want) / np.exp(X[j] @ want).sum() - np.eye(3)[y[j]]).ravel()
                      for j in blocks[i]])
        want = want - eta * (sgd.clip_l1(g, C).sum(axis=0).reshape(4, 3) / m + noise[s])
    assert np.allclose(theta, want, rtol=1e-12, atol=1e-12)


def test_determinism_under_a_seed():
    X, y = _blobs(n=60, p=3, K=3)
    a = sgd.shuffled_sgd(X, y, 60, 2, 2.0, 1.0, 5.0, seed=7)
    b = sgd.shuffled_sgd(X, y, 60, 2, 2.0, 1.0, 5.0, seed=7)
    c = sgd.shuffled_sgd(X, y, 60, 2, 2.0, 1.0, 5.0, seed=8)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    assert not np.array_equal(a[0], c[0])


def test_validation_errors():
    X, y = _blobs(n=60, p=3, K=3)
    with pytest.raises(ValueError, match="C must lie in"):
        sgd.clip_l1(np.ones((2, 2)), 0.0)
    with pytest.raises(ValueError, match="eps0 must lie in"):
        sgd.laplace_scale(1.0, -1.0, 10)
    with pytest.raises(ValueError, match="m must divide n = 60"):
        sgd.shuffled_sgd(X, y, 7, 1, 1.0, 1.0, 1.0, seed=0)
    with pytest.raises(ValueError, match="m must be an integer"):
        sgd.shuffled_sgd(X, y, 0, 1, 1.0, 1.0, 1.0, seed=0)
    with pytest.raises(ValueError, match="T must be an integer"):
        sgd.shuffled_sgd(X, y, 60, 0, 1.0, 1.0, 1.0, seed=0)
    with pytest.raises(ValueError, match="eta must lie in"):
        sgd.shuffled_sgd(X, y, 60, 1, 1.0, 1.0, -1.0, seed=0)
    with pytest.raises(ValueError, match="y must hold class labels"):
        sgd.shuffled_sgd(X, y - 1, 60, 1, 1.0, 1.0, 1.0, seed=0)
    with pytest.raises(ValueError, match="X must be a finite"):
        sgd.shuffled_sgd(X[:, 0], y, 60, 1, 1.0, 1.0, 1.0, seed=0)
    with pytest.raises(ValueError, match="accountant must be one of"):
        sgd.alg1_rdp(100, 5, 1.0, LAM, "moments")
    with pytest.raises(ValueError, match="budget must lie in"):
        sgd.eps0_for_budget(100, 5, 0.0, LAM, "cor2")


def test_thm3_is_T_times_cor2():
    m, T, eps0 = 1797, 20, 1.5
    lam = np.array(LAM, dtype=float)
    assert np.allclose(sgd.alg1_rdp(m, T, eps0, LAM, "cor2"), 2 * T * math.exp(eps0) * lam / (m - 1), rtol=1e-14)
    assert np.allclose(sgd.alg1_rdp(m, T, eps0, LAM, "girgis"), T * renyi_bounds.girgis_upper(m, eps0, LAM), rtol=1e-14)


def test_eps0_for_budget_round_trips():
    m, T, budget = 500, 10, 0.2
    e = sgd.eps0_for_budget(m, T, budget, LAM, "cor2", rtol=1e-12)
    assert e == pytest.approx(math.log(budget * (m - 1) / (2 * T)), abs=1e-9)   # Thm 3 solved for eps0
    for acc in ("clones", "girgis"):
        e = sgd.eps0_for_budget(m, T, budget, LAM, acc, rtol=2e-4)
        lam = np.array(LAM, dtype=float)
        assert np.all(sgd.alg1_rdp(m, T, e, LAM, acc) <= budget * lam)
        assert np.any(sgd.alg1_rdp(m, T, e + 2e-3, LAM, acc) > budget * lam)


def test_table2_budget_unreachable_with_m100():
    """Thm 3 with Table 2's m = 100, T = 50 exceeds 0.008 lam at every eps0 > 0: 2 T/(m-1) > 1."""
    with pytest.raises(ValueError, match="budget=0.008 is unreachable"):
        sgd.eps0_for_budget(100, 50, 0.008, LAM, "cor2", lo=1e-9)
    assert np.all(sgd.alg1_rdp(100, 50, 1e-9, LAM, "cor2") > 1.0 * np.array(LAM))
