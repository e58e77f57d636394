"""Girgis, Data, Diggavi, Suresh, Kairouz (CCS 2021, arXiv 2105.05180): closed-form RDP bounds.

Chen, Cao & Ge (2024) quotes them; its own Cor. 2 (:func:`cor2_rdp`) is here too.

* :func:`girgis_upper`: the upper bound as Chen et al. 2024, eq. (5) states it.
* :func:`girgis_upper_full`: the general upper bound (Girgis et al. Thm 1) with its sum over
  j = 3..lam; read from the first author's public code, not from the paper (see its docstring).
* :func:`girgis_lower`: the lower bound as Chen et al. 2024, eq. (6) states it.

All three are closed forms in n, eps0 and lam, with nbar = floor((n-1)/(2 e^eps0)) + 1.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.special import gammaln, logsumexp

from shuffle_lib.core import validate as v
from shuffle_lib.core.renyi import check_orders
from shuffle_lib.core.types import ArrayLike

_LAM_MAX = 10 ** 4
_EPS0_MAX = 700.0      # e^eps0 stays a double


def _nbar(n, eps0):
    return math.floor((n - 1) / (2 * math.exp(eps0))) + 1


def _log_expm1(x):
    """log(e^x - 1) for x > 0 without overflow."""
    return x + math.log(-math.expm1(-x))


def girgis_upper(n: int, eps0: float, lam: ArrayLike) -> np.ndarray:
    """Chen et al. 2024, eq. 5 (Girgis et al. 2021, as the paper states it; integer lam >= 2):

    1/(lam-1) log(exp(lam^2 (e^eps0-1)^2 / nbar) + exp(eps0 lam - (n-1)/(8 e^eps0))),
    nbar = floor((n-1)/(2 e^eps0)) + 1.
    """
    n = v.integer("n", n, lo=2)
    eps0 = v.real("eps0", eps0, lo=0.0, hi=_EPS0_MAX, lo_open=True)
    lams = v.reals("lam", lam, lo=1.0, hi=_LAM_MAX, lo_open=True)
    with np.errstate(over="ignore"):       # a beyond 1.8e308 is +inf: the bound is then +inf
        a = lams ** 2 * np.exp(2 * _log_expm1(eps0) - math.log(_nbar(n, eps0)))
    b = eps0 * lams - (n - 1) / (8 * math.exp(eps0))
    return np.logaddexp(a, b) / (lams - 1)


def girgis_upper_full(n: int, eps0: float, lam: int | Sequence[int] | np.ndarray) -> np.ndarray:
    """Girgis et al. (CCS 2021) Thm 1, the general upper bound, for integer lam >= 2, any n >= 2,
    eps0 > 0:

    eps(lam) <= 1/(lam-1) log( 1 + C(lam,2) (e^eps0-1)^2 / (nbar e^eps0)
                 + sum_{j=3}^{lam} C(lam,j) j Gamma(j/2) ((e^{2 eps0}-1)^2 / (2 nbar e^{2
                 eps0}))^{j/2} + exp(eps0 lam - (n-1)/(8 e^eps0)) ),   nbar = floor((n-1)/(2
                 e^eps0)) + 1.

    Source: the formula as the first author's public notebook computes it
    (github.com/Antonious-Grigis/Shuffled-Model-of-Differential-Privacy-in-Federated- Learning,
    Privacy_Analysis.ipynb at commit 08508a5, the function headed "1st Upper bound Theorem1" and
    plotted there as "RDP[GDD+21]"); that notebook uses (n-1)/(2 e^eps0) + 1 without the floor,
    while Chen et al. 2024 (and we) use the floor.  Log space: each term is a log, summed by
    log-sum-exp. No further condition on lam is part of this form.  Returns an array over ``lam``.
    """
    n = v.integer("n", n, lo=2)
    eps0 = v.real("eps0", eps0, lo=0.0, hi=_EPS0_MAX, lo_open=True)
    lams = [
        v.integer("lam", x, lo=2, hi=_LAM_MAX) for x in np.atleast_1d(np.asarray(lam, dtype=object))
    ]
    nbar = _nbar(n, eps0)
    # (e^eps0-1)^2 / (nbar e^eps0)
    log_a = 2 * _log_expm1(eps0) - math.log(nbar) - eps0
    # the base of the j/2 powers
    log_b = 2 * _log_expm1(2 * eps0) - math.log(2 * nbar) - 2 * eps0
    chernoff = eps0 * np.array(lams, dtype=float) - (n - 1) / (8 * math.exp(eps0))
    out = []
    for lm, ch in zip(lams, chernoff):
        j = np.arange(3, lm + 1, dtype=float)
        log_comb = gammaln(lm + 1) - gammaln(j + 1) - gammaln(lm - j + 1)
        terms = np.concatenate([[0.0, math.log(lm * (lm - 1) / 2) + log_a, ch],
                                log_comb + np.log(j) + gammaln(j / 2) + j / 2 * log_b])
        out.append(float(logsumexp(terms)) / (lm - 1))
    return np.array(out)


def girgis_lower(n: int, eps0: float, lam: ArrayLike) -> np.ndarray:
    """Chen et al. 2024, eq. 6: 1/(lam-1) log(1 + lam (lam-1)/2 (e^eps0-1)^2 / (n e^eps0))."""
    n = v.integer("n", n, lo=2)
    eps0 = v.real("eps0", eps0, lo=0.0, hi=_EPS0_MAX, lo_open=True)
    lams = v.reals("lam", lam, lo=1.0, hi=_LAM_MAX, lo_open=True)
    # log of the term
    log_t = np.log(lams * (lams - 1) / 2) + 2 * _log_expm1(eps0) - math.log(n) - eps0
    return np.logaddexp(0.0, log_t) / (lams - 1)


def cor2_rdp(n: int, eps0: float, lam: ArrayLike) -> np.ndarray:
    """Chen et al. 2024, Cor. 2: 2 e^{eps0} lam / (n-1) ("approximately", a normal approximation,
    lam >= 2)."""
    n = v.integer("n", n, lo=2)
    eps0 = v.real("eps0", eps0, lo=0.0, hi=700.0, lo_open=True)     # e^eps0 stays a double
    return 2 * math.exp(eps0) * check_orders(lam) / (n - 1)
