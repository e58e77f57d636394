"""Edge cases of the grid accountant as named regression tests, against exact oracles.

Every input here is a double, i.e. a dyadic rational, so where delta is a pure +inf mass (every
finite composed loss below eps) the oracle is exact in ``fractions.Fraction``: the composed +inf
mass of K rounds is T^K - F^K, T the total and F the finite P-mass of one round.  Where finite
atoms count, the oracle is a sandwich computed without the accountant: the losses rounded up
(down) onto a grid of step 1e-3, composed by direct (non-FFT) convolution of non-negative
numbers, whose rounding is relative, bound the exact delta above (below) by monotonicity of
(1 - e^{eps - s})_+ in s (Koskela et al. 2021 Thm 5).
"""

import math
from fractions import Fraction

import numpy as np
import pytest

import shuffle_lib as sl
from shuffle_lib import mechanisms
from shuffle_lib.core import evaluate
from shuffle_lib.core.fourier import delta_bracket, epsilon_bracket


def exact_inf_mass(pld, K):
    """P-mass at +inf of K rounds, exactly: T^K - F^K in rationals."""
    a = Fraction(pld.inf_mass)
    fin = sum((Fraction(float(x)) for x in pld.probs), Fraction(0))
    return (fin + a) ** K - fin ** K


def x_pair(x):
    return [1.0 - x, x], [1.0, 0.0]


def brackets(p, q, K, verb, target):
    pq, qp = sl.pld_from_pmfs(p, q), sl.pld_from_pmfs(q, p)
    fn = delta_bracket if verb == "delta" else epsilon_bracket
    return fn([(pq, K)], [(qp, K)], [target])[0], pq, qp


@pytest.mark.parametrize("x", [1e-13, 3e-16, 1e-17])
def test_tiny_inf_mass_composed_twice_delta(x):
    """p = [1-x, x], q = [1, 0], K = 2, eps = 1: delta is the +inf mass 2x - x^2 (regression: relative
    error 3e-4 at 1e-13, 11 % at 3e-16, and [0, 0] at 1e-17 where the exact value is 2e-17)."""
    p, q = x_pair(x)
    br, pq, qp = brackets(p, q, 2, "delta", 1.0)
    exact = max(exact_inf_mass(pq, 2), exact_inf_mass(qp, 2))   # finite losses are <= x < 1 = eps
    assert max(qp.losses) < 1.0 and max(pq.losses) < 1.0
    assert Fraction(br.lower) <= exact <= Fraction(br.upper)
    assert br.upper - br.lower <= 1e-9 * float(exact)          # and tight, not merely [0, 1]


@pytest.mark.parametrize("x", [1e-13, 3e-16, 1e-17])
def test_tiny_inf_mass_no_finite_eps_below_it(x):
    """delta below the composed +inf mass: no finite eps (regression: a finite eps came back)."""
    p, q = x_pair(x)
    exact = exact_inf_mass(sl.pld_from_pmfs(p, q), 2)
    br = brackets(p, q, 2, "epsilon", float(exact) / 2)[0]
    assert br.lower == br.upper == math.inf


def test_dyadic_pair_exact_in_rationals():
    """p = [1/4, 3/4 - 2^-30, 2^-30], q = [1/4, 3/4, 0], K = 2, eps = 1: delta = 2^-29 - 2^-60
    exactly (regression: both ends 2^-29, relative error 4.7e-10)."""
    a = 2.0 ** -30
    p, q = [0.25, 0.75 - a, a], [0.25, 0.75, 0.0]
    assert Fraction(sum(Fraction(x) for x in p)) == 1
    br, pq, qp = brackets(p, q, 2, "delta", 1.0)
    exact = exact_inf_mass(pq, 2)
    assert exact == 1 - (1 - Fraction(a)) ** 2
    assert Fraction(br.lower) <= exact <= Fraction(br.upper)
    assert br.upper - br.lower <= 1e-11 * float(exact)


KRR = dict(n=225, gamma=0.5, k=4)


@pytest.fixture(scope="module")
def krr_model():
    return mechanisms.get("krr-strong").build(**KRR)


