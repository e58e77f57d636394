"""Certified brackets for the tight delta(eps) and eps(delta) of a composition.

The public face of the accountant.  A composition is given, for each direction,
as a PLD or a list [(pld, count), ...] (heterogeneous rounds); the tight delta is
the max over the two directions (Koskela et al. 2021, Thm 5; Koskela et al. 2022, Def. 3 and Thm 5).
One round is computed exactly from the PLD; more rounds go through the grid of
:mod:`shuffle_lib.core.grid`, whose step, tilt and rounding mode are chosen here:

* step h: from ``accuracy`` (the target half-width of the eps bracket) and the
  number of rounds K (K h = 2 accuracy for up/down rounding; for mean-preserving rounding the
  Hoeffding step, made coarser by the gain of the rounding's own MGF, grid point 1b), coarsened
  if the composed support would need more than ``max_points`` grid points (measured with a cheap
  coarse run); then the accuracy is not met, and the bracket is as wide as that grid makes it.
  When even 8 x ``max_points`` would not do (a full-support pair at K = 1e6 needs ~1e10 points),
  the grid is a bounded 2^21 points instead of the largest allowed: certified either way, and
  seconds instead of minutes;
* tilt lam: the Chernoff-optimal value min_lam [Lambda(lam) - lam eps] for the smallest eps of a
  group (or the RDP-optimal one for the largest delta asked), where Lambda(lam) = sum_rounds log
  E_P[e^{lam L}], found by safeguarded Newton on the increasing Lambda'(lam) - eps
  (:func:`_lam_for_eps`, a few passes over the PLDs). ``delta_bracket`` groups its targets by the
  tilt each needs (:func:`_tilt_groups`), one grid per group, and refines a target its group's grid
  left loose alone: each target's bracket is then at least as narrow as a query of that eps alone
  (the two are intersected; one tilt for eps = 0.02 and 1.9 leaves delta(1.9) at [2.4e-169, 6.2e-9]
  against [4.00e-12, 4.04e-12] alone);
* ``epsilon_bracket`` steers the tilt on grids 16x coarser, then composes once at the accuracy
  asked (a dominated pair evaluated right after its dominating pair takes the tilt at the eps that
  pair's steering found, :func:`shared_steering`); a symmetric pair's bracket is read once, and the
  Hoeffding level c is chosen at one eps (the middle c's) rather than by a search per c: any c
  gives a certified end, the choice only tightens;
* ``delta_bracket`` refines the grid (accuracy / 4 at a time) until every
  bracket with upper end >= 1e-10 is within ``rtol`` (1 % for K <= 100 rounds,
  5 % above), as far as ``max_points`` allows; what stopped a target short of it is noted for
  :mod:`shuffle_lib.core.accuracy` (which defines the accuracy contract);
* a delta bracket below 1e-10 still wider than ``rtol`` (an eps bracket at a delta below 1e-10
  wider than its accuracy) is composed again alone with the top cut (grid.py point 3) at
  ``_FLOOR_TAU`` = 1e-300 instead of 1e-16, which sends up to ~1e-15 to the upper end: the grid
  then reaches the largest loss and the tilt makes the FFT's round-off relative to delta itself
  (when the whole support fits in ``_REFINE_MAX_POINTS``), and a delta bracket is refined there
  as above 1e-10.  The upper end composes the given PLDs, the lower end the dominated ones when
  they are given (a finite top atom of truncated mass, which only the default cut trims, is then
  never read as real: :func:`_floor_delta`);
* a loose bracket (typically below the FFT's round-off floor, delta ~ 1e-300) is tightened by
  the grid-free bounds of :mod:`shuffle_lib.core.extreme` (Chernoff above, the top atom below);
* every grid bracket is narrowed, before the refinement test, by the top atom below and the
  near-top bound of ``_near_top_delta`` above: at and just below the largest composed loss (a
  top tie, exact delta 0 or tiny) the grid's lower end stays 0 however fine the grid, and the
  refinement ran to the memory limit (rr eps0 = 0.3, K = 4, eps = 1.2: 420 s, now 0.03 s);
* every grid-free bound reads the rounded losses shifted by K ``loss_slack`` to its safe side.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Iterator, Sequence

import numpy as np

from shuffle_lib.core import accuracy as A
from shuffle_lib.core import extreme as X
from shuffle_lib.core import grid as F
from shuffle_lib.core import progress, search, two_atom
from shuffle_lib.core import validate as v
from shuffle_lib.core.constants import REL_MARGIN
from shuffle_lib.core.pld import PLD, check_components, epsilon_for_delta, hockey_stick, loss_slack
from shuffle_lib.core.types import ArrayLike, Bracket

DEFAULT_ACCURACY = 2e-4
"""The default target half-width of an eps bracket (``--accuracy`` of the command line)."""
DEFAULT_MAX_POINTS = 2 ** 24
_REFINE_MAX_POINTS = 2 ** 22   # delta_bracket's automatic refinement stops at this grid size
_LAM_MAX = 50.0
_HOPELESS = 8          # a support this many times max_points grid points at the accuracy's step ...
_BOUNDED_POINTS = 2 ** 21   # ... is composed on about this many points instead (certified, fast)
_MEMORY_COARSENINGS = 6    # a grid refused for memory is retried this often, twice as coarse


def composed_inf_mass(components: PLD | Sequence[tuple[PLD, int]]) -> float:
    """The composition's exact mass at +inf, delta(inf), without cancellation (grid.py point 5).

    Source: Koskela et al. 2021, Thm 5 (delta(inf) is the +inf mass); the complement form -expm1(sum
    log1p(-a)) for the composed +inf mass.
    """
    lfin = ltot = 0.0
    for p, c in check_components(components):
        a, b = F.log_masses(p)
        lfin, ltot = lfin + c * a, ltot + c * b
    return F.inf_mass(lfin, ltot)


def _cgf(components, lam):
    """(Lambda(lam), Lambda'(lam), Lambda''(lam)) of the cumulant generating function
    Lambda(lam) = sum_rounds c log E_P[e^{lam L}; L finite]
    (:func:`shuffle_lib.core.extreme.log_mgf`) in one pass over each PLD: Lambda' is the mean
    of L under the tilted law p e^{lam L} / E[...], Lambda'' its variance (>= 0: Lambda is
    convex), from the tilted law's first two raw moments (``einsum``: no temporary arrays, no
    BLAS threads).  Only the tilt searches read the two
    derivatives, and no bound depends on them: their round-off moves a tilt, never a bracket's
    certificate.  (-inf, 0, 0) when a round has no finite atom.
    """
    val = d1 = d2 = 0.0
    for p, c in components:
        a = np.multiply(p.losses, lam)
        a += p.log_probs
        m = float(np.max(a, initial=-np.inf))
        if not math.isfinite(m):
            return -math.inf, 0.0, 0.0
        a -= m
        w = np.exp(a, out=a)
        s0 = float(w.sum())
        mu = float(np.einsum("i,i", p.losses, w)) / s0
        second = float(np.einsum("i,i,i", p.losses, p.losses, w)) / s0
        val += c * (m + math.log(s0))
        d1 += c * mu
        d2 += c * max(second - mu * mu, 0.0)
    return val, d1, d2


_LAM_TOL = 1e-4
"""The tilt searches stop once the optimal tilt is known to this (absolute)."""


def _increasing_root(g, lo, hi, x, at_x):
    """A root of an increasing g on [lo, hi] to :data:`_LAM_TOL`, from a point ``x`` of the range
    with ``at_x`` = (g(x), g'(x)); g(lo) < 0 is known, and g(hi) > 0 when ``x`` is ``hi``;
    ``g(y)`` returns (g(y), g'(y)); ``hi`` when g(hi) <= 0.  Safeguarded Newton (Press et al.
    2007, Numerical Recipes, Sec. 9.4, ``rtsafe``): a Newton step from the last point unless it
    leaves the bracket the signs so far leave or does not halve the step before last, then a
    bisection.  g(hi) is read the first time a Newton step aims past ``hi``."""
    gx, sx = at_x
    hi_seen = dx_old = dx = None
    while True:
        if gx > 0:
            hi = x
        elif gx < 0:
            lo = x
        else:               # a root (or no sign: nan)
            return x
        if dx is None:      # the first point: the bracket it leaves is the first step's scale
            hi_seen = x == hi
            dx_old = dx = hi - lo
        if not hi_seen and sx > 0 and x - gx / sx >= hi:
            hi_seen = True
            if g(hi)[0] <= 0:
                return hi
        if sx <= 0 or not lo < x - gx / sx < hi or abs(2 * gx) > abs(dx_old * sx):
            dx_old, dx = dx, 0.5 * (hi - lo)
            x = lo + dx
        else:
            dx_old, dx = dx, gx / sx
            x -= dx
        if abs(dx) <= _LAM_TOL or hi - lo <= _LAM_TOL:
            return min(max(x, lo), hi)
        gx, sx = g(x)


def _lam_for_eps(components, eps):
    """The Chernoff-optimal tilt argmin_{0 <= lam <= 50} [Lambda(lam) - lam eps]: the root of the
    increasing Lambda'(lam) - eps (Lambda convex, :func:`_cgf`), 0 when Lambda'(0) >= eps."""
    val, d1, d2 = _cgf(components, 0.0)
    if not math.isfinite(val) or d1 >= eps:
        return 0.0

    def g(lam):
        _, slope, curve = _cgf(components, lam)
        return slope - eps, curve
    return _increasing_root(g, 0.0, _LAM_MAX, 0.0, (d1 - eps, d2))


def _eps_rdp(components, delta):
    """The RDP estimate min_lam (Lambda(lam) + log(1/delta)) / lam over [1e-3, 50]: an upper guess
    of eps(delta).  Its derivative has the sign of h(lam) = lam Lambda'(lam) - Lambda(lam) -
    log(1/delta), increasing (h' = lam Lambda'' >= 0), whose root :func:`_increasing_root` finds,
    starting from the Gaussian optimum sqrt(2 log(1/delta) / Lambda''), Lambda'' read at 1e-3 (for
    Lambda = mu lam + s^2 lam^2 / 2 the root is sqrt(2 log(1/delta)) / s); the least value at the
    points evaluated is returned."""
    room = math.log(1 / delta)
    best = [math.inf]

    def h(lam):
        val, d1, d2 = _cgf(components, lam)
        best[0] = min(best[0], (val + room) / lam)
        return lam * d1 - val - room, lam * d2
    at = h(1e-3)
    if at[0] < 0 and math.isfinite(best[0]):
        curve = at[1] / 1e-3
        x0 = min(max(math.sqrt(2 * room / curve), 2e-3), _LAM_MAX) if curve > 0 else _LAM_MAX
        _increasing_root(h, 1e-3, _LAM_MAX, x0, h(x0))
    return best[0]


def _step_for(accuracy, K):
    """Grid step whose rounding moves eps by about ``accuracy`` after K rounds."""
    # width K h of the up/down bracket, less 0.1 % for the slack and the search
    if K <= F.UPDOWN_MAX_K:
        return 0.999 * 2 * accuracy / K
    return accuracy / math.sqrt(K * math.log(1e15) / 2)


_WIDTHS: list = []
"""The last few :func:`_width_estimate` results, each with the PLDs it was computed for (held, so
an entry is reused only for the same objects: a query composes one list of PLDs a few times)."""
_WIDTHS_KEPT = 4


def _width_estimate(components):
    """A Bernstein-type width (in loss units) of the composed support (:func:`_width_of`), reused
    for the same PLD objects and counts (a PLD is immutable)."""
    for plds, counts, width in _WIDTHS:
        if len(plds) == len(components) and all(
                a is p and k == c for a, k, (p, c) in zip(plds, counts, components)):
            return width
    width = _width_of(components)
    _WIDTHS.insert(0, (tuple(p for p, _ in components), tuple(c for _, c in components), width))
    del _WIDTHS[_WIDTHS_KEPT:]
    return width


def _width_of(components):
    """A Bernstein-type width (in loss units) of the composed support."""
    ell = math.log(2.0 / F.TAU)
    total = 0.0
    for p, count in components:
        c = np.cumsum(p.probs)  # atoms in tails of mass <= TAU are cut anyway: ignore them
        i, j = (
            int(np.searchsorted(c, F.TAU, "right")),
            int(np.searchsorted(c, c[-1] - F.TAU, "left")),
        )
        s, w = (
            (p.losses[i : j + 1], p.probs[i : j + 1])
            if i <= j < p.losses.size
            else (p.losses, p.probs)
        )
        mu = F.dot(s, w) / max(float(w.sum()), 1e-300)
        var = F.dot((s - mu) ** 2, w) / max(float(w.sum()), 1e-300)
        b = float(np.max(np.abs(s - mu), initial=0.0))
        t = b * ell / 3 + math.sqrt((b * ell / 3) ** 2 + 2 * count * var * ell)
        span = float(s[-1] - s[0]) if s.size else 0.0
        total += min(count * span, 2 * t) + 2 * b
    return max(total, 1e-12)


def compose(
    components: PLD | Sequence[tuple[PLD, int]],
    accuracy: float = DEFAULT_ACCURACY,
    h: float | None = None,
    max_points: int = DEFAULT_MAX_POINTS,
    lam: float = 0.0,
    tau: float = F.TAU,
) -> F.Composed:
    """Compose one direction on the grid: a :class:`shuffle_lib.core.grid.Composed`.

    ``accuracy``: target half-width of the eps bracket; ``h``: grid step (overrides
    ``accuracy``); ``max_points``: cap on grid points; ``lam``: exponential tilt >= 0; ``tau``:
    the top tail mass each cut sends to +inf (grid.py point 3; at most ``TAU``).  Each
    composition counts one step of the open progress bar (:mod:`shuffle_lib.core.progress`).

    Source: the FFT accountant of Koskela et al. 2021, Sec. 2.2 / Koskela et al. 2022, Sec. 2.2
    (:mod:`shuffle_lib.core.grid`).
    """
    cg = _compose(components, accuracy, h, max_points, lam, tau)
    progress.advance()
    return cg


def _compose(components: PLD | Sequence[tuple[PLD, int]], accuracy: float, h: float | None,
             max_points: int, lam: float, tau: float) -> F.Composed:
    components = check_components(components)
    accuracy = v.real("accuracy", accuracy, 0.0, 1.0, lo_open=True)
    max_points = v.integer("max_points", max_points, lo=64, hi=2 ** 26)
    lam = v.real("lam", lam, 0.0, _LAM_MAX)
    K = sum(c for _, c in components)
    mode = "updown" if K <= F.UPDOWN_MAX_K else "mean"
    width = _width_estimate(components)
    if h is not None:
        h = v.real("h", h, 0.0, 1.0, lo_open=True)
        if width / h > 4 * max_points:
            raise ValueError(
                f"h={h:g} is too small for max_points={max_points}: the composed support needs "
                f"about {width / h:.3g} grid points; take h >= {width / (4 * max_points):.3g}."
            )
        return F.compose_on_grid(components, h, lam, mode, tau=tau)
    h = _fine_step(components, accuracy)
    # a lattice pair composes exactly on its lattice, at any K (grid point 1a's roundings are
    # the identity there): certified and as narrow as the round-off allows, on the fewest points
    # when the lattice is coarser than the accuracy's step (randomised response; the 3-outcome
    # pair (0.5, 0.3, 0.2) / (0.2, 0.3, 0.5) at K = 10: 21 points), and where the coarsened grid
    # below would leave a rounding width of K h (0 to 278647 for eps(1e-6) of that pair at
    # K = 1e6, 1.2e10 points at the accuracy's step)
    g = F.lattice_step(components)
    if g is not None and g >= h and width / g <= max_points:
        return F.compose_on_grid(components, g, lam, "updown", method="squaring", tau=tau)
    if width / h > max_points:
        # measure the real support with a coarse run before coarsening h
        probe = F.compose_on_grid(components, width / 2 ** 14, lam, mode, tau=tau)
        real = max(probe.up.w.size, probe.low.w.size) * probe.h
        # out of reach by far: a bounded grid, not the largest
        if real / h > _HOPELESS * max_points:
            max_points = min(max_points, _BOUNDED_POINTS)
        h = max(h, 1.3 * real / max_points)
    # a grid the memory limit refuses (the Chernoff window can be a few times the estimated
    # width, and the process already holds other grids): twice as coarse until it fits; each
    # grid is certified, and the callers note "memory" when the step ends above the fine one
    for _ in range(_MEMORY_COARSENINGS):
        try:
            return F.compose_on_grid(components, h, lam, mode, tau=tau)
        except F.MemoryLimitError:
            h *= 2.0
    return F.compose_on_grid(components, h, lam, mode, tau=tau)


def _on_lattice(cg, components):
    """True when ``cg`` was composed on the lattice of its components (exact roundings)."""
    return cg.mode == "updown" and F.lattice_step(components) == cg.h


def _fine_step(components, accuracy):
    """The step that meets ``accuracy``: :func:`_step_for`, coarser by the rounding MGF's gain in
    'mean' mode (grid point 1b)."""
    K = sum(c for _, c in components)
    h = _step_for(accuracy, K)
    return h if K <= F.UPDOWN_MAX_K else h * 0.98 * F.rounding_gain(components, h)


def _ladder(cg, delta=None):
    if cg.mode == "updown":
        return [1.0]
    if delta is None:
        return list(10.0 ** -np.arange(3.0, 41.0))
    return [delta * 10.0 ** -j for j in range(1, 9)]


def delta_bracket_one(cg: F.Composed, eps: float) -> Bracket:
    """Certified bracket for delta_{P/Q}(eps) of one composed direction.

    The Hoeffding level c is chosen on the fast approximate reads; the returned
    values are direct evaluations, so each is certified whatever c was chosen.

    Source: Koskela et al. 2021, Thm 5, eq. 2.3 read off the grid (:mod:`shuffle_lib.core.grid`,
    points 1-4).
    """
    v.instance("cg", cg, F.Composed)
    eps = v.real("eps", eps)
    ladder = _ladder(cg)
    c_up = min(ladder, key=lambda c: cg.delta_upper(eps, c, fast=True))
    c_low = max(ladder, key=lambda c: cg.delta_lower(eps, c, fast=True))
    return Bracket(cg.delta_lower(eps, c_low), cg.delta_upper(eps, c_up))


def _bisect(f, delta, top):
    """For non-increasing f: (lo, hi) with f(lo) > delta >= f(hi) (lo = 0 if f(0) <= delta)."""
    if f(0.0) <= delta:
        return 0.0, 0.0
    if f(top) > delta:  # f is constant beyond top: no finite eps
        return math.inf, math.inf
    return _narrow(f, delta, 0.0, top)


def _narrow(f, delta, lo, hi):
    """Bisect keeping f(lo) > delta >= f(hi) until hi - lo <= 1e-12 max(1, hi); returns (lo, hi)."""
    return search.narrow(lambda x: f(x) > delta, lo, hi, lambda a, b: b - a <= 1e-12 * max(1.0, b))


def _certify(f, x, delta, want_above, top):
    """Move x (outwards, by doubling steps) until the certified f confirms the side wanted: down
    to 0 at most for f > delta; up for f <= delta, +inf once past ``top`` without it."""
    step = 1e-12 * max(1.0, x)
    if want_above:
        return max(search.step_out(lambda y: f(y) > delta, x, step, True, 0.0), 0.0)
    below = [False]

    def verified(y):
        below[0] = f(y) <= delta
        return below[0] or y > top
    x = search.step_out(verified, x, step, False, math.inf)
    return x if below[0] else math.inf


def _lower_end(f, delta, hi):
    """Largest x found in [0, hi] with f(x) > delta, or 0: steps down from hi, then bisects.

    Only points with f > delta are ever returned, so the result is certified even where
    f (a tilted lower bound, weak far below its tilt point) is not monotone.
    """
    if f(0.0) <= delta and f(min(hi, 1.0)) <= delta and hi <= 1.0:
        return 0.0
    lo = search.step_out(lambda x: f(x) > delta, hi, 1e-9 * max(1.0, hi), True, 0.0)
    if lo <= 0.0:
        return 0.0
    return _narrow(f, delta, lo, hi)[0]


def epsilon_bracket_one(cg: F.Composed, delta: float) -> Bracket:
    """Certified bracket for eps_{P/Q}(delta) of one composed direction.

    upper: delta_upper(upper) <= delta, so the tight eps is <= upper;
    lower: delta_lower(lower) > delta (or lower = 0), so the tight eps is >= lower.
    The search runs on the fast reads; both ends are then confirmed by direct evaluation.

    Source: Koskela et al. 2021, Thm 5, eq. 2.3 inverted on the grid (:mod:`shuffle_lib.core.grid`).
    """
    v.instance("cg", cg, F.Composed)
    delta = v.probability("delta", delta)
    top = F.top_loss(cg)
    ladder = _ladder(cg, delta)
    ups = lows = ladder
    # pick c where it matters (at the eps of a middle c): one search, not one per c
    if len(ladder) > 1:
        e_mid = _bisect(
            lambda x: cg.delta_upper(x, ladder[len(ladder) // 2], fast=True), delta, top
        )[1]
        if math.isfinite(e_mid):
            ups = [min(ladder, key=lambda c: cg.delta_upper(e_mid, c, fast=True))]
            lows = [max(ladder, key=lambda c: cg.delta_lower(e_mid, c, fast=True))]
    e_up, c_up = min(
        (_bisect(lambda x: cg.delta_upper(x, c, fast=True), delta, top)[1], c)  # noqa: B023
        for c in ups
    )
    if math.isfinite(e_up):
        e_up = _certify(lambda x: cg.delta_upper(x, c_up), e_up, delta, False, top)
    hi = e_up if math.isfinite(e_up) else top
    e_low, c_low = max(
        (_lower_end(lambda x: cg.delta_lower(x, c, fast=True), delta, hi), c)  # noqa: B023
        for c in lows
    )
    e_low = _certify(lambda x: cg.delta_lower(x, c_low), e_low, delta, True, top)
    if math.isinf(e_up) and cg.delta_lower(top, c_low) > delta:
        e_low = math.inf  # delta_lower stays above delta for good: no finite eps
    return Bracket(e_low, e_up)


def _single(components):
    return components[0][0] if len(components) == 1 and components[0][1] == 1 else None


def _exact_eps(pld, delta):
    """Bracket around the exact eps_{P/Q}(delta), each side confirmed by evaluation.

    upper: delta-hat(upper - slack) (1 + margin) <= delta, so the exact delta(upper) <= delta;
    lower: delta-hat(lower + slack) (1 - margin) > delta, so the exact delta(lower) > delta.
    """
    e = epsilon_for_delta(pld, delta)
    if not math.isfinite(e) or e == 0.0:
        return Bracket(e, e)
    eta, m, top = loss_slack(pld), REL_MARGIN, float(pld.losses[-1])
    pad = 1e-12 * max(1.0, e)
    up = e + pad
    while up - eta <= top and hockey_stick(pld, up - eta) * (1 + m) > delta:
        pad *= 2
        up = e + pad
    pad = 1e-12 * max(1.0, e)
    lo = max(0.0, e - pad)
    while lo > 0 and hockey_stick(pld, lo + eta) * (1 - m) <= delta:
        pad *= 2
        lo = max(0.0, e - pad)
    return Bracket(lo, up)


def _two_atom(pq, qp, low_pq, low_qp, accuracy, kw):
    """((pq, qp) dominating, (pq, qp) dominated) exact compositions (:mod:`two_atom`) when every
    round has at most two finite atoms and the grid at ``accuracy`` would be out of reach (a
    composed support of more than _HOPELESS x DEFAULT_MAX_POINTS points: a bounded, coarse grid;
    or one round spanning more than _BOUNDED_POINTS: minutes of window search when the loss barely
    varies, as for rr at eps0 = 36.7 and K = 1000); else None (the grid route)."""
    lows = (pq if low_pq is None else low_pq, qp if low_qp is None else low_qp)
    if kw.get("h") is not None or not all(two_atom.applies(c) for c in (pq, qp, *lows)):
        return None
    def reach(c):       # the composed support's and one round's grid points at accuracy's step
        h = _fine_step(c, accuracy)
        span = max(float(p.losses[-1] - p.losses[0]) for p, _ in c)
        return _width_estimate(c) / h <= _HOPELESS * DEFAULT_MAX_POINTS and \
            span / h <= _BOUNDED_POINTS
    if reach(pq) and reach(qp):
        return None

    def both(a, b):
        x = two_atom.composed(a, composed_inf_mass(a))
        y = x if _same(a, b) else two_atom.composed(b, composed_inf_mass(b))
        return x, y
    (u_pq, l_pq, _), (u_qp, l_qp, _) = both(pq, qp)
    if low_pq is not None:
        (_, l_pq, _), (_, l_qp, _) = both(*lows)
    return (u_pq, u_qp), (l_pq, l_qp)


def _same(pq, qp):
    """True when both directions are the same PLDs (symmetric pairs): compose once."""
    return len(pq) == len(qp) and all(
        c1 == c2 and (a is b or (a.inf_mass == b.inf_mass and np.array_equal(a.losses, b.losses)
                                 and np.array_equal(a.probs, b.probs)))
        for (a, c1), (b, c2) in zip(pq, qp))


def _all_infinite(components):
    """A round whose PLD has no finite atom makes the composed loss +inf surely: delta = 1."""
    return any(p.losses.size == 0 for p, _ in components)


def _loose(br):
    return not br.upper <= 1.01 * br.lower


def _cap_eps(br, components, delta, low=None):
    """Tighten a loose bracket with the grid-free bounds of :mod:`shuffle_lib.core.extreme` (tiny
    delta); ``low``: dominated components for the lower end's top-atom bound (default:
    ``components``)."""
    if not _loose(br):
        return br
    # the caps read the rounded losses: the true losses lie within K loss_slack of them (as in
    # _cap_delta), so the Chernoff end moves up by that much and the top-atom end down
    lo_comps = components if low is None else low
    slack = math.fsum(c * loss_slack(p) for p, c in components)
    slack_lo = math.fsum(c * loss_slack(p) for p, c in lo_comps)
    top = X.top_atom_eps(lo_comps, delta)
    lo = max(br.lower, top - slack_lo if top > slack_lo else 0.0)
    cher = X.chernoff_eps(components, delta)
    return Bracket(lo, min(br.upper, max(cher + slack if math.isfinite(cher) else cher, lo)))


def _cap_delta(br, components, eps, low=None):
    br = Bracket(br.lower, two_atom.positive_floor(br.upper, components, eps))
    if not _loose(br):
        return br
    # the grid-free caps read the PLDs' floating-point losses: shifted by their rounding (K times
    # loss_slack), as the one-round path is; unshifted, the Chernoff cap takes a pair whose losses
    # 1e-16 all round to 0 down to delta(0) = 0 at K = 2, exact 5.2e-17
    # (tests/test_certified_edges.py::test_grid_free_caps_carry_the_loss_rounding)
    slack = math.fsum(c * loss_slack(p) for p, c in components)
    lo_comps = components if low is None else low
    slack_lo = math.fsum(c * loss_slack(p) for p, c in lo_comps)
    lo = max(br.lower, X.top_atom_delta(lo_comps, eps + slack_lo))
    return Bracket(lo, min(br.upper, max(X.chernoff_delta(components, eps - slack), lo)))


def _near_top_delta(components, eps):
    """Grid-free upper ends for delta(eps), one per eps, tight when eps is at or just below the
    largest composed loss T (a top tie, where the grid's bracket is [0, x] and refining never
    lifts the 0).  The true losses lie within K loss_slack = s of the rounded ones, so a K-fold
    outcome with true loss > eps needs every round's rounded loss >= its top - D, D = T - eps + s;
    hence delta(eps) <= D_inf + prod_r P_r[top_r - D <= l < inf]^(c_r) (1 - e^(eps - T - s))^+.

    Source: Koskela et al. 2021, Thm 5 (delta = E_P[(1 - e^(eps - L))^+]), bounded atom by atom.
    """
    m, ulp = REL_MARGIN, 2.0 ** -52
    slack = math.fsum(c * loss_slack(p) for p, c in components)
    if any(p.losses.size == 0 for p, _ in components):
        return [1.0 for _ in eps]
    T = math.fsum(c * float(p.losses[-1]) for p, c in components)
    T_hi = (
        T
        + slack
        + 4 * ulp * max(1.0, math.fsum(c * abs(float(p.losses[-1])) for p, c in components))
    )
    d_inf = min(1.0, composed_inf_mass(components) * (1 + m))
    tails = [(p.losses, np.cumsum(p.probs[::-1])[::-1], c) for p, c in components]
    out = []
    for e in eps:
        gap = T_hi - e
        if gap <= 0:
            out.append(d_inf)
            continue
        log_p = 0.0
        for losses, tail, c in tails:
            i = int(
                np.searchsorted(
                    losses,
                    float(losses[-1]) - gap - 4 * ulp * max(1.0, abs(gap), abs(float(losses[-1]))),
                    side="left",
                )
            )
            w = float(tail[i]) if i < tail.size else 0.0
            log_p += c * math.log(w) if w > 0 else -math.inf
        out.append(
            min(
                1.0, (d_inf + math.exp(min(0.0, log_p)) * -math.expm1(min(0.0, e - T_hi))) * (1 + m)
            )
        )
    return out


def _top_atom_lower(components, eps):
    """X.top_atom_delta at eps + K loss_slack (the rounded losses' safe side), one per eps."""
    slack = math.fsum(c * loss_slack(p) for p, c in components)
    return X.top_atom_deltas(components, [e + slack for e in eps])


def _tight(br, lower, upper):
    """A grid bracket narrowed by grid-free ends (each certified on its own)."""
    return Bracket(max(br.lower, lower), min(br.upper, upper))


def _both(a, b):
    return Bracket(max(a.lower, b.lower), max(a.upper, b.upper))


def _compose_keywords(kw: dict, allowed: tuple[str, ...], caller: str) -> None:
    """TypeError for a keyword :func:`compose` does not take (the one-round path, which never
    composes, would otherwise ignore it silently)."""
    unknown = sorted(set(kw) - set(allowed))
    if unknown:
        raise TypeError(f"{caller}() got an unexpected keyword argument {unknown[0]!r}")


def delta_bracket(
    plds_pq: PLD | Sequence[tuple[PLD, int]],
    plds_qp: PLD | Sequence[tuple[PLD, int]],
    eps: ArrayLike,
    accuracy: float = DEFAULT_ACCURACY,
    rtol: float | None = None,
    lower: tuple[Sequence[tuple[PLD, int]], Sequence[tuple[PLD, int]]] | None = None,
    **kw,
) -> list[Bracket]:
    """Certified brackets for the tight delta(eps) of a composition, one per eps.

    ``plds_pq``, ``plds_qp``: a PLD or [(pld, count), ...] per direction.  One round
    is exact (up to a 1e-12 relative margin).  ``rtol``: refine the grid until each
    bracket with upper >= 1e-10 is this tight relative to its upper end (default 1 %
    for K <= 100 rounds, 5 % above), within ``max_points``.  ``lower``: dominated components
    (pq, qp) for the grid-free lower caps when the given ones carry a truncated tail as a finite
    top atom (the grid trims it; the caps would count it).  Keywords go to :func:`compose`.

    Source: Koskela et al. 2021, Thm 5 (max over both directions), Koskela et al. 2022, Def. 3 and
    Thm 5.
    """
    eps = v.reals("eps", eps, lo=0.0)
    accuracy = v.real("accuracy", accuracy, 0.0, 1.0, lo_open=True)
    _compose_keywords(kw, ("h", "max_points", "lam"), "delta_bracket")
    pq, qp = check_components(plds_pq, "plds_pq"), check_components(plds_qp, "plds_qp")
    low_pq, low_qp = (
        (None, None) if lower is None
        else (check_components(lower[0], "lower"), check_components(lower[1], "lower"))
    )
    if _single(pq) is not None and _single(qp) is not None:
        m = REL_MARGIN
        # symmetric: evaluate once
        plds = [pq[0][0]] if pq[0][0] is qp[0][0] else [pq[0][0], qp[0][0]]
        eta = max(loss_slack(p) for p in plds)
        return [
            Bracket(
                max(0.0, min(1.0, max(hockey_stick(p, e + eta) for p in plds) * (1 - m))),
                max(two_atom.positive_floor(min(1.0, hockey_stick(p, e - eta) * (1 + m)),
                                            [(p, 1)], e) for p in plds),
            )
            for e in eps
        ]
    if _all_infinite(pq) or _all_infinite(qp):
        return [Bracket(1.0, 1.0) for _ in eps]
    exact = _two_atom(pq, qp, low_pq, low_qp, accuracy, kw)
    if exact is not None:     # an exact composition, read by the one-round path above
        (u_pq, u_qp), (l_pq, l_qp) = exact
        hi, lo = delta_bracket(u_pq, u_qp, eps), delta_bracket(l_pq, l_qp, eps)
        return [Bracket(min(x.lower, y.upper), y.upper) for x, y in zip(lo, hi)]
    inf_mass = max(composed_inf_mass(pq), composed_inf_mass(qp))
    if inf_mass >= 1.0 - 1e-12:           # delta(inf) <= delta(eps) <= 1 already pins every eps
        return [Bracket(inf_mass * (1 - REL_MARGIN), 1.0) for _ in eps]
    K = sum(c for _, c in pq)
    rtol = (
        A.delta_rtol(K)
        if rtol is None
        else v.real("rtol", rtol, 0.0, 1.0, lo_open=True)
    )
    lows = (pq if low_pq is None else low_pq, qp if low_qp is None else low_qp)
    out: dict[int, Bracket] = {}
    groups = [list(range(len(eps)))] if len(eps) == 1 else _tilt_groups((pq, qp), eps)
    for group in groups:
        part = _delta_group(pq, qp, [eps[i] for i in group], accuracy, rtol, lows, (low_pq, low_qp),
                            kw)
        for i, br in zip(group, part):
            # a target its group's grid left loose: refined alone, as a query of that eps alone
            # would be (both brackets are certified: their intersection is)
            if len(group) > 1 and _misses(br, rtol):
                alone = _delta_group(pq, qp, [eps[i]], accuracy, rtol, lows, (low_pq, low_qp),
                                     kw)[0]
                br = Bracket(max(br.lower, alone.lower), min(br.upper, alone.upper))
            if _floored(br, rtol) and _span_points(pq, qp, accuracy, lows) <= _REFINE_MAX_POINTS:
                # below the floor of the top cut: alone again, the top tail kept to ~1e-300
                br = _floor_delta(pq, qp, eps[i], accuracy, rtol, lows, (low_pq, low_qp), kw, br)
            out[i] = br
    return [out[i] for i in range(len(eps))]


_FLOOR_TAU = 1e-300
"""The top cut (grid.py point 3) of a target below the floor its default cut leaves: the cut mass
goes to the upper end (+inf) and off the lower one, so a cut of TAU = 1e-16 per step leaves every
delta below ~1e-15 at [~0, ~8e-16] (the clones pair, n = 1e4, eps0 = 4, K = 4: delta(3) is
[2.4e-169, 7.9e-16] with it; kept to 1e-300, a bracket within 1 %, :func:`_floor_delta`)."""


def _floor_delta(pq, qp, eps, accuracy, rtol, lows, given_lows, kw, br):
    """``br`` (a delta bracket below the floor of the default top cut) narrowed by the grid
    composed again with the top cut at ``_FLOOR_TAU``, each end from its own components.

    Upper end: the given components (``pq``, ``qp``), which dominate the pair in every composition;
    the cut's mass goes to +inf (grid.py point 3), so the end stays >= the exact delta.

    Lower end: the dominated components ``lows``.  Given PLDs may carry a truncated tail as a finite
    atom at the largest loss (the clones pairs: mass <= 1e-17 that the exact pair holds at smaller
    losses); the default cut of 1e-16 trims it, a cut of 1e-300 keeps it, and a grid reading it
    counts mass the exact pair does not have at that loss (koskela n = 11, eps0 = 10, K = 2:
    delta(42.7078) had a lower end of 1.0e-40 against the exact 7.3e-47).  The dominated PLDs leave
    that mass out: a sub-PLD mu <= omega atom by atom, so its K-fold product is <= the exact one's
    atom by atom, and delta(eps) = mu_K(+inf) + sum_s mu_K(s) (1 - e^{eps - s})^+ (Koskela et al.
    2021, Thm 5), a sum of non-negative terms, can only fall; the +inf atoms the dominated PLD keeps
    are the exact pair's own.  The grid composes a sub-PLD at its own mass (each round's grid keeps
    its total in the log-scale, grid.py point 6; the mean rounding's MGF counts the missing mass as
    unrounded, point 1b), and its 1e-300 cut is dropped from the lower end (point 3), so the lower
    end stays <= the sub-PLD's delta <= the exact delta.  Without dominated components the given
    ones serve both ends.  The result is intersected with ``br`` (both are certified).
    """
    fine = dict(kw, tau=_FLOOR_TAU)
    alone = _delta_group(pq, qp, [eps], accuracy, rtol, lows, given_lows, fine, 0.0)[0]
    lo = alone.lower
    if given_lows != (None, None):
        lo = _delta_group(lows[0], lows[1], [eps], accuracy, rtol, lows, (None, None), fine,
                          0.0)[0].lower
    return Bracket(min(max(br.lower, lo), alone.upper), min(br.upper, alone.upper))


def _floored(br, rtol):
    """A delta bracket below :data:`shuffle_lib.core.accuracy.DELTA_FLOOR` wider than ``rtol``."""
    return 0.0 < br.upper < A.DELTA_FLOOR and br.upper - br.lower > rtol * br.upper


def _span_points(pq, qp, accuracy, lows=()):
    """Grid points of the whole composed support at the accuracy's step (the top uncut reaches
    the largest loss), over both directions and the dominated components ``lows``: a bound on
    what the floor retry costs."""
    return max(
        math.fsum(c * float(p.losses[-1] - p.losses[0]) for p, c in comps if p.losses.size)
        / _fine_step(comps, accuracy)
        for comps in (pq, qp, *lows)
    )


_TILT_GAP = math.log(1e3)
"""A target shares a group's grid when the group's tilt costs its Chernoff exponent at most this
(:func:`_tilt_groups`)."""


def _tilt_groups(
    comps: Sequence[Sequence[tuple[PLD, int]]], eps: Sequence[float]
) -> list[list[int]]:
    """Indices of ``eps`` grouped by the tilt they need, one grid per group.

    Sorted by eps, each group is tilted for its smallest target x_0 (lam_0 = the Chernoff-optimal
    tilt there); a larger target x joins it while, in each direction, the Chernoff exponent
    Lambda(lam_0) - lam_0 x exceeds its optimum min_lam [Lambda(lam) - lam x] by at most
    ``_TILT_GAP``.  The FFT's round-off is relative to the tilted peak (grid.py, point 2), so this
    gap bounds how much larger, relative to delta(x), the round-off is at x than on x's own grid:
    a tilt steered for eps = 0.02 leaves delta(1.9) of a 4-round clones pair at [2.4e-169, 6.2e-9]
    against [4.00e-12, 4.04e-12] alone, while grouping nearby targets keeps one grid for most
    figures' eps ranges.
    """
    order = sorted(range(len(eps)), key=lambda i: eps[i])
    groups: list[list[int]] = []
    anchor: list[float] = []
    for i in order:
        x = float(eps[i])
        lams = [_lam_for_eps(c, x) for c in comps]
        if groups and all(
            X.log_mgf(c, a) - a * x - (X.log_mgf(c, lam) - lam * x) <= _TILT_GAP
            for c, a, lam in zip(comps, anchor, lams)
        ):
            groups[-1].append(i)
        else:
            groups.append([i])
            anchor = lams
    return groups


def _misses(br, rtol, floor=A.DELTA_FLOOR):
    """True when a delta bracket above ``floor`` (default 1e-10) is wider than ``rtol`` of its
    upper end (the refinement's test)."""
    return br.upper >= floor and br.upper - br.lower > rtol * br.upper


def _delta_group(pq, qp, eps, accuracy, rtol, lows, given_lows, kw, floor=A.DELTA_FLOOR):
    """:func:`delta_bracket`'s grid route for targets sharing one tilt (that of the smallest eps):
    the grid is refined (accuracy / 4 at a time) until each bracket above ``floor`` meets ``rtol``
    or a limit stops it; below 1e-10 (``floor`` 0, :func:`_floor_delta`) also once a refinement
    no longer halves the relative width of a loose bracket (the FFT's round-off, not the grid's
    rounding, is then its width)."""
    low_pq, low_qp = given_lows
    e0 = float(min(eps))
    lam_pq, lam_qp = _lam_for_eps(pq, e0), _lam_for_eps(qp, e0)
    pairs = None
    last = None
    top_pq = _near_top_delta(pq, eps)
    top_qp = top_pq if _same(pq, qp) else _near_top_delta(qp, eps)
    bot_pq = _top_atom_lower(lows[0], eps)
    bot_qp = _top_atom_lower(lows[1], eps)
    while True:
        try:
            a = compose(pq, accuracy=accuracy, lam=lam_pq, **kw)
            b = a if _same(pq, qp) else compose(qp, accuracy=accuracy, lam=lam_qp, **kw)
        except F.MemoryLimitError:
            if pairs is None:       # not even the requested accuracy fits: refuse
                raise
            # a refinement would exceed the memory limit: the last grid's brackets are certified
            A.note("delta", [e for e, (x, y) in zip(eps, pairs)
                             if _misses(_both(x, y), rtol, floor)],
                   "memory")
            return [
                _both(_cap_delta(x, pq, e, low_pq), _cap_delta(y, qp, e, low_qp))
                for (x, y), e in zip(pairs, eps)
            ]
        pairs = [(_tight(delta_bracket_one(a, e), lu, u), _tight(delta_bracket_one(b, e), lw, w))
                 for e, u, w, lu, lw in zip(eps, top_pq, top_qp, bot_pq, bot_qp)]
        out = [_both(x, y) for x, y in pairs]
        loose = any(_misses(r, rtol, floor) for r in out)
        exact = _on_lattice(a, pq) and _on_lattice(b, qp)
        at_cap = max(a.h, b.h) > 1.01 * max(_fine_step(pq, accuracy), _fine_step(qp, accuracy)) or \
            4 * max(a.up.w.size, b.up.w.size) > _REFINE_MAX_POINTS
        widths = [(r.upper - r.lower) / r.upper if r.upper > 0 else 0.0 for r in out]
        stalled = floor < A.DELTA_FLOOR and last is not None and all(
            w > 0.5 * w0 for w, w0 in zip(widths, last) if w > rtol)
        last = widths
        if not loose or at_cap or stalled or kw.get("h") is not None or accuracy < 1e-7:
            A.note("delta", [e for e, r in zip(eps, out) if _misses(r, rtol, floor)],
                   "floating-point floor" if exact else "grid step" if kw.get("h") is not None
                   else "memory" if at_cap else "floating-point floor")
            return [
                _both(_cap_delta(x, pq, e, low_pq), _cap_delta(y, qp, e, low_qp))
                for (x, y), e in zip(pairs, eps)
            ]
        accuracy /= 4


def epsilon_bracket(
    plds_pq: PLD | Sequence[tuple[PLD, int]],
    plds_qp: PLD | Sequence[tuple[PLD, int]],
    delta: ArrayLike,
    lower: tuple[Sequence[tuple[PLD, int]], Sequence[tuple[PLD, int]]] | None = None,
    **kw,
) -> list[Bracket]:
    """Certified brackets for the tight eps(delta) of a composition, one per delta.

    Source: Koskela et al. 2021, Thm 5 (max over both directions), Koskela et al. 2022, Def. 3 and
    Thm 5.
    """
    delta = v.reals("delta", delta, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    _compose_keywords(kw, ("accuracy", "h", "max_points"), "epsilon_bracket")
    if "accuracy" in kw:
        v.real("accuracy", kw["accuracy"], 0.0, 1.0, lo_open=True)
    pq, qp = check_components(plds_pq, "plds_pq"), check_components(plds_qp, "plds_qp")
    low_pq, low_qp = (
        (None, None) if lower is None
        else (check_components(lower[0], "lower"), check_components(lower[1], "lower"))
    )
    if _single(pq) is not None and _single(qp) is not None:
        if pq[0][0] is qp[0][0]:              # a symmetric pair given as one PLD: search once
            return [_exact_eps(pq[0][0], d) for d in delta]
        return [_both(_exact_eps(pq[0][0], d), _exact_eps(qp[0][0], d)) for d in delta]
    if _all_infinite(pq) or _all_infinite(qp):
        return [Bracket(math.inf, math.inf) for _ in delta]
    inf_mass = max(composed_inf_mass(pq), composed_inf_mass(qp))
    if all(d < inf_mass for d in delta):   # delta(eps) >= delta(inf) > every target: no finite eps
        return [Bracket(math.inf, math.inf) for _ in delta]
    exact = _two_atom(pq, qp, low_pq, low_qp, kw.get("accuracy", DEFAULT_ACCURACY), kw)
    if exact is not None:     # an exact composition, read by the one-round path above
        (u_pq, u_qp), (l_pq, l_qp) = exact
        ups, lows = epsilon_bracket(u_pq, u_qp, delta), epsilon_bracket(l_pq, l_qp, delta)
        return [Bracket(min(lo.lower, up.upper), up.upper) for lo, up in zip(lows, ups)]
    out = _eps_tilted(pq, qp, list(delta), low_pq, low_qp, kw)
    half = kw.get("accuracy", DEFAULT_ACCURACY) if kw.get("h") is None else math.inf
    # targets far from the largest one: their own tilt where the shared one was loose
    if len(delta) > 1:
        for i, (d, br) in enumerate(zip(delta, out)):
            if math.isfinite(br.upper) and br.upper - br.lower > 2.2 * half:
                alt = _eps_tilted(pq, qp, [float(d)], low_pq, low_qp, kw)[0]
                out[i] = Bracket(max(br.lower, alt.lower), min(br.upper, alt.upper))
    # a delta below the floor of the default top cut: alone again, the top kept to ~1e-300
    acc = kw.get("accuracy", DEFAULT_ACCURACY)
    dominated = (pq if low_pq is None else low_pq, qp if low_qp is None else low_qp)
    for i, (d, br) in enumerate(zip(delta, out)):
        if (d < A.DELTA_FLOOR and kw.get("h") is None and not A.met("epsilon", br, acc)
                and _span_points(pq, qp, acc, dominated) <= _REFINE_MAX_POINTS):
            out[i] = _floor_eps(pq, qp, float(d), dominated, (low_pq, low_qp), kw, br)
    return out


def _floor_eps(pq, qp, delta, lows, given_lows, kw, br):
    """``br`` (an eps bracket at a delta below the floor of the default top cut) narrowed by the
    grid composed again with the top cut at ``_FLOOR_TAU``: the upper end from the given
    components, the lower end from the dominated ones ``lows`` (the argument of
    :func:`_floor_delta`: their delta is <= the exact one at every eps, so the eps where it falls
    to ``delta`` is <= the exact eps(delta)).  Intersected with ``br`` (both are certified)."""
    fine = dict(kw, tau=_FLOOR_TAU)
    alt = _eps_tilted(pq, qp, [delta], *given_lows, fine)[0]
    lo = alt.lower
    if given_lows != (None, None):
        lo = _eps_tilted(lows[0], lows[1], [delta], None, None, fine)[0].lower
    return Bracket(min(max(br.lower, lo), alt.upper), min(br.upper, alt.upper))


_STEERED: contextvars.ContextVar[dict | None] = contextvars.ContextVar("steered", default=None)


@contextlib.contextmanager
def shared_steering() -> Iterator[None]:
    """A block in which :func:`epsilon_bracket` steers its tilt once per (largest delta,
    accuracy, counts): a later call with the same (the dominated pair of a model whose
    dominating pair was just evaluated, :func:`shuffle_lib.core.evaluate.brackets`) takes its
    tilts at the eps the first steering found, without a steering grid of its own.  A tilt only
    places the grid's window and round-off; every tilt gives certified brackets."""
    token = _STEERED.set({})
    try:
        yield
    finally:
        _STEERED.reset(token)


def _eps_tilted(pq, qp, delta, low_pq, low_qp, kw):
    """:func:`epsilon_bracket`'s grid route with one tilt, steered for the largest delta."""
    d0 = float(max(delta))
    sym = _same(pq, qp)
    # the tilt that suits eps(d0): first from the RDP guess, then from the bracket it gives (a
    # symmetric pair's two directions are one search)
    fine = kw.get("h") is None
    memo = _STEERED.get()
    key = (d0, kw.get("accuracy", DEFAULT_ACCURACY), kw.get("h"), kw.get("max_points"),
           tuple(c for _, c in pq), tuple(c for _, c in qp))
    if memo is not None and key in memo and fine:
        # the dominated pair of a pair just steered: its tilts at the eps that steering found
        lam0 = _lam_for_eps(pq, memo[key][0])
        lams = (lam0, lam0 if sym else _lam_for_eps(qp, memo[key][1]))
        return _eps_fine(pq, qp, delta, low_pq, low_qp, kw, lams, sym)
    lam0 = _lam_for_eps(pq, 0.8 * _eps_rdp(pq, d0))
    lams = (lam0, lam0 if sym else _lam_for_eps(qp, 0.8 * _eps_rdp(qp, d0)))
    # coarse to fine: the tilt is steered on grids 16x coarser (cheap), then one fine composition
    steer = dict(kw, accuracy=min(1.0, 16 * kw.get("accuracy", DEFAULT_ACCURACY))) if fine else kw
    for _attempt in range(2):
        a = compose(pq, lam=lams[0], **steer)
        b = a if sym else compose(qp, lam=lams[1], **steer)
        x = epsilon_bracket_one(a, d0)
        y = x if b is a else epsilon_bracket_one(b, d0)
        guess = [r.lower if r.lower > 0 else r.upper for r in (x, y)]
        new = tuple(_lam_for_eps(c, e) if math.isfinite(e) else lam
                    for c, e, lam in zip((pq,) if sym else (pq, qp), guess, lams))
        new = new * 2 if sym else new
        done = all(abs(n - o) <= 0.25 * max(o, 0.1) for n, o in zip(new, lams))
        if not done or fine:
            lams = new
        if done:
            break
    if memo is not None and all(math.isfinite(e) for e in guess):
        memo[key] = tuple(guess)
    return _eps_fine(pq, qp, delta, low_pq, low_qp, kw, lams, sym, (a, b))


def _eps_fine(pq, qp, delta, low_pq, low_qp, kw, lams, sym, steered=None):
    """:func:`_eps_tilted`'s brackets at the tilts ``lams``: one fine composition per direction
    (or the ``steered`` grids when the caller fixed the step ``h``)."""
    if kw.get("h") is not None:
        a, b = steered
        A.note("epsilon", delta, "grid step")
    else:
        a = compose(pq, lam=lams[0], **kw)
        b = a if sym else compose(qp, lam=lams[1], **kw)
        acc = kw.get("accuracy", DEFAULT_ACCURACY)
        exact = _on_lattice(a, pq) and _on_lattice(b, qp)
        if not exact and max(a.h, b.h) > 1.01 * max(_fine_step(pq, acc), _fine_step(qp, acc)):
            A.note("epsilon", delta, "memory")   # the step was coarsened to fit max_points
    out = []
    for d in delta:
        x = _cap_eps(epsilon_bracket_one(a, d), pq, d, low_pq)
        same = b is a and (
            low_pq is None if low_qp is None else low_pq is not None and _same(low_pq, low_qp)
        )
        out.append(_both(x, x if same else _cap_eps(epsilon_bracket_one(b, d), qp, d, low_qp)))
    return out
