"""Export a pair to Google's ``dp_accounting`` (optional dependency).

``to_dp_accounting(pld_pq, pld_qp)`` returns a ``dp_accounting`` ``PrivacyLossDistribution``
with both directions (``pmf_remove`` = omega_{P/Q}, ``pmf_add`` = omega_{Q/P}), so that a
shuffle round composes there with Gaussian, Laplace or any other mechanism::

    from dp_accounting.pld import privacy_loss_distribution as dpa
    shuffle = to_dp_accounting(pq, qp)                        # one shuffle round
    total = shuffle.self_compose(10).compose(dpa.from_gaussian_mechanism(2.0))
    total.get_delta_for_epsilon(1.0)

Losses are rounded up to the grid (``pessimistic_estimate=True``: dp_accounting's delta is
then an upper bound) or down (``False``: a lower bound), and infinite losses keep their mass.
dp_accounting's own composition then truncates tails as it does for its mechanisms; its
numbers are its estimates, not this library's certified brackets.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from shuffle_lib.core import validate as v
from shuffle_lib.core.pld import PLD

if TYPE_CHECKING:   # an optional dependency: imported only when called
    from dp_accounting.pld.privacy_loss_distribution import PrivacyLossDistribution


def _rounded(pld, h, pessimistic):
    idx = np.ceil(pld.losses / h) if pessimistic else np.floor(pld.losses / h)
    keys, inv = np.unique(idx.astype(np.int64), return_inverse=True)
    probs = np.bincount(inv, weights=pld.probs, minlength=keys.size)
    return {int(k): float(p) for k, p in zip(keys, probs) if p > 0}


def to_dp_accounting(pld_pq: PLD, pld_qp: PLD, value_discretization_interval: float = 1e-4,
                     pessimistic_estimate: bool = True) -> PrivacyLossDistribution:
    """The pair as a two-direction ``dp_accounting`` PrivacyLossDistribution (module docstring).

    Source: Google's dp_accounting PLD format (create_from_rounded_probability).
    """
    v.instance("pld_pq", pld_pq, PLD)
    v.instance("pld_qp", pld_qp, PLD)
    try:
        from dp_accounting.pld import privacy_loss_distribution as dpa
    except ImportError:
        raise ImportError("to_dp_accounting needs the optional package dp-accounting: "
                          "pip install dp-accounting (or shuffle-lib[interop]).") from None
    h = v.real(
        "value_discretization_interval", value_discretization_interval, 0.0, 1.0, lo_open=True
    )
    return dpa.PrivacyLossDistribution.create_from_rounded_probability(
        _rounded(pld_pq, h, pessimistic_estimate), pld_pq.inf_mass, h,
        pessimistic_estimate=bool(pessimistic_estimate),
        rounded_probability_mass_function_add=_rounded(pld_qp, h, pessimistic_estimate),
        infinity_mass_add=pld_qp.inf_mass, symmetric=False)
