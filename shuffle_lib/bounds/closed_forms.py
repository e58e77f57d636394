"""The three amplification-by-shuffling bounds of Biswas et al.'s (2023) Table II, each solved for
delta.

Biswas, Jung & Palamidessi (2023), Table II, puts its delta_hat beside the deltas of
[11] Erlingsson et al. (SODA 2019), [10] Balle et al. (CRYPTO 2019) and
[12] Feldman, McMillan, Talwar (FOCS 2021) at eps0 = 0.49, n = 100 and 1000.
Each bound is implemented in the form its paper states (eps as a function of
delta, with its validity range) and inverted for delta at a given eps:

* Erlingsson et al. 2019 (Cor. 9 as usually quoted): for eps0 < 1/2 the shuffled
  protocol is (eps, delta)-DP with eps = 12 eps0 sqrt(log(1/delta)/n), i.e.
  delta = exp(-n eps^2 / (144 eps0^2)).
* Balle et al. 2019 (Thm 3.1, k-RR with uniform-report probability gamma =
  k/(e^eps0 + k - 1)): (eps, delta)-DP for eps <= 1 with
  gamma = max{14 k log(2/delta)/((n-1) eps^2), 27 k/((n-1) eps)}, i.e.
  delta = 2 exp(-gamma (n-1) eps^2/(14 k)) when gamma >= 27 k/((n-1) eps).
* Feldman et al. 2021 (Thm 3.1): for eps0 <= log(n/(16 log(2/delta))),
  eps = log(1 + (e^eps0-1)/(e^eps0+1) (8 sqrt(e^eps0 log(4/delta)/n) + 8 e^eps0/n));
  and their numerical bound (Thm 3.2): the hockey-stick divergence of the
  clones pair P = (A+D, C-A+1-D), Q = (A+1-D, C-A+D), C ~ Bin(n-1, e^-eps0),
  A ~ Bin(C, 1/2), D ~ Bern(e^eps0/(e^eps0+1)), computed exactly here.

Outside a bound's validity range the bound says nothing and the functions
return delta = 1.0 (never an extrapolated number).  ``math.nan`` is never returned.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq
from scipy.stats import binom

from shuffle_lib.core import validate as v
from shuffle_lib.core.pld import hockey_stick, pld_from_pmfs
from shuffle_lib.core.types import ArrayLike


def _args(eps, n, eps0):
    return (v.real("eps", eps, 0.0, lo_open=True), v.integer("n", n, lo=2, hi=10 ** 9),
            v.real("eps0", eps0, 0.0, 30.0, lo_open=True))


def erlingsson_epsilon(n: int, eps0: float, delta: float, strict: bool = False) -> float:
    """eps = 12 eps0 sqrt(log(1/delta)/n), valid for eps0 < 1/2 (Erlingsson et al. 2019, Cor. 9).

    ``strict=True`` also refuses what lies outside the corollary's other conditions
    (delta < 1/100 and n > 1000), as Koskela et al. 2021, Sec. 5.3 quotes it.
    """
    n = v.integer("n", n, lo=1001 if strict else 2)
    eps0 = v.real("eps0", eps0, 0.0, 0.5, lo_open=True, hi_open=True)
    delta = (v.real("delta", delta, 0.0, 0.01, lo_open=True, hi_open=True) if strict
             else v.probability("delta", delta))
    return 12.0 * eps0 * math.sqrt(math.log(1.0 / delta) / n)


def erlingsson_delta(eps: float, n: int, eps0: float) -> float:
    """delta = exp(-n eps^2/(144 eps0^2)) for eps0 < 1/2; 1.0 when eps0 >= 1/2 (no guarantee).

    Source: Erlingsson et al. 2019, Cor. 9, solved for delta.
    """
    eps, n, eps0 = _args(eps, n, eps0)
    if eps0 >= 0.5:
        return 1.0
    return math.exp(-n * eps ** 2 / (144.0 * eps0 ** 2))


def balle_delta(eps: float, n: int, eps0: float, k: int) -> float:
    """Balle et al. 2019 Thm 3.1 for k-RR at LDP level eps0 (gamma = k/(e^eps0 + k - 1)), solved for
    delta: :func:`balle_krr_delta`.  1.0 outside eps <= 1, gamma >= 27k/((n-1)eps)."""
    eps, n, eps0 = _args(eps, n, eps0)
    k = v.integer("k", k, lo=2)
    return balle_krr_delta(n, k / (math.exp(eps0) + k - 1), k, eps)


def _krr_args(n, gamma, k):
    return (v.integer("n", n, lo=2, hi=10 ** 9), v.real("gamma", gamma, 0.0, 1.0, lo_open=True),
            v.integer("k", k, lo=2, hi=10 ** 6))


def balle_krr_delta(n: int, gamma: float, k: int, eps: float) -> float:
    """delta of Balle et al. (2019, Thm 3.1) as quoted in Koskela et al. 2021, Sec. 4, solved for
    delta.

    gamma = max{14 k log(2/delta)/((n-1) eps^2), 27 k/((n-1) eps)} gives
    delta = 2 exp(-gamma (n-1) eps^2 / (14 k)), valid for eps <= 1 and
    gamma >= 27 k/((n-1) eps); outside that range the theorem says nothing (1.0).
    """
    n, gamma, k = _krr_args(n, gamma, k)
    eps = v.real("eps", eps, 0.0, lo_open=True)
    if eps > 1.0 or gamma < 27.0 * k / ((n - 1) * eps):
        return 1.0
    return min(1.0, 2.0 * math.exp(-gamma * (n - 1) * eps ** 2 / (14.0 * k)))


def balle_epsilon(n: int, gamma: float, k: int, delta: float) -> float:
    """Smallest eps the Balle et al. bound certifies at delta; ``math.inf`` if it needs eps > 1.

    Source: Balle et al. 2019, Thm 3.1 (as quoted in Koskela et al. 2021, Sec. 4).
    """
    n, gamma, k = _krr_args(n, gamma, k)
    delta = v.probability("delta", delta, open_right=False)
    m = (n - 1) * gamma
    eps = max(math.sqrt(14.0 * k * math.log(2.0 / delta) / m), 27.0 * k / m)
    return eps if eps <= 1.0 else math.inf


def advanced_composition(
    eps: float, delta: float, n_c: int, delta_prime: float
) -> tuple[float, float]:
    """Dwork & Roth (2014, Thm 3.20): n_c-fold (eps, delta) is (eps', n_c delta + delta')-DP.

    eps' = sqrt(2 n_c log(1/delta')) eps + n_c eps (e^eps - 1).  Returns (eps', delta_total).
    """
    eps = v.real("eps", eps, 0.0)
    delta = v.real("delta", delta, 0.0, 1.0, hi_open=True)
    n_c = v.integer("n_c", n_c, lo=1, hi=10 ** 9)
    delta_prime = v.probability("delta_prime", delta_prime)
    e = math.sqrt(2.0 * n_c * math.log(1.0 / delta_prime)) * eps + n_c * eps * math.expm1(eps)
    return e, n_c * delta + delta_prime


def balle_epsilon_composed(n: int, gamma: float, k: int, delta: float, n_c: int) -> float:
    """eps of n_c rounds at total delta: Balle et al. per round + advanced composition.

    n_c = 1: :func:`balle_epsilon`.  Otherwise the best split delta = n_c delta_0 + delta'
    over a fixed grid of 400 fractions (deterministic); ``math.inf`` if none is valid.

    Source: Balle et al. 2019, Thm 3.1; Dwork & Roth 2014, Thm 3.20.
    """
    delta = v.probability("delta", delta)
    n_c = v.integer("n_c", n_c, lo=1, hi=10 ** 9)
    if n_c == 1:
        return balle_epsilon(n, gamma, k, delta)
    best = math.inf
    for f in np.linspace(0.0025, 0.9975, 400):
        e0 = balle_epsilon(n, gamma, k, (1.0 - f) * delta / n_c)
        if math.isfinite(e0):
            best = min(best, advanced_composition(e0, 0.0, n_c, f * delta)[0])
    return best



def fmt21_epsilon_log(n: int, eps0: float, log_delta: float) -> float:
    """FMT21 Thm 3.1 epsilon for delta = e^log_delta (n >= 1, eps0 in (0, 30], log_delta < 0); inf
    outside its range eps0 <= log(n / (16 log(2/delta))).  The one implementation of the formula."""
    n = v.integer("n", n, lo=1)
    eps0 = v.real("eps0", eps0, 0.0, 30.0, lo_open=True)
    log_delta = v.real("log_delta", log_delta, hi=0.0, hi_open=True)
    l2 = math.log(2.0) - log_delta
    if eps0 > math.log(n / (16.0 * l2)):
        return math.inf
    e = math.exp(eps0)
    return math.log1p(
        (e - 1) / (e + 1) * (8 * math.sqrt(e * (math.log(4.0) - log_delta) / n) + 8 * e / n)
    )


def fmt21_closed_form(n: int, eps0: float, delta: float) -> float:
    """FMT21 Thm 3.1 epsilon; raises ValueError outside eps0 <= log(n / (16 log(2/delta)))."""
    n = v.integer("n", n, lo=1)
    eps0 = v.real("eps0", eps0, 0.0, 30.0, lo_open=True)
    delta = v.probability("delta", delta)
    out = fmt21_epsilon_log(n, eps0, math.log(delta))
    if math.isinf(out):
        limit = math.log(n / (16 * math.log(2 / delta)))
        raise ValueError(
            f"eps0 must be <= log(n / (16 log(2/delta))) = {limit:.6g} for FMT21 Thm 3.1, "
            f"got eps0={eps0!r}."
        )
    return out


def fmt21_epsilon_composed(n: int, eps0: float, delta: float, compositions: int) -> float:
    """FMT21 Thm 3.1 composed by advanced composition (Dwork & Roth 2014, Thm 3.20): each of the K
    rounds at delta/(2K), delta' = delta/2; one round is Thm 3.1 itself.  ``math.inf`` where
    Thm 3.1 does not apply (eps0 > log(n / (16 log(2/delta_round))))."""
    n = v.integer("n", n, lo=1)
    eps0 = v.real("eps0", eps0, 0.0, 30.0, lo_open=True)
    delta = v.probability("delta", delta)
    k = v.integer("compositions", compositions, lo=1, hi=10 ** 9)
    if k == 1:
        return fmt21_epsilon_log(n, eps0, math.log(delta))
    per = fmt21_epsilon_log(n, eps0, math.log(delta / (2 * k)))
    return per if math.isinf(per) else advanced_composition(per, delta / (2 * k), k, delta / 2)[0]


def fmt_epsilon(n: int, eps0: float, delta: float) -> float:
    """Feldman et al. 2021 Thm 3.1; ``math.inf`` when eps0 > log(n/(16 log(2/delta)))."""
    n = v.integer("n", n, lo=2)
    eps0 = v.real("eps0", eps0, 0.0, 30.0, lo_open=True)
    delta = v.probability("delta", delta)
    return fmt21_epsilon_log(n, eps0, math.log(delta))


def fmt_delta(eps: float, n: int, eps0: float) -> float:
    """Smallest delta the Thm 3.1 bound covers with eps(delta) <= eps; 1.0 if none.

    Validity needs log(2/delta) <= n e^-eps0 / 16, i.e. delta >= 2 exp(-n e^-eps0/16);
    on that range eps(delta) decreases in delta, so the answer is found by bisection in
    log delta, or is the edge of the range when the bound already holds there.

    Source: Feldman et al. 2021, Thm 3.1, solved for delta.
    """
    eps, n, eps0 = _args(eps, n, eps0)
    lo = max(math.log(2.0) - n * math.exp(-eps0) / 16.0, -700.0)
    hi = math.log(1.0 - 1e-12)
    if lo >= hi or fmt21_epsilon_log(n, eps0, hi) > eps:
        return 1.0
    if fmt21_epsilon_log(n, eps0, lo) <= eps:
        return math.exp(lo)
    return math.exp(brentq(lambda ld: fmt21_epsilon_log(n, eps0, ld) - eps, lo, hi, xtol=1e-12))


def fmt_clones_pmfs(n: int, eps0: float) -> tuple[np.ndarray, np.ndarray]:
    """The clones pair of Feldman et al. 2021 Thm 3.2 on the grid (first count j, C = c),
    flattened."""
    n = v.integer("n", n, lo=2, hi=5000)
    eps0 = v.real("eps0", eps0, 0.0, 30.0, lo_open=True)
    c = np.arange(n)[:, None]
    j = np.arange(n + 1)[None, :]
    pc = binom.pmf(c, n - 1, math.exp(-eps0))
    q = 1.0 / (1.0 + math.exp(-eps0))
    a0 = binom.pmf(j, c, 0.5)        # A = j
    a1 = binom.pmf(j - 1, c, 0.5)    # A = j - 1
    P = pc * (q * a1 + (1 - q) * a0)  # first = A + D
    Q = pc * (q * a0 + (1 - q) * a1)  # first = A + 1 - D
    return P.ravel(), Q.ravel()


def fmt_clones_delta(eps: ArrayLike, n: int, eps0: float) -> float | np.ndarray:
    """Exact hockey-stick delta of the clones pair (Feldman et al. 2021 Thm 3.2), both
    directions."""
    eps_arr = v.reals("eps", eps, lo=0.0)
    P, Q = fmt_clones_pmfs(n, eps0)
    P, Q = P / P.sum(), Q / Q.sum()
    d = np.maximum(
        hockey_stick(pld_from_pmfs(P, Q), eps_arr), hockey_stick(pld_from_pmfs(Q, P), eps_arr)
    )
    return d if np.ndim(eps) else float(d[0])
