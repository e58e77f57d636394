"""Compositions against dp_accounting at matched accuracy: prints a table, never pass/fail.

    python benchmarks/compositions.py [--repeats 3]

Workloads, all eps(delta = 1e-6), each asked of us with a relative bracket width of 1e-4
(``accuracy`` = 1e-4 x eps / 2, eps from a coarse run that is not timed):

* K rounds of the shuffled eps0-LDP randomiser (``ldp-shuffle``, fmt21 clones pair, n = 1e4,
  eps0 = 4), K in {1, 10, 100, 1000}: ours ``clones.epsilon_bracket``;
* a 3-outcome ``custom`` pair at K = 10: ours ``fourier.epsilon_bracket``;
* the accountant pipeline of chapter 9 (30 days of ``ldp-shuffle`` with the stronger clones pair,
  n = 1e5, eps0 = 4, and 4 Gaussian releases of sensitivity 1 with sigma = 12 under REPLACE_ONE):
  ours ``ShuffleAccountant(accuracy).compose(...).get_epsilon_bracket``, everything built inside the
  timing (the pair's PLD, dp_accounting's Gaussian PLDs).

dp_accounting: the pair's PMFs (the same atoms as ours, prepared untimed) ->
``from_two_probability_mass_functions`` (pessimistic) -> ``self_compose`` (for the pipeline also
``from_gaussian_mechanism`` under REPLACE_ONE, ``self_compose(4)`` and ``compose``) ->
``get_epsilon_for_delta``, twice:

* 'dp@ours': at our discretisation (1e-4 x eps / 2); its error in eps grows like K x
  discretisation, so at K = 100 it lands well above our upper end (column 'dp eps');
* 'dp@match': at matched accuracy, the coarsest discretisation (found by halvings and doublings
  of the first, not timed) at which its eps is within the same relative 1e-4 of our bracket,
  dp_eps <= our_upper x (1 + 1e-4); the ratio 'dp/ours' compares this one.

Column 'met': our bracket's ``accuracy_met`` (the accuracy contract at the accuracy asked,
:mod:`shuffle_lib.core.accuracy`; '--' where the route does not report it).

Medians of ``--repeats`` runs, alternating, in one process.  dp_accounting is not a dependency of
the project: without it the peer columns say so.
"""

import argparse
import statistics
import time

import numpy as np

from shuffle_lib.core import fourier
from shuffle_lib.core.pld import pld_from_pmfs
from shuffle_lib.mechanisms import clones
from shuffle_lib.mechanisms.clones.pld import clone_pld

try:
    from dp_accounting.pld import privacy_loss_distribution as dpl
except ImportError:          # the peer column is skipped
    dpl = None

DELTA, REL = 1e-6, 1e-4
KS = (1, 10, 100, 1000)
CUSTOM = ([0.5, 0.3, 0.2], [0.2, 0.3, 0.5])


def timed(f):
    t = time.perf_counter()
    out = f()
    return out, time.perf_counter() - t


def ours_clones(K, acc):
    return clones.epsilon_bracket(10_000, 4.0, [DELTA], compositions=K, accuracy=acc)[0]


def ours_custom(K, acc):
    p, q = CUSTOM
    return fourier.epsilon_bracket([(pld_from_pmfs(p, q), K)], [(pld_from_pmfs(q, p), K)], [DELTA], accuracy=acc)[0]


def peer(p, q, K, h):
    """dp_accounting's eps(DELTA) for K rounds of the pair (p, q), pessimistic, discretisation h;
    (p, q) as arrays, or as the log-PMF dicts of :func:`log_pmfs` (prepared once, untimed)."""
    d = _peer_pld(p, q, h)
    return (d.self_compose(K) if K > 1 else d).get_epsilon_for_delta(DELTA)


def log_pmfs(p, q):
    """dp_accounting's input form of a pair: {outcome: log probability} for P and for Q."""
    def one(x):
        x = np.asarray(x, float)
        keep = np.nonzero(x > 0)[0]
        return dict(zip(keep.tolist(), np.log(x[keep]).tolist()))
    return one(p), one(q)


def _peer_pld(p, q, h):
    lp, lq = (p, q) if isinstance(p, dict) else log_pmfs(p, q)
    return dpl.from_two_probability_mass_functions(lq, lp, pessimistic_estimate=True,
                                                   value_discretization_interval=h)


def peer_pmfs(n=10_000, eps0=4.0, pair="fmt21"):
    """(P, Q) of the clones pair's kept atoms: what dp_accounting is given (the same atoms as ours)."""
    pl = clone_pld(n, eps0, pair, 1e-18, "lower", 10 ** 7)[0]
    return pl.probs, pl.probs / np.exp(pl.losses)


def matched(p, q, K, h0, target):
    """(coarsest discretisation h = h0 2^j found with dp eps <= target, its eps); not timed."""
    return matched_h(lambda h: peer(p, q, K, h), h0, target)


