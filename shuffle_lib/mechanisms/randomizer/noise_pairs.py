"""Which differing pair is worst for the blanket bound: an estimate for any pair (x_0, x_1).

The certified upper end (:mod:`~shuffle_lib.mechanisms.randomizer.noise`) takes the differing
user's pair to be (0, 1), the worst pair for every symmetric log-concave noise (chapter 07,
lemma lem-gauss-pair: the law of W below is largest in convex order at (0, 1)).  The blanket
decomposition holds for every pair (Balle, Bell, Gascon & Nissim 2019, Sec. 3): with
nu(y) = min(f(y), f(y - 1)) (the blanket is the same for every pair, the infimum over all
inputs in [0, 1]) and gamma = int nu,

    delta_blanket(x_0, x_1; eps) = E[(W_1 + ... + W_n)_+] / (n gamma),
    W = B V(Y),  V = gamma (r_{x_1} - e^eps r_{x_0}) / nu,  B ~ Bern(gamma),  Y ~ nu / gamma,

r_x the density of x + Z.  This module *estimates* it for any pair (a midpoint rule in y, mean-
preserving rounding of W onto a lattice, one FFT; no error bound), so that the pairs of a grid
can be compared with one method: a check of the lemma at finite n.
"""

from __future__ import annotations

import math

import numpy as np

from shuffle_lib.core import validate as v
from shuffle_lib.mechanisms.randomizer import noise as N

CELLS = 20001  # y grid
LATTICE_STEP = 0.05  # h / sd(W)


def blanket_pair_delta(
    noise: str | N.Noise, n: int, eps: float, x0: float, x1: float, scale: float | None = None
) -> float:
    """An estimate (no certificate) of the blanket bound on delta(eps) for the differing pair
    (x0, x1) (module docstring): the law of W by a midpoint rule on ``CELLS`` points over
    [-8 sd, 1 + 8 sd] (the tails beyond carry ~1e-15), rounded onto a lattice of step
    ``LATTICE_STEP`` sd(W) preserving each mean, summed by one FFT.

    Raises: ValueError naming a bad argument.
    """
    nz = N.noise_law(noise, scale)
    n = v.integer("n", n, lo=1, hi=10**5)
    eps = v.real("eps", eps, 0.0, 50.0)
    x0, x1 = v.real("x0", x0, 0.0, 1.0), v.real("x1", x1, 0.0, 1.0)
    sd = float(nz.dist.std())
    y = np.linspace(-8 * sd, 1 + 8 * sd, CELLS)
    dy = y[1] - y[0]
    f = nz.dist.pdf
    nu = np.minimum(f(y), f(y - 1.0)) * dy
    gamma = float(nu.sum())
    keep = nu > 1e-300
    V = gamma * (f(y[keep] - x1) - math.exp(eps) * f(y[keep] - x0)) * dy / nu[keep]
    w = nu[keep]
    values = np.append(V, 0.0)
    probs = np.append(w, max(0.0, 1.0 - gamma))
    mean = float(np.dot(probs, values))
    sdw = math.sqrt(max(float(np.dot(probs, (values - mean) ** 2)), 1e-30))
    h = LATTICE_STEP * sdw
    k = np.floor(values / h)
    frac = values / h - k  # mean-preserving split
    k0 = int(k.min())
    size = int(k.max()) - k0 + 2
    p = np.bincount((k - k0).astype(int), weights=probs * (1 - frac), minlength=size)
    p += np.bincount((k - k0 + 1).astype(int), weights=probs * frac, minlength=size)
    vals, first, _, _, _ = N.sum_on_window(p / p.sum(), k0, n)
    s = (first + np.arange(vals.size)) * h
    return float(np.dot(np.maximum(s, 0.0), np.maximum(vals, 0.0))) / (n * gamma)


def others_at_delta(
    noise: str | N.Noise,
    n: int,
    eps: float,
    c: float,
    scale: float | None = None,
    step: float = 0.02,
) -> float:
    """An estimate (no certificate) of the delta(eps) of a view of the datasets (x, c, ..., c),
    x = 0 against x = 1: T = sum_i floor(phi(y_i) / step), phi = (r_1 - r_0) / r_c (for c = 0 this
    is e^L - 1, the statistic of the certified lower end) clipped at its values at the noise's
    1e-10 quantiles, laws by a midpoint rule and one FFT of the full support.  Compares
    candidate worst datasets for the lower end; the certified lower end itself is
    :func:`~shuffle_lib.mechanisms.randomizer.noise.view_delta`.
    """
    nz = N.noise_law(noise, scale)
    n = v.integer("n", n, lo=2, hi=10**4)
    eps = v.real("eps", eps, 0.0, 50.0)
    c = v.real("c", c, 0.0, 1.0)
    step = v.real("step", step, 0.0, lo_open=True)
    sd = float(nz.dist.std())
    y = np.linspace(-8 * sd, 1 + 8 * sd, 200001)
    dy = y[1] - y[0]
    f = nz.dist.pdf
    rc = f(y - c)
    keep = rc > 1e-300
    y, rc = y[keep], rc[keep]
    phi = (f(y - 1.0) - f(y)) / rc
    ends = np.array([float(nz.dist.ppf(1e-10)), 1.0 + float(nz.dist.isf(1e-10))])
    lim = (f(ends - 1.0) - f(ends)) / f(ends - c)  # clipping: a post-processing too
    phi = np.clip(phi, lim.min(), lim.max())
    k = np.floor(phi / step).astype(np.int64)
    k -= k.min()
    size = int(k.max()) + 1
    if size * n > 2**24:
        raise ValueError(
            f"step={step} gives a support of {size * n} points at n={n}; take a larger step."
        )
    laws = {x: np.bincount(k, weights=f(y - x) * dy, minlength=size) for x in (0.0, 1.0, c)}
    M = 1 << math.ceil(math.log2(size * n + 1))
    base = np.fft.rfft(laws[c], M) ** (n - 1)
    a = np.fft.irfft(base * np.fft.rfft(laws[0.0], M), M)
    b = np.fft.irfft(base * np.fft.rfft(laws[1.0], M), M)
    e = math.exp(eps)
    return float(max(np.maximum(b - e * a, 0.0).sum(), np.maximum(a - e * b, 0.0).sum()))
