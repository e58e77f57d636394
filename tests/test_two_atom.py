"""The exact composition of two-atom PLDs (shuffle_lib.core.two_atom), as the accountant takes it
where the grid is out of reach: brackets against binomial sums in mpmath at 60 digits that never
call the library, both verbs, and an upper end that stays positive where the exact delta is below
the double range."""

import json
import math

import mpmath as mp
import pytest

from shuffle_lib import cli
from shuffle_lib.core import fourier, two_atom
from shuffle_lib.core.pld import pld_from_pmfs
from shuffle_lib.mechanisms.rr import rr_model

mp.mp.dps = 60


def binomial_delta(p, q, K, eps):
    """delta_{P/Q}(eps) of K rounds of the two-outcome pair (P, Q) (the doubles given, exactly):
    sum_j C(K, j) p1^j p0^(K-j) (1 - e^(eps - L_j))_+, L_j = j log(p1/q1) + (K-j) log(p0/q0)."""
    p0, p1, q0, q1 = (mp.mpf(float(x)) for x in (*p, *q))
    l0, l1, e = mp.log(p0 / q0), mp.log(p1 / q1), mp.mpf(eps)
    total = mp.mpf(0)
    for j in range(K + 1):
        loss = j * l1 + (K - j) * l0
        if loss > e:
            total += mp.binomial(K, j) * p1 ** j * p0 ** (K - j) * (1 - mp.e ** (e - loss))
    return total


def delta_both(p, q, K, eps):
    return max(binomial_delta(p, q, K, eps), binomial_delta(q, p, K, eps))


def rr_pair(eps0):
    m = rr_model(eps0)
    a, b = 1.0 / (1.0 + math.exp(-eps0)), 1.0 / (1.0 + math.exp(eps0))   # rr_pmfs' doubles
    return m, (a, b), (b, a)


PAIRS = {
    "rr-36.7": rr_pair(36.7368005696771),
    "near-deterministic": (None, (1 - 1e-16, 1e-16), (1e-16, 1 - 1e-16)),
}


@pytest.mark.parametrize("name", PAIRS)
@pytest.mark.parametrize("eps", [0.0, 36.0, 100.0, 36700.0, 36739.0])
def test_exact_two_atom_route_brackets_the_binomial_delta(name, eps):
    """K = 1000 rounds of a pair whose loss is ~+-37: a grid of ~1e9 points at the default
    accuracy (it took minutes); the exact route's bracket holds the binomial sum."""
    _, p, q = PAIRS[name]
    pq, qp = pld_from_pmfs(p, q), pld_from_pmfs(q, p)
    assert two_atom.applies([(pq, 1000)]) and fourier._two_atom([(pq, 1000)], [(qp, 1000)], None,
                                                                  None, 2e-4, {}) is not None
    exact = delta_both(p, q, 1000, eps)
    br = fourier.delta_bracket([(pq, 1000)], [(qp, 1000)], [eps])[0]
    assert br.lower <= exact <= br.upper, (br, exact)
    assert br.upper - br.lower <= 1e-6 * max(exact, 1e-300)


@pytest.mark.parametrize("delta", [1e-300, 1e-6, 0.5])
def test_exact_two_atom_route_brackets_eps(delta):
    """eps(delta) is bracketed when delta(upper) <= delta < delta(lower) for the exact sum (delta
    is non-increasing in eps)."""
    _, p, q = PAIRS["near-deterministic"]
    pq, qp = pld_from_pmfs(p, q), pld_from_pmfs(q, p)
    br = fourier.epsilon_bracket([(pq, 1000)], [(qp, 1000)], [delta])[0]
    assert math.isfinite(br.upper) and br.upper - br.lower < 1e-6 * br.upper
    assert delta_both(p, q, 1000, br.upper) <= delta
    assert br.lower == 0 or delta_both(p, q, 1000, br.lower) > delta


def test_rr_delta_below_the_double_range_has_a_positive_upper_end(capsys):
    """rr at eps0 = 0.0148, K = 1e6, eps = 700: the exact delta is ~4e-349, below the least
    positive double; the upper end is > 0 (the least positive double) and the lower end <= it."""
    eps0, K = 0.0148, 10 ** 6
    e0 = mp.mpf(eps0)
    a = 1 / (1 + mp.e ** -e0)
    j0 = int(mp.floor((700 / e0 + K) / 2)) + 1          # the first j whose loss exceeds 700
    exact = mp.fsum(mp.binomial(K, j) * a ** j * (1 - a) ** (K - j) * (1 - mp.e ** (700 - e0 * (2 * j - K)))
                    for j in range(j0, j0 + 3000))     # terms fall by > e^-1 each: the rest is nil
    assert 0 < exact < mp.mpf("1e-340")
    code = cli.main(["delta", "rr", "--eps0", str(eps0), "--eps", "700", "--compositions", str(K), "--json"])
    out = json.loads(capsys.readouterr().out)["results"][0]
    assert code == 0
    assert out["delta_lower"] <= exact <= out["delta_upper"] and 0 < out["delta_upper"] < 1e-300


def test_positive_floor_is_zero_where_no_loss_exceeds_eps():
    """At eps above every composed loss the exact delta is 0 and the floor leaves 0 alone; below
    the top loss it lifts an underflowed 0 to the least positive double."""
    pq = rr_model(1.0).upper[0].pq[0][0]
    comps = [(pq, 10)]
    assert two_atom.positive_floor(0.0, comps, 10.5) == 0.0
    assert two_atom.positive_floor(0.0, comps, 9.5) == two_atom.TINY
    assert two_atom.positive_floor(0.25, comps, 9.5) == 0.25


def test_the_exact_route_refuses_more_atoms_than_its_limit():
    pair = rr_model(1.0).upper[0]
    pq, qp = pair.pq[0][0], pair.qp[0][0]
    with pytest.raises(ValueError, match="exact two-atom composition"):
        two_atom.composed([(pq, 3000), (qp, 3000)], 0.0)
