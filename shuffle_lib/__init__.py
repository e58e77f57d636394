"""shuffle_lib: exact and certified privacy accounting for the shuffle model.

Layers (imports go downward only; ``tests/test_layers.py`` checks it):

* :mod:`shuffle_lib.core` -- knows no mechanism: value types
  (:class:`~shuffle_lib.core.types.Bracket`, the models a build returns), validation, binomial
  helpers, PLDs and the exact hockey-stick divergence, the grid/Fourier accountant, extreme-target
  bounds, Renyi and trade-off tools, a generic calibration search, the mechanism registry and the
  one evaluation path from a model to brackets.
* :mod:`shuffle_lib.bounds` -- closed-form bounds from the literature, each once.
* :mod:`shuffle_lib.mechanisms` -- each family declared once in the registry: ``rr``, ``custom``,
  k-RR (``krr-strong``, ``krr-weak``), the clones pairs (``ldp-shuffle``,
  ``ldp-shuffle-subsampled``), the k-RR histogram (``histogram-krr``), mix-nets (``bitflip``,
  ``fake-records``), the shuffled Gaussian (Monte Carlo, not declared).
* :mod:`shuffle_lib.analyses` -- the experiments (shuffled SGD, histogram utility).
* :mod:`shuffle_lib.cli` and :mod:`shuffle_lib.interop` -- the command line, generated from the
  registry, and the export to Google's dp_accounting.

The flat API below is imported on first use: ``import shuffle_lib`` loads neither numpy nor
scipy, and a name such as ``shuffle_lib.delta_bracket`` or ``shuffle_lib.core`` imports its module
when it is first asked for.  Every other name lives at its module's path
(``from shuffle_lib.mechanisms import krr``, ``from shuffle_lib.core import renyi``).  The
mechanisms register when :mod:`shuffle_lib.mechanisms` is imported, whose
:func:`~shuffle_lib.mechanisms.names` and :func:`~shuffle_lib.mechanisms.get` see every one.

The docstrings cite papers by author, year and equation (full entries in ``references.bib``):
Koskela, Heikkilä & Honkela 2021 and 2022 (two versions of "Tight accounting in the shuffle model
of differential privacy"), Biswas, Jung & Palamidessi 2023 (shuffled k-RR histograms), Chen, Cao
& Ge 2024 (Rényi DP in the shuffle model), Zhilyaev 2020 (notes on mix-net protocols), Feldman,
McMillan & Talwar 2021/2023 (the clones pairs).
"""

import importlib as _importlib

_SUBMODULES = ("core", "bounds", "mechanisms", "analyses", "cli", "interop")
"""The package's own modules that ``shuffle_lib.<name>`` imports on first use."""

_FLAT = {
    **dict.fromkeys(("compose", "delta_bracket", "epsilon_bracket"), "shuffle_lib.core.fourier"),
    "set_progress": "shuffle_lib.core.progress",
    **dict.fromkeys(
        (
            "PLD",
            "delta_exact",
            "epsilon_exact",
            "epsilon_for_delta",
            "hockey_stick",
            "pld_from_losses",
            "pld_from_pmfs",
            "product_pmfs",
            "tail_probability",
        ),
        "shuffle_lib.core.pld",
    ),
    **dict.fromkeys(
        ("ArrayLike", "Bracket", "Method", "Model", "PLDPair"), "shuffle_lib.core.types"
    ),
    **dict.fromkeys(("rr_composed_pld", "rr_delta_exact", "rr_pmfs"), "shuffle_lib.mechanisms.rr"),
    **dict.fromkeys(("mechanism", "mechanism_names", "mechanism_brackets"),
                    "shuffle_lib.mechanisms"),
}
"""The flat API: name -> the module defining it (imported when the name is first asked for)."""

_OPTIONAL = {
    "ShuffleAccountant": "shuffle_lib.accountant",
    "ShuffledEvent": "shuffle_lib.accountant",
}
"""Names that need the optional package dp-accounting."""


def __getattr__(name: str) -> object:
    """A submodule or a name of the flat API, imported on first use."""
    if name in _SUBMODULES:
        # sets the attribute: no second call
        return _importlib.import_module(f"{__name__}.{name}")
    if name in _FLAT:
        value = globals()[name] = getattr(_importlib.import_module(_FLAT[name]), name)
        return value
    if name in _OPTIONAL:
        try:
            module = _importlib.import_module(_OPTIONAL[name])
        except ModuleNotFoundError as err:
            if (err.name or "").split(".")[0] not in ("dp_accounting", "attr"):
                raise
            raise ImportError(f"shuffle_lib.{name} needs the optional package dp-accounting: "
                              "pip install shuffle-lib[dp-accounting]") from err
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    """The names imported so far and every name imported on first use (the optional ones aside)."""
    public = {k for k in globals() if not k.startswith("_")}
    return sorted(public | set(_SUBMODULES) | set(_FLAT))


__all__ = list(_FLAT)
