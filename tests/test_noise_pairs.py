"""The worst differing pair for the blanket bound (chapter 07, lemma lem-gauss-pair).

The blanket bound of a pair (a, b) is E[(W_1 + ... + W_n)_+] / (n gamma), monotone in the
convex order of the law of V = gamma (r_b - e^eps r_a) / nu under omega = nu / gamma, and that
order is the inequality Phi_ab(s) = int (r_b - alpha r_a - s nu)_+ <= Phi_01(s) for every s.
The oracles here integrate with scipy's quad between the breakpoints of the integrand (no library
call); their error (quad's estimate, returned and asserted small) is the allowance.
"""

import math

import numpy as np
import pytest
from scipy import integrate, stats

from shuffle_lib.mechanisms.randomizer import noise as N

LOG_CONCAVE = {
    "gaussian": stats.norm(0, 1.0),
    "gaussian-narrow": stats.norm(0, 0.3),
    "laplace": stats.laplace(0, 1.0),
    "laplace-narrow": stats.laplace(0, 0.3),
    "logistic": stats.logistic(0, 0.5),
}


def _phi(dist, a, b, alpha, s):
    """int (r_b - alpha r_a - s nu)_+ dy by quad, with its error estimate; nu = min(r_0, r_1)."""
    f = dist.pdf

    def g(y):
        return max(f(y - b) - alpha * f(y - a) - s * min(f(y), f(y - 1.0)), 0.0)

    sd = float(dist.std())
    pts = sorted({a, b, 0.0, 0.5, 1.0})
    edges = [-40 * sd] + pts + [1 + 40 * sd]
    total, err = 0.0, 0.0
    for lo, hi in zip(edges[:-1], edges[1:]):
        val, e = integrate.quad(g, lo, hi, limit=400, epsabs=1e-13, epsrel=1e-11)
        total, err = total + val, err + e
    return total, err


@pytest.mark.parametrize("name", sorted(LOG_CONCAVE))
def test_zero_one_dominates_every_pair_in_convex_order(name):
    """Phi_ab(s) <= Phi_01(s) over random pairs, levels s of both signs and alpha = e^eps,
    within the two quadratures' error estimates (each asserted below 1e-9)."""
    dist = LOG_CONCAVE[name]
    rng = np.random.default_rng(11)
    for _ in range(16):
        a, b = rng.uniform(0, 1, 2)
        alpha = math.exp(rng.choice([0.0, 0.2, 1.0, 3.0]))
        s = float(rng.choice([-1, 1]) * 10 ** rng.uniform(-3, 1.5))
        val, e1 = _phi(dist, a, b, alpha, s)
        ref, e2 = _phi(dist, 0.0, 1.0, alpha, s)
        assert e1 < 1e-9 and e2 < 1e-9
        assert val <= ref + e1 + e2 + 1e-12, (name, a, b, alpha, s, val, ref)


def test_the_inequality_can_fail_without_log_concavity():
    """The oracle can fail: for a symmetric bimodal noise (modes at -1/2 and 1/2, not
    log-concave) r_0 and r_1 share a mode, and the pair (0, 1/2) beats (0, 1) by far."""

    class Bimodal:
        """An even mixture of N(-1/2, 0.1^2) and N(1/2, 0.1^2)."""

        def pdf(self, y):
            return 0.5 * (stats.norm.pdf(y, -0.5, 0.1) + stats.norm.pdf(y, 0.5, 0.1))

        def std(self):
            return math.sqrt(0.25 + 0.01)

    dist = Bimodal()
    ref, _ = _phi(dist, 0.0, 1.0, 1.0, 0.0)
    val, _ = _phi(dist, 0.0, 0.5, 1.0, 0.0)
    assert val > ref + 0.4


class _Wavy(stats.rv_continuous):
    """e^{-|y|} (1 + 0.3 cos 2 pi y), normalised: symmetric, its shift-1 loss -|y-1| + |y| is
    non-decreasing (the wave cancels), but log f is not concave."""

    W = 2 * math.pi
    NORM = 2.0 + 0.6 / (1.0 + W**2)

    def _pdf(self, y):
        return np.exp(-np.abs(y)) * (1.0 + 0.3 * np.cos(self.W * y)) / self.NORM

    def _cdf(self, y):
        t = -np.abs(y)  # int_{-inf}^t e^u (1 + 0.3 cos wu) du, in closed form
        w = self.W
        low = np.exp(t) * (1 + 0.3 * (np.cos(w * t) + w * np.sin(w * t)) / (1 + w**2))
        low = low / self.NORM
        return np.where(y <= 0, low, 1.0 - low)

    def _stats(self):
        var = (4.0 + 0.6 * (2.0 / (1.0 - 1j * self.W) ** 3).real) / self.NORM
        return 0.0, var, None, None


def test_noise_rejects_a_density_the_lemma_does_not_cover():
    """The library's Noise takes only what the lemma covers: symmetric and log-concave, checked
    beyond the shift-1 loss (a wavy density passes that and fails concavity)."""
    with pytest.raises(ValueError, match="log-concave"):
        N.Noise(stats.t(2), "t2")
    with pytest.raises(ValueError, match="log-concave"):
        N.Noise(_Wavy(name="wavy")(), "wavy")
    N.Noise(stats.logistic(0, 0.5), "logistic")  # log-concave: accepted
