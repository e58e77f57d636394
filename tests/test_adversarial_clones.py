"""The adversarial certification suite, group B: the clones-bound family (``ldp-shuffle``,
``ldp-shuffle-subsampled``) and the mixnets (``bitflip``, ``fake-records``).

What each bracket certifies (read from its module docstring), and so what the oracle computes:

* ``ldp-shuffle``: delta of K rounds of the declared *dominating pair* (fmt21, stronger or
  koskela; shuffle_lib/mechanisms/clones/pairs.py), not the shuffled randomiser's true privacy.
  C ~ Bin(n-1, p_clone), A ~ Bin(C, 1/2), Delta ~ Bern(q), q = e^eps0/(e^eps0 + 1);
  fmt21/stronger: P = (A+Delta, C-A+1-Delta), Q = (A+1-Delta, C-A+Delta), p_clone = e^-eps0 or
  2/(e^eps0 + 1); koskela: P = (A+Delta, C-A), Q = (A, C-A+Delta), p_clone = e^-eps0 (Koskela et al. 2021 eq.
  5.1-5.2, Koskela et al. 2022 eq. 3.1).
* ``ldp-shuffle-subsampled``: the pair of clones/subsample.py's docstring, P_sub = g P + (1-g) p
  (P+Q)/2 + (1-g)(1-p) L and Q_sub likewise, g = subset/n, (P, Q) the fmt21 pair of ``subset``
  users, L one outcome of equal mass under both.
* ``bitflip``: the tight delta of the pair P = A_n(m+1), Q = A_n(m), A_n(m) ~ Bin(m, 1-q) +
  Bin(n-m, q) (Zhilyaev 2020 Sec. 3, eq. 3.1-3.2), or for m = 'worst' the max over every m in 0..n-1
  of the K-round delta (the same neighbours in every round).
* ``fake-records``: the histogram counts (a, b) of the two affected values, P(a, b) = M(a-1, b),
  Q(a, b) = M(a, b-1), M the Multinomial(m; 1/d, 1/d) law of the fake counts (Zhilyaev 2020 Sec. 5).

The oracle never calls shuffle_lib: each pair is enumerated from the formulas above in mpmath at
``DPS`` digits from the doubles given (exact integer binomials), and the K-fold hockey stick
delta_{P/Q}(eps) = A_K(eps) - e^eps B_K(eps), A_K, B_K the P- and Q-mass of the K-tuples whose
summed loss exceeds eps (+inf tuples in A), is summed over the (K-1)-tuples x as
P_x SP(eps - L_x), Q_x SQ(eps - L_x), SP/SQ the one-round suffix sums above a loss (Koskela et al. 2021
Thm 5 on the product pair).  Its own rounding: at DPS = 80 the sums carry a relative 1e-75 of
A + e^eps B (the comparison of a loss with eps - L_x can only err at a tie, where the term is 0
within that rounding), which is added to the allowance below.

Mass error.  The mechanisms compute their pairs' masses in floating point (binom.pmf, which keeps
full relative accuracy (core/binomial.py), and a few products and quotients, each within an ulp);
the library's own margin for such rounding is a relative 1e-12 (clones.pairs.bracket_at, the
grid's REL_MARGIN), and loss_slack's docstring leaves the masses' errors to the mechanism.  So a
one-round mass is taken to be within a relative R_MASS = 1e-12 of the exact one, a K-round product
within r_K = (1 + R_MASS)^K - 1, and an outcome can then count in the computed delta only where
P > e^eps Q (1 - r_K)/(1 + r_K); the computed delta is within r_K sum (P + e^eps Q) over those
outcomes of the exact one (each term max(P - e^eps Q, 0) moves by at most |dP| + e^eps |dQ|),
plus the masses under the double range (atoms_at: < 1e-308 each, flushed to 0).  A mass off by
more than R_MASS is a defect of the mechanism (two found here: see the regression tests at the
end).  The clones' one-round path (bracket_at) certifies its rounding itself: no allowance there.

Case counts: ``examples(n)`` as in test_certified_edges (x100 under --hypothesis-profile=deep).
"""

from __future__ import annotations

import bisect
import itertools
import math

import mpmath
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shuffle_lib import mechanisms
from shuffle_lib.core import evaluate

from adversarial_common import TARGETS, examples

GROUP = ("ldp-shuffle", "ldp-shuffle-subsampled", "bitflip", "fake-records")
DPS = 80
R_MASS = 1e-12




# --- exact pairs, from the formulas of the module docstrings, in mpmath ---------------------------

def _mp(x):
    return mpmath.mpf(x)


def _binom_pmf(j, N, p):
    """P[Bin(N, p) = j] with an exact integer coefficient; p an mpf."""
    return math.comb(N, j) * p ** j * (1 - p) ** (N - j) if 0 <= j <= N else _mp(0)


