"""The adversarial certification suite for the k-RR family and the matrix randomiser.

Mechanisms: ``krr-strong``, ``krr-weak``, ``histogram-krr``, ``randomizer`` (the others are owned
by test_certified_edges.py and the other group's file).  Each is driven through the command
line's route, ``Mechanism.model`` (the declared parameters checked, then the declaration's build) and
``evaluate.delta_brackets`` / ``evaluate.epsilon_brackets``, at sizes where exact enumeration is
cheap, with hypothesis strategies aimed at the edges: extreme and tiny eps0 (gamma down to 1e-12,
eps0 up to the declared 30), masses near 0 and 1, eps at or beside a composed loss of the built
model (exact ties within rounding) and anywhere, delta targets from 1e-1 to 1e-30.

**What each bracket certifies, and the oracle for it.**  The oracle never calls shuffle_lib's
PLD, grid or Fourier code: it rebuilds each mechanism's pair from the formula in the seed (the
mechanism's module docstring), in mpmath at ``DPS`` = 60 digits, and sums the hockey stick
max(prod P - e^eps prod Q, 0) over the K-fold product (Koskela et al. 2021 Thm 5) exactly: the (K-1)-fold
prefixes are enumerated as multisets (multinomial weights), the last factor by a suffix sum over
the atoms sorted by their loss (:func:`hockey`).

* ``krr-strong``, ``krr-weak`` (Koskela et al. 2021 Def. 7 / Def. 9, App. A): the true shuffled privacy
  against A_s / A_w; the views' laws are written again from the multinomial definitions
  (:func:`strong_atoms`, :func:`weak_atoms`), not from the library's loss formula.
* ``histogram-krr`` (Biswas et al. 2023 Def. IV.1): the two laws of the count of x0,
  Bern(q_i) + Bin(n_x0, p) + Bin(n - 1 - n_x0, pbar), convolved in mpmath (:func:`count_atoms`).
* ``randomizer``: its bracket is on the *true* worst-case shuffled privacy (lower end a view of
  one dataset, upper end the blanket pair that dominates every dataset), so the oracle is that
  true worst case: the histogram laws of n reports for every multiset of the others' inputs and
  every ordered pair x0 != x1, K rounds on the same data (:func:`randomizer_delta`).

**The mechanisms' mass error.**  krr and histogram-krr compute their atoms in floating point
(scipy's ``binom.pmf``, products, a direct convolution, a normalisation); the oracle computes the
formula.  With every computed atom of one round within a relative ``R`` of the true one, a K-fold
product atom is within R_K = (1 + R)^K - 1, and for each atom
|(P' - e Q')_+ - (P - e Q)_+| <= R_K (P + e Q), non-zero only where P > e Q or P' > e Q', where
e Q < P (1 + R_K)/(1 - R_K); so |delta' - delta| <= 2 R_K/(1 - R_K) P(loss > eps - 3 R_K)
(log((1 + R_K)/(1 - R_K)) < 3 R_K), which :func:`hockey` returns as the allowance.  R is the
library's own stated bound for a computed PMF atom, ``randomizer.PMF_RTOL`` = 1e-12 (binom.pmf is
accurate to ~1e-15, mechanisms/krr/base.py; a sum of n <= 60 positive terms adds <= 60 ulp), and
:func:`test_binom_pmf_meets_the_stated_mass_error` checks it on this suite's parameter range.  The
randomiser's ends carry their own rounding (``certified_lower``, the blanket's shrink factor), so
its oracle gets no allowance.  Atoms below the double range (each < 1e-300) are lost by the
mechanisms; ``TINY`` covers them.

``pytest --hypothesis-profile=deep`` multiplies every case count by 100 (:func:`examples`).
"""

import bisect
import itertools
import json
import math
import os
import tempfile
import warnings
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from shuffle_lib import mechanisms
from shuffle_lib.core import evaluate
from shuffle_lib.core.types import PLDPair

from adversarial_common import TARGETS, examples

DPS = 60
R_MASS = 1e-12      # relative error of a computed PMF atom (randomizer.PMF_RTOL; module docstring)
TINY = 1e-290       # atoms below the double range, lost by a float build (module docstring)
GROUP = ("krr-strong", "krr-weak", "histogram-krr", "randomizer")




# ---- the exact oracle ------------------------------------------------------------------------

def mp(x):
    return mpmath.mpf(x)


def hockey(atoms, K, eps, rel=0.0):
    """(delta_{P/Q}(eps) of K rounds, allowance) of one round's atoms [(P, Q)] (mpf, P-direction).

    Exact up to mpmath's 60 digits: sum over ordered K-tuples of max(prod P - e^eps prod Q, 0).
    The allowance is 2 R_K/(1 - R_K) P(loss > eps - 3 R_K), R_K = (1 + rel)^K - 1, the effect of
    a relative error ``rel`` in each atom (module docstring); 0 when rel = 0."""
    with mpmath.workdps(DPS):
        atoms = [(p, q) for p, q in atoms if p > 0]
        lr = [mpmath.inf if q == 0 else mpmath.log(p / q) for p, q in atoms]
        order = sorted(range(len(atoms)), key=lambda i: lr[i])
        L = [lr[i] for i in order]
        SP, SQ = [mp(0)] * (len(L) + 1), [mp(0)] * (len(L) + 1)
        for j in range(len(L) - 1, -1, -1):
            SP[j] = SP[j + 1] + atoms[order[j]][0]
            SQ[j] = SQ[j + 1] + atoms[order[j]][1]
        e, eps = mpmath.exp(mp(eps)), mp(eps)
        rk = (1 + mp(rel)) ** K - 1
        shift = 3 * rk
        total, above = mp(0), mp(0)
        for pre in itertools.combinations_with_replacement(range(len(atoms)), K - 1):
            coef = math.factorial(K - 1)
            for _, grp in itertools.groupby(pre):
                coef //= math.factorial(len(list(grp)))
            pp = mpmath.fprod(atoms[i][0] for i in pre)
            qq = mpmath.fprod(atoms[i][1] for i in pre)
            s = mpmath.fsum(lr[i] for i in pre) if pre else mp(0)
            j = 0 if s == mpmath.inf else bisect.bisect_right(L, eps - s)
            total += coef * (pp * SP[j] - e * qq * SQ[j])
            if rel:
                j2 = 0 if s == mpmath.inf else bisect.bisect_right(L, eps - shift - s)
                above += coef * pp * SP[j2]
        return max(total, mp(0)), 2 * rk / (1 - rk) * above


