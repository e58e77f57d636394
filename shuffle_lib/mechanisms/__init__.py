"""The mechanisms, each family declared once in the registry (:mod:`shuffle_lib.core.registry`).

Importing this package registers every declaration, in the order the command line lists them;
:func:`names` and :func:`get` read the registry after that, so it is complete whoever asks.  The
flat API's :func:`mechanism`, :func:`mechanism_names` and :func:`mechanism_brackets`
(``shuffle_lib.mechanism_brackets``) are the declared mechanisms from Python: the command line's
one path (:meth:`shuffle_lib.core.registry.Mechanism.evaluate`) without the command line.
"""

# ruff: noqa: I001  (the imports register the mechanisms in the order the command line lists them)
from shuffle_lib.core.fourier import DEFAULT_ACCURACY
from shuffle_lib.core.registry import REGISTRY, Mechanism, Verb
from shuffle_lib.core.types import ArrayLike, Bracket
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


def mechanism(name: str) -> Mechanism:
    """The registry's declaration of mechanism ``name`` (``python -m shuffle_lib delta NAME``)."""
    return get(name)


def mechanism_names() -> list[str]:
    """Every declared mechanism."""
    return names()


def mechanism_brackets(name: str, verb: Verb, targets: ArrayLike, compositions: int = 1,
                       accuracy: float = DEFAULT_ACCURACY, **params: object) -> list[Bracket]:
    """Certified brackets for any declared mechanism, exactly as the command line computes them:
    ``mechanism_brackets("krr-strong", "epsilon", [1e-6], 10, n=1000, gamma=0.25, k=4)`` is
    ``python -m shuffle_lib epsilon krr-strong --n 1000 --gamma 0.25 --k 4 --delta 1e-6
    --compositions 10``.  ``verb``: ``"delta"`` (targets are eps), ``"epsilon"`` (targets are
    delta) or ``"rdp"`` (targets are Renyi orders; K rounds have K times one round's divergence)."""
    return get(name).evaluate(verb, targets, params, compositions, accuracy)[1]