def clone_pair_exact(n, eps0, pair):
    """{outcome (a, b): [P, Q]} of the clones pair (module docstring), summed over C, A, Delta."""
    e0 = _mp(eps0)
    E = mpmath.exp(e0)
    p = 2 / (E + 1) if pair == "stronger" else mpmath.exp(-e0)
    q, nq = E / (E + 1), 1 / (E + 1)
    out = {}
    for c in range(n):
        wc = _binom_pmf(c, n - 1, p)
        for a in range(c + 1):
            w = wc * math.comb(c, a) / mpmath.mpf(2) ** c
            for dl, pd in ((1, q), (0, nq)):
                if pair == "koskela":
                    kp, kq = (a + dl, c - a), (a, c - a + dl)
                else:
                    kp, kq = (a + dl, c - a + 1 - dl), (a + 1 - dl, c - a + dl)
                out.setdefault(kp, [_mp(0), _mp(0)])[0] += w * pd
                out.setdefault(kq, [_mp(0), _mp(0)])[1] += w * pd
    return out


def subsampled_pair_exact(n, eps0, subset):
    """P_sub = g P + (1-g) p (P+Q)/2 + (1-g)(1-p) L (clones/subsample.py), g = subset/n exactly."""
    g = _mp(subset) / n
    p = mpmath.exp(-_mp(eps0))
    out = {}
    for k, (P, Q) in clone_pair_exact(subset, eps0, "fmt21").items():
        mix = (1 - g) * p * (P + Q) / 2
        out[k] = [g * P + mix, g * Q + mix]
    out["L"] = [(1 - g) * (1 - p)] * 2
    return out


def bitflip_pair_exact(n, m, q):
    """{s: [P, Q]}: the others' sum b ~ Bin(m, 1-q) + Bin(n-1-m, q); P(s) = q b(s) + (1-q) b(s-1)
    (the user holds 1), Q(s) = (1-q) b(s) + q b(s-1) (Zhilyaev 2020 eq. 3.1-3.2)."""
    q = _mp(q)
    # Bin(m, 1-q) at i as Bin(m, q) at m - i: at DPS digits 1 - (1 - q) is 0 for q < 1e-80, which
    # dropped the masses of order q (n = 3, q = 1e-300, m = 1 gave P(1) = q for 2q)
    b = [mpmath.fsum(_binom_pmf(m - i, m, q) * _binom_pmf(s - i, n - 1 - m, q) for i in range(m + 1))
         for s in range(n)] + [_mp(0)]
    return {s: [q * b[s] + (1 - q) * b[s - 1] if s else q * b[0],
                (1 - q) * b[s] + q * b[s - 1] if s else (1 - q) * b[0]] for s in range(n + 1)}


def fake_records_pair_exact(m, d):
    """{(a, b): [P, Q]}: P(a, b) = M(a-1, b), Q(a, b) = M(a, b-1), M(h, h') the Multinomial(m; 1/d,
    1/d, 1-2/d) mass of the fake counts (Zhilyaev 2020 Sec. 5)."""
    r = 1 / _mp(d)

    def M(h, h2):
        if h < 0 or h2 < 0 or h + h2 > m:
            return _mp(0)
        return math.comb(m, h) * math.comb(m - h, h2) * r ** (h + h2) * (1 - 2 * r) ** (m - h - h2)
    return {(a, b): [M(a - 1, b), M(a, b - 1)] for a in range(m + 2) for b in range(m + 2 - a)}


def exact_pairs(name, params):
    """The list of exact pairs whose worst case the mechanism's bracket certifies."""
    with mpmath.workdps(DPS):
        if name == "ldp-shuffle":
            return [clone_pair_exact(params["n"], params["eps0"], params["pair"])]
        if name == "ldp-shuffle-subsampled":
            return [subsampled_pair_exact(params["n"], params["eps0"], params["subset"])]
        if name == "bitflip":
            ms = range(params["n"]) if params["m"] == "worst" else [params["m"]]
            return [bitflip_pair_exact(params["n"], m, params["q"]) for m in ms]
        if name == "fake-records":
            return [fake_records_pair_exact(params["m"], params["d"])]
    raise KeyError(name)


# --- the K-fold oracle ----------------------------------------------------------------------------

class Direction:
    """One direction P/Q of a pair, composed K times (module docstring)."""

    def __init__(self, P, Q, K):
        fin = sorted((mpmath.log(a) - mpmath.log(b), a, b) for a, b in zip(P, Q) if a > 0 and b > 0)
        self.K = K
        self.losses = [x[0] for x in fin]
        self.inf = mpmath.fsum(a for a, b in zip(P, Q) if a > 0 and b == 0)
        self.fin = mpmath.fsum(x[1] for x in fin)
        self.sp, self.sq = [_mp(0)], [_mp(0)]          # suffix sums, from the top loss down
        for L, a, b in reversed(fin):
            self.sp.append(self.sp[-1] + a)
            self.sq.append(self.sq[-1] + b)
        self.sp.reverse()
        self.sq.reverse()
        tuples = [(_mp(0), _mp(1), _mp(1))]            # the (K-1)-tuples of finite atoms, with multiplicity
        if K > 1:
            tuples = []
            for combo in itertools.combinations_with_replacement(range(len(fin)), K - 1):
                coef = math.factorial(K - 1) // math.prod(math.factorial(combo.count(i)) for i in set(combo))
                tuples.append((mpmath.fsum(fin[i][0] for i in combo),
                               coef * mpmath.fprod(fin[i][1] for i in combo),
                               coef * mpmath.fprod(fin[i][2] for i in combo)))
        self.tuples = tuples
        # P-mass of the K-tuples holding a +inf atom: sum_j C(K, j) inf^j fin^(K-j), no cancellation
        self.inf_K = mpmath.fsum(math.comb(K, j) * self.inf ** j * self.fin ** (K - j) for j in range(1, K + 1))

    def sums(self, t):
        """(A, B): P- and Q-mass of the K-tuples with summed loss > t (+inf tuples in A)."""
        A, B = [self.inf_K], []
        for L, a, b in self.tuples:
            i = bisect.bisect_right(self.losses, t - L)
            A.append(a * self.sp[i])
            B.append(b * self.sq[i])
        return mpmath.fsum(A), mpmath.fsum(B)

    def delta(self, eps, r):
        """(exact delta_{P/Q}(eps) of K rounds, allowance for masses within relative r per round)."""
        e = mpmath.exp(_mp(eps))
        A, B = self.sums(_mp(eps))
        rk = (1 + _mp(r)) ** self.K - 1
        allow = mpmath.mpf(10) ** -75 * (A + e * B)
        if r > 0:
            A2, B2 = self.sums(_mp(eps) - mpmath.log((1 + rk) / (1 - rk)))
            # the masses flushed to 0 below the double range (< 1e-308 each, atoms_at), K-fold
            under = self.K * (len(self.losses) + 1) * mpmath.mpf(1e-307)
            allow += rk * (A2 + e * B2) + under * (1 + e)
        return A - e * B, allow


