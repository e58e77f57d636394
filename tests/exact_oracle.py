"""Exact tight delta and eps of K-fold compositions of small pairs, for the tests.

Independent of shuffle_lib's accountant: the composed PLD is enumerated over the
count vectors (c_1..c_m), c_1 + ... + c_m = K, of the m outcomes (a multinomial),
and the hockey-stick sum is taken with math.fsum.
"""

import itertools
import math

from scipy.optimize import brentq
from scipy.special import gammaln


def _count_vectors(m, K):
    for cuts in itertools.combinations(range(K + m - 1), m - 1):
        prev, out = -1, []
        for c in cuts + (K + m - 1,):
            out.append(c - prev - 1)
            prev = c
        yield out


def composed_atoms(p, q, K):
    """(finite losses, their P-probabilities, P-mass at +inf) of the K-fold product pair."""
    m = len(p)
    losses, probs, inf = [], [], 0.0
    for c in _count_vectors(m, K):
        if any(ci > 0 and p[o] == 0 for o, ci in enumerate(c)):
            continue
        logp = gammaln(K + 1) - sum(gammaln(ci + 1) for ci in c)
        logp += sum(ci * math.log(p[o]) for o, ci in enumerate(c) if ci > 0)
        if any(ci > 0 and q[o] == 0 for o, ci in enumerate(c)):
            inf += math.exp(logp)
            continue
        losses.append(sum(ci * (math.log(p[o]) - math.log(q[o])) for o, ci in enumerate(c) if ci > 0))
        probs.append(math.exp(logp))
    return losses, probs, inf


def delta_one_way(atoms, eps):
    losses, probs, inf = atoms
    total = inf + math.fsum(pr * -math.expm1(eps - s) for s, pr in zip(losses, probs) if s > eps)
    return min(total, 1.0)  # a hockey-stick divergence never exceeds 1; the sum can round above it


def delta(p, q, K, eps):
    """Tight delta(eps): max over both directions."""
    return max(delta_one_way(composed_atoms(p, q, K), eps), delta_one_way(composed_atoms(q, p, K), eps))


def epsilon(p, q, K, d):
    """Tight eps(d) = max over directions of the smallest eps >= 0 with delta(eps) <= d."""
    out = 0.0
    for a, b in ((p, q), (q, p)):
        atoms = composed_atoms(a, b, K)
        f = lambda e: delta_one_way(atoms, e) - d  # noqa: E731
        if atoms[2] > d:
            return math.inf
        if f(0.0) <= 0:
            continue
        out = max(out, brentq(f, 0.0, max(atoms[0]), xtol=1e-14, rtol=1e-14))
    return out