def both(atoms, K, eps, rel=0.0):
    """(max over both directions of the exact delta, the larger allowance)."""
    a = hockey(atoms, K, eps, rel)
    b = hockey([(q, p) for p, q in atoms], K, eps, rel)
    return max(a[0], b[0]), max(a[1], b[1])


def inf_mass(atoms, K):
    """delta at eps = +inf of K rounds, max of both directions: T^K - F^K, F the mass where the
    other law is 0 excluded."""
    with mpmath.workdps(DPS):
        out = mp(0)
        for a, b in ((0, 1), (1, 0)):
            T = mpmath.fsum(x[a] for x in atoms)
            F = mpmath.fsum(x[a] for x in atoms if x[b] > 0)
            out = max(out, T ** K - F ** K)
        return out


def grouped(items):
    """Atoms with one exact likelihood ratio merged: items (key, P, Q) -> [(P, Q)], checking
    that P/Q agrees with the key (the seed's loss formula) to 40 digits where both are > 0."""
    out = {}
    for key, p, q in items:
        if p == 0 and q == 0:
            continue
        if key is not None and p > 0 and q > 0:
            assert abs(p / q / (mp(key.numerator) / key.denominator) - 1) < mpmath.mpf(10) ** -40, (key, p, q)
        acc = out.setdefault(key if key is not None else ("id", len(out)), [mp(0), mp(0)])
        acc[0] += p
        acc[1] += q
    return [tuple(x) for x in out.values()]


def strong_atoms(n, gamma, k):
    """A_s (Koskela et al. 2021 Def. 7): beta_n = 1 (prob. gamma) reveals nothing; otherwise the view is the
    counts (a, c) of values 1, 2 among the n reports minus the others' truthful ones: under X
    (a - 1, c) of the randomisers' Multinomial(n-1; g/k, g/k) counts, under X' (a, c - 1).
    Likelihood ratio a / c (the key)."""
    with mpmath.workdps(DPS):
        g, N = mp(gamma), n - 1
        p = g / k

        def M(a, c):
            if a < 0 or c < 0 or a + c > N:
                return mp(0)
            coef = math.comb(N, a) * math.comb(N - a, c)
            return coef * p ** (a + c) * (1 - 2 * p) ** (N - a - c)
        items = [(Fraction(1), g, g)]
        for a in range(N + 2):
            for c in range(N + 2 - a):
                key = Fraction(a, c) if c else None
                items.append((key, (1 - g) * M(a - 1, c), (1 - g) * M(a, c - 1)))
        return grouped(items)


def weak_atoms(n, gamma, k):
    """A_w (Koskela et al. 2021 Def. 9, Thm 10, App. A): the view (u, w, b), b ~ Bin(n-1, g) the number of
    randomising others, (u, w) the counts of values 1, 2 among their b reports and the n-th one;
    the n-th reports 1 w.p. 1-g+g/k, 2 w.p. g/k, another value w.p. (k-2) g/k under X (1 and 2
    swapped under X').  Likelihood ratio ((1-g)u + g(b+1)/k)/((1-g)w + g(b+1)/k) (the key)."""
    with mpmath.workdps(DPS):
        g, N = mp(gamma), n - 1
        G = Fraction(gamma)
        p1, p2 = 1 - g + g / k, g / k
        p3 = 1 - p1 - p2
        t = mp(1) / k
        rest = 1 - 2 * t

        def T(b, m1, m2):
            if m1 < 0 or m2 < 0 or m1 + m2 > b:
                return mp(0)
            return math.comb(b, m1) * math.comb(b - m1, m2) * t ** (m1 + m2) * rest ** (b - m1 - m2)
        items = []
        for b in range(N + 1):
            pb = math.comb(N, b) * g ** b * (1 - g) ** (N - b)
            if pb == 0:
                continue
            for u in range(b + 2):
                for w in range(b + 2 - u):
                    P = pb * (p1 * T(b, u - 1, w) + p2 * T(b, u, w - 1) + p3 * T(b, u, w))
                    Q = pb * (p2 * T(b, u - 1, w) + p1 * T(b, u, w - 1) + p3 * T(b, u, w))
                    c = G * (b + 1) / k
                    den = (1 - G) * w + c
                    items.append((((1 - G) * u + c) / den if den else None, P, Q))
        return grouped(items)


def count_atoms(n, n_x0, k, eps0):
    """histogram-krr (Biswas et al. 2023 Def. III.5, IV.1): S | D(x_i) = Bern(q_i) + Bin(n_x0, p) +
    Bin(n - 1 - n_x0, pbar), p = e^eps0/(e^eps0 + k - 1), pbar = 1/(e^eps0 + k - 1), q_0 = p,
    q_1 = pbar; by direct convolution in mpmath."""
    with mpmath.workdps(DPS):
        E = mpmath.exp(mp(eps0))
        p, pb = E / (E + k - 1), 1 / (E + k - 1)

        def binom(m, x):
            return [math.comb(m, j) * x ** j * (1 - x) ** (m - j) for j in range(m + 1)]
        a, b = binom(n_x0, p), binom(n - 1 - n_x0, pb)
        rest = [mpmath.fsum(a[i] * b[s - i] for i in range(max(0, s - len(b) + 1), min(s, n_x0) + 1))
                for s in range(n)]
        law = [[(1 - q) * (rest[s] if s < n else 0) + q * (rest[s - 1] if s else 0) for s in range(n + 1)]
               for q in (p, pb)]
        return list(zip(*law))