class Oracle:
    """max over the pairs and both directions of the exact K-round delta, with its allowance."""

    def __init__(self, pairs, K):
        self.K = K
        with mpmath.workdps(DPS):
            self.dirs = []
            for pr in pairs:
                P, Q = zip(*pr.values())
                self.dirs.append((Direction(P, Q, K), Direction(Q, P, K)))

    def delta(self, eps, r):
        """[(value, allowance)] per pair: the max of its two directions' values, the larger allowance."""
        with mpmath.workdps(DPS):
            out = []
            for a, b in self.dirs:
                (x, ax), (y, ay) = a.delta(eps, r), b.delta(eps, r)
                out.append((max(x, y), max(ax, ay)))
            return out

    def inf_mass(self):
        return max(max(a.inf_K, b.inf_K) for a, b in self.dirs)

    def losses(self):
        return sorted({float(x) for a, b in self.dirs for d in (a, b) for x in d.losses if x > 0})


def covered_below(oracle, eps, r, bound):
    """True when bound <= the exact worst-case delta(eps) + allowance (a certified lower end)."""
    return any(bound <= val + allow for val, allow in oracle.delta(eps, r))


def covered_above(oracle, eps, r, bound):
    """True when the exact worst-case delta(eps) - allowance <= bound (a certified upper end)."""
    return all(val - allow <= bound for val, allow in oracle.delta(eps, r))


# --- the mechanisms' routes and strategies --------------------------------------------------------

def build(name, params, K):
    """The CLI's route (Mechanism.model): the declaration's build, with compositions if it uses them."""
    return mechanisms.get(name).model(params, K)[1]


def mass_error(name, K):
    """The relative per-round mass error the oracle allows (module docstring)."""
    if name == "ldp-shuffle" and K == 1:
        return 0.0          # delta_bracket_single / bracket_at certify their own rounding
    return R_MASS


def _eps0(hi):
    return st.one_of(st.sampled_from([1e-6, 1e-3, 0.5, 1.0, math.log(3), 5.0, 10.0, 20.0, hi]),
                     st.floats(1e-6, 1.0), st.floats(1.0, hi))


def _size(K, k1, k2, k3):
    """An integer size bounded by K (K = 1: k1, 2: k2, 3: k3), drawn towards its ends."""
    top = {1: k1, 2: k2, 3: k3}[K]
    return st.one_of(st.sampled_from([1, 2, 3, top]), st.integers(1, top))


@st.composite
def ldp_shuffle_params(draw, K):
    n = draw(_size(K, 60, 30, 10))
    eps0 = draw(_eps0(30.0 if K == 1 else 12.0))   # K >= 2 past 12: a grid of minutes (see the report)
    return {"n": n, "eps0": eps0, "pair": draw(st.sampled_from(["fmt21", "stronger", "koskela"]))}


@st.composite
def subsampled_params(draw, K):
    n = draw(_size(K, 60, 30, 12))
    subset = draw(st.one_of(st.sampled_from([1, n]), st.integers(1, n)))
    return {"n": n, "eps0": draw(_eps0(30.0)), "subset": subset}


@st.composite
def bitflip_params(draw, K):
    n = draw(_size(K, 40, 24, 10))
    q = draw(st.one_of(st.sampled_from([0.5, 0.25, 0.1, 1e-3, 1e-8, 2.0 ** -30, 1e-17, 1e-300]),
                       st.floats(1e-12, 0.5), st.floats(1e-6, 0.5), st.floats(0.5 - 1e-6, 0.5)))
    m = draw(st.one_of(st.just("worst"), st.sampled_from([0, n - 1]), st.integers(0, n - 1)))
    return {"n": n, "q": q, "m": m}


@st.composite
def fake_records_params(draw, K):
    m = draw(_size(K, 40, 24, 9))
    d = draw(st.one_of(st.sampled_from([2, 3, 4, 10, 1000, 10 ** 6, 10 ** 9]), st.integers(2, 60)))
    return {"m": m, "d": d}


