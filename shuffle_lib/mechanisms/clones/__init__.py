"""General eps0-LDP shufflers through the clones dominating pairs
(Koskela et al. 2021, Sec. 5, Koskela et al. 2022, Sec. 3).

* :mod:`.pairs` -- the pairs (fmt21, stronger, koskela) and the exact single-round method;
* :mod:`.pld` -- their PLDs: exact, truncated, binned or on a grid;
* :mod:`.compose` -- compositions (declares ``ldp-shuffle``);
* :mod:`.subsample` -- a random subset of users per round (declares ``ldp-shuffle-subsampled``);
* :mod:`.fmt21` -- FMT21's own numerical method, as the papers compare with it;
* :mod:`.renyi` -- the pairs' Renyi divergence (Chen et al. 2024).

The package re-exports the pairs' functions and the composition entry points.
"""

# ruff: noqa: I001  (compose first: ldp-shuffle registers before ldp-shuffle-subsampled)
from shuffle_lib.mechanisms.clones.compose import (  # noqa: F401
    EXACT_MAX_ATOMS, clone_model, delta_bracket, epsilon_bracket)
from shuffle_lib.mechanisms.clones.pairs import (  # noqa: F401
    MAX_N, PAIRS, Pair, bracket_at, check_params, clone_probability, clone_top_loss,
    conditional_tails, decomposition_holds, delta_bracket_single, delta_inf, epsilon_bracket_single,
    loss, loss_threshold, prepare, report_probability, s_range, shared_weights)
from shuffle_lib.mechanisms.clones import fmt21, pld, renyi, subsample  # noqa: F401
