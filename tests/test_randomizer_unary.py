"""The unary encodings' split pair (shuffle_lib.mechanisms.randomizer.unary).

* its upper end >= the exact worst case of the shuffled SUE / OUE (tests/randomizer_oracle.py:
  every dataset, every differing pair; explicit matrices built here), one and two rounds, and
  its eps inverts the oracle;
* the pair's closed form against the oracle on the 2-bit randomiser R' of the theorem (every
  dataset of R', so the claim that all others at z is its worst case is checked too);
* the family brackets contain the exact value and the model takes the least upper end.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from randomizer_oracle import histogram_law, hockey, worst_delta
from shuffle_lib.mechanisms import randomizer as rz
from shuffle_lib.mechanisms.randomizer import unary

# the oracle's float sums are within ~1e-15 relative (tests/test_randomizer.py)
SLACK = 1e-12


def _unary_matrix(d, p1, p0):
    """Rows: inputs; columns: the 2^d bit vectors; bit x is 1 w.p. p1, the others w.p. p0."""
    outs = list(itertools.product((0, 1), repeat=d))
    return np.array([[math.prod((p1 if j == x else p0) if b else 1 - (p1 if j == x else p0)
                                for j, b in enumerate(o)) for o in outs] for x in range(d)])


def sue(d, e0):
    p1 = 1 / (1 + math.exp(-e0 / 2))
    return _unary_matrix(d, p1, 1 - p1)


def oue(d, e0):
    return _unary_matrix(d, 0.5, 1 / (math.exp(e0) + 1))


def split_randomiser(family, e0):
    """R' of the module docstring, built from p0, p1 (not from the library): rows x0, x1, z;
    columns (b0, b1) in {00, 01, 10, 11} and bot."""
    if family == "sue":
        p1 = 1 / (1 + math.exp(-e0 / 2))
    else:
        p1 = 0.5
    p0 = 1 / (1 + math.exp(e0 / 2)) if family == "sue" else 1 / (math.exp(e0) + 1)
    lam = (1 - p1) / (1 - p0)

    def b(p, x):
        return p if x else 1 - p
    cells = list(itertools.product((0, 1), repeat=2))
    x0 = [b(p1, u) * b(p0, w) for u, w in cells] + [0.0]
    x1 = [b(p0, u) * b(p1, w) for u, w in cells] + [0.0]
    z = [lam * b(p0, u) * b(p0, w) for u, w in cells] + [1 - lam]
    return np.array([x0, x1, z])


CASES = [("oue", 3, 1.0), ("oue", 3, 3.0), ("oue", 4, 2.0), ("sue", 3, 1.0), ("sue", 3, 3.0),
         ("sue", 4, 5.0)]


@pytest.mark.parametrize("family,d,e0", CASES)
def test_upper_end_bounds_the_exact_worst_case(family, d, e0):
    R = (sue if family == "sue" else oue)(d, e0)
    for n in range(1, 6 if d == 3 else 4):
        pair = unary.unary_pair(family, e0, n)
        # not eps = eps0: there the exact delta is 0 and the oracle's cells P - e^eps Q cancel to
        # ~1e-15, its own round-off
        for eps in (0.0, 0.1, 0.4, 0.8 * e0):
            exact = worst_delta(R, n, eps)
            assert exact <= unary.delta(pair, eps)[1] * (1 + SLACK) + 1e-15, (n, eps, exact)


def pair_worst_delta(R, n, eps):
    """The oracle's worst case over the others' inputs (any row) with the differing user at row
    0 or row 1 (both orders), from its histogram laws."""
    best = 0.0
    for others in itertools.combinations_with_replacement(range(R.shape[0]), n - 1):
        rest = [R[y] for y in others]
        laws = [histogram_law([R[x]] + rest, R.shape[1]) for x in (0, 1)]
        best = max(best, hockey(laws[0], laws[1], eps), hockey(laws[1], laws[0], eps))
    return best


@pytest.mark.parametrize("family,e0", [("oue", 1.0), ("oue", 3.0), ("sue", 2.0), ("sue", 5.0)])
def test_closed_form_is_the_split_randomisers_worst_case(family, e0):
    """The pair's (lower, upper) contain the exact worst case of R' over all its datasets (the
    others anywhere in {x0, x1, z}, the differing user at x0 or x1): the closed form is that
    worst case."""
    Rp = split_randomiser(family, e0)
    for n in range(1, 7):
        pair = unary.unary_pair(family, e0, n)
        for eps in (0.0, 0.2, 0.5 * e0, 0.9 * e0):
            exact = pair_worst_delta(Rp, n, eps)
            lo, hi = unary.delta(pair, eps)
            assert lo * (1 - SLACK) - 1e-15 <= exact <= hi * (1 + SLACK) + 1e-15, (n, eps)
            # n <= 6: a block per M, so the upper end is the closed form itself (its allowance
            # 1e-12 relative): the worst dataset is all others at z
            assert hi <= exact * (1 + 1e-9) + 1e-15, (n, eps)


def _delta_given_m(m, lam, p0, e0, eps):
    """The split pair's delta_M(eps) summed in full (no windows) from its definition in the
    module docstring: (lam / M) E[(S_0 - e^eps S_1)^+], S_x = M + (e^eps0 - 1) A_x, A_0, A_1
    i.i.d. Bin(M, p0)."""
    from scipy.stats import binom
    a = np.arange(m + 1)
    pa = binom.pmf(a, m, p0)
    S = m + math.expm1(e0) * a
    gap = np.maximum(S[:, None] - math.exp(eps) * S[None, :], 0.0)
    return lam / m * float(pa @ gap @ pa)


@pytest.mark.parametrize("family,e0,n", [("oue", 1.0, 300), ("oue", 3.0, 800), ("sue", 2.0, 500)])
def test_every_block_of_m_evaluated_at_once_matches_the_full_sum(family, e0, n):
    """One block per M (every M evaluated in one pass over their concatenated windows): the
    bracket holds E_M[delta_M] summed directly (M = 1 + Bin(n - 1, lam)), and its upper end is
    within the allowances of it (the windows leave out 1e-30 of each binomial, the sums 1e-12);
    delta_m alone gives each term."""
    from scipy.stats import binom
    pair = unary.unary_pair(family, e0, n)
    for eps in (0.0, 0.05, 0.2, 0.5 * e0):
        terms = [_delta_given_m(m, pair.lam, pair.p0, e0, eps) for m in range(1, n + 1)]
        exact = math.fsum(binom.pmf(m - 1, n - 1, pair.lam) * t
                          for m, t in zip(range(1, n + 1), terms))
        lo, hi = unary.delta(pair, eps, blocks=10 ** 6)
        assert lo * (1 - 1e-9) <= exact <= hi, (eps, lo, exact, hi)
        assert hi <= exact * (1 + 1e-9) + 1e-25, (eps, exact, hi)
        for m in (1, n // 3, n // 2):
            d, err = unary.delta_m(pair, m, eps)
            assert abs(d - terms[m - 1]) <= err + 1e-9 * terms[m - 1] + 1e-30, (m, d, terms[m - 1])


@pytest.mark.parametrize("family,e0", [("oue", 3.0), ("sue", 2.0)])
def test_epsilon_inverts_the_oracle(family, e0):
    R = (sue if family == "sue" else oue)(3, e0)
    for n, target in ((3, 0.3), (5, 0.1), (5, 0.01)):
        e = unary.upper_epsilon(unary.unary_pair(family, e0, n), target)
        assert worst_delta(R, n, e) <= target * (1 + SLACK)


@pytest.mark.parametrize("family,e0", [("oue", 3.0), ("sue", 3.0)])
def test_two_rounds_bound_the_exact_worst_case(family, e0):
    """The composed route (the split pair's PLD when it is the smaller) against the oracle's
    product laws, two rounds on the same data."""
    R = (sue if family == "sue" else oue)(3, e0)
    for n, eps in ((2, 1.0), (3, 2.0), (3, 4.0)):
        exact = worst_delta(R, n, eps, rounds=2)
        br = rz.delta_bracket(n, eps, compositions=2, family=family, eps0=e0, d=3)[0]
        assert br.lower <= exact * (1 + SLACK) + 1e-15 and exact <= br.upper * (1 + SLACK) + 1e-15


def test_upper_pld_dominates_one_round():
    """The PLD's hockey stick at one round >= the pair's closed-form upper end's lower side."""
    from shuffle_lib.core.pld import hockey_stick
    pair = unary.unary_pair("oue", 3.0, 2000)
    pld = unary.upper_pld(pair, 1, 1e-4)
    for eps in (0.2, 0.4, 0.8):
        lo, hi = unary.delta(pair, eps, blocks=10 ** 6)
        assert hockey_stick(pld, eps) >= lo * (1 - 1e-9)


@pytest.mark.parametrize("family,e0", [("oue", 3.0), ("sue", 3.0), ("oue", 5.0), ("sue", 5.0)])
def test_family_bracket_takes_the_least_upper_end(family, e0):
    n, delta = 10000, 1e-6
    br = rz.epsilon_bracket(n, delta, family=family, eps0=e0, d=100)[0]
    split = unary.upper_epsilon(unary.unary_pair(family, e0, n), delta)
    assert br.upper <= split * (1 + 1e-12)
    assert 0 < br.lower <= br.upper


def test_oue_deployment_case_is_narrower():
    """OUE d = 100, eps0 = 3, n = 1e4, delta = 1e-6: the split pair brings the upper end from
    the blanket pair's 0.1587 to 0.1554 (one round)."""
    br = rz.epsilon_bracket(10000, 1e-6, family="oue", eps0=3.0, d=100)[0]
    assert 0.150 < br.lower and br.upper < 0.1556
    assert (br.upper - br.lower) / br.lower < 0.03


@pytest.mark.parametrize("kw,msg", [(dict(family="krr", eps0=1.0, n=10), "family"),
                                    (dict(family="oue", eps0=0.0, n=10), "eps0"),
                                    (dict(family="oue", eps0=1.0, n=0), "n")])
def test_bad_parameters_are_refused(kw, msg):
    with pytest.raises(ValueError, match=msg):
        unary.unary_pair(**kw)



@pytest.mark.parametrize("e0", [1e-3, 0.5, 1.0, 3.0, 7.5, 20.0, 30.0])
def test_bit_probabilities_match_wang_et_al_at_50_digits(e0):
    """(p0, p1) of SUE and OUE against Wang et al. 2017, Sec. 4.3, in 50-digit arithmetic (SUE:
    p1 = e^(eps0/2) / (1 + e^(eps0/2)), p0 = 1 / (1 + e^(eps0/2)); OUE: p1 = 1/2, p0 =
    1 / (e^eps0 + 1)): each within 4 ulp, relative, up to eps0 = 30 (p0 ~ 3e-7 for SUE)."""
    import mpmath as mp
    with mp.workdps(50):
        h, e = mp.exp(mp.mpf(e0) / 2), mp.exp(mp.mpf(e0))
        want = {"sue": (1 / (1 + h), h / (1 + h)), "oue": (1 / (e + 1), mp.mpf(1) / 2)}
        for family, pair in want.items():
            got = unary.bit_probabilities(family, e0)
            for g, w in zip(got, pair):
                assert abs(mp.mpf(g) / w - 1) <= 4 * 2.0 ** -53, (family, e0, got)
    p0, p1 = unary.bit_probabilities("sue", e0)
    assert p0 + p1 == 1.0


@pytest.mark.parametrize("family,d,e0", [("sue", 3, 1.0), ("sue", 4, 2.5), ("oue", 3, 3.0),
                                         ("oue", 5, 0.7)])
def test_unary_matrix_is_the_encodings_matrix(family, d, e0):
    """unary.unary_matrix against the matrix built here bit by bit (columns in the order of
    itertools.product, bit 0 first: the library's column sum_j b_j 2^j), and its rows sum to 1."""
    R = unary.unary_matrix(family, d, e0)
    want = (sue if family == "sue" else oue)(d, e0)
    cols = [sum(b << j for j, b in enumerate(o)) for o in itertools.product((0, 1), repeat=d)]
    assert R.shape == (d, 2 ** d)
    np.testing.assert_allclose(R[:, cols], want, rtol=1e-13, atol=0)
    np.testing.assert_allclose(R.sum(axis=1), 1.0, rtol=1e-14)


@pytest.mark.parametrize("call,msg", [
    (lambda: unary.bit_probabilities("krr", 1.0), "family"),
    (lambda: unary.bit_probabilities("sue", 0.0), "eps0"),
    (lambda: unary.bit_probabilities("oue", 31.0), "eps0"),
    (lambda: unary.unary_matrix("oue", 0, 1.0), "d"),
    (lambda: unary.unary_matrix("oue", unary.MATRIX_MAX_D + 1, 1.0), "d"),
    (lambda: unary.unary_matrix("hr", 3, 1.0), "family")])
def test_bit_probabilities_and_matrix_refuse_bad_parameters(call, msg):
    with pytest.raises(ValueError, match=msg):
        call()

@pytest.mark.parametrize("family,e0", [("oue", 1.0), ("oue", 3.0), ("sue", 2.0), ("sue", 5.0)])
def test_lower_view_is_below_its_datasets_exact_delta(family, e0):
    """The binned view of the dataset (x, y*, ..., y*) against the oracle's exact delta of that
    dataset (d = 3, y* the third input): never above it (a post-processing), and within 5 % of it
    (few distinct S values at n <= 5, so the 400 bins merge little: a check that the view is the
    dataset's and not a weaker one)."""
    from shuffle_lib.core.pld import hockey_stick, pld_from_pmfs
    R = (sue if family == "sue" else oue)(3, e0)
    for n in range(2, 6):
        P, Q = unary.dataset_view(family, e0, n)
        plds = (pld_from_pmfs(P, Q), pld_from_pmfs(Q, P))
        rest = [R[2]] * (n - 1)
        laws = [histogram_law([R[x]] + rest, R.shape[1]) for x in (0, 1)]
        for eps in (0.0, 0.3, 0.6 * e0):
            exact = max(hockey(laws[0], laws[1], eps), hockey(laws[1], laws[0], eps))
            got = max(hockey_stick(pl, eps) for pl in plds)
            assert got <= exact * (1 + SLACK) + 1e-15, (n, eps)
            assert got >= 0.95 * exact, (n, eps, got, exact)


def _count_law(law, n_bits):
    """The law of the column counts (c_0, c_1) of bits 0 and 1, a post-processing of the
    histogram law (outputs indexed as in :func:`_unary_matrix`: bit j of output o is
    (o >> (n_bits - 1 - j)) & 1)."""
    out: dict[tuple[int, int], float] = {}
    for h, pr in law.items():
        c = tuple(sum(k for o, k in enumerate(h) if (o >> (n_bits - 1 - j)) & 1) for j in (0, 1))
        out[c] = out.get(c, 0.0) + pr
    return out


@pytest.mark.parametrize("family,e0", [("oue", 3.0), ("sue", 3.0), ("oue", 1.0)])
def test_column_counts_lose_what_the_shuffle_reveals(family, e0):
    """The shuffled reports are not reducible to the counts (c_x0, c_x1): for the dataset with
    the others at the third value, the counts' delta (a post-processing) is below the
    histogram's by more than the oracle's round-off, so a pair built from the counts alone
    cannot bound the shuffled encoding (module docstring)."""
    R = (sue if family == "sue" else oue)(3, e0)
    for n in (2, 3):
        rest = [R[2]] * (n - 1)
        laws = [histogram_law([R[x]] + rest, R.shape[1]) for x in (0, 1)]
        counts = [_count_law(law, 3) for law in laws]
        for eps in (0.3, 0.6):
            full, cnt = hockey(laws[0], laws[1], eps), hockey(counts[0], counts[1], eps)
            assert cnt <= full + 1e-15 and full - cnt > 1e-3, (n, eps, full, cnt)


def test_column_count_pair_is_below_a_certified_lower_end():
    """OUE d = 100, eps0 = 3, n = 1e4: the counts' pair (N + Bern(1/2), N + Bern(p0)) times its
    mirror, N ~ Bin(n - 1, p0) (the dataset with all others outside {x0, x1}), has
    delta(0.13) < 1e-6, while the certified lower end of the shuffled encoding at 0.13 (a
    post-processed view of a concrete dataset) is above 1e-6."""
    from scipy.stats import binom

    from shuffle_lib.core.pld import hockey_stick, pld_from_pmfs
    n, e0, eps = 10000, 3.0, 0.13
    p0 = 1 / (math.exp(e0) + 1)
    N = binom.pmf(np.arange(n + 1), n - 1, p0)
    up = np.append(0.0, N[:-1])
    a, b = 0.5 * up + 0.5 * N, p0 * up + (1 - p0) * N
    P, Q = np.outer(a, b).ravel(), np.outer(b, a).ravel()
    counts = math.fsum(np.maximum(P - math.exp(eps) * Q, 0.0))
    view = unary.dataset_view("oue", e0, n)
    lower = hockey_stick(pld_from_pmfs(*view), eps)
    assert counts < 1e-6 < lower, (counts, lower)


def test_worst_dataset_depends_on_eps():
    """SUE, d = 4, eps0 = 3, n = 5: all others at x1 is worse than all others at a third value
    at eps = 0.1 and better at eps = 1 (oracle), so no single dataset gives the worst case at
    every eps; the upper ends bound both."""
    e0, n = 3.0, 5
    R = sue(4, e0)

    def exact(others, eps):
        laws = [histogram_law([R[x]] + [R[y] for y in others], R.shape[1]) for x in (0, 1)]
        return max(hockey(laws[0], laws[1], eps), hockey(laws[1], laws[0], eps))
    at_x1, third = [1] * (n - 1), [2] * (n - 1)
    pair = unary.unary_pair("sue", e0, n)
    for eps, first in ((0.1, at_x1), (1.0, third)):
        worse, other = exact(first, eps), exact(third if first is at_x1 else at_x1, eps)
        assert worse > other + 1e-3, (eps, worse, other)
        assert worse <= unary.delta(pair, eps)[1] * (1 + SLACK) + 1e-15
        br = rz.delta_bracket(n, eps, family="sue", eps0=e0, d=4)[0]
        assert br.lower <= worse * (1 + SLACK) + 1e-15 and worse <= br.upper * (1 + SLACK)