STRATEGIES = {"ldp-shuffle": ldp_shuffle_params, "ldp-shuffle-subsampled": subsampled_params,
              "bitflip": bitflip_params, "fake-records": fake_records_params}
COUNTS = {"ldp-shuffle": 10, "ldp-shuffle-subsampled": 8, "bitflip": 8, "fake-records": 8}


def _eps_near_ties(oracle, K, draw):
    """eps at or beside a sum of j <= K one-round losses (exact ties within rounding), or anywhere."""
    losses = oracle.losses()
    if losses and draw(st.integers(0, 2)):
        base = sum(draw(st.sampled_from(losses)) for _ in range(draw(st.integers(1, K))))
        return max(0.0, base * (1 + draw(st.sampled_from([0.0, 2e-16, -2e-16, 1e-12, -1e-12, 1e-9, -1e-9]))))
    return draw(st.one_of(st.floats(0.0, 3.0), st.floats(0.0, 40.0 * K)))


def check_delta(name, params, K, eps, oracle=None):
    oracle = oracle or Oracle(exact_pairs(name, params), K)
    r = mass_error(name, K)
    br = evaluate.delta_brackets(build(name, params, K), [eps], K)[0]
    case = (name, params, K, eps, br)
    assert 0.0 <= br.lower <= br.upper <= 1.0, case
    assert covered_below(oracle, eps, r, br.lower), (case, oracle.delta(eps, r))
    assert covered_above(oracle, eps, r, br.upper), (case, oracle.delta(eps, r))


def check_epsilon(name, params, K, target, oracle=None):
    oracle = oracle or Oracle(exact_pairs(name, params), K)
    r = mass_error(name, K)
    br = evaluate.epsilon_brackets(build(name, params, K), [target], K)[0]
    case = (name, params, K, target, br)
    assert 0.0 <= br.lower <= br.upper, case
    if math.isfinite(br.upper):          # delta_exact(upper) <= target
        assert covered_above(oracle, br.upper, r, target), (case, oracle.delta(br.upper, r))
    if 0.0 < br.lower < math.inf:        # delta_exact(lower) > target
        assert any(v + a > target for v, a in oracle.delta(br.lower, r)), (case, oracle.delta(br.lower, r))
    if br.lower == math.inf:             # no finite eps: delta(inf), the composed +inf mass, exceeds target
        with mpmath.workdps(DPS):
            inf = oracle.inf_mass()
            rk = (1 + mpmath.mpf(r)) ** K - 1
            assert inf * (1 + rk) + mpmath.mpf(10) ** -75 > target, (case, float(inf))


SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.mark.parametrize("name", GROUP)
def test_adversarial_delta_brackets_the_exact_value(name):
    """delta mode through the CLI's route: lower <= exact <= upper (within the allowance)."""
    @settings(max_examples=examples(COUNTS[name]), **SETTINGS)
    @given(st.data())
    def run(data):
        K = data.draw(st.sampled_from([1, 1, 2, 3]), label="K")
        params = data.draw(STRATEGIES[name](K), label="params")
        oracle = Oracle(exact_pairs(name, params), K)
        check_delta(name, params, K, _eps_near_ties(oracle, K, data.draw), oracle)
    run()


@pytest.mark.parametrize("name", GROUP)
def test_adversarial_epsilon_brackets_the_exact_value(name):
    """eps mode: delta_exact(upper) <= target, delta_exact(lower) > target (or lower = 0), lower = inf
    only if the composed +inf mass exceeds the target."""
    @settings(max_examples=examples(COUNTS[name]), **SETTINGS)
    @given(st.data())
    def run(data):
        K = data.draw(st.sampled_from([1, 1, 2, 3]), label="K")
        params = data.draw(STRATEGIES[name](K), label="params")
        target = data.draw(st.one_of(st.sampled_from(TARGETS), st.floats(-30, -1).map(lambda x: 10.0 ** x)),
                           label="target")
        check_epsilon(name, params, K, target)
    run()


@pytest.mark.parametrize("name", mechanisms.names())
def test_every_mechanism_of_the_group_has_a_strategy(name):
    """A mechanism of group B without a strategy fails here; the others belong to
    test_certified_edges.py (custom, rr) and the other group's file."""
    if name not in GROUP:
        pytest.skip(f"{name} is certified by another file")
    assert name in STRATEGIES and name in COUNTS


# --- the oracle checked against a second route ----------------------------------------------------

def test_oracle_matches_brute_force_enumeration_of_the_product():
    """The suffix-sum recursion against the plain sum over every K-tuple of outcomes (K = 2, 3) on
    a small pair with a +inf atom on each side, at several eps including a tie."""
    pr = {0: [_mp("0.5"), _mp("0.25")], 1: [_mp("0.25"), _mp("0.5")], 2: [_mp("0.125"), _mp(0)],
          3: [_mp("0.125"), _mp("0.125")], 4: [_mp(0), _mp("0.125")]}
    for K in (1, 2, 3):
        o = Oracle([pr], K)
        for eps in (0.0, math.log(2), 0.3, 1.5, math.log(4)):
            with mpmath.workdps(DPS):
                e = mpmath.exp(_mp(eps))
                brute = []
                for x, y in ((0, 1), (1, 0)):
                    tot = _mp(0)
                    for tup in itertools.product(pr.values(), repeat=K):
                        tot += max(mpmath.fprod(t[x] for t in tup) - e * mpmath.fprod(t[y] for t in tup), 0)
                    brute.append(tot)
                val, allow = o.delta(eps, 0.0)[0]
                assert abs(val - max(brute)) <= mpmath.mpf(10) ** -70, (K, eps)