def test_krr_strong_two_rounds_delta_is_the_inf_mass(krr_model):
    """delta krr-strong n=225 gamma=0.5 k=4, eps=11.823, K=2: every finite composed loss is below
    eps, so delta is the exact +inf mass (regression: lower end 1.02363e-13 above the exact
    1.022831e-13)."""
    pld, qp = krr_model.upper[0].plds()
    assert qp is pld and 2 * float(pld.losses[-1]) < 11.823
    exact = exact_inf_mass(pld, 2)
    br = evaluate.delta_brackets(krr_model, [11.823], compositions=2)[0]
    assert Fraction(br.lower) <= exact <= Fraction(br.upper)
    assert br.upper - br.lower <= 0.01 * float(exact)


def _three_round_delta(pld, eps):
    """The exact delta_{P/Q}(eps) of 3 rounds, up to float rounding: the +inf mass in rationals plus
    sum over atom pairs (i, j) of p_i p_j sum_{k: L_k > eps - L_i - L_j} p_k (1 - e^{eps - L_i - L_j -
    L_k}), the inner sum read from suffix sums of p and p e^{-L}.  Each inner sum is a difference of
    two such sums, off by a few u times the first; over all pairs that is a few u times
    P[L_1 + L_2 + L_3 > eps - 1] < 1e-31 here, returned as the allowance."""
    L, P = pld.losses, pld.probs
    t0 = np.concatenate([np.cumsum(P[::-1])[::-1], [0.0]])
    t1 = np.concatenate([np.cumsum((P * np.exp(-L))[::-1])[::-1], [0.0]])
    fin, slack = [], []
    for rows in np.array_split(np.arange(L.size), max(1, L.size // 256)):
        s2 = L[rows, None] + L[None, :]
        idx = np.searchsorted(L, eps - s2, side="right")
        w = P[rows, None] * P[None, :]
        fin.append(float(np.sum(w * (t0[idx] - np.exp(eps - s2) * t1[idx]))))
        slack.append(float(np.sum(w * t0[idx])))
    return float(exact_inf_mass(pld, 3)) + math.fsum(fin), 8 * 2.0 ** -53 * math.fsum(slack) + 1e-30


def test_krr_strong_three_rounds_eps_is_finite(krr_model):
    """epsilon krr-strong n=225 gamma=0.5 k=4, K=3, delta=1.5348e-13: delta(inf) = 1.53425e-13 is
    below the target, so eps is finite (regression: eps_lower = inf).  Each end is checked against
    the exact delta of three rounds (the bracket, 4e-4 wide, is narrower than the 3e-3 a binned
    sandwich of step 1e-3 resolves)."""
    target = 1.5348e-13
    pld = krr_model.upper[0].plds()[0]
    assert exact_inf_mass(pld, 3) < Fraction(target)
    br = evaluate.epsilon_brackets(krr_model, [target], compositions=3)[0]
    assert math.isfinite(br.lower) and math.isfinite(br.upper) and br.lower <= br.upper
    d_up, err_up = _three_round_delta(pld, br.upper)
    assert d_up + err_up <= target
    if br.lower > 0.0:
        d_lo, err_lo = _three_round_delta(pld, br.lower)
        assert d_lo - err_lo > target


def test_many_rounds_of_an_inf_mass_pair_answer_without_a_grid():
    """custom pair with +inf mass at K = 1000 (regression: grew to 7-14 GB): delta(inf) of the
    composition, computed exactly, already answers eps = inf and delta in [~1, 1]."""
    p, q = [0.5, 0.3, 0.2], [0.6, 0.4, 0.0]
    pq, qp = sl.pld_from_pmfs(p, q), sl.pld_from_pmfs(q, p)
    assert epsilon_bracket([(pq, 1000)], [(qp, 1000)], [1e-6])[0] == (math.inf, math.inf)
    br = delta_bracket([(pq, 1000)], [(qp, 1000)], [1.0])[0]
    assert br.upper == 1.0 and br.lower >= 1 - 1e-11


def test_full_support_pair_at_a_million_rounds_is_refused_above_the_memory_limit(monkeypatch):
    """K = 1e6 of a full-support pair (regression: returned [0, 278647]): under a small limit the grid
    is refused before it is allocated, with what it would need.  Three outcomes: a two-outcome
    pair is composed exactly as a binomial instead (tests/test_two_atom.py)."""
    from shuffle_lib.core import grid
    monkeypatch.setattr(grid, "MEMORY_LIMIT", 1e8)
    p, q = [0.5, 0.3, 0.2], [0.4, 0.3, 0.3]
    with pytest.raises(ValueError, match="GB"):
        delta_bracket([(sl.pld_from_pmfs(p, q), 10 ** 6)], [(sl.pld_from_pmfs(q, p), 10 ** 6)], [1.0])


@pytest.mark.parametrize("accuracy", [4e-4, 1e-4])
def test_custom_pair_meets_its_accuracy(accuracy):
    """A 3-outcome pair at K = 10 (regression: half-width 1.2e-3 at accuracy 2e-4): the eps
    bracket's half-width is within the accuracy asked, and contains the exact eps."""
    import exact_oracle as oracle
    p, q = [0.5, 0.3, 0.2], [0.2, 0.3, 0.5]
    br = epsilon_bracket([(sl.pld_from_pmfs(p, q), 10)], [(sl.pld_from_pmfs(q, p), 10)], [1e-6],
                         accuracy=accuracy)[0]
    assert (br.upper - br.lower) / 2 <= accuracy * (1 + 1e-6)   # + the certifying search's 1e-12 steps
    assert br.lower <= oracle.epsilon(p, q, 10, 1e-6) <= br.upper


# --- The adversarial suite: hypothesis strategies aimed at the edges, against an exact oracle --------
#
# The oracle is exact for the doubles given: delta_{P/Q}(eps) = sum over the K-fold outcomes of
# max(P(c) - e^eps Q(c), 0) (Koskela et al. 2021 Thm 5, the hockey stick on the product pair), enumerated over
# count vectors c (a multinomial) in mpmath at 90 digits, where every product of K <= 4 doubles and
# its multinomial coefficient is exact and only e^eps is rounded (at 1e-90).  Its cases run in the
# default profile (CI budget); ``pytest --hypothesis-profile=deep`` (tests/conftest.py) runs each
# with 25 times as many.

import itertools  # noqa: E402

import mpmath  # noqa: E402
from adversarial_common import examples  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


def oracle_delta(p, q, K, eps):
    """Exact (to 1e-80) max(delta_{P/Q}, delta_{Q/P})(eps) of K rounds of the pair of doubles p, q."""
    with mpmath.workdps(90):
        e = mpmath.exp(mpmath.mpf(eps))
        P = [mpmath.mpf(x) for x in p]
        Q = [mpmath.mpf(x) for x in q]
        one, two = mpmath.mpf(0), mpmath.mpf(0)
        for cuts in itertools.combinations(range(K + len(p) - 1), len(p) - 1):
            c = [b - a - 1 for a, b in zip((-1,) + cuts, cuts + (K + len(p) - 1,))]
            coef = math.factorial(K) // math.prod(math.factorial(x) for x in c)
            a = coef * mpmath.fprod(x ** k for x, k in zip(P, c))
            b = coef * mpmath.fprod(x ** k for x, k in zip(Q, c))
            one += max(a - e * b, 0)
            two += max(b - e * a, 0)
        return max(one, two)


def mass_offset(p, q, K):
    """(1 + g)^K - 1 with g = max(|sum p - 1|, |sum q - 1|), exactly, plus 1e-80 for the oracle's
    own rounding: the given doubles sum to 1 only within an ulp when a mass is tiny, and a bracket
    is certified for the probability pairs within that distance (Koskela et al. 2021 Thm 5 is stated for
    distributions); K rounds of a measure of mass 1 + g have mass (1 + g)^K.  (K g alone missed the
    g^2 term: q = [0.125 + 2^-55, 0, 0.875], K = 2 has delta(0) = 2g + g^2, found by the deep run.)"""
    gap = max(abs(sum(map(Fraction, p)) - 1), abs(sum(map(Fraction, q)) - 1))
    off = (1 + gap) ** K - 1
    with mpmath.workdps(90):                        # at 15 digits the quotient's rounding (1e-33 here) > g^2
        return mpmath.mpf(off.numerator) / off.denominator + mpmath.mpf(10) ** -80


def _mass():
    """A probability aimed at the edges: 0, tiny (down to 1e-300), near 1, dyadic, or plain."""
    return st.one_of(st.just(0.0), st.floats(1e-300, 1e-12), st.floats(1e-12, 1.0),
                     st.integers(1, 60).map(lambda j: 2.0 ** -j),
                     st.integers(1, 60).map(lambda j: 1.0 - 2.0 ** -j))


@st.composite
def edge_pairs(draw):
    """(p, q): 1-4 outcomes, zeros on either side, tiny and near-1 masses, and near-identical
    pairs (q = p moved by a few ulps, the PMF rounding of item 2)."""
    m = draw(st.integers(1, 4))

    def pmf():
        xs = [draw(_mass()) for _ in range(m - 1)]
        if math.fsum(xs) > 1.0:
            xs = [x / (2 * math.fsum(xs)) for x in xs]
        return xs + [max(0.0, 1.0 - math.fsum(xs))]
    p = pmf()
    if draw(st.booleans()):
        q = list(p)
        i, j = draw(st.integers(0, m - 1)), draw(st.integers(0, m - 1))
        for _ in range(draw(st.integers(1, 4))):
            q[i] = np.nextafter(q[i], 1.0)
            q[j] = np.nextafter(q[j], 0.0) if q[j] > 0 else q[j]
        q = [float(x) for x in q]
    else:
        q = pmf()
    order = draw(st.permutations(range(m)))
    return [p[i] for i in order], [q[i] for i in order]


def _near_ties(pld_pairs, K, draw):
    """eps at or beside a K-fold composed loss (an exact tie within rounding), or anywhere in [0, 5]."""
    losses = [float(x) for pl in pld_pairs for x in pl.losses if x > 0]
    if losses and draw(st.booleans()):
        base = sum(draw(st.sampled_from(losses)) for _ in range(draw(st.integers(1, K))))
        return max(0.0, base * (1 + draw(st.sampled_from([0.0, 1e-15, -1e-15, 1e-12, -1e-12, 1e-9, -1e-9]))))
    return draw(st.floats(0.0, 5.0))


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edge_pairs(), st.integers(1, 3), st.data())
def test_adversarial_custom_delta_brackets_the_exact_value(pair, K, data):
    """Every delta bracket of a custom pair contains the exact delta of the doubles given."""
    p, q = pair
    pq, qp = sl.pld_from_pmfs(p, q), sl.pld_from_pmfs(q, p)
    eps = _near_ties([pq, qp], K, data.draw)
    br = delta_bracket([(pq, K)], [(qp, K)], [eps])[0]
    exact, off = oracle_delta(p, q, K, eps), mass_offset(p, q, K)
    assert br.lower <= exact + off and exact - off <= br.upper, (p, q, K, eps, br, float(exact))


@settings(max_examples=examples(8), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(edge_pairs(), st.integers(1, 3), st.sampled_from([1e-1, 1e-3, 1e-6, 1e-12, 1e-17, 1e-30]))
def test_adversarial_custom_epsilon_brackets_the_exact_value(pair, K, target):
    """Every eps bracket [lo, up]: the exact delta(up) <= target and delta(lo) > target (or lo = 0)."""
    p, q = pair
    pq, qp = sl.pld_from_pmfs(p, q), sl.pld_from_pmfs(q, p)
    br = epsilon_bracket([(pq, K)], [(qp, K)], [target])[0]
    assert br.lower <= br.upper
    off = mass_offset(p, q, K)
    if math.isfinite(br.upper):
        assert oracle_delta(p, q, K, br.upper) - off <= target, (p, q, K, target, br)
    if br.lower > 0 and math.isfinite(br.lower):
        assert oracle_delta(p, q, K, br.lower) + off > target, (p, q, K, target, br)
    if br.lower == math.inf:      # no finite eps: the exact delta stays above target at any eps
        assert oracle_delta(p, q, K, 700.0) + off > target, (p, q, K, target, br)


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.floats(1e-6, 1e-2), st.floats(1e-2, 49.0), st.sampled_from([0.3, math.log(3), 20.0, 49.0])),
       st.integers(1, 4), st.data())
