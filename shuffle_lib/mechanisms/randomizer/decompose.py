"""The blanket decomposition of a finite local randomiser, for one differing pair of inputs.

For rows P0 = R(x0), P1 = R(x1) of a randomiser R (rows: inputs, columns: outputs) let
m = min(P0, P1) (pointwise), beta = TV(P0, P1) = sum (P0 - m), and D0 = (P0 - m)/beta,
D1 = (P1 - m)/beta: two distributions with disjoint supports S0 = {P0 > P1}, S1 = {P1 > P0}.
Then, with

    s = min_{o in S0 u S1} m(o) / (D0 + D1)(o)          (the pair's own blanket)
    a = min_y min_{o in S0 u S1} R(y)(o) / (D0 + D1)(o)  (every other user's blanket)

every row splits as (Balle et al. 2019, the privacy blanket; Feldman et al. 2021, clones; the
"general clone" of Su, Cheng, Wang 2026):

    P0   = beta D0 + s (D0 + D1) + (1 - beta - 2 s) W      (W common to P0 and P1)
    P1   = beta D1 + s (D0 + D1) + (1 - beta - 2 s) W
    R(y) = a (D0 + D1) + (1 - 2 a) W_y.

Moreover every other row covers the common part W: R(y) >= a (D0 + D1) + c W with

    c = min_y min_{o: W(o) > 0} (R(y)(o) - a (D0 + D1)(o)) / W(o).

**Theorem (the upper pair).**  For every dataset (x, y_2, ..., y_n), x in {x0, x1}, the
shuffled output is a post-processing of (A, B, V): the numbers of users whose report was drawn
from D0, from D1 and from W, where the others choose D0, D1, W with probabilities a, a, c
(independently; their own remainder LO_y otherwise) and the differing user chooses D0, D1, W
with probabilities beta + s, s, 1 - beta - 2s under x0 (beta + s and s swapped under x1).
*Proof*: draw every user's mixture component independently.  The differing user always lands
in one of the three categories, so the set of others left with their own LO_y has size
n - A - B - V, and, the others' choices being i.i.d., it is a uniformly random subset of that
size whatever x is.  Given (A, B, V) the post-processor picks that subset, draws A reports from
D0, B from D1, V from W and one from LO_y for each user of the subset: the multiset has the
law of the shuffled output.  []

The total T = A + B + V = 1 + C, C ~ Bin(n-1, 2a + c), has the same law under x0 and x1; given
T = t the pair is the general (non-full) clone pair of
:func:`shuffle_lib.mechanisms.clones.pairs.general_pair` with n' = t, p' = 2a/(2a + c),
u = beta + s, w = s, whose delta decreases in n' (one more user adds independent noise), so
delta(eps) = E_T[delta_t(eps)] is bracketed block by block over T.  With c = 0 the differing
user's choice of W is revealed and the bound is (beta + 2s) delta_full(eps), delta_full that of
the full pair (2a, (beta + s)/(beta + 2s), s/(beta + 2s)).  Shrinking s, a or c keeps the splits
valid (move the excess into W or LO_y), so all three may be rounded down.

**The revealed split.**  The others may cover part of W well and part badly.  Split
(1 - beta - 2s) W = M_c W_c + r W_r and let the differing user's draws from W_r be revealed
(the same law under both inputs): the theorem holds with W_c in place of W and the view
(A, B, V, I_r), and delta <= (1 - r) delta'(eps), delta' the three-category pair with the
differing user's weights divided by 1 - r and c the others' cover of W_c.  Every split is valid,
so the upper end is the minimum over the splits tried (the outputs of W whose cover
rho(o) = min_y (R(y)(o) - a (D0 + D1)(o)) / ((1 - beta - 2s) W(o)) is below a threshold go to W_r;
the named families use the split their structure suggests).

**The lower view.**  Any function of the shuffled output, on any concrete pair of datasets,
gives a delta <= the true worst case (post-processing).  This module takes the dataset
(x, y*, ..., y*) and the counts of outputs in T0 subset S0 and T1 subset S1, the outputs where
R(y*)/(D0 + D1) attains its minimum (there the others look most like clones of x0 and x1).

**The reduction to finitely many cases.**  The upper pair depends on the data of the others
only through the bound a, which is a minimum over the finitely many inputs y; the differing
pair ranges over the finitely many (x0, x1); so the worst case is a maximum over at most
k(k-1)/2 unordered pairs (both orders give the same beta, s, a).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from shuffle_lib.core import budget
from shuffle_lib.core import validate as v
from shuffle_lib.core.constants import MAX_WORK
from shuffle_lib.mechanisms.randomizer.unary import bit_probabilities

ROW_TOL = 1e-12          # |row sum - 1| allowed (the CLI contract of --matrix)
MAX_INPUTS = 256         # matrix rows
MAX_ENTRIES = 4_000_000  # matrix entries
SHRINK = 1.0 - 1e-13     # s and a are rounded down by this factor (see the module docstring)


@dataclass(frozen=True)
class View:
    """A lower view: counts in (T0, T1) of n-1 others drawing T0 / T1 with probabilities r0 / r1
    and of the differing user, who draws T0 / T1 with probabilities (u0, w0) under x0 and
    (u1, w1) under x1.  ``symmetric``: r0 = r1, u0 = w1, w0 = u1 exactly."""

    r0: float
    r1: float
    u0: float
    w0: float
    u1: float
    w1: float
    label: str
    o0: float | None = None   # the differing user's mass off T0 and T1 under x0 / x1, summed from
    o1: float | None = None   # the row (None: 1 - u - w, which cancels: 5.6e-17 where it is 0)
    # the others' mass off T0, summed from the row (None: 1 - r0, which cancels where
    # r0 = 1 - 5e-300 rounds to 1 and would lose the others' T1 mass)
    ro: float | None = None

    @property
    def off0(self) -> float:
        """The differing user's mass off T0 and T1 under x0: o0, else max(0, 1 - u0 - w0)."""
        return self.o0 if self.o0 is not None else max(0.0, 1.0 - self.u0 - self.w0)

    @property
    def off1(self) -> float:
        """The differing user's mass off T0 and T1 under x1: o1, else max(0, 1 - u1 - w1)."""
        return self.o1 if self.o1 is not None else max(0.0, 1.0 - self.u1 - self.w1)

    @property
    def symmetric(self) -> bool:
        """r0 = r1, u0 = w1, w0 = u1 exactly: the view is a general clone pair (both directions
        alike)."""
        return self.r0 == self.r1 and self.u0 == self.w1 and self.w0 == self.u1