def test_oracle_pairs_are_distributions_and_the_clones_pairs_are_symmetric():
    """Each exact pair sums to 1 on both sides (to 1e-70); the clones pair is P with a, b swapped."""
    for pairs in (exact_pairs("ldp-shuffle", {"n": 7, "eps0": 20.0, "pair": "fmt21"}),
                  exact_pairs("ldp-shuffle-subsampled", {"n": 9, "eps0": 0.5, "subset": 4}),
                  exact_pairs("bitflip", {"n": 6, "q": 1e-300, "m": "worst"}),
                  exact_pairs("fake-records", {"m": 5, "d": 2})):
        for pr in pairs:
            with mpmath.workdps(DPS):
                for side in (0, 1):
                    assert abs(mpmath.fsum(x[side] for x in pr.values()) - 1) < mpmath.mpf(10) ** -70
    pr = exact_pairs("ldp-shuffle", {"n": 7, "eps0": 3.0, "pair": "stronger"})[0]
    assert all(pr[(a, b)][0] == pr[(b, a)][1] for a, b in pr)


# --- named regression tests: the defects this suite found, with their failing inputs ------------

@pytest.mark.parametrize("name, params, K, eps", [
    ("ldp-shuffle", {"n": 1, "eps0": 30.0, "pair": "fmt21"}, 1, 29.9),
    ("ldp-shuffle", {"n": 1, "eps0": 30.0, "pair": "fmt21"}, 2, 59.9),
    ("ldp-shuffle", {"n": 3, "eps0": 20.0, "pair": "fmt21"}, 1, 19.99),
    ("ldp-shuffle-subsampled", {"n": 3, "eps0": 30.0, "subset": 2}, 1, 29.776856418908938),
    ("ldp-shuffle-subsampled", {"n": 5, "eps0": 20.0, "subset": 5}, 1, 19.999999980000002),
])
def test_full_clone_pair_weight_1_minus_q_without_cancellation(name, params, K, eps):
    """The full pairs' weight 1 - q (and subsample's) was computed as 1 - q, a relative error of
    2^-53 e^eps0 (1e-3 at eps0 = 30): n = 1, eps0 = 30, eps = 29.9 gave [0.0960855, 0.0960855]
    against the exact 0.0951626; subsampled n = 3, subset = 2, eps = 29.7769 gave 5.4e-4 against
    1.99e-8, and subset = n = 5, eps0 = 20, eps = 20 (1 - 1e-9) gave [0, 0] against 2e-8.  Now
    1/(1 + e^eps0) (pairs._puw, subsample._weights)."""
    check_delta(name, params, K, eps)


@pytest.mark.parametrize("name, params, K", [      # ldp-shuffle at K = 2: 6 s a call, the delta test above
    ("ldp-shuffle", {"n": 1, "eps0": 30.0, "pair": "fmt21"}, 1),
    ("ldp-shuffle-subsampled", {"n": 3, "eps0": 30.0, "subset": 2}, 1),
    ("ldp-shuffle-subsampled", {"n": 3, "eps0": 30.0, "subset": 2}, 2),
])
@pytest.mark.parametrize("target", [1e-3, 1e-9])
def test_full_clone_pair_eps_mode_at_eps0_30(name, params, K, target):
    """The eps-mode face of the same defect: n = 1, eps0 = 30, delta = 1e-3 gave [29.99955, 29.99955]
    where the exact eps is 29.99900 (delta(lower) = 4.5e-4 < target)."""
    check_epsilon(name, params, K, target)


def test_single_round_clone_bracket_at_a_threshold_tie():
    """bracket_at's rounded threshold skipped the atom that ties with eps: n = 1, eps0 = 4,
    eps = 4 (1 - 2e-16) gave [0, 1e-307] where the exact delta q (1 - e^(eps - eps0)) is 8.7e-16.
    It now takes the max over the thresholds k-2..k+2 (the tail difference is unimodal in k)."""
    check_delta("ldp-shuffle", {"n": 1, "eps0": 4.0, "pair": "fmt21"}, 1, 3.999999999999999)


def test_single_round_clone_eps_lower_end_keeps_its_slope_at_a_tie():
    """With the tie-safe threshold, the slope of delta (Newton's step) must come from the threshold
    of the max: from the rounded one it was 0 at n = 1, eps0 = 30, eps = 29.998, and the eps lower
    end fell to 0 (certified but useless).  The bracket now holds the exact eps within 1e-9."""
    name, params = "ldp-shuffle", {"n": 1, "eps0": 30.0, "pair": "fmt21"}
    br = evaluate.epsilon_brackets(build(name, params, 1), [1e-3], 1)[0]
    with mpmath.workdps(DPS):      # q (1 - e^(eps - eps0)) = 1e-3
        E = mpmath.exp(30)
        exact = 30 + mpmath.log(1 - mpmath.mpf("1e-3") * (E + 1) / E)
    assert br.lower <= exact <= br.upper and br.upper - br.lower <= 1e-9, (br, float(exact))
    check_epsilon(name, params, 1, 1e-3)