def test_adversarial_rr_at_its_ties(eps0, K, data):
    """Randomised response through the CLI's route, eps at j eps0 (the composed losses, exact ties:
    the regression 'delta rr --eps0 0.3 --eps 0.3' gave [3.2e-17, 3.2e-17], exact 0), beside them, or anywhere.
    Oracle: the exact binomial sum of rr_delta_exact's form, in mpmath from eps0 itself."""
    j = data.draw(st.integers(0, K))  # j = K: the top tie, answered by fourier._near_top_delta
    eps = max(0.0, j * eps0 * (1 + data.draw(st.sampled_from([0.0, 1e-15, -1e-15, 1e-10, -1e-10]))))
    if data.draw(st.booleans()):
        eps = data.draw(st.floats(0.0, K * eps0 + 1))
    br = evaluate.delta_brackets(mechanisms.get("rr").build(eps0=eps0), [eps], K)[0]
    with mpmath.workdps(60):
        a = 1 / (1 + mpmath.exp(-mpmath.mpf(eps0)))           # P(report the truth)
        exact = mpmath.fsum(mpmath.binomial(K, i) * max(a ** i * (1 - a) ** (K - i) - mpmath.exp(mpmath.mpf(eps))
                                                        * a ** (K - i) * (1 - a) ** i, 0) for i in range(K + 1))
    assert br.lower <= exact * (1 + mpmath.mpf(10) ** -40) and exact <= br.upper * (1 + 1e-12) + 1e-300, \
        (eps0, K, eps, br, float(exact))