@dataclass(frozen=True)
class Decomposition:
    """beta, s, a of one differing pair (module docstring) and the lower views that go with it."""

    beta: float
    s: float
    a: float
    c: float
    views: tuple[View, ...]
    pair: tuple[int, int] | None = None
    r: float = 0.0                                   # the differing user's revealed part of W
    alternatives: tuple[tuple[float, float], ...] = ()   # other valid (c, r) splits of W

    def options(self) -> list[Decomposition]:
        """This split and every alternative (c, r) one: each gives a valid upper end, so the
        bound is their minimum (module docstring, the revealed split)."""
        return [self] + [
            dataclasses.replace(self, c=c, r=r, alternatives=()) for c, r in self.alternatives
        ]

    @property
    def mass(self) -> float:
        """beta + 2s: the probability that the differing user draws from D0 or D1."""
        return self.beta + 2 * self.s


def check_matrix(matrix: object, name: str = "matrix") -> np.ndarray:
    """The randomiser as a float array (rows normalised by their exact sums).

    Rows are inputs, columns outputs; entries finite and >= 0; each row sums to 1 within 1e-12;
    at least 2 rows and 1 column; at most 256 rows and 4e6 entries.  ValueError naming ``name``.
    """
    try:
        R = np.array(matrix, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a list of rows of numbers.") from None
    if R.ndim == 2 and (R.shape[0] > MAX_INPUTS or R.size > MAX_ENTRIES):
        raise ValueError(
            f"{name} may have at most {MAX_INPUTS} rows and {MAX_ENTRIES} entries, got shape "
            f"{R.shape}."
        )
    # 2-d, >= 2 rows, entries in [0, 1], rows sum to 1
    R = v.stochastic_matrix(name, R, tol=ROW_TOL)
    sums = np.array([math.fsum(r) for r in R])
    return R / sums[:, None]


def load_matrix(path: str) -> np.ndarray:
    """The matrix of a JSON file ``{"matrix": [[...], ...]}`` (ValueError naming ``--matrix``)."""
    data = v.json_file("--matrix", path)
    if not isinstance(data, dict) or "matrix" not in data:
        raise ValueError(f'--matrix: {path!r} must hold an object {{"matrix": [[...], ...]}}.')
    return check_matrix(data["matrix"], "--matrix")


def matrix_eps0(R: Sequence[Sequence[float]] | np.ndarray) -> float:
    """The randomiser's LDP parameter: the largest log-ratio of two entries in a column
    (+inf when an output has probability 0 under one input and > 0 under another)."""
    R = check_matrix(R, "R")
    hi, lo = R.max(axis=0), R.min(axis=0)
    if np.any((lo == 0) & (hi > 0)):
        return math.inf
    used = hi > 0
    return float(np.max(np.log(hi[used]) - np.log(lo[used])))


def why_eps0_infinite(R: Sequence[Sequence[float]] | np.ndarray) -> str | None:
    """Why a matrix has no finite LDP parameter, in the user's terms (rows and columns counted
    from 1, as in the file), or None when eps0 is finite: the first output (column) with
    probability 0 under one input (row) and > 0 under another."""
    R = check_matrix(R, "R")
    hi, lo = R.max(axis=0), R.min(axis=0)
    bad = np.nonzero((lo == 0) & (hi > 0))[0]
    if bad.size == 0:
        return None
    j = int(bad[0])
    zero, mass = int(np.argmin(R[:, j])), int(np.argmax(R[:, j]))
    return (f"row {zero + 1} has a zero in column {j + 1} where row {mass + 1} has mass "
            f"{float(R[mass, j]):.6g}, so no finite eps0 holds")


LOCAL_WORK = 2 * 10 ** 7
"""The most entry comparisons (rows^2 x outputs) :func:`matrix_delta` spends."""
_U = 2.0 ** -53


def matrix_delta(R: np.ndarray, eps: float) -> float:
    """A certified upper end of the local randomiser's own delta(eps), max over ordered pairs of
    rows of sum_o max(R_i(o) - e^eps R_j(o), 0): the shuffled output is a post-processing of the
    reports, so its delta(eps) is no larger (one round; Balle et al. 2019, the blanket's premise).
    Each term is taken with R_i rounded up and e^eps R_j down by 8 ulp, the sum times 1 + 1e-12,
    and a subnormal entry's absolute rounding (1e-323) times e^eps charged per output; +inf (no
    cap) when rows^2 x outputs exceeds LOCAL_WORK.
    """
    R = v.stochastic_matrix("R", R)
    eps = v.real("eps", eps, 0.0)
    k, m = R.shape
    if k * k * m > LOCAL_WORK:
        return math.inf
    e = math.exp(min(eps, 709.0)) * (1 - 8 * _U)
    best = 0.0
    for i in range(k):
        d = np.maximum(R[i][None, :] * (1 + 8 * _U) - e * R, 0.0)
        best = max(best, float(np.max(d.sum(axis=1))))
    sub = m * 1e-323 * math.exp(min(eps, 709.0))
    return min(1.0, best * (1 + 1e-12) + sub)


def _ratio_sets(ratio: np.ndarray, sel: np.ndarray, top: float) -> np.ndarray:
    """The outputs of ``sel`` where ``ratio`` is within a relative 1e-9 of its minimum ``top``."""
    return sel & (ratio <= top * (1 + 1e-9))


def pair_decomposition(R: np.ndarray, i: int, j: int) -> Decomposition:
    """beta, s, a of the pair (x_i, x_j) of a checked matrix, with its lower views (module
    docstring).

    Views: for the inputs y* with the smallest blanket (a third input if one has it, and x_j),
    the counts on the minimising outputs T0, T1 and on all of S0, S1 (the best view is taken
    when the bracket is evaluated).
    """
    R = v.stochastic_matrix("R", R)
    i = v.integer("i", i, lo=0, hi=R.shape[0] - 1)
    j = v.integer("j", j, lo=0, hi=R.shape[0] - 1)
    P0, P1 = R[i], R[j]
    d = P0 - P1
    S0, S1 = d > 0, d < 0
    beta = max(math.fsum(d[S0]), math.fsum(-d[S1]))
    if beta == 0.0:
        return Decomposition(0.0, 0.0, 0.0, 0.0, (), (i, j))
    S = S0 | S1
    D = np.ones_like(d)                              # (D0 + D1) on S; 1 elsewhere (unused)
    D[S] = np.abs(d[S]) / beta                       # |d| <= beta: no overflow, whatever beta
    m = np.minimum(P0, P1)
    # D can be subnormal (an output 1e-310 apart under the pair): a ratio beyond the double range
    # is +inf, an output that bounds nothing
    with np.errstate(over="ignore"):
        s = float(np.min(m[S] / D[S])) * SHRINK
        ratios = R[:, S] / D[S]
    a_y = ratios.min(axis=1)
    a = float(a_y.min()) * SHRINK
    W = np.maximum(m - s * np.where(S, D, 0.0), 0.0)    # (1 - beta - 2s) W, the common remainder
    c, alternatives = 0.0, []
    if W.sum() > 0:
        used = W > 0
        rest = R[:, used] - a * np.where(S, D, 0.0)[used]
        # the others' cover of each output of W; one beyond 1e308 (W near 1e-300) is +inf
        with np.errstate(over="ignore"):
            rho = np.maximum(np.min(rest / W[used], axis=0), 0.0)
        M = 1.0 - beta - 2 * s
        c = max(0.0, float(rho.min()) * M) * SHRINK
        wu = W[used]
        for tau in np.unique(rho)[1:6]:              # reveal the outputs covered less than tau
            r = math.fsum(wu[rho < tau])
            alternatives.append((max(0.0, float(tau) * (M - r)) * SHRINK, min(r * (1 + 1e-12), M)))
    views = []
    best = a_y <= a_y.min() * (1 + 1e-12)
    third = [y for y in range(R.shape[0]) if best[y] and y not in (i, j)]
    for y in (
        third[:1]
        + ([j] if best[j] else [])
        + ([i] if best[i] and not third and not best[j] else [])
    ):
        with np.errstate(over="ignore"):              # subnormal D: +inf, as above
            ry = R[y] / D
        for label, (T0, T1) in (
            ("min", (_ratio_sets(ry, S0, a_y[y]), _ratio_sets(ry, S1, a_y[y]))),
            ("all", (S0, S1)),
        ):
            if not T0.any() or not T1.any():
                continue
            rest = ~(T0 | T1) if not (T0 & T1).any() else None     # off-cell masses from the rows
            w = View(
                math.fsum(R[y][T0]),
                math.fsum(R[y][T1]),
                math.fsum(P0[T0]),
                math.fsum(P0[T1]),
                math.fsum(P1[T0]),
                math.fsum(P1[T1]),
                f"others all x{y}, counts on {label} of S0/S1",
                None if rest is None else math.fsum(P0[rest]),
                None if rest is None else math.fsum(P1[rest]),
                math.fsum(R[y][~T0]),
            )
            if all(
                (w.r0, w.r1, w.u0, w.w0, w.u1, w.w1) != (x.r0, x.r1, x.u0, x.w0, x.u1, x.w1)
                for x in views
            ):
                views.append(w)
    return Decomposition(beta, s, a, c, tuple(views), (i, j), alternatives=tuple(alternatives))


def matrix_decompositions(R: Sequence[Sequence[float]] | np.ndarray) -> list[Decomposition]:
    """One decomposition per unordered pair of distinct rows with distinct (beta, s, a)."""
    R = check_matrix(R, "R")
    k, m = R.shape
    budget.check_work(k * (k - 1) / 2 * 2 * k * m, MAX_WORK, "the matrix's pair decompositions",
                      "give --matrix fewer rows or outputs")
    seen, out = set(), []
    for i in range(R.shape[0]):
        for j in range(i + 1, R.shape[0]):
            dec = pair_decomposition(R, i, j)
            key = (dec.beta, dec.s, dec.a, dec.c)
            if dec.beta > 0 and key not in seen:
                seen.add(key)
                out.append(dec)
    return out


# ---- the named families, in closed form (checked against their matrices in
# tests/test_randomizer.py) ----

FAMILIES = ("krr", "sue", "oue", "olh", "blh", "hr")


def olh_g(eps0: float) -> int:
    """OLH's hash range g = round(e^eps0 + 1) (Wang et al. 2017, Sec. 4.4), at least 2; eps0 in (0,
    30]."""
    eps0 = v.real("eps0", eps0, 0.0, 30.0, lo_open=True)
    return max(2, int(round(math.exp(eps0) + 1)))


def family_decomposition(family: str, eps0: float, k: int = 0, d: int = 0) -> Decomposition:
    """beta, s, a and the symmetric lower view of a named randomiser, for any differing pair.

    * ``krr`` (k values): P(y = x) = e^eps0/Z, else 1/Z, Z = e^eps0 + k - 1.  beta = (e-1)/Z,
      s = a = 1/Z; the view: others all z, counts of x0 and x1 (k >= 3; k = 2: others all x1,
      count of x0).
    * ``sue`` (d bits, RAPPOR's symmetric form): each bit kept w.p. p = e^(eps0/2)/(1+e^(eps0/2)),
      q = 1-p.  beta = p - q, s = a = q^2; the view: S0 = {bit x0 = 1, bit x1 = 0} with bit z = 0.
    * ``oue``: bit x is 1 w.p. 1/2, every other bit w.p. q = 1/(e^eps0 + 1).  beta = (1-2q)/2,
      s = a = q/2; the view as for sue (bit z = 0 keeps a fraction 1-q).
    * ``olh`` / ``blh`` (hash to g values, g = round(e^eps0+1) / 2, then k-RR on [g]); the hash
      family 3-wise independent.  With theta = 1 - 1/g: beta = theta (e-1)/Z, s = a = theta/Z,
      Z = e^eps0 + g - 1; the view: h(x0) != h(x1), h(z) != h(x0), y = h(x0).
    * ``hr`` (Hadamard response, K = 2^ceil(log2(d+1)) outputs, C_x the +1 positions of Walsh
      row x, reported w.p. e^eps0/(e^eps0+1) spread uniformly): beta = (e-1)/(2(e+1)),
      s = a = 1/(2(e+1)); the view: others all x0 ^ x1 (Walsh row x0 x1), counts on S0 and S1.

    Every view of the unary and hashing families is the upper pair's decomposition restricted to
    a set T0 of D0-mass tau (tau = p, 1-q, theta, 1): r = a tau, (u, w) = ((beta + s) tau, s tau).
    c, the others' blanket of the pair's common part W: (k-2)/Z (krr), 2q^3/p (sue), q/(2(1-q))
    (oue), (1 - beta - 2s)/e (olh, blh, hr).  eps0 in (0, 30]; k and d integers >= 0 (0: not given).
    """
    eps0 = v.real("eps0", eps0, 0.0, 30.0, lo_open=True)
    k = v.integer("k", k, lo=0, hi=10 ** 9)
    d = v.integer("d", d, lo=0, hi=10 ** 9)
    e = math.exp(eps0)
    if family == "krr":
        if not k:
            raise ValueError("--family krr needs --k (the number of values, >= 2).")
        k = v.integer("k", k, lo=2, hi=10 ** 9)
        Z = e + k - 1
        beta, s = (e - 1) / Z, 1 / Z
        if k == 2:
            view = View(
                1 / Z, e / Z, e / Z, 1 / Z, 1 / Z, e / Z, "others all x1, count of x0", 0.0, 0.0
            )
            return Decomposition(beta, s * SHRINK, s * SHRINK, 0.0, (view,))
        return Decomposition(
            beta,
            s * SHRINK,
            s * SHRINK,
            (k - 2) / Z * SHRINK,
            (
                View(
                    s,
                    s,
                    e / Z,
                    s,
                    s,
                    e / Z,
                    "others all z, counts of x0, x1",
                    (k - 2) / Z,
                    (k - 2) / Z,
                ),
                View(
                    1 / Z,
                    e / Z,
                    e / Z,
                    1 / Z,
                    1 / Z,
                    e / Z,
                    "others all x1, counts of x0, x1",
                    (k - 2) / Z,
                    (k - 2) / Z,
                ),
            ),
        )
    if family not in FAMILIES:
        raise ValueError(f"family must be one of matrix, {', '.join(FAMILIES)}, got {family!r}.")
    if not d:
        raise ValueError(f"--family {family} needs --d (the domain size, >= 3).")
    d = v.integer("d", d, lo=3, hi=10 ** 9)
    if family == "sue":
        q, p = bit_probabilities("sue", eps0)
        beta, s, tau, c = p - q, q * q, p, 2 * q ** 3 / p
        # reveal W's part with bits x0 = x1 = 1, others cover the rest fully
        alt = (p * q, p * q)
    elif family == "oue":
        q = bit_probabilities("oue", eps0)[0]
        beta, s, tau, c = (1 - 2 * q) / 2, q / 2, 1 - q, q / (2 * (1 - q))
        alt = ((1 - q) / 2, q / 2)        # the same split
    elif family in ("olh", "blh"):
        g = olh_g(eps0) if family == "olh" else 2
        theta, Z = 1 - 1 / g, e + g - 1
        beta, s, tau = theta * (e - 1) / Z, theta / Z, theta
        c = (1 - beta - 2 * s) / e
        # reveal W's outputs h(x0) = h(x1) = y (cover 1/e); the rest cover 1
        hit = e / (g * Z)
        alt = (1 - beta - 2 * s - hit, hit)
    # hr: others all x0 ^ x1, whose C lies outside S0 u S1 (every output there at the minimum)
    else:
        beta, s, tau, c = (e - 1) / (2 * (e + 1)), 1 / (2 * (e + 1)), 1.0, 1 / (2 * e)
        # reveal W's part in C_x0 and C_x1 (cover 1/e)
        alt = (1 / (2 * (e + 1)), e / (2 * (e + 1)))
    r = s * tau
    view = View(
        r,
        r,
        (beta + s) * tau,
        r,
        r,
        (beta + s) * tau,
        f"others all z, counts on T0 (D0-mass {tau:.6g})",
    )
    return Decomposition(
        beta,
        s * SHRINK,
        s * SHRINK,
        c * SHRINK,
        (view,),
        alternatives=((alt[0] * SHRINK, min(alt[1] * (1 + 1e-12), 1 - beta - 2 * s)),),
    )

