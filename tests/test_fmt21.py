"""Comparisons (shuffle_lib.mechanisms.clones.fmt21): FMT21 closed form, FMT21's numerical method, Erlingsson et al."""

import math

import pytest
import sympy as sp

from shuffle_lib.mechanisms import clones
from shuffle_lib.mechanisms.clones import fmt21


def test_closed_form_symbolic_and_upper():
    n, eps0, delta = sp.symbols("n varepsilon_0 delta", positive=True)
    e = sp.exp(eps0)
    expr = sp.log(1 + (e - 1) / (e + 1) * (8 * sp.sqrt(e * sp.log(4 / delta)) / sp.sqrt(n) + 8 * e / n))
    f = sp.lambdify((n, eps0, delta), expr)
    for nn, e0, d in [(10 ** 5, 1.0, 1e-6), (10 ** 6, 4.0, 1e-8), (10 ** 4, 0.5, 1e-5)]:
        assert fmt21.fmt21_closed_form(nn, e0, d) == pytest.approx(f(nn, e0, d), rel=1e-13)
        # an upper bound on the tight eps of the pair it was derived from
        assert fmt21.fmt21_closed_form(nn, e0, d) >= clones.epsilon_bracket_single(nn, e0, d).upper


def test_closed_form_validity_condition():
    with pytest.raises(ValueError, match="eps0 must be <="):
        fmt21.fmt21_closed_form(10 ** 4, 4.0, 1e-6)   # log(1e4 / (16 log 2e6)) = 3.76 < 4


def test_feldman_method_brackets_exact():
    for n, e0, eps in [(10 ** 4, 4.0, 0.5), (10 ** 5, 1.0, 0.05), (3000, 2.0, 0.3)]:
        fm = fmt21.feldman_delta(n, e0, eps)
        ex = clones.delta_bracket_single(n, e0, eps)
        assert fm.lower <= ex.upper and ex.lower <= fm.upper
    fe = fmt21.feldman_epsilon(10 ** 4, 4.0, 1e-6, num_iterations=12)
    ex = clones.epsilon_bracket_single(10 ** 4, 4.0, 1e-6)
    assert fe.lower <= ex.upper and ex.lower <= fe.upper
    with pytest.raises(ValueError, match="pair"):
        fmt21.feldman_delta(100, 1.0, 0.1, pair="koskela")


def test_erlingsson_is_an_upper_bound_where_it_applies():
    for n, e0, d in [(10 ** 4, 0.4, 1e-6), (10 ** 5, 0.2, 1e-8)]:
        er = fmt21.erlingsson_epsilon(n, e0, d)
        assert er == pytest.approx(12 * e0 * math.sqrt(math.log(1 / d) / n))
        assert er >= clones.epsilon_bracket_single(n, e0, d).upper
    for bad in (dict(n=500), dict(eps0=0.6), dict(delta=0.5)):
        args = dict(n=10 ** 4, eps0=0.3, delta=1e-6) | bad
        with pytest.raises(ValueError, match=list(bad)[0]):
            fmt21.erlingsson_epsilon(**args)


def _fmt21_formula(n, eps0, delta):
    """FMT21 Thm 3.1's eps as printed, with no validity condition (sympy, independent of the library)."""
    N, e0, d = sp.symbols("n varepsilon_0 delta", positive=True)
    e = sp.exp(e0)
    expr = sp.log(1 + (e - 1) / (e + 1) * (8 * sp.sqrt(e * sp.log(4 / d)) / sp.sqrt(N) + 8 * e / N))
    return float(expr.subs({N: n, e0: eps0, d: delta}))


def test_closed_form_validity_condition_paper_and_code_forms():
    """FMT21 Thm 3.1 states eps0 <= log(n/(16 log(2/delta))); the authors' code uses log(4/delta)
    (apple/ml-shuffling-amplification issue 1).  Which makes the closed form an upper bound?  On
    n in {1e3, 1e4, 1e5} x delta in {1e-6, 1e-9}, at eps0 just below the code's boundary b4, between
    the two boundaries, and just above the paper's b2, the formula is >= the certified upper end of
    the clones pair's eps (which dominates every eps0-LDP shuffler): both conditions make it an
    upper bound, and the band between them is safe.  It is not safe for every eps0: 3 above b2 it
    falls below the pair's certified lower end, so this comparison can fail.  The library accepts
    eps0 up to b2 (the paper's form) and refuses beyond it."""
    for n in (10 ** 3, 10 ** 4, 10 ** 5):
        for delta in (1e-6, 1e-9):
            b2 = math.log(n / (16 * math.log(2 / delta)))
            b4 = math.log(n / (16 * math.log(4 / delta)))
            assert b4 < b2
            for eps0 in (b4 - 0.05, (b4 + b2) / 2, b2 + 0.05):
                closed = _fmt21_formula(n, eps0, delta)
                assert closed >= clones.epsilon_bracket_single(n, eps0, delta).upper, (n, delta, eps0)
                if eps0 <= b2:
                    assert fmt21.fmt21_closed_form(n, eps0, delta) == pytest.approx(closed, rel=1e-12)
                else:
                    with pytest.raises(ValueError, match="eps0"):
                        fmt21.fmt21_closed_form(n, eps0, delta)
            assert _fmt21_formula(n, b2 + 3, delta) < clones.epsilon_bracket_single(n, b2 + 3, delta).lower