def family_matrix(family, k, eps0):
    """The k-RR matrix (P(y = x) = e^eps0/Z, else 1/Z, Z = e^eps0 + k - 1), in mpmath."""
    assert family == "krr"
    with mpmath.workdps(DPS):
        E = mpmath.exp(mp(eps0))
        return [[E / (E + k - 1) if i == j else 1 / (E + k - 1) for j in range(k)] for i in range(k)]


def histogram_law(rows, m):
    """{histogram: probability} of one report per row (tests/randomizer_oracle.py, in mpmath)."""
    law = {(0,) * m: mp(1)}
    for r in rows:
        new = {}
        for h, pr in law.items():
            for o in range(m):
                if r[o] > 0:
                    g = h[:o] + (h[o] + 1,) + h[o + 1:]
                    new[g] = new.get(g, mp(0)) + pr * r[o]
        law = new
    return law


def randomizer_pairs(R, n):
    """Every (dataset, ordered pair x0 != x1)'s atoms [(P(h), Q(h))] of the shuffled histogram."""
    with mpmath.workdps(DPS):
        k, m = len(R), len(R[0])
        out = []
        for others in itertools.combinations_with_replacement(range(k), n - 1):
            base = histogram_law([R[y] for y in others], m)
            laws = [histogram_law([R[x]], m) for x in range(k)]
            full = []
            for x in range(k):
                law = {}
                for h, pr in base.items():
                    for g, px in laws[x].items():
                        key = tuple(a + b for a, b in zip(h, g))
                        law[key] = law.get(key, mp(0)) + pr * px
                full.append(law)
            for x0, x1 in itertools.combinations(range(k), 2):
                keys = sorted(set(full[x0]) | set(full[x1]))
                out.append([(full[x0].get(h, mp(0)), full[x1].get(h, mp(0))) for h in keys])
        return out


def randomizer_delta(pairs, K, eps):
    """The true worst-case delta(eps) of K rounds on the same data (both orders of each pair)."""
    return max(both(atoms, K, eps)[0] for atoms in pairs)


# ---- the strategies --------------------------------------------------------------------------

def _gamma():
    """gamma aimed at the edges: 1, near 1, dyadic, tiny (eps0 up to ~29 at gamma = 1e-12), plain."""
    return st.one_of(st.just(1.0), st.integers(1, 52).map(lambda j: 1.0 - 2.0 ** -j),
                     st.integers(1, 40).map(lambda j: 2.0 ** -j), st.floats(1e-12, 1e-5), st.floats(1e-5, 1.0))


def _eps0(top=30.0):
    """eps0 aimed at the edges: tiny, the extremes 10, 20, 25, 30 (histogram-krr's declared maximum), plain."""
    return st.one_of(st.floats(1e-6, 1e-3), st.sampled_from([x for x in (1e-6, 10.0, 20.0, 25.0, 30.0) if x <= top]),
                     st.floats(1e-3, top))


N_MAX = {"krr-strong": {1: 60, 2: 40, 3: 14}, "krr-weak": {1: 40, 2: 22, 3: 8},
         "histogram-krr": {1: 60, 2: 40, 3: 20}}
EPS0_TOP = {1: 30.0, 2: 20.0, 3: 20.0}   # histogram-krr at eps0 = 30, K = 3, n = 20 takes 21 s in the accountant


@st.composite
def krr_case(draw, name):
    """(values, K) of krr-strong / krr-weak at a size the oracle enumerates quickly."""
    K = draw(st.integers(1, 3))
    return {"n": draw(st.integers(2, N_MAX[name][K])), "gamma": draw(_gamma()), "k": draw(st.integers(2, 5))}, K


@st.composite
def histogram_case(draw):
    K = draw(st.integers(1, 3))
    n = draw(st.integers(2, N_MAX["histogram-krr"][K]))
    return {"n": n, "n_x0": draw(st.integers(0, n - 1)), "k": draw(st.integers(2, 5)), "eps0": draw(_eps0(EPS0_TOP[K]))}, K


def _row(draw, m):
    """A distribution over m outputs: zeros, tiny and near-1 entries; the last entry closes the sum."""
    xs = [draw(st.one_of(st.just(0.0), st.floats(1e-12, 1.0), st.integers(1, 50).map(lambda j: 2.0 ** -j)))
          for _ in range(m - 1)]
    tot = math.fsum(xs)
    if tot > 1.0:
        xs = [x / (2 * tot) for x in xs]
    return xs + [max(0.0, 1.0 - math.fsum(xs))]


@st.composite
def randomizer_case(draw):
    """(values, K, exact matrix): the k-RR family or a small matrix with zeros (eps0 = inf) and tiny entries."""
    K = draw(st.integers(1, 3))
    if draw(st.booleans()):
        k = draw(st.integers(2, 4 if K < 3 else 3))
        eps0 = draw(_eps0(EPS0_TOP[K]))
        n = draw(st.integers(1, {1: 7, 2: 5, 3: 3}[K] - (k == 4)))
        return {"n": n, "family": "krr", "k": k, "eps0": eps0}, K, family_matrix("krr", k, eps0)
    m, o = draw(st.integers(2, 3)), draw(st.integers(2, 4 if K < 3 else 3))
    rows = [_row(draw, o) for _ in range(m)]
    n = draw(st.integers(1, {1: 6, 2: 4, 3: 3}[K] - (o == 4)))
    with mpmath.workdps(DPS):
        exact = [[mp(x) / mpmath.fsum(mp(y) for y in r) for x in r] for r in rows]   # check_matrix's normalisation
    return {"n": n, "family": "matrix", "matrix": rows}, K, exact


