"""Private log-space helpers shared by the mechanism modules."""

import numpy as np
from scipy.stats import binom


def binom_logpmf(j, n, p):
    """log P[Bin(n, p) = j], accurate to ~1e-14 relative for n up to 1e8 and beyond.

    scipy's ``binom.logpmf`` subtracts log-gammas of size n log n and loses about
    log10(n log n) digits (at n = 1e7 its PMF sums to 1 + 1.4e-9); ``binom.pmf``
    (Boost, ibeta_derivative) keeps full relative accuracy, so its log is used
    wherever it does not underflow, and logpmf only in the far tails below 1e-300.
    """
    j = np.asarray(j)
    pmf = binom.pmf(j, n, p)
    with np.errstate(divide="ignore"):
        return np.where(pmf > 1e-300, np.log(np.where(pmf > 0, pmf, 1.0)), binom.logpmf(j, n, p))
