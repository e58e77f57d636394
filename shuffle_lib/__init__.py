"""shuffle_lib: exact and certified privacy accounting for the shuffle model.

Flat public API; one module per idea:

* :mod:`shuffle_lib.pld` -- discrete privacy loss distributions, exact hockey-stick delta.
* :mod:`shuffle_lib.fourier` -- the Fourier accountant: certified [lower, upper] brackets for delta(eps), eps(delta).
* :mod:`shuffle_lib.grid` -- its engine: tilted, one-sided, error-tracked composition on a grid.
* :mod:`shuffle_lib.rr` -- binary randomised response, the worked example.
* :mod:`shuffle_lib.calibrate` -- the least private parameter meeting a target (eps, delta).
* :mod:`shuffle_lib.interop` -- export a pair to Google's dp_accounting (optional dependency).

Mechanism modules (imported as modules: ``from shuffle_lib import krr``):

* :mod:`~shuffle_lib.krr`, :mod:`~shuffle_lib.krr_checks`, :mod:`~shuffle_lib.krr_large` --
  shuffled k-randomised response, strong and weak adversaries (seed 000 Sec. 4).
* :mod:`~shuffle_lib.clones`, :mod:`~shuffle_lib.clone_pld`, :mod:`~shuffle_lib.clone_compose`,
  :mod:`~shuffle_lib.fmt21`, :mod:`~shuffle_lib.subsample` -- general eps0-LDP shufflers
  through the clones dominating pair (seed 000 Sec. 5, seed 001 Sec. 3).
* :mod:`~shuffle_lib.bitflip`, :mod:`~shuffle_lib.fake_records`, :mod:`~shuffle_lib.fake_flip` -- mix-net
  reports of bits and one-hot vectors (seed 004).
* :mod:`~shuffle_lib.renyi` -- Renyi DP of the clones pair and of shuffled RR, seed 003's bounds.
* :mod:`~shuffle_lib.sgd` -- seed 003's Algorithm 1 (shuffled noisy SGD, Laplace noise) and its RDP budget.
* :mod:`~shuffle_lib.tradeoff` -- trade-off functions (f-DP) of discrete pairs and Gaussian shifts (seed 003 App. A).
* :mod:`~shuffle_lib.gaussian_shuffle` -- the shuffled Gaussian mechanism by Monte Carlo (seed 001 Sec. 5).
* :mod:`~shuffle_lib.histogram`, :mod:`~shuffle_lib.bounds_literature`, :mod:`~shuffle_lib.utility`
  -- k-RR histogram queries and their utility (seed 002).
"""

from .fourier import Bracket, compose, delta_bracket, epsilon_bracket
from .pld import (PLD, delta_exact, epsilon_exact, epsilon_for_delta, hockey_stick, pld_from_losses,
                  pld_from_pmfs, product_pmfs, tail_probability)
from .rr import rr_composed_pld, rr_delta_exact, rr_pmfs
from . import calibrate  # noqa: E402
from . import clones  # noqa: E402  (before clone_compose, which it re-exports)
from . import (bitflip, bounds_literature, clone_compose, clone_pld, fake_flip, fake_records,  # noqa: E402
               fmt21, gaussian_shuffle, histogram, interop, krr, krr_checks, krr_large, renyi, subsample, tradeoff,
               utility)
from . import sgd  # noqa: E402  (seed 003 Alg. 1)

__all__ = [
    "PLD", "Bracket", "compose", "delta_bracket", "epsilon_bracket", "delta_exact", "epsilon_exact",
    "epsilon_for_delta", "hockey_stick", "pld_from_losses", "pld_from_pmfs", "product_pmfs",
    "tail_probability", "rr_composed_pld", "rr_delta_exact", "rr_pmfs",
    "calibrate", "bitflip", "fake_flip", "fake_records", "gaussian_shuffle", "interop", "bounds_literature", "clone_compose", "clone_pld", "clones", "fmt21", "histogram", "krr",
    "krr_checks", "krr_large", "renyi", "sgd", "subsample", "tradeoff", "utility",
]