def _near_ties(losses, K, draw, top):
    """eps at or beside a K-fold composed loss (a tie within rounding), or anywhere in [0, top]."""
    losses = [float(x) for x in losses if 0 < x < math.inf]
    if losses and draw(st.booleans()):
        base = sum(draw(st.sampled_from(losses)) for _ in range(draw(st.integers(1, K))))
        return max(0.0, base * (1 + draw(st.sampled_from([0.0, 1e-15, -1e-15, 1e-12, -1e-12, 1e-9, -1e-9]))))
    return draw(st.floats(0.0, top))


def _model_losses(model):
    pairs = [c for c in model.upper if isinstance(c, PLDPair)]
    return [x for pm in pairs for parts in (pm.pq, pm.qp) for pl, _ in parts for x in pl.losses]


def _with_matrix_file(values):
    """``values`` with a matrix written to a JSON file, as the command line reads ``--matrix FILE``
    (the caller removes the file)."""
    values = dict(values)
    if "matrix" in values:
        fd, path = tempfile.mkstemp(suffix=".json")
        with os.fdopen(fd, "w") as f:
            json.dump({"matrix": values["matrix"]}, f)
        values["matrix"] = path
    return values


def build(name, values, K):
    """The command line's route: the declared parameters checked, then the declaration's build."""
    values = _with_matrix_file(values)
    try:
        return mechanisms.get(name).model(values, K)[1]
    finally:
        if "matrix" in values:
            os.unlink(values["matrix"])


def pair_atoms(name, values):
    if name == "krr-strong":
        return strong_atoms(values["n"], values["gamma"], values["k"])
    if name == "krr-weak":
        return weak_atoms(values["n"], values["gamma"], values["k"])
    return count_atoms(values["n"], values["n_x0"], values["k"], values["eps0"])


# ---- the checks ------------------------------------------------------------------------------

def check_delta(br, exact, allow, case):
    assert br.lower <= exact + allow + TINY and exact - allow - TINY <= br.upper, \
        (case, br, float(exact), float(allow))


def check_epsilon(br, target, delta_at, at_inf, case):
    """delta(upper) <= target, delta(lower) > target (or lower = 0), lower = inf only if delta(inf) > target;
    ``delta_at(eps)`` -> (exact, allowance)."""
    assert br.lower <= br.upper, (case, br)
    if math.isfinite(br.upper):
        d, a = delta_at(br.upper)
        assert d - a - TINY <= target, (case, br, float(d), float(a))
    if 0 < br.lower < math.inf:
        d, a = delta_at(br.lower)
        assert d + a + TINY > target, (case, br, float(d), float(a))
    if br.lower == math.inf:
        d, a = at_inf()
        assert d + a + TINY > target, (case, br, float(d))


def _pair_delta_case(name, values, K, data):
    model = build(name, values, K)
    atoms = pair_atoms(name, values)
    losses = _model_losses(model)
    top = K * max([x for x in losses if x < math.inf], default=1.0) + 1.0
    eps = _near_ties(losses, K, data.draw, top)
    br = evaluate.delta_brackets(model, [eps], K)[0]
    exact, allow = both(atoms, K, eps, R_MASS)
    check_delta(br, exact, allow, (name, values, K, eps))


def _pair_epsilon_case(name, values, K, target):
    model = build(name, values, K)
    atoms = pair_atoms(name, values)
    br = evaluate.epsilon_brackets(model, [target], K)[0]
    rk = (1 + R_MASS) ** K - 1
    check_epsilon(br, target, lambda e: both(atoms, K, e, R_MASS), lambda: (inf_mass(atoms, K), 2 * rk),
                  (name, values, K, target))


_SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
_target = st.one_of(st.sampled_from(TARGETS), st.floats(-30.0, -1.0).map(lambda x: 10.0 ** x))


@settings(max_examples=examples(12), **_SETTINGS)
@given(krr_case("krr-strong"), st.data())
def test_adversarial_krr_strong_delta(case, data):
    """krr-strong's delta bracket contains the exact delta of A_s's views (Koskela et al. 2021 Def. 7)."""
    _pair_delta_case("krr-strong", *case, data)


@settings(max_examples=examples(6), **_SETTINGS)
@given(krr_case("krr-strong"), _target)
def test_adversarial_krr_strong_epsilon(case, target):
    """krr-strong's eps bracket: exact delta(upper) <= target < exact delta(lower)."""
    _pair_epsilon_case("krr-strong", *case, target)


@settings(max_examples=examples(10), **_SETTINGS)
@given(krr_case("krr-weak"), st.data())
def test_adversarial_krr_weak_delta(case, data):
    """krr-weak's delta bracket contains the exact delta of A_w's views (Koskela et al. 2021 Def. 9, App. A)."""
    _pair_delta_case("krr-weak", *case, data)


@settings(max_examples=examples(5), **_SETTINGS)
@given(krr_case("krr-weak"), _target)
def test_adversarial_krr_weak_epsilon(case, target):
    """krr-weak's eps bracket: exact delta(upper) <= target < exact delta(lower)."""
    _pair_epsilon_case("krr-weak", *case, target)


@settings(max_examples=examples(12), **_SETTINGS)
@given(histogram_case(), st.data())
def test_adversarial_histogram_krr_delta(case, data):
    """histogram-krr's delta bracket contains the exact delta of the two count laws (Biswas et al. 2023 Def. IV.1)."""
    _pair_delta_case("histogram-krr", *case, data)


