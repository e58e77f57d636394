"""The library's named limits, tail cuts and slacks, each set once.

Limits bound what a call may ask for (memory and time), tail cuts the probability mass a
construction may move to +inf or drop, slacks the floating-point error a certified end allows for.
"""

MAX_COMPOSITIONS = 10 ** 7
"""The most rounds a composition takes (``--compositions``, each count of
``[(PLD, count), ...]``)."""

MAX_SIZE = 10 ** 7
"""The largest size argument of a construction whose cost grows with it (users of the bit-flip
shuffler, categories of randomised response, pairs and chunks of a search)."""

BINOMIAL_TAIL = 1e-40
"""Mass cut from each tail of a binomial when a mechanism builds its PLDs (sent to +inf in the
upper PLD, dropped from the lower one)."""

REL_MARGIN = 1e-12
"""Relative margin covering double rounding in products and sums of probabilities (inf masses,
log-sum-exp sums): a certified upper end is multiplied by 1 + REL_MARGIN, a lower end by 1 - it."""

LOSS_SLACK_ULPS = 64
"""Units of 2^-52 (times max(1, max abs(L) + max(-log P))) by which a PLD's floating-point losses
may be off: :func:`shuffle_lib.core.pld.loss_slack`."""

TIME_LIMIT = 100.0
"""CPU seconds one query may take (``--time-limit``, ``SHUFFLE_LIB_TIME_LIMIT``) before it stops
with a one-line refusal: below the 120 CPU-seconds a query is allowed by the project's contract,
so the refusal comes before a kill (:mod:`shuffle_lib.core.budget`)."""

EPS_MAX = 700.0
"""The largest eps a delta query takes, the same for every mechanism: the routes evaluate
P - e^eps Q, and e^eps is a double only up to ~709.78; one range for all, checked where a query
enters (:meth:`shuffle_lib.core.registry.Mechanism.evaluate`)."""

MAX_WORK = 5 * 10 ** 9
"""The most element operations a route planned in advance may take (a matrix randomiser's pair
decompositions: pairs x rows x outputs): about half a minute of numpy; above it the route refuses
before it starts (:func:`shuffle_lib.core.budget.check_work`)."""

TINY = 5e-324
"""The least positive double: an upper end where the exact value is positive but below it."""