def test_near_identical_pair_has_no_privacy_loss_below_its_rounding():
    """item 2 (PMF rounding): q is p moved by one ulp each way; the exact delta of the doubles is
    2^-53 at eps = 0 and 0 from eps = log1p(2^-52) on; no lower end may count more."""
    p, q = [0.5, 0.5], [0.5 + 2.0 ** -53, 0.5 - 2.0 ** -53]
    assert Fraction(q[0]) + Fraction(q[1]) == 1
    pq, qp = sl.pld_from_pmfs(p, q), sl.pld_from_pmfs(q, p)
    for eps in (0.0, 1e-16, 2.2e-16, 2.3e-16, 4.5e-16, 1e-15, 1.0):
        br = delta_bracket([(pq, 1)], [(qp, 1)], [eps])[0]
        exact = oracle_delta(p, q, 1, eps)
        assert br.lower <= exact <= br.upper, (eps, br, float(exact))


def test_rr_two_rounds_at_the_top_tie_has_lower_end_zero():
    """rr at eps0 = 2^-7, K = 2, eps = 2 eps0: every composed loss is <= eps, the exact delta 0; the
    lower end was 5.6e-17 from the rounded top atom (found by test_adversarial_rr_at_its_ties); the
    grid-free top-atom cap now reads eps + K loss_slack."""
    br = evaluate.delta_brackets(mechanisms.get("rr").build(eps0=2.0 ** -7), [2.0 ** -6], 2)[0]
    assert br.lower == 0.0 < br.upper