@settings(max_examples=examples(6), **_SETTINGS)
@given(histogram_case(), _target)
def test_adversarial_histogram_krr_epsilon(case, target):
    """histogram-krr's eps bracket: exact delta(upper) <= target < exact delta(lower)."""
    _pair_epsilon_case("histogram-krr", *case, target)


@settings(max_examples=examples(10), **_SETTINGS)
@given(randomizer_case(), st.data())
def test_adversarial_randomizer_delta(case, data):
    """randomizer's delta bracket contains the true worst-case delta over datasets (lower end: a
    view of one dataset; upper end: the blanket pair that dominates every dataset)."""
    values, K, R = case
    pairs = randomizer_pairs(R, values["n"])
    losses = [float(mpmath.log(p / q)) for atoms in pairs for p, q in atoms if p > 0 and q > 0]
    eps = _near_ties(losses, K, data.draw, K * max([abs(x) for x in losses], default=1.0) + 1.0)
    br = evaluate.delta_brackets(build("randomizer", values, K), [eps], K)[0]
    check_delta(br, randomizer_delta(pairs, K, eps), 0, (values, K, eps))


@settings(max_examples=examples(5), **_SETTINGS)
@given(randomizer_case(), _target)
def test_adversarial_randomizer_epsilon(case, target):
    """randomizer's eps bracket: true worst-case delta(upper) <= target < that of lower."""
    values, K, R = case
    pairs = randomizer_pairs(R, values["n"])
    br = evaluate.epsilon_brackets(build("randomizer", values, K), [target], K)[0]
    check_epsilon(br, target, lambda e: (randomizer_delta(pairs, K, e), 0),
                  lambda: (max(inf_mass(a, K) for a in pairs), 0), (values, K, target))


STRATEGIES = {"krr-strong": test_adversarial_krr_strong_delta, "krr-weak": test_adversarial_krr_weak_delta,
              "histogram-krr": test_adversarial_histogram_krr_delta, "randomizer": test_adversarial_randomizer_delta}


@pytest.mark.parametrize("name", mechanisms.names())
def test_every_mechanism_of_the_group_has_an_adversarial_strategy(name):
    """A k-RR-family or randomiser mechanism without a strategy here fails; the others belong to
    test_certified_edges.py (rr, custom) and the other group's adversarial file."""
    if name not in GROUP and "krr" not in name and "randomi" not in name:
        pytest.skip(f"{name} is not in group A (k-RR family, randomiser)")
    assert name in STRATEGIES, f"{name} has no adversarial strategy in {__name__}"


# ---- the oracle against second routes ---------------------------------------------------------

@pytest.mark.parametrize("adv", ["strong", "weak"])
def test_krr_oracle_matches_the_brute_force_views(adv):
    """The views' laws of this file against krr.checks.brute_delta (every local randomiser's outcome
    enumerated in rationals, the multiset formed), n = 3, k = 3, gamma = 3/8: agreement to 1e-14."""
    from shuffle_lib.mechanisms.krr.checks import brute_delta
    atoms = (strong_atoms if adv == "strong" else weak_atoms)(3, 0.375, 3)
    for K in (1, 2):
        for eps in (0.0, 0.3, 1.0, 2.5):
            ref = float(brute_delta(3, 0.375, 3, adv, [eps], n_c=K)[0])
            assert abs(float(both(atoms, K, eps)[0]) - ref) <= 1e-14, (adv, K, eps, ref)


def test_randomizer_oracle_matches_the_float_oracle():
    """randomizer_pairs / randomizer_delta against tests/randomizer_oracle.py (floats, fsum; its
    rounding ~1e-15 relative) on a 3 x 3 matrix with a zero, n = 4, K = 1, 2."""
    import randomizer_oracle
    rows = [[0.5, 0.25, 0.25], [0.125, 0.375, 0.5], [0.0, 0.5, 0.5]]
    pairs = randomizer_pairs([[mp(x) for x in r] for r in rows], 4)
    for K in (1, 2):
        for eps in (0.0, 0.5, 2.0):
            ref = randomizer_oracle.worst_delta(np.array(rows), 4, eps, K)
            assert abs(float(randomizer_delta(pairs, K, eps)) - ref) <= 1e-14 * max(ref, 1.0), (K, eps, ref)


def test_count_oracle_matches_the_closed_form():
    """count_atoms against Biswas et al. 2023 eq. 12-13 (P(S=s | D(x0)) = kappa3(s)/m sum_r mu(s,r) tau_r,
    P(S=s | D(x1)) = kappa3(s) sum_r mu(s,r)), written in mpmath: agreement to 1e-50 relative."""
    n, n_x0, k, eps0 = 9, 3, 4, 1.5
    atoms = count_atoms(n, n_x0, k, eps0)
    with mpmath.workdps(DPS):
        E, m = mpmath.exp(mp(eps0)), n - n_x0
        k1, k2 = E * (E + k - 2) / (k - 1), mp(k - 1) / (E + k - 2)
        for s, (p0, p1) in enumerate(atoms):
            k3 = mp(k - 1) ** n_x0 * (E + k - 2) ** (n - n_x0 - s) / (E + k - 1) ** n
            mu = [math.comb(n_x0, r) * (math.comb(m, s - r) if 0 <= s - r <= m else 0) * k1 ** r
                  for r in range(n_x0 + 1)]
            c0 = k3 / m * mpmath.fsum(mu[r] * (k2 * m + (E - k2) * (s - r)) for r in range(n_x0 + 1))
            c1 = k3 * mpmath.fsum(mu)
            assert abs(c0 - p0) <= mpmath.mpf(10) ** -50 * p0 and abs(c1 - p1) <= mpmath.mpf(10) ** -50 * p1