def matched_h(f, h0, target):
    """(coarsest h = h0 2^j found with f(h) <= target, f(h)) for dp_accounting's eps f(h)."""
    h, eps = h0, f(h0)
    if eps <= target:
        while h < 1.0:
            e2 = f(2 * h)
            if e2 > target:
                break
            h, eps = 2 * h, e2
        return h, eps
    for _ in range(12):
        h /= 2
        eps = f(h)
        if eps <= target:
            return h, eps
    return h, eps    # not reached: printed as is


# ---- the accountant pipeline of chapter 9 ----

PIPE_N, PIPE_EPS0, PIPE_DAYS, PIPE_WEEKS, PIPE_SIGMA = 100_000, 4.0, 30, 4, 12.0


def pipeline_ours(acc):
    """ShuffleAccountant's bracket of the month: 30 shuffle rounds (stronger clones) + 4 Gaussians."""
    import dp_accounting

    import shuffle_lib as sl
    day = sl.ShuffledEvent("ldp-shuffle", n=PIPE_N, eps0=PIPE_EPS0, pair="stronger")
    week = dp_accounting.GaussianDpEvent(noise_multiplier=2 * PIPE_SIGMA)   # sensitivity 1
    event = dp_accounting.ComposedDpEvent([dp_accounting.SelfComposedDpEvent(day, PIPE_DAYS),
                                           dp_accounting.SelfComposedDpEvent(week, PIPE_WEEKS)])
    return sl.ShuffleAccountant(accuracy=acc).compose(event).get_epsilon_bracket(DELTA)


def pipeline_peer(p, q, h):
    """dp_accounting's own pipeline at discretisation h: the day's PMFs and its Gaussian PLD
    (REPLACE_ONE, as PLDAccountant builds a GaussianDpEvent), composed and read."""
    from dp_accounting import NeighboringRelation
    day = _peer_pld(p, q, h)
    week = dpl.from_gaussian_mechanism(2 * PIPE_SIGMA, pessimistic_estimate=True,
                                       value_discretization_interval=h,
                                       neighboring_relation=NeighboringRelation.REPLACE_ONE)
    return day.self_compose(PIPE_DAYS).compose(week.self_compose(PIPE_WEEKS)).get_epsilon_for_delta(DELTA)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    reps = ap.parse_args().repeats
    p_cl, q_cl = log_pmfs(*peer_pmfs())              # dp_accounting gets the same atoms (untimed)
    if dpl is None:
        print("dp_accounting is not importable: the peer columns are skipped (pip install dp-accounting "
              "into a scratch venv, never into the project).")
    print(f"{'workload':<30} {'ours s':>7} {'rel width':>9} {'met':>3} {'our upper':>10} | {'dp@ours s':>9} {'dp eps':>10} "
          f"| {'match h':>8} {'dp@match s':>10} {'dp eps':>10} {'dp/ours':>8}")
    rows = [(f"ldp-shuffle n=1e4 eps0=4 K={K}", ours_clones, lambda h, K=K: peer(p_cl, q_cl, K, h), K)
            for K in KS]
    custom = log_pmfs(*CUSTOM)
    rows.append(("custom 3 outcomes K=10", ours_custom, lambda h: peer(*custom, 10, h), 10))
    if dpl is not None:
        p_pi, q_pi = log_pmfs(*peer_pmfs(PIPE_N, PIPE_EPS0, "stronger"))
        rows.append(("pipeline 30 days + 4 Gaussians", lambda _K, acc: pipeline_ours(acc),
                     lambda h: pipeline_peer(p_pi, q_pi, h), 0))
    total = 0.0
    for name, fn, their, K in rows:
        coarse = fn(K, 1e-2)                                            # not timed: the eps scale
        eps_scale = coarse.upper if np.isfinite(coarse.upper) else 1.0
        acc = REL * eps_scale / 2
        br = fn(K, acc)                                                 # warm, and the target
        h_m = eps_m = None
        if dpl is not None:
            h_m, eps_m = matched_h(their, acc, br.upper * (1 + REL))
        ts, tp, tm, dp_eps = [], [], [], float("nan")
        for _ in range(reps):
            br, t = timed(lambda: fn(K, acc))
            ts.append(t)
            if dpl is not None:
                dp_eps, t = timed(lambda: their(acc))
                tp.append(t)
                _, t = timed(lambda: their(h_m))
                tm.append(t)
        ours = statistics.median(ts)
        total += ours if name.startswith("ldp") and K <= 100 else 0.0
        width = (br.upper - br.lower) / br.upper
        met = {True: "yes", False: "no"}.get(br.accuracy_met, "--")
        head = f"{name:<30} {ours:7.3f} {width:9.2e} {met:>3} {br.upper:10.6f}"
        if dpl is None:
            print(f"{head} | {'--':>9} {'--':>10} | {'--':>8} {'--':>10} {'--':>10} {'--':>8}")
        else:
            theirs = statistics.median(tm)
            print(f"{head} | {statistics.median(tp):9.3f} {dp_eps:10.6f} | {h_m:8.2g} {theirs:10.3f} "
                  f"{eps_m:10.6f} {theirs / ours:8.2f}", flush=True)
    print(f"ldp-shuffle K = 1, 10, 100 in total: {total:.3f} s (target <= 0.5 s)")


if __name__ == "__main__":
    main()
