"""Compositions of clones-pair shufflers: certified brackets through the Fourier accountant.

Non-adaptive rounds (seed 000 Thm 6) and adaptive ones (seed 001 Cor. 3: the product of
dominating pairs dominates the adaptive composition, Zhu et al. 2021 Thm 10) have the same
bound; heterogeneous rounds (n and eps0 varying, seed 001 Sec. 3) compose different PLDs.
Re-exported as ``clones.delta_bracket`` and ``clones.epsilon_bracket``.
"""

from . import _validate as v
from .clones import delta_bracket_single, epsilon_bracket_single
from .fourier import Bracket


def _bounding_plds(n, eps0, pair, k, accuracy, max_atoms=10_000_000):
    """(PLD for the upper side, PLD for the lower side) of one round.

    Exact atoms with the dropped mass (<= 1e-17) as a top atom if few enough (one PLD serves
    both sides, see :mod:`shuffle_lib.clone_pld`); else the exact atoms rounded up and down onto
    a grid of step accuracy / (4 k), binned in chunks (O(#atoms)); beyond 4e8 atoms the grid
    built from binomial tails (O(#s x #bins)).
    """
    from .clone_pld import clone_pld, clone_pld_binned, clone_pld_grid
    try:
        pl = clone_pld(n, eps0, pair, 1e-18, "top", max_atoms)[0]
        return pl, pl
    except ValueError as err:
        if "max_atoms" not in str(err):
            raise
    h = accuracy / (4.0 * k)
    try:
        return clone_pld_binned(n, eps0, h, pair)
    except ValueError as err:
        if "max_atoms" not in str(err):
            raise
    return clone_pld_grid(n, eps0, h, "upper", pair)[0], clone_pld_grid(n, eps0, h, "lower", pair)[0]


def _composed(rounds, pair, accuracy):
    """rounds: [(n, eps0, count), ...] -> (composed upper side, composed lower side)."""
    from .fourier import compose
    if not rounds:
        raise ValueError("rounds must hold at least one (n, eps0, count) triple.")
    total = sum(v.integer("count", c, lo=1, hi=10 ** 7) for _, _, c in rounds)
    up, low = [], []
    for n, eps0, c in rounds:
        u, l = _bounding_plds(n, eps0, pair, total, accuracy)
        up.append((u, c))
        low.append((l, c))
    cu = compose(up, accuracy=accuracy)
    same = all(x[0] is y[0] for x, y in zip(up, low))
    return cu, (cu if same else compose(low, accuracy=accuracy))


def delta_bracket(n, eps0, eps, compositions=1, pair="fmt21", accuracy=2e-4, rounds=None):
    """Certified Brackets for delta(eps) of `compositions` rounds (adaptive: seed 001 Cor. 3).

    One round: :func:`delta_bracket_single` (exact to ~1e-12).  Several: the Fourier accountant
    on the PLDs of :func:`_bounding_plds` (both directions share one PLD).  ``rounds=[(n, eps0,
    count), ...]`` gives a heterogeneous composition (n and eps0 varying per round).
    """
    from .fourier import delta_bracket_one
    eps = v.reals("eps", eps, lo=0.0)
    if rounds is None:
        k = v.integer("compositions", compositions, lo=1, hi=10 ** 7)
        if k == 1:
            return [delta_bracket_single(n, eps0, e, pair) for e in eps]
        rounds = [(n, eps0, k)]
    cu, cl = _composed(rounds, pair, accuracy)
    return [Bracket(delta_bracket_one(cl, e).lower, delta_bracket_one(cu, e).upper) for e in eps]


def epsilon_bracket(n, eps0, delta, compositions=1, pair="fmt21", accuracy=2e-4, rounds=None):
    """Certified Brackets for eps(delta) of `compositions` rounds; see :func:`delta_bracket`."""
    from .fourier import epsilon_bracket_one
    delta = v.reals("delta", delta, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    if rounds is None:
        k = v.integer("compositions", compositions, lo=1, hi=10 ** 7)
        if k == 1:
            return [epsilon_bracket_single(n, eps0, d, pair) for d in delta]
        rounds = [(n, eps0, k)]
    cu, cl = _composed(rounds, pair, accuracy)
    return [Bracket(epsilon_bracket_one(cl, d).lower, epsilon_bracket_one(cu, d).upper) for d in delta]