def test_binom_pmf_meets_the_stated_mass_error():
    """R_MASS (the module docstring's allowance) against scipy's binom.pmf on this suite's range:
    success probabilities g/k, 1/k, g (gamma from 1e-12 to 1 - 2^-52), k-RR's p and pbar
    (eps0 up to 30), n <= 60; every pmf >= 1e-290 within R_MASS / 10 of mpmath's."""
    from scipy.stats import binom
    worst = 0.0
    probs = [1e-12, 3.7e-9, 1e-6, 0.01, 0.2, 0.375, 0.5, 0.9, 1 - 2.0 ** -20, 1 - 2.0 ** -52]
    probs += [1.0 / (math.exp(e) + k - 1) for e in (1e-6, 1.0, 10.0, 30.0) for k in (2, 5)]
    with mpmath.workdps(DPS):
        for p in probs:
            for N in (1, 7, 30, 59):
                for j in range(N + 1):
                    ref = math.comb(N, j) * mp(p) ** j * (1 - mp(p)) ** (N - j)
                    if ref >= 1e-290:
                        worst = max(worst, float(abs(binom.pmf(j, N, p) / ref - 1)))
    assert worst <= R_MASS / 10, worst


# ---- regression tests: the defects this suite found -------------------------------------------

def test_histogram_krr_count_laws_do_not_cancel_one_minus_p():
    """Found by test_adversarial_histogram_krr_epsilon: histogram-krr n = 2, n_x0 = 0, k = 2,
    eps0 = 20, delta = 0.1 answered eps in [19.8946395018, 19.8946395019] where the exact delta at
    the lower end is 0.0999999838 < 0.1.  count_pmfs_exact took 1 - p from p = e^20/(e^20 + 1)
    as a double, a relative error 1.1e-16/(1 - p) = 1.8e-8 in the atom S = 0 (1e-3 at eps0 = 30).
    It now computes 1 - p = (k - 1)/(e^eps0 + k - 1); every atom is within R_MASS of the law."""
    from shuffle_lib.mechanisms.histogram import count_pmfs_exact
    values = {"n": 2, "n_x0": 0, "k": 2, "eps0": 20.0}
    _pair_epsilon_case("histogram-krr", values, 1, 0.1)
    for n, n_x0, k, eps0 in [(2, 0, 2, 20.0), (30, 10, 3, 30.0), (60, 59, 5, 25.0)]:
        atoms = count_atoms(n, n_x0, k, eps0)
        for law, side in zip(count_pmfs_exact(n, n_x0, eps0, k), (0, 1)):
            for x, a in zip(law, atoms):
                assert a[side] < 1e-290 or abs(x / a[side] - 1) <= R_MASS, (n, n_x0, k, eps0, side, x, float(a[side]))


def _matrix_case(rows, n):
    with mpmath.workdps(DPS):
        return randomizer_pairs([[mp(x) / mpmath.fsum(mp(y) for y in r) for x in r] for r in rows], n)


def test_randomizer_keeps_the_top_atom_when_e_eps_is_large():
    """Found by test_adversarial_randomizer_epsilon: rows [1/4, 1/4, 1/2], [1/2, 1e-12, 1/2 - 1e-12],
    n = 1, delta = 1e-6 answered eps <= 26.2446968519, where the exact delta is 7.5e-6, and the delta
    bracket there was [0, 2e-307].  clones.pairs.loss_threshold's closed-form root cancels at large
    e^eps (it sits O(1/e^eps) below an integer) and dropped the top atom; its neighbours are now
    re-decided by the direct comparison of the likelihoods."""
    rows, n = [[0.25, 0.25, 0.5], [0.5, 1e-12, 0.499999999999]], 1
    pairs = _matrix_case(rows, n)
    for K, target in ((1, 1e-6), (1, 1e-3), (2, 1e-6)):
        model = build("randomizer", {"n": n, "family": "matrix", "matrix": rows}, K)
        br = evaluate.epsilon_brackets(model, [target], K)[0]
        check_epsilon(br, target, lambda e: (randomizer_delta(pairs, K, e), 0), None, (rows, K, target))
    model = build("randomizer", {"n": n, "family": "matrix", "matrix": rows}, 1)
    eps = 26.244696851878253
    check_delta(evaluate.delta_brackets(model, [eps], 1)[0], randomizer_delta(pairs, 1, eps), 0, (rows, eps))


def test_randomizer_no_crash_when_a_view_has_no_finite_eps():
    """Found by test_adversarial_randomizer_epsilon: rows [0, 0, 0, 1], [1/6, 1/6, 1/6, 1/2],
    [1/2, 1/8, 1/8, 1/4], n = 1, delta = 1e-17 crashed (ValueError from loss_threshold at eps = inf):
    a view's lower eps of +inf was used as the start of the three-category search of a pair whose
    cap is finite.  The search now starts at 0 then."""
    rows = [[0.0, 0.0, 0.0, 1.0], [1 / 6, 1 / 6, 1 / 6, 0.5], [0.5, 0.125, 0.125, 0.25]]
    br = evaluate.epsilon_brackets(build("randomizer", {"n": 1, "family": "matrix", "matrix": rows}, 1), [1e-17], 1)[0]
    assert br.lower == br.upper == math.inf          # row 0 has zeros where row 1 has mass: delta(inf) = 1/2


