"""Clear-fake-records protocol (Zhilyaev 2020, Sec. 5): exact PLD and the m it needs.

n users send their value x_i in [d] in clear; m fake records, uniform on [d],
are added; a shuffler releases the histogram.  Neighbours differ in x_1 = l vs
x_1' = l'.  Only the fake counts (H, H') of the values l, l' matter (Zhilyaev 2020
Sec. 5): L = log((H + 1)/H') with (H, H') ~ Multinomial(m; 1/d, 1/d), +inf when
H' = 0.  Swapping l and l' maps the P/Q loss to the Q/P loss, so one PLD serves
both directions, and it does not depend on n or on the other users' values.

This is the strong-adversary pair of shuffled k-RR
(:func:`shuffle_lib.mechanisms.krr.base.strong_pld`) *conditioned on beta_n = 0*: krr's PLD is the
mixture gamma * (loss 0) + (1 - gamma) * (this PLD) with n - 1 = m, gamma/k = 1/d, and has no
parameter choice with gamma = 0 (its (1 - gamma) factor vanishes at gamma = 1 = k/d).
Dividing krr's delta by 1 - gamma is right for one round but not for
compositions, so the pair is built here; the test suite checks
delta_strong = (1 - gamma) delta_fake for one round.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from scipy.stats import binom

from shuffle_lib.core import evaluate, search
from shuffle_lib.core import validate as v
from shuffle_lib.core.binomial import binom_window, tail_range
from shuffle_lib.core.constants import BINOMIAL_TAIL, MAX_COMPOSITIONS
from shuffle_lib.core.fourier import DEFAULT_ACCURACY
from shuffle_lib.core.pld import PLD, hockey_stick
from shuffle_lib.core.registry import Mechanism, Param, register
from shuffle_lib.core.types import ArrayLike, Bracket, Model, PLDPair

TAIL = BINOMIAL_TAIL
MAX_ATOMS = 2 * 10 ** 7    # ~1 GB while the PLD is built and sorted
_CHUNK = 2 * 10 ** 6


def _check(m, d):
    m = v.integer("m", m, lo=1, hi=10 ** 8)
    d = v.integer("d", d, lo=2, hi=10 ** 9)
    return m, d




def fake_pld(m: int, d: int, tail: float = TAIL) -> PLD:
    """PLD of L = log((H+1)/H'), (H, H') ~ Multinomial(m; 1/d, 1/d) (Zhilyaev 2020, Sec. 5).

    H ~ Bin(m, 1/d); H' | H = h ~ Bin(m - h, 1/(d - 1)).  Each is cut to a window
    outside which its mass is <= tail/2; the cut mass goes to +inf, so hockey-stick
    values are >= the exact ones by at most ~tail (certified upper).  Exact (no cut)
    with ``tail=0``.  Atoms with equal loss are not merged.
    """
    m, d = _check(m, d)
    tail = v.real("tail", tail, 0.0, 1e-3)
    r, r2 = 1.0 / d, 1.0 / (d - 1)
    h_lo, h_hi = binom_window(m, r, tail)
    hs = np.arange(h_lo, h_hi + 1)
    if tail == 0.0 or r2 == 1.0:                     # as binom_window: the whole range
        c_lo, c_hi = np.zeros_like(hs), m - hs
    else:
        c_lo, c_hi = tail_range(m - hs, r2, tail / 2)
    c_lo = np.maximum(c_lo, 1)                      # H' = 0 is the +inf atom
    counts = np.maximum(c_hi - c_lo + 1, 0)
    if counts.sum() > MAX_ATOMS:
        raise ValueError(
            f"m={m}, d={d} is too large: the PLD needs {float(counts.sum()):.1e} atoms, more than "
            f"MAX_ATOMS={MAX_ATOMS:.0e} (the atom count grows like m for fixed d)."
        )
    blk = np.repeat(np.arange(hs.size), counts)
    cs = np.arange(blk.size) - (np.cumsum(counts) - counts)[blk] + c_lo[blk]
    h = hs[blk]
    losses = np.log((h + 1.0) / cs)
    probs = np.empty(blk.size)
    for i in range(0, blk.size, _CHUNK):             # binom.pmf in chunks: bounded temporaries
        j = slice(i, i + _CHUNK)
        probs[j] = binom.pmf(cs[j], m - h[j], r2)
    probs *= binom.pmf(hs, m, r)[blk]
    inf_mass = math.exp(m * math.log1p(-r))           # P[H' = 0] = (1 - 1/d)^m
    cut = 2.0 * tail          # H's cut <= tail/2, each H' | H cut <= tail/2
    order = np.argsort(losses, kind="stable")
    return PLD(losses[order], probs[order], inf_mass).with_mass_at_infinity(cut)


def fake_delta(m: int, d: int, eps: ArrayLike, tail: float = TAIL) -> np.ndarray:
    """Tight delta(eps) of one release (both directions: the PLD is symmetric).

    Source: Zhilyaev 2020, Sec. 5; Koskela et al. 2021, Thm 5.
    """
    eps = v.reals("eps", eps, lo=0.0)
    return hockey_stick(fake_pld(m, d, tail), eps)


def fake_model(m: int, d: int, tail: float = TAIL) -> Model:
    """The pair of one release with ``m`` fake records on [d] (:func:`fake_pld`, symmetric: one PLD
    serves both directions); the cut tails (<= 2 tail) sit at +inf."""
    pl = fake_pld(m, d, tail)
    return Model.of(PLDPair.of(pl, tail_cut=2 * tail), {"tail_cut": 2 * tail})


def fake_delta_bracket(
    m: int, d: int, eps: ArrayLike, compositions: int = 1, accuracy: float = DEFAULT_ACCURACY
) -> list[Bracket]:
    """Certified brackets for delta(eps) of the ``compositions``-fold composition (Fourier
    accountant on the upper PLD; the lower end corrected for the tail cut), one per eps: the model
    of :func:`fake_model` answered by ``shuffle_lib.core.evaluate.answer``, the command line's path
    (``python -m shuffle_lib delta fake-records``), each bracket with ``accuracy_met`` and
    ``limit`` set.

    Source: Zhilyaev 2020, Sec. 5; Koskela et al. 2021, Thm 5 through the Fourier accountant.
    """
    return _answer("delta", m, d, eps, compositions, accuracy)


def fake_epsilon_bracket(
    m: int, d: int, delta: ArrayLike, compositions: int = 1, accuracy: float = DEFAULT_ACCURACY
) -> list[Bracket]:
    """Certified brackets for eps(delta) of the ``compositions``-fold composition, one per delta;
    see :func:`fake_delta_bracket` (``python -m shuffle_lib epsilon fake-records``).  A bracket
    that misses the accuracy contract by no more than the grid explains is evaluated again on a
    finer grid.

    Source: Zhilyaev 2020, Sec. 5; Koskela et al. 2021, Thm 5 through the Fourier accountant.
    """
    return _answer("epsilon", m, d, delta, compositions, accuracy)


def _answer(verb: Literal["delta", "epsilon"], m: int, d: int, targets: ArrayLike,
            compositions: int, accuracy: float) -> list[Bracket]:
    """The declaration's path: its build (:func:`fake_model`, which does not depend on the
    accuracy: no rebuild) through ``evaluate.answer``."""
    compositions = v.integer("compositions", compositions, lo=1, hi=MAX_COMPOSITIONS)
    accuracy = v.real("accuracy", accuracy, 0.0, 1.0, lo_open=True)
    return evaluate.answer([(fake_model(m, d), None)], verb, np.atleast_1d(targets), compositions,
                           accuracy)


def m_needed(d: int, eps: float, delta: float, m_max: int = 10 ** 6) -> int | float:
    """Smallest m with fake_delta(m, d, eps) <= delta (delta is non-increasing in m:
    adding a fake record is post-processing).  ``math.inf`` beyond m_max.

    Source: Zhilyaev 2020, Sec. 5 (the m a target needs, here exactly).
    """
    d = v.integer("d", d, lo=2, hi=10 ** 9)
    eps = v.real("eps", eps, 0.0)
    delta = v.probability("delta", delta)
    m_max = v.integer("m_max", m_max, lo=1)
    ok = lambda m: float(fake_delta(m, d, eps)[0]) <= delta  # noqa: E731
    hi = d
    while not ok(hi):
        hi *= 2
        if hi > m_max:
            return math.inf
    hi, _ = search.narrow(lambda m: m >= 1 and ok(m), hi, 0, lambda a, b: a - b <= 1,
                          search.integer_mid)
    return hi


def seed_m_over_d(eps: float, delta: float) -> float:
    """Zhilyaev 2020, Sec. 5 requirement: m/d >= 3 log(4/delta) ((e^eps + 1)/(e^eps - 1))^2."""
    eps = v.real("eps", eps, 0.0, lo_open=True)
    delta = v.probability("delta", delta)
    return 3.0 * math.log(4.0 / delta) * ((math.exp(eps) + 1.0) / math.expm1(eps)) ** 2


register(Mechanism(
    name="fake-records",
    summary="clear fake records, m uniform fakes on [d] (--m --d)",
    source="Zhilyaev 2020 Sec. 5 (Lemma 5.1, eq. 5.2)",
    params=(Param("m", int, "number of fake records, >= 1", lo=1, hi=10 ** 8, more_private="up"),
            Param("d", int, "domain size, >= 2", lo=2, hi=10 ** 9)),
    build=fake_model,
    example={"m": 200, "d": 3},
))
