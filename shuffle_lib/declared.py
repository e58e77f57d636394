"""The declared mechanisms from Python: the flat API's :func:`mechanism`, :func:`mechanism_names`
and
:func:`mechanism_brackets` (``shuffle_lib.mechanism_brackets``), the command line's route without
the command line."""

from __future__ import annotations

from shuffle_lib import cli, mechanisms
from shuffle_lib.core import evaluate
from shuffle_lib.core.fourier import DEFAULT_ACCURACY
from shuffle_lib.core.registry import Mechanism
from shuffle_lib.core.types import ArrayLike, Bracket


def mechanism(name: str) -> Mechanism:
    """The registry's declaration of mechanism ``name`` (``python -m shuffle_lib delta NAME
    ...``)."""
    return mechanisms.get(name)


def mechanism_names() -> list[str]:
    """Every declared mechanism."""
    return mechanisms.names()


def mechanism_brackets(name: str, verb: str, targets: ArrayLike, compositions: int = 1,
                       accuracy: float = DEFAULT_ACCURACY, **params) -> list[Bracket]:
    """Certified brackets for any declared mechanism, exactly as the command line computes them:
    ``mechanism_brackets("krr-strong", "epsilon", [1e-6], 10, n=1000, gamma=0.25, k=4)`` is
    ``python -m shuffle_lib epsilon krr-strong --n 1000 --gamma 0.25 --k 4 --delta 1e-6
    --compositions 10``."""
    _, model = cli.build(mechanisms.get(name), params, compositions, accuracy)
    return evaluate.brackets(model, verb, targets, compositions, accuracy=accuracy)