def test_randomizer_view_counts_no_rounding_mass_off_its_cells():
    """Found by test_adversarial_randomizer_epsilon: rows [1/6, 1/6, 1/6, 1/2], [1/2, 1/8, 1/8, 1/4],
    n = 1.  The lower view on all of S0, S1 leaves no output off its cells, but 1 - u - w came out
    5.6e-17 under one input and 0 under the other: a fake +inf loss, so delta(5) had lower end
    8.3e-17 > upper end 2e-307 (exact 0), eps(1e-17) of two rounds a lower end 2.197225 above the
    exact 2 log 3 = 2.1972246, and with a third row [0, 0, 0, 1] eps(1e-17) crashed (loss_threshold
    at eps = inf).  OPEN: dropping that component is not the fix (it is a mixture component, not an
    outcome: removing it from both laws can raise the delta by (e^eps - 1) times its mass, and it
    is real, 1/Z = 1.4e-11, for k-RR at eps0 = 25); the view needs its off-cell mass summed from the
    row (exactly 0 when T0 and T1 cover it), a change to decompose.View.  FIXED: View carries
    o0, o1 summed from the rows (k-RR's in closed form, (k - 2)/Z), and view_pmfs reads them."""
    rows, n = [[1 / 6, 1 / 6, 1 / 6, 0.5], [0.5, 0.125, 0.125, 0.25]], 1
    pairs = _matrix_case(rows, n)
    for K in (1, 2):
        model = build("randomizer", {"n": n, "family": "matrix", "matrix": rows}, K)
        check_delta(evaluate.delta_brackets(model, [5.0], K)[0], randomizer_delta(pairs, K, 5.0), 0, (K, 5.0))
        br = evaluate.epsilon_brackets(model, [1e-17], K)[0]
        check_epsilon(br, 1e-17, lambda e: (randomizer_delta(pairs, K, e), 0), None, (K, 1e-17))


def test_krr_strong_two_rounds_at_a_tiny_delta_against_the_exact_views():
    """delta krr-strong --n 225 --gamma 0.5 --k 4 --eps 11.823 --compositions 2 gave
    [1.02363e-13, 1.02807e-13] around the exact 1.022831e-13.  Here against this file's oracle
    (A_s's views enumerated, every finite atom included, not only the +inf mass): the bracket
    holds and is tight to 1e-9."""
    values, K, eps = {"n": 225, "gamma": 0.5, "k": 4}, 2, 11.823
    br = evaluate.delta_brackets(build("krr-strong", values, K), [eps], K)[0]
    exact, allow = both(strong_atoms(**values), K, eps, R_MASS)
    check_delta(br, exact, allow, (values, K, eps))
    assert br.upper - br.lower <= 1e-9 * float(exact)


def test_randomizer_counts_a_top_tie_in_its_upper_end():
    """Found by the second hunt of test_adversarial_randomizer_delta: k-RR, k = 3, eps0 = 7.8446e-5,
    n = 1, eps = eps0 (1 - 6e-13): the top atom's loss exceeds eps by 5e-17, inside the rounding of
    the closed-form threshold, which left it out: [0, 2e-307] for an exact 1.6e-17.  The
    three-category pair now counts ties (loss_threshold(ties="count")), within its 1e-12 error term."""
    values, eps = {"n": 1, "family": "krr", "k": 3, "eps0": 7.844629923468824e-05}, 7.844629923463996e-05
    pairs = randomizer_pairs(family_matrix("krr", 3, values["eps0"]), 1)
    br = evaluate.delta_brackets(build("randomizer", values, 1), [eps], 1)[0]
    check_delta(br, randomizer_delta(pairs, 1, eps), 0, (values, eps))


def test_randomizer_view_lower_end_keeps_a_margin_on_its_inf_mass():
    """Found by the deep run of test_adversarial_randomizer_delta : rows [0, 0, 1] and
    [1/16, 1e-12, 0.937499999999], n = 1, eps = 0.  The view's +inf mass is the cell 1/16 + 1e-12,
    summed to the double 0.062500000001, 4e-19 above the exact sum of the two doubles; the view's
    lower end (certified_lower) took its 1e-12 margin off the finite atoms only, so that rounded-up
    mass was the lower end: 0.062500000001 > exact 0.0625000000009999999996.  The margin now
    covers the +inf mass too."""
    rows, n = [[0.0, 0.0, 1.0], [0.0625, 1e-12, 0.937499999999]], 1
    pairs = _matrix_case(rows, n)
    for K in (1, 2):
        model = build("randomizer", {"n": n, "family": "matrix", "matrix": rows}, K)
        for eps in (0.0, 0.5):
            check_delta(evaluate.delta_brackets(model, [eps], K)[0], randomizer_delta(pairs, K, eps), 0, (K, eps))


# ---- the Renyi verb, and randomiser masses near the bottom of the double range ----------------

ORDERS = [1.5, 2.0, 8.0, 64.0]


def renyi_exact(atoms, lam):
    """max over both directions of D_lam(P||Q) = log(sum P^lam Q^(1-lam)) / (lam - 1) of one
    round's atoms [(P, Q)] in mpmath; +inf when an atom has mass under one law only."""
    with mpmath.workdps(DPS):
        lam, out = mp(lam), mp(0)
        for a, b in ((0, 1), (1, 0)):
            if any(x[a] > 0 and x[b] == 0 for x in atoms):
                return mpmath.inf
            # sum P^lam Q^(1-lam) - 1 = sum P expm1((1 - lam) log(Q/P)), P a distribution (its
            # 60-digit sum differs from 1 by rounding only): summed so it keeps its relative
            # precision where P and Q (nearly) agree, whose divergence is (near) 0 and would
            # otherwise be the round-off of a sum near 1 (3e-61 for two identical rows)
            t = mpmath.fsum(x[a] * mpmath.expm1((1 - lam) * mpmath.log(x[b] / x[a]))
                            for x in atoms if x[a] > 0)
            out = max(out, mpmath.log1p(t) / (lam - 1))
        return out