@pytest.mark.parametrize("m", [1, "worst"])
@pytest.mark.parametrize("K", [1, 2])
def test_bitflip_tiny_q_keeps_the_masses_of_order_q(m, K):
    """Bin(m, 1 - q) was binom.pmf(j, m, 1.0 - q): 1.0 - q rounds to 1.0 below q = 2^-54, so the
    masses of order q^k vanished; n = 3, q = 1e-17, m = 1, delta = 0.1 gave an eps lower end of
    39.04 where the exact delta(39.04) is 1e-18.  Now Bin(m, q) reversed (bitflip._flipped_piece,
    bitflip_worst._pair)."""
    check_epsilon("bitflip", {"n": 3, "q": 1e-17, "m": m}, K, 0.1)
    check_delta("bitflip", {"n": 3, "q": 1e-17, "m": m}, K, 38.0 * K)


@pytest.mark.parametrize("tau", [1e-18, 1e-60, 1e-200])
def test_clone_window_dropped_mass_survives_the_exact_1_minus_q(tau):
    """With 1 - q computed without cancellation, al + be is no longer exactly 1, and the dropped
    a-tail mass of clones.pld._window, taken as 1 - T_P(a_lo), went negative and was clipped to 0
    (n = 1500, eps0 = 3: 3.35e-21 -> 0.00, chapter 3's grid cell): an upper PLD missing mass.  It is
    now summed from binomial CDFs; here against the direct sum over the dropped atoms, also at the
    deeper truncations a pair is rebuilt with below the floor (core.evaluate._deepened)."""
    from shuffle_lib.mechanisms.clones import pairs, pld
    n, eps0 = 200, 3.0
    pr = pairs.PAIRS["fmt21"]
    s, a_lo, a_hi, (ps, al, be, ga), dropped = pld._window(n, eps0, pr, tau)
    with mpmath.workdps(DPS):
        exact = _mp(0)           # the P-mass outside the window, from the oracle's pair
        kept = {(a, int(ss) - a) for ss, x, y in zip(s, a_lo, a_hi) for a in range(int(x), int(y) + 1)}
        for k, (P, Q) in clone_pair_exact(n, eps0, "fmt21").items():
            if k not in kept:
                exact += P
    assert exact > 0 and abs(dropped - exact) <= 1e-9 * exact, (dropped, float(exact))


@pytest.mark.parametrize("n, eps", [(8, 43.0), (9, 44.0), (11, 50.06398414507502)])
def test_koskela_inf_mass_outside_the_window_is_not_a_finite_top_atom(n, eps):
    """Found by the deep run: koskela, eps0 = 10, K = 2.  The pair's +inf atom (s = a = n, P-mass
    q (p/2)^(n-1), 3e-33 at n = 8) lies outside the 1e-18 window, so its mass sat in the finite top
    atom at clone_top_loss, and the accountant's grid-free upper caps read it as finite: n = 8,
    eps = 43 gave [6.6e-55, 1.2e-44] against the exact 6.2e-33 (the composed +inf mass).  clone_pld
    now carries the closed-form delta_inf as inf_mass whatever the window."""
    check_delta("ldp-shuffle", {"n": n, "eps0": 10.0, "pair": "koskela"}, 2, eps)
    check_epsilon("ldp-shuffle", {"n": n, "eps0": 10.0, "pair": "koskela"}, 2, 1e-40)


@pytest.mark.parametrize("n, subset, eps0", [(10, 9, 8.0), (11, 10, 7.0), (11, 10, 8.0)])
def test_subsampled_truncated_top_atom_is_not_counted_in_the_eps_lower_end(n, subset, eps0):
    """Found by the deep run: the subsampled PLD keeps its truncated mass (<= 1e-17) as an atom at
    eps0, and one round read it as real: delta = 1e-30 gave an eps lower end of 7.99375 at n = 10,
    subset = 9, eps0 = 8, where the exact delta is 0.  The model now declares it as a tail cut."""
    check_epsilon("ldp-shuffle-subsampled", {"n": n, "eps0": eps0, "subset": subset}, 1, 1e-30)
    check_delta("ldp-shuffle-subsampled", {"n": n, "eps0": eps0, "subset": subset}, 1, eps0 * (1 - 1e-4))


@pytest.mark.parametrize("K", [1, 2])
def test_bitflip_cut_binomials_do_not_raise_the_lower_end(K):
    """Found by the deep run of test_adversarial_delta_brackets_the_exact_value[bitflip] (session
    8): n = 16, q = 1e-8, m = 7, eps = 18.015215625844203 (a one-round loss) gave the lower end
    2.3333330999569657e-40 above the exact 2.3333330933333161e-40.  The binomials of the pair are cut
    at 1e-40 each, which leaves Q short at some outcomes and so raises their P - e^eps Q; the
    tail_cut taken off the lower end (2e-40) covers the P side only.  The lower end now comes from
    dominated PLDs (bitflip.pair_plds_lower: each outcome's other law raised by its shortfall
    bound 2 tail)."""
    params = {"n": 16, "q": 1e-8, "m": 7}
    oracle = Oracle(exact_pairs("bitflip", params), K)
    for eps in (18.015215625844203 * K, 10.0, 1.0):
        check_delta("bitflip", params, K, eps, oracle)


