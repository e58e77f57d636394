"""The mechanisms, each family declared once in the registry (:mod:`shuffle_lib.core.registry`).

Importing this package registers every declaration, in the order the command line lists them.
"""

from shuffle_lib.mechanisms import rr, custom  # noqa: F401,I001
from shuffle_lib.mechanisms import krr, clones, histogram, mixnet, gaussian_shuffle, randomizer  # noqa: F401