def test_refinement_beyond_the_memory_limit_returns_the_last_certified_bracket():
    """Found by the deep run: delta_bracket refines its grid (accuracy / 4 per step) while a bracket
    is loose; a refinement whose grid would exceed the memory limit raised instead of returning the
    bracket it already had.  rr at eps0 = 49, K = 3, eps = 147 (the top tie, exact 0), and a custom
    pair at eps beside its largest loss 27.2536, K = 3."""
    br = evaluate.delta_brackets(mechanisms.get("rr").build(eps0=49.0), [147.0], 3)[0]
    assert br.lower == 0.0 <= br.upper
    p, q = [0.0, 0.9999999999992792, 7.207084573358905e-13], [0.0, 0.5058622131941302, 0.4941377868058698]
    eps = 27.253600818132522 * (1 - 1e-15)
    br = delta_bracket([(sl.pld_from_pmfs(p, q), 3)], [(sl.pld_from_pmfs(q, p), 3)], [eps])[0]
    exact, off = oracle_delta(p, q, 3, eps), mass_offset(p, q, 3)
    assert br.lower <= exact + off and exact - off <= br.upper, (br, float(exact))


def test_mass_offset_counts_the_square_term():
    """The oracle's allowance for PMFs that sum to 1 only within an ulp is (1 + g)^K - 1, not K g:
    q = [0.125 + 2^-55, 0, 0.875] (g = 2^-55), K = 2: delta(0) = 2 g + g^2 exactly (the deep run's
    second find), and the bracket [0, 0] is right for the normalised pair."""
    p, q = [0.125, 0.0, 0.875], [0.12500000000000003, 0.0, 0.875]
    g = Fraction(q[0]) - Fraction(1, 8)
    exact = oracle_delta(p, q, 2, 0.0)
    with mpmath.workdps(90):
        assert exact == mpmath.mpf((2 * g + g * g).numerator) / (2 * g + g * g).denominator
        assert exact - mass_offset(p, q, 2) <= 0
    br = delta_bracket([(sl.pld_from_pmfs(p, q), 2)], [(sl.pld_from_pmfs(q, p), 2)], [0.0])[0]
    assert br.lower <= exact + mass_offset(p, q, 2) and exact - mass_offset(p, q, 2) <= br.upper