def test_bitflip_oracle_keeps_the_masses_of_order_q_below_its_precision():
    """The oracle's own defect, found by the deep run: it drew Bin(m, 1 - q) with 1 - (1 - q)
    computed at DPS = 80 digits, 0 for q = 1e-300, so at n = 3, m = 1 its P(1) was q and its Q(0)
    0 where Zhilyaev 2020 eq. 3.1-3.2 give 2q and q(1 - q)^2; the library (Bin(m, 1-q) as Bin(m, q)
    reversed) was right and the two tests it broke (delta at eps = 690.08, eps at delta = 0.1)
    failed on the oracle.  The four masses here are the closed forms of that pair."""
    q = mpmath.mpf(1e-300)
    with mpmath.workdps(DPS):
        pr = bitflip_pair_exact(3, 1, 1e-300)
        want = {0: (q ** 2 * (1 - q), q * (1 - q) ** 2), 1: (2 * q * (1 - q) ** 2 + q ** 3, (1 - q) * ((1 - q) ** 2 + 2 * q ** 2)),
                3: (q * (1 - q) ** 2, q ** 2 * (1 - q))}
        for s, (P, Q) in want.items():
            assert abs(pr[s][0] / P - 1) < 1e-70 and abs(pr[s][1] / Q - 1) < 1e-70, (s, pr[s], P, Q)
    check_delta("bitflip", {"n": 3, "q": 1e-300, "m": 1}, 1, 690.0823807176538)
    check_epsilon("bitflip", {"n": 3, "q": 1e-300, "m": 1}, 1, 0.1)


# --- below the floor of the default truncation: a grid oracle for large n -------------------------

