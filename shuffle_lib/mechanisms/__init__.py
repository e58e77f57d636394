"""The mechanisms, each family declared once in the registry (:mod:`shuffle_lib.core.registry`).

Importing this package registers every declaration, in the order the command line lists them;
:func:`names` and :func:`get` read the registry after that, so it is complete whoever asks.
"""

# ruff: noqa: I001  (the imports register the mechanisms in the order the command line lists them)
from shuffle_lib.core.registry import REGISTRY, Mechanism
from shuffle_lib.mechanisms import rr, custom  # noqa: F401
from shuffle_lib.mechanisms import krr, clones, histogram, mixnet, gaussian_shuffle, randomizer  # noqa: F401


def names() -> list[str]:
    """Every declared mechanism, in declaration order."""
    return list(REGISTRY)


def get(name: str) -> Mechanism:
    """The declaration of ``name`` (ValueError listing the known names)."""
    if name not in REGISTRY:
        raise ValueError(f"mechanism must be one of {', '.join(REGISTRY)}, got {name!r}.")
    return REGISTRY[name]