def test_grid_free_caps_carry_the_loss_rounding():
    """Found by the second deep run: p = [1/16, 0, 3/4, 3/16], q moved by an ulp on two entries.
    Every loss log P - log Q rounds to exactly 0, and the Chernoff cap of delta_bracket read the
    rounded losses unshifted: [0, 0] at eps = 0, K = 2, where the exact delta of the doubles is
    5.2e-17 (more than the allowance (1 + g)^2 - 1 for q's sum).  The caps now read eps -/+ K
    loss_slack, as the one-round path does."""
    p, q = [0.0625, 0.0, 0.75, 0.1875], [0.06250000000000001, 0.0, 0.75, 0.18749999999999997]
    assert max(sl.pld_from_pmfs(p, q).losses.max(), sl.pld_from_pmfs(q, p).losses.max()) == 0.0
    br = delta_bracket([(sl.pld_from_pmfs(p, q), 2)], [(sl.pld_from_pmfs(q, p), 2)], [0.0])[0]
    exact, off = oracle_delta(p, q, 2, 0.0), mass_offset(p, q, 2)
    assert exact - off > 0                                  # the case is not covered by the allowance
    assert br.lower <= exact + off and exact - off <= br.upper, (br, float(exact))


def test_grid_free_eps_caps_carry_the_loss_rounding():
    """The eps path's twin of the test above: the Chernoff cap of epsilon_bracket read the same
    rounded-to-0 losses and answered an upper end of 1e-300 at K = 2, delta = 1e-17, where the
    exact delta of the doubles at that eps is 2.4e-17 above the target even after the allowance
    for q's sum.  _cap_eps now moves the Chernoff end up and the top-atom end down by K loss_slack."""
    p, q = [0.0625, 0.0, 0.75, 0.1875], [0.06250000000000001, 0.0, 0.75, 0.18749999999999997]
    off = mass_offset(p, q, 2)
    for target in (1e-17, 2e-17):
        br = epsilon_bracket([(sl.pld_from_pmfs(p, q), 2)], [(sl.pld_from_pmfs(q, p), 2)], [target])[0]
        assert oracle_delta(p, q, 2, br.upper) - off <= target, (target, br)
        assert br.lower == 0.0 or oracle_delta(p, q, 2, br.lower) + off > target, (target, br)
