"""shuffle_lib: exact and certified privacy accounting for the shuffle model.

Flat public API; one module per idea:

* :mod:`shuffle_lib.pld` -- discrete privacy loss distributions, exact hockey-stick delta.
* :mod:`shuffle_lib.fourier` -- the Fourier accountant: certified [lower, upper] brackets for delta(eps), eps(delta).
* :mod:`shuffle_lib.grid` -- its engine: tilted, one-sided, error-tracked composition on a grid.
* :mod:`shuffle_lib.rr` -- binary randomised response, the worked example.
"""

from .fourier import Bracket, compose, delta_bracket, epsilon_bracket
from .pld import (PLD, delta_exact, epsilon_exact, epsilon_for_delta, hockey_stick, pld_from_losses,
                  pld_from_pmfs, product_pmfs, tail_probability)
from .rr import rr_composed_pld, rr_delta_exact, rr_pmfs

__all__ = [
    "PLD", "Bracket", "compose", "delta_bracket", "epsilon_bracket", "delta_exact", "epsilon_exact",
    "epsilon_for_delta", "hockey_stick", "pld_from_losses", "pld_from_pmfs", "product_pmfs",
    "tail_probability", "rr_composed_pld", "rr_delta_exact", "rr_pmfs",
]