class GridOracle:
    """Certified bounds on the exact K-round delta_{P/Q}(eps) of the fmt21 clones pair (module
    docstring) at an n the mpmath enumeration cannot reach (n = 1e4), K even.  Never calls
    shuffle_lib.

    Atoms: outcome (x, c + 1 - x) given C = c has P = w_c [q b_c(x - 1) + (1 - q) b_c(x)], Q the
    same with q and 1 - q swapped, b_c = Bin(c, 1/2), w_c = Bin(n - 1, e^-eps0) (scipy logpmf), and
    loss log(q x + (1 - q)(c + 1 - x)) - log((1 - q) x + q (c + 1 - x)) (the b_c ratio is
    x / (c + 1 - x)).  Every c with w_c > 1e-300 is kept; the rest (binomial tails) and the atoms
    flushed to 0 (< 1e-300 each) go to +inf for the upper bound and are left out of the lower.
    Losses rounded up (upper) or down (lower) onto the grid j h, by 1e-9 h more to the safe side:
    the composed loss moves to its side, and delta(eps) = E[(1 - e^{eps - S})^+] is
    non-decreasing in S.  The half composition (K/2 rounds) is a direct convolution (numpy's, no
    FFT: sums of non-negative products, relative error <= N u each), and delta(eps) = sum_i
    m_i g(eps - s_i), g the half composition's delta, read from suffix sums A - e^t B at grid
    points t (eps rounded to the grid to its safe side), where each term is >= (1 - e^{-h}) of its
    mass: the difference loses at most a relative N u / (1 - e^{-h}) < 1e-8.  The masses' own
    rounding (logpmf, a few products: < 1e-12 relative a round): REL = 1e-7 on each end covers all.
    """

    REL = 1e-7

    def __init__(self, n, eps0, K, h):
        assert K % 2 == 0
        p, q, nq = math.exp(-eps0), 1 / (1 + math.exp(-eps0)), 1 / (1 + math.exp(eps0))
        from scipy.stats import binom
        lw = binom.logpmf(np.arange(n), n - 1, p)
        cs = np.flatnonzero(lw > math.log(1e-300))
        L, P = [], []
        for c in cs:
            x = np.arange(c + 2)
            b0, b1 = np.exp(lw[c] + binom.logpmf(x, c, 0.5)), np.exp(lw[c] + binom.logpmf(x - 1, c, 0.5))
            P.append(q * b1 + nq * b0)
            L.append(np.log(q * x + nq * (c + 1 - x)) - np.log(nq * x + q * (c + 1 - x)))
        L, P = np.concatenate(L), np.concatenate(P)
        self.inf = (float(binom.sf(cs[-1], n - 1, p) + binom.cdf(cs[0] - 1, n - 1, p))
                    + L.size * 1e-300) * K
        self.h, self.K = h, K
        self.sides = {}
        for side, idx in (("up", np.ceil(L / h + 1e-9)), ("low", np.floor(L / h - 1e-9))):
            idx = idx.astype(np.int64)
            m = np.bincount(idx - idx.min(), weights=P)
            half = m
            for _ in range(K // 2 - 1):
                half = np.convolve(half, m)
            lo = (K // 2) * int(idx.min())
            s = (lo + np.arange(half.size)) * h
            A = np.cumsum(half[::-1])[::-1]                     # sum_{j >= i} m_j
            B = np.cumsum((half * np.exp(-s))[::-1])[::-1]      # sum_{j >= i} m_j e^{-s_j}
            self.sides[side] = (half, lo, A, B)

    def _read(self, side, eps):
        half, lo, A, B = self.sides[side]
        k = math.floor(eps / self.h) if side == "up" else math.ceil(eps / self.h)  # safe side
        i = np.arange(half.size)
        t = (k - lo - i) * self.h                  # eps - s_i, on the grid
        j = np.maximum(k - 2 * lo - i + 1, 0)      # the first j with s_j > t
        ok = j < half.size
        g = A[j[ok]] - np.exp(t[ok]) * B[j[ok]]
        return float(np.sum(half[ok] * np.maximum(g, 0.0)))

    def delta(self, eps):
        """(lower, upper) bounds on the exact delta(eps)."""
        return (self._read("low", eps) * (1 - self.REL),
                (self._read("up", eps) + self.inf) * (1 + self.REL))


def test_grid_oracle_brackets_the_enumerated_pair():
    """The grid oracle against the mpmath enumeration (n = 30 at K = 2, n = 8 at K = 4): its
    bounds hold the exact delta and are within 5 % of it where delta is not tiny."""
    for n, K in ((30, 2), (8, 4)):
        grid_oracle = GridOracle(n, 4.0, K, 1e-3)
        exact = Oracle(exact_pairs("ldp-shuffle", {"n": n, "eps0": 4.0, "pair": "fmt21"}), K)
        for eps in (0.0, 0.5, 2.0, 5.0, 3.9 * K):
            lo, hi = grid_oracle.delta(eps)
            with mpmath.workdps(DPS):
                val = float(max(v for v, _ in exact.delta(eps, 0.0)))
            assert lo <= val <= hi, (n, K, eps, lo, val, hi)
            if val > 1e-3:
                assert hi - lo <= 0.05 * val, (n, K, eps, lo, val, hi)


@pytest.fixture(scope="module")
def clones_1e4():
    """The grid oracle of the fmt21 pair at n = 1e4, eps0 = 4, K = 4 (about 6 % wide)."""
    return GridOracle(10_000, 4.0, 4, 5e-4)


def test_tiny_delta_of_the_clones_pair_has_a_certified_bracket(clones_1e4):
    """n = 1e4, eps0 = 4, K = 4: the pair's PLD leaves out 9.1e-21 a round (binomial tails), more
    than delta(3) = 1.31e-24 itself, so the bracket of the default truncation was [~0, 2.3e-20]
    (upper end: the truncated mass as a top atom) and a lower end read off the top atom was
    2.29e-20 (unsound).  The pair is now built again deeper (clones.compose._exact_pair) and the
    lower end read off its dominated PLDs: both within 1 % (the accuracy contract) and inside the
    oracle's bounds."""
    br = mechanisms_brackets("delta", [3.0, 8.0])
    for eps, b in zip([3.0, 8.0], br):
        lo, hi = clones_1e4.delta(eps)
        assert b.lower <= hi and lo <= b.upper, (eps, b, lo, hi)
        assert b.accuracy_met and b.upper - b.lower <= 0.01 * b.upper, (eps, b)
    assert 1.2e-24 < br[0].lower and br[0].upper < 1.45e-24


def test_tiny_delta_eps_of_the_clones_pair_meets_its_accuracy(clones_1e4):
    """eps(1e-20) of the same pair was [2.52, 3.69] (the upper end from the truncated top atom;
    a lower end of 3.6930 from it was unsound): the exact delta is > 1e-20 at the lower end and
    <= 1e-20 at the upper end (oracle bounds), and the half-width meets the default accuracy."""
    b = mechanisms_brackets("epsilon", [1e-20])[0]
    assert clones_1e4.delta(b.lower)[1] > 1e-20, b
    assert clones_1e4.delta(b.upper)[0] <= 1e-20, b
    assert b.accuracy_met and b.limit is None and 2.68 < b.lower <= b.upper < 2.70, b


def mechanisms_brackets(verb, targets):
    from shuffle_lib import mechanism_brackets
    return mechanism_brackets("ldp-shuffle", verb, targets, 4, n=10_000, eps0=4)


def test_floor_refinement_reads_the_dominated_plds_for_its_lower_end():
    """koskela n = 11, eps0 = 10, K = 2: the floor refinement (top cut 1e-300) read the truncated
    tail's finite top atom as real, and delta(42.7078) had a lower end of 1.0e-40 against the exact
    7.3e-47.  The lower end now comes from the dominated PLDs, the upper from a deeper build:
    both certified, and the bracket meets its accuracy."""
    params = {"n": 11, "eps0": 10.0, "pair": "koskela"}
    oracle = Oracle(exact_pairs("ldp-shuffle", params), 2)
    check_delta("ldp-shuffle", params, 2, 42.7078, oracle)
    check_epsilon("ldp-shuffle", params, 2, 1e-40, oracle)
    br = evaluate.delta_brackets(build("ldp-shuffle", params, 2), [42.7078], 2)[0]
    assert br.upper - br.lower <= 0.01 * br.upper, br
