"""shuffle_lib: exact and certified privacy accounting for the shuffle model.

Layers (imports go downward only; ``tests/test_layers.py`` checks it):

* :mod:`shuffle_lib.core` -- knows no mechanism: value types (:class:`Bracket`, the models a build
  returns), validation, binomial helpers, PLDs and the exact hockey-stick divergence, the
  grid/Fourier accountant, extreme-target bounds, Renyi and trade-off tools, a generic calibration
  search, the mechanism registry and the one evaluation path from a model to brackets.
* :mod:`shuffle_lib.bounds` -- closed-form bounds from the literature, each once.
* :mod:`shuffle_lib.mechanisms` -- each family declared once in the registry: ``rr``, ``custom``,
  k-RR (``krr-strong``, ``krr-weak``), the clones pairs (``ldp-shuffle``,
  ``ldp-shuffle-subsampled``), the k-RR histogram (``histogram-krr``), mix-nets (``bitflip``,
  ``fake-records``), the shuffled Gaussian (Monte Carlo, not declared).
* :mod:`shuffle_lib.analyses` -- the experiments (shuffled SGD, histogram utility).
* :mod:`shuffle_lib.cli` and :mod:`shuffle_lib.interop` -- the command line, generated from the
  registry, and the export to Google's dp_accounting.

The flat API below and the module names of earlier versions (``shuffle_lib.krr``,
``shuffle_lib.clone_pld``, ``shuffle_lib.renyi``, ...) stay importable: each old name is the module
that now holds it (``renyi`` gathers the generic tools, the clones pairs' divergence and the closed
forms of seed 003).
"""

import sys
import types

from shuffle_lib.core import calibrate, evaluate, extreme, fourier, grid, pld, registry, tradeoff  # noqa: F401
from shuffle_lib.core import renyi as _core_renyi
from shuffle_lib.core import validate as _validate  # noqa: F401
from shuffle_lib.core.fourier import compose, delta_bracket, epsilon_bracket
from shuffle_lib.core.pld import (PLD, delta_exact, epsilon_exact, epsilon_for_delta, hockey_stick, pld_from_losses,
                                  pld_from_pmfs, product_pmfs, tail_probability)
from shuffle_lib.core.types import ArrayLike, Bracket, DirectModel, PairModel, WorstCase
from shuffle_lib import bounds, mechanisms  # noqa: F401  (registers every mechanism)
from shuffle_lib.bounds import closed_forms as bounds_literature
from shuffle_lib.bounds import renyi as renyi_bounds
from shuffle_lib.mechanisms import clones, gaussian_shuffle, histogram, krr, rr  # noqa: F401
from shuffle_lib.mechanisms.clones import compose as clone_compose
from shuffle_lib.mechanisms.clones import fmt21, subsample  # noqa: F401
from shuffle_lib.mechanisms.clones import pld as clone_pld
from shuffle_lib.mechanisms.clones import renyi as _clone_renyi
from shuffle_lib.mechanisms.krr import checks as krr_checks
from shuffle_lib.mechanisms.krr import large as krr_large
from shuffle_lib.mechanisms.mixnet import bitflip, fake_flip, fake_records  # noqa: F401
from shuffle_lib.mechanisms.rr import rr_composed_pld, rr_delta_exact, rr_pmfs
from shuffle_lib.analyses import sgd, utility  # noqa: F401
from shuffle_lib import cli, interop  # noqa: F401


def _gather(name, *modules):
    """One namespace holding the public names of several modules (an old module that was split)."""
    ns = types.ModuleType(f"{__name__}.{name}", modules[0].__doc__)
    for mod in modules:
        ns.__dict__.update({k: val for k, val in vars(mod).items() if not k.startswith("_")})
    return ns


renyi = _gather("renyi", _core_renyi, renyi_bounds, _clone_renyi)

# the module names of earlier versions, importable as before (``import shuffle_lib.krr``)
for _old, _mod in {"pld": pld, "fourier": fourier, "grid": grid, "calibrate": calibrate, "tradeoff": tradeoff,
                   "rr": rr, "krr": krr, "krr_checks": krr_checks, "krr_large": krr_large, "clones": clones,
                   "clone_pld": clone_pld, "clone_compose": clone_compose, "fmt21": fmt21, "subsample": subsample,
                   "renyi": renyi, "renyi_bounds": renyi_bounds, "bounds_literature": bounds_literature,
                   "bitflip": bitflip, "fake_records": fake_records, "fake_flip": fake_flip, "histogram": histogram,
                   "gaussian_shuffle": gaussian_shuffle, "sgd": sgd, "utility": utility}.items():
    sys.modules.setdefault(f"{__name__}.{_old}", _mod)


def __getattr__(name: str) -> object:
    """``ShuffleAccountant`` and ``ShuffledEvent`` on first use: dp_accounting stays optional."""
    if name in ("ShuffleAccountant", "ShuffledEvent"):
        try:
            from shuffle_lib import accountant
        except ModuleNotFoundError as err:
            if (err.name or "").split(".")[0] not in ("dp_accounting", "attr"):
                raise
            raise ImportError(f"shuffle_lib.{name} needs the optional package dp-accounting: "
                              "pip install shuffle-lib[dp-accounting]") from err
        return getattr(accountant, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def mechanism(name: str) -> registry.Mechanism:
    """The registry's declaration of mechanism ``name`` (``python -m shuffle_lib delta NAME ...``)."""
    return registry.get(name)


def mechanism_names() -> list[str]:
    """Every declared mechanism."""
    return registry.names()


def mechanism_brackets(name: str, verb: str, targets: ArrayLike, compositions: int = 1,
                       accuracy: float = fourier.DEFAULT_ACCURACY, **params) -> list[Bracket]:
    """Certified brackets for any declared mechanism, exactly as the command line computes them:
    ``mechanism_brackets("krr-strong", "epsilon", [1e-6], 10, n=1000, gamma=0.25, k=4)`` is
    ``python -m shuffle_lib epsilon krr-strong --n 1000 --gamma 0.25 --k 4 --delta 1e-6 --compositions 10``."""
    _, model = cli.build(registry.get(name), params, compositions, accuracy)
    return evaluate.brackets(model, verb, targets, compositions, accuracy=accuracy)


__all__ = [
    "PLD", "Bracket", "PairModel", "WorstCase", "DirectModel", "compose", "delta_bracket", "epsilon_bracket",
    "delta_exact", "epsilon_exact", "epsilon_for_delta", "hockey_stick", "pld_from_losses", "pld_from_pmfs",
    "product_pmfs", "tail_probability", "rr_composed_pld", "rr_delta_exact", "rr_pmfs", "mechanism",
    "mechanism_names", "mechanism_brackets", "calibrate", "bitflip", "fake_flip", "fake_records", "gaussian_shuffle", "interop",
    "bounds_literature", "clone_compose", "clone_pld", "clones", "fmt21", "histogram", "krr", "krr_checks",
    "krr_large", "renyi", "renyi_bounds", "sgd", "subsample", "tradeoff", "utility",
]