def check_rdp(brs, exact, rel, case):
    """lower <= exact <= upper for each order, up to the mass error: a relative R on every atom
    moves D_lam by at most (2 lam - 1) R / (lam - 1) (both laws' powers)."""
    for lam, br, ex in zip(ORDERS, brs, exact):
        allow = (2 * lam - 1) * rel / (lam - 1) * 1.01 + mpmath.mpf(10) ** -280
        if ex == mpmath.inf:
            assert br.upper == math.inf, (case, lam, br)
            continue
        assert br.lower <= ex + allow and ex - allow <= br.upper, (case, lam, br, float(ex))
        assert 0.0 <= br.lower, (case, lam, br)


@settings(max_examples=examples(8), **_SETTINGS)
@given(krr_case("krr-strong"))
def test_adversarial_krr_strong_rdp(case):
    """rdp krr-strong brackets the exact Renyi divergence of A_s's views, one round."""
    values, _ = case
    _, brs = mechanisms.get("krr-strong").evaluate("rdp", ORDERS, values)
    atoms = strong_atoms(values["n"], values["gamma"], values["k"])
    check_rdp(brs, [renyi_exact(atoms, lam) for lam in ORDERS], R_MASS, values)


@settings(max_examples=examples(8), **_SETTINGS)
@given(histogram_case())
def test_adversarial_histogram_krr_rdp(case):
    """rdp histogram-krr brackets the exact Renyi divergence of the two count laws, one round."""
    values, _ = case
    _, brs = mechanisms.get("histogram-krr").evaluate("rdp", ORDERS, values)
    atoms = count_atoms(values["n"], values["n_x0"], values["k"], values["eps0"])
    check_rdp(brs, [renyi_exact(atoms, lam) for lam in ORDERS], R_MASS, values)


def _row_near_bottom(draw, m):
    """A distribution over m outputs with entries near the bottom of the double range (1e-300,
    5e-301, subnormal 1e-310) beside 1e-12 and dyadic ones; the last entry closes the sum (draws
    whose first entries already exceed 1, e.g. 1e-12 + 0.5 + 0.5, are no distribution)."""
    pick = st.sampled_from([0.0, 1e-310, 5e-301, 1e-300, 5e-300, 1e-12, 5e-12, 0.5, 0.25])
    xs = [draw(pick) for _ in range(m - 1)]
    assume(math.fsum(xs) <= 1.0)
    return xs + [1.0 - math.fsum(xs)]


@st.composite
def near_bottom_case(draw):
    m, o = draw(st.integers(2, 3)), draw(st.integers(3, 4))
    rows = [_row_near_bottom(draw, o) for _ in range(m)]
    n = draw(st.integers(1, 4 if o == 3 else 3))
    with mpmath.workdps(DPS):
        exact = [[mp(x) / mpmath.fsum(mp(y) for y in r) for x in r] for r in rows]
    return {"n": n, "family": "matrix", "matrix": rows}, exact


@settings(max_examples=examples(10), **_SETTINGS)
@given(near_bottom_case(), st.data())
def test_adversarial_randomizer_delta_with_masses_near_the_double_range(case, data):
    """The randomiser's delta bracket holds the true worst case when its matrix has entries near
    1e-300 (the eps to test near the losses ~690 those entries make)."""
    values, R = case
    pairs = randomizer_pairs(R, values["n"])
    losses = [float(mpmath.log(p / q)) for atoms in pairs for p, q in atoms if p > 0 and q > 0]
    eps = min(700.0, _near_ties(losses, 1, data.draw, max([abs(x) for x in losses], default=1.0) + 1.0))
    br = evaluate.delta_brackets(build("randomizer", values, 1), [eps], 1)[0]
    check_delta(br, randomizer_delta(pairs, 1, eps), 0, (values, eps))


@settings(max_examples=examples(8), **_SETTINGS)
@given(randomizer_case())
def test_adversarial_randomizer_rdp(case):
    """rdp randomizer brackets the true worst-case Renyi divergence over datasets, one round."""
    values, K, R = case
    values = _with_matrix_file(values)
    try:
        _, brs = mechanisms.get("randomizer").evaluate("rdp", ORDERS, values)
    finally:
        if "family" in values and values["family"] == "matrix":
            os.unlink(values["matrix"])
    pairs = randomizer_pairs(R, values["n"])
    exact = [max(renyi_exact(a, lam) for a in pairs) for lam in ORDERS]
    check_rdp(brs, exact, 0.0, values)


@pytest.mark.parametrize("rows, n", [
    ([[0.0, 0.0, 1.0], [0.0, 1e-310, 1.0]], 1),
    ([[0.0, 0.0, 1.0], [0.0, 0.5, 0.5], [0.5, 1e-310, 0.5]], 1),
    ([[5e-300, 1e-12, 0.999999999999], [5e-301, 1e-310, 1.0], [5e-12, 1e-310, 0.999999999995]], 2),
])
@pytest.mark.parametrize("eps", [0.0, 0.5, 700.0])
def test_randomizer_with_subnormal_masses_answers_and_brackets_the_exact_delta(rows, n, eps):
    """Matrices the deep run found (an overflow warning in the pair decomposition, a nan in the
    clones kernel's odds, Boost's binomial kernel raising at p = 1.0000045e-308): each answers
    with no warning, and its bracket holds the exact worst-case delta."""
    R = [[mp(x) / mpmath.fsum(mp(y) for y in r) for x in r] for r in rows]
    values = {"n": n, "family": "matrix", "matrix": rows}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        br = evaluate.delta_brackets(build("randomizer", values, 1), [eps], 1)[0]
    check_delta(br, randomizer_delta(randomizer_pairs(R, n), 1, eps), 0, (values, eps))
