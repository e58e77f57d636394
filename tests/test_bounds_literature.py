"""Tests for shuffle_lib.bounds.closed_forms: the Table II comparison bounds of Biswas et al. 2023."""

import itertools
import math

import numpy as np
import pytest
from scipy.stats import binom

from shuffle_lib.bounds import closed_forms as b
from shuffle_lib.core.pld import delta_exact


@pytest.mark.parametrize("n,eps0,delta", [(100, 0.49, 0.3), (1000, 0.1, 1e-6), (10 ** 6, 0.25, 1e-12)])
def test_erlingsson_round_trip(n, eps0, delta):
    eps = b.erlingsson_epsilon(n, eps0, delta)
    assert math.isclose(b.erlingsson_delta(eps, n, eps0), delta, rel_tol=1e-10)


def test_erlingsson_validity():
    assert b.erlingsson_delta(0.1, 100, 0.5) == 1.0
    with pytest.raises(ValueError, match="eps0"):
        b.erlingsson_epsilon(100, 0.6, 0.1)


def test_balle_matches_its_statement_and_krr_module():
    n, eps0, k = 10 ** 5, 0.49, 10
    gamma = k / (math.exp(eps0) + k - 1)
    for eps in (0.05, 0.1, 0.5):
        d = b.balle_delta(eps, n, eps0, k)
        # the statement: gamma = max{14 k log(2/delta)/((n-1) eps^2), 27 k/((n-1) eps)}
        assert math.isclose(max(14 * k * math.log(2 / d) / ((n - 1) * eps ** 2), 27 * k / ((n - 1) * eps)),
                            gamma, rel_tol=1e-10)
        from shuffle_lib.mechanisms import krr
        assert math.isclose(d, krr.balle_delta(n, gamma, k, eps), rel_tol=1e-12)
    assert b.balle_delta(1.5, n, eps0, k) == 1.0          # eps > 1: outside the theorem


def test_fmt_round_trip_and_validity():
    n, eps0 = 10 ** 5, 1.0
    for delta in (1e-3, 1e-9):
        eps = b.fmt_epsilon(n, eps0, delta)
        assert math.isclose(b.fmt_delta(eps, n, eps0), delta, rel_tol=1e-8)
    assert b.fmt_epsilon(100, 3.0, 1e-6) == math.inf
    assert b.fmt_delta(1e-4, 100, 0.49) == 1.0


def _clones_bruteforce(n, eps0):
    """Enumerate C, A, Delta explicitly (Feldman et al. 2021 Thm 3.2)."""
    P, Q = {}, {}
    q = math.exp(eps0) / (math.exp(eps0) + 1)
    for c in range(n):
        for a in range(c + 1):
            w = binom.pmf(c, n - 1, math.exp(-eps0)) * binom.pmf(a, c, 0.5)
            for d, wd in ((1, q), (0, 1 - q)):
                kp, kq = (a + d, c - a + 1 - d), (a + 1 - d, c - a + d)
                P[kp] = P.get(kp, 0) + w * wd
                Q[kq] = Q.get(kq, 0) + w * wd
    keys = sorted(set(P) | set(Q))
    return np.array([P.get(x, 0) for x in keys]), np.array([Q.get(x, 0) for x in keys])


@pytest.mark.parametrize("n,eps0", [(2, 1.0), (5, 0.49), (12, 2.0)])
def test_clones_against_bruteforce(n, eps0):
    P, Q = _clones_bruteforce(n, eps0)
    eps = [0.0, 0.1, 0.5, 1.0]
    assert np.allclose(b.fmt_clones_delta(eps, n, eps0), delta_exact(P / P.sum(), Q / Q.sum(), eps), atol=1e-14)


def test_clones_against_clones_module():
    from shuffle_lib.mechanisms import clones
    for n, eps0, eps in [(100, 0.49, 0.1), (1000, 0.49, 0.2)]:
        br = clones.delta_bracket_single(n, eps0, eps)
        ours = b.fmt_clones_delta(eps, n, eps0)
        assert br.lower * (1 - 1e-9) <= ours <= br.upper * (1 + 1e-9)


def test_ordering_at_table_ii_parameters():
    """The numerical clones bound is below the closed forms wherever they say anything."""
    eps = [0.1, 0.2, 0.3, 0.4]
    for n in (100, 1000):
        for e, cl in zip(eps, b.fmt_clones_delta(eps, n, 0.49)):
            assert cl <= b.fmt_delta(e, n, 0.49) and cl <= b.erlingsson_delta(e, n, 0.49)


def test_erlingsson_matches_the_column_of_biswas_table_ii():
    """Biswas, Jung, Palamidessi (2021) Table II, column [11] (Erlingsson et al. 2019), eps0 = 0.49:
    delta = exp(-n eps^2/(144 eps0^2)) is within 0.01 of every printed entry (two digits)."""
    eps = [0.01, 0.1, 0.2, 0.3, 0.4]
    paper = {100: [0.999, 0.97, 0.89, 0.77, 0.62], 1000: [0.997, 0.75, 0.32, 0.08, 0.01]}   # the paper's
    for n, col in paper.items():
        ours = [b.erlingsson_delta(e, n, 0.49) for e in eps]
        assert max(abs(x - y) for x, y in zip(ours, col)) <= 0.01, (n, ours, col)
