"""Valid specimen calls and argument roles for the bad-input sweep (tests/test_bad_input.py).

``SPECIMENS[qualified name]`` holds the keyword arguments of one small, fast, valid call of a
public function (a method's ``self`` under the key ``"self"``).  Each argument's *role* says
which bad values it must refuse: ``ROLE_BY_NAME`` gives the role of the usual parameter names
(``n`` a count, ``gamma`` a probability, ``eps0`` a positive real, ...), ``ROLES[qualified name]``
overrides it where a function documents another range.  ``NOT_SWEPT`` lists the public functions
the sweep does not call, each with its reason.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from shuffle_lib import accountant as acc
from shuffle_lib import mechanisms
from shuffle_lib.core import fourier, grid
from shuffle_lib.core import pld as P
from shuffle_lib.core.types import Method, Model, PLDPair
from shuffle_lib.mechanisms import rr
from shuffle_lib.mechanisms.clones import pairs
from shuffle_lib.mechanisms.krr import base as krr_base
from shuffle_lib.mechanisms.randomizer import decompose
from shuffle_lib.mechanisms.randomizer import noise as noise_
from shuffle_lib.mechanisms.randomizer import unary

NAN, INF = math.nan, math.inf

# ---- the roles and their bad values -------------------------------------------------------------
# each bad value is refused (ValueError naming the argument, or TypeError) or the call fails;
# HUGE values may also be answered (a valid size), but never with a hang or a crash

HUGE = 10 ** 20
BAD = {
    "count": [0, -1, 2.5, NAN, INF, None, "abc", [2], HUGE],          # an integer >= 1
    "count0": [-1, 2.5, NAN, None, "abc", [2], HUGE],                  # an integer >= 0
    "ints0": [-1, 2.5, NAN, None, "abc", [2.5], [-1], HUGE],           # an integer or array of integers >= 0
    "ints": [2.5, NAN, None, "abc", [2.5]],                            # an integer or array of them, any sign
    "prob": [NAN, INF, -0.5, 1.5, None, "abc", [0.5]],                 # a probability
    "prob_lt1": [NAN, INF, -0.5, 1.0, 1.5, None, "abc", [0.5]],        # a probability < 1
    "pos": [NAN, INF, -INF, -1.0, 0.0, None, "abc", [1.0]],            # a positive finite real
    "nonneg": [NAN, INF, -1.0, None, "abc", [1.0]],                    # a non-negative finite real
    "pos_inf": [NAN, -INF, -1.0, 0.0, None, "abc", [1.0]],             # a positive real or +inf
    "real": [NAN, None, "abc", [1.0]],                                 # a real number (eps may be < 0)
    "reals": [[NAN], None, "abc", [[1.0, "x"]]],                       # a real or list of reals
    "probs": [[NAN], [-0.5], [1.5], None, "abc"],                      # a probability or list of them
    "order": [NAN, 0.5, -1.0, None, "abc", [2.0]],                     # a Renyi order > 1
    "orders": [[NAN], [0.5], None, "abc"],                             # one or more Renyi orders
    "pmf": [[0.5, 0.6], [-0.1, 1.1], [[0.5, 0.5]], [NAN, 1.0], [], None, "abc"],
    "triples": [[], [(50, 1.0)], [(50, -1.0, 1)], [(0, 1.0, 1)], "abc", 3],         # [(n, eps0, count), ...]
    "matrix": [[[0.5, 0.6], [0.5, 0.5]], [[-0.1, 1.1], [0.5, 0.5]], [0.5, 0.5], [[NAN, 1.0], [0.5, 0.5]],
               [[1.0]], None, "abc"],
    "choice": ["foo", None, 3],                                        # one of a few names
    "object": [None, "abc", 3],                                        # a typed object (PLD, model, ...)
    "rng": [None, "abc", 3],
    "array": [None, "abc"],                                            # a numeric array
}
MUST_ANSWER_OR_REFUSE = {HUGE}      # bad values that a function may also answer

ROLE_BY_NAME = {
    **dict.fromkeys(["n", "k", "compositions", "samples", "chunk", "T", "runs", "size", "blocks", "cells",
                     "max_atoms", "max_points", "num_iterations", "n_c", "m_max", "count", "stride",
                     "rounds", "K", "points", "n_hot", "z"], "count"),
    **dict.fromkeys(["m", "d", "n_x0", "seed", "trials"], "count0"),
    **dict.fromkeys(["gamma", "q", "delta", "tail", "tau", "alpha", "p_delta", "tau_top", "target_delta",
                     "delta_prime"], "prob"),
    **dict.fromkeys(["eps0", "sigma", "h", "accuracy", "C", "eta", "mu", "sensitivity", "budget", "rtol",
                     "tol", "var", "spread", "value_discretization_interval", "c"], "pos"),
    **dict.fromkeys(["eps", "target_epsilon", "t", "log_delta", "max_loss", "inf_mass"], "real"),
    **dict.fromkeys(["lam"], "orders"),
    **dict.fromkeys(["orders"], "orders"),
    **dict.fromkeys(["p", "q_pmf", "probs"], "pmf"),
    **dict.fromkeys(["R", "matrix"], "matrix"),
    **dict.fromkeys(["pair", "adversary", "view", "family", "side", "v_form", "direction", "method", "mode",
                     "rounding", "verb", "accountant"], "choice"),
    **dict.fromkeys(["pld", "pld_pq", "pld_qp", "model", "cg", "pl", "pr", "dec", "prep", "components",
                     "plds_pq", "plds_qp", "mech", "event", "meets", "nz"], "object"),
    **dict.fromkeys(["rng"], "rng"),
    **dict.fromkeys(["noise"], "choice"),                # 'gaussian', 'laplace' (or a Noise object)
    **dict.fromkeys(["scale", "step"], "pos"),
    **dict.fromkeys(["levels"], "count"),
}

# ---- shared valid objects -----------------------------------------------------------------------

PLD_ = P.pld_from_pmfs([0.75, 0.25], [0.25, 0.75])
PLD2 = P.pld_from_pmfs([0.25, 0.75], [0.75, 0.25])
MODEL = rr.rr_model(1.0)
GRID = grid.compose_on_grid([(PLD_, 2)], h=1e-3, lam=0.0, mode="updown")
FCOMP = fourier.compose([(PLD_, 2)])
KRRPLD = krr_base.strong_pld(20, 0.5, 3)
PAIR = pairs.PAIRS["fmt21"]
PREP = pairs.prepare(50, 1.0, PAIR, 1e-18)
DEC = decompose.family_decomposition("krr", 1.0, k=3)
VIEW = DEC.views[0]
MECH = mechanisms.get("rr")
EVENT = acc.ShuffledEvent("rr", eps0=1.0)
E = math.e
R3 = [[E / (E + 2), 1 / (E + 2), 1 / (E + 2)], [1 / (E + 2), E / (E + 2), 1 / (E + 2)],
      [1 / (E + 2), 1 / (E + 2), E / (E + 2)]]
RNG = np.random.default_rng(0)
X = np.array([[1.0, 0.5], [0.2, -0.3], [-1.0, 0.1], [0.3, 0.3]])
Y = np.array([0, 1, 0, 1])
THETA = np.zeros((2, 2))
NZ = noise_.noise_law("laplace", 1.0)   # the numeric randomisers: Laplace is the fast one (n = 3)
DLAP = stats.dlaplace(1.0)               # an integer noise (the two-sided geometric)

# ---- specimens ----------------------------------------------------------------------------------

S: dict[str, dict] = {}


def _add(prefix: str, **calls: dict) -> None:
    for name, kw in calls.items():
        S[f"shuffle_lib.{prefix}.{name}"] = kw


_add("core.binomial",
     binom_logpmf=dict(j=3, n=10, p=0.3), tail_range=dict(m=10, p=0.3, tau=1e-10),
     binom_window=dict(N=10, p=0.3, tail=1e-10))
_add("core.calibrate",
     search=dict(meets=lambda x: x > 2.0, lo=1.0, hi=4.0, direction="up", integer=False, rtol=1e-3, name="x"))
_add("core.calibrate",
     calibrate_mechanism=dict(mech=MECH, solve="eps0", eps=1.0, delta=0.1, fixed={}, compositions=1,
                              accuracy=1e-3))
_add("core.evaluate",
     delta_brackets=dict(model=MODEL, eps=[0.5], compositions=1),
     epsilon_brackets=dict(model=MODEL, delta=[1e-3], compositions=1),
     brackets=dict(model=MODEL, verb="delta", targets=[0.5], compositions=1),
     rdp_brackets=dict(model=MODEL, orders=[2.0]), finite_or_none=dict(x=1.0))
_add("core.extreme",
     log_mgf=dict(components=[(PLD_, 2)], lam=1.0), chernoff_eps=dict(components=[(PLD_, 2)], delta=1e-3),
     chernoff_delta=dict(components=[(PLD_, 2)], eps=0.5), top_atom_eps=dict(components=[(PLD_, 2)], delta=1e-3),
     top_atom_delta=dict(components=[(PLD_, 2)], eps=0.5), top_atom_deltas=dict(components=[(PLD_, 2)], eps=[0.5, 1.0]))
_add("core.fourier",
     composed_inf_mass=dict(components=[(PLD_, 2)]),
     compose=dict(components=[(PLD_, 2)], accuracy=1e-3, h=None, max_points=1 << 20, lam=0.0),
     delta_bracket_one=dict(cg=FCOMP, eps=0.5), epsilon_bracket_one=dict(cg=FCOMP, delta=1e-3),
     delta_bracket=dict(plds_pq=[(PLD_, 2)], plds_qp=[(PLD2, 2)], eps=[0.5], accuracy=1e-3, rtol=None, lower=None),
     epsilon_bracket=dict(plds_pq=[(PLD_, 2)], plds_qp=[(PLD2, 2)], delta=[1e-3], lower=None))
_add("core.grid",
     check_memory=dict(points=1000, what="a grid"),
     discretise=dict(pld=PLD_, h=1e-3, rounding="up", lam=0.0, tau_top=1e-16),
     compose_on_grid=dict(components=[(PLD_, 2)], h=1e-3, lam=0.0, mode="updown", method="power",
                          max_points=1 << 20),
     hoeffding_t=dict(c=1.0, h=1e-3, K=2), delta_upper=dict(cg=GRID, eps=0.5, c=1.0, fast=False),
     delta_lower=dict(cg=GRID, eps=0.5, c=1.0, fast=False), top_loss=dict(cg=GRID),
     lattice_step=dict(components=[(PLD_, 2)], max_divisor=8))
_add("core.pld",
     check_components=dict(components=[(PLD_, 2)], name="components"),
     pld_from_pmfs=dict(p=[0.75, 0.25], q=[0.25, 0.75]),
     pld_from_pmfs_lower=dict(p=[0.75, 0.25], q=[0.25, 0.75]),
     pld_from_losses=dict(losses=[0.5, -0.5], probs=[0.6, 0.4], inf_mass=0.0),
     hockey_stick=dict(pld=PLD_, eps=0.5), tail_probability=dict(pld=PLD_, eps=0.5),
     epsilon_for_delta=dict(pld=PLD_, delta=1e-3),
     delta_exact=dict(p=[0.75, 0.25], q=[0.25, 0.75], eps=0.5),
     epsilon_exact=dict(p=[0.75, 0.25], q=[0.25, 0.75], delta=1e-3),
     product_pmfs=dict(p=[0.75, 0.25], q=[0.25, 0.75], k=2),
     loss_slack=dict(pld=PLD_), delta_both=dict(pq=PLD_, qp=PLD2, eps=0.5),
     **{"PLD.with_mass_at_infinity": dict(self=PLD_, extra=0.1)})
_add("core.registry",
     **{"Param.option": dict(self=MECH.params[0]), "Param.check": dict(self=MECH.params[0], value=1.0),
        "Mechanism.param": dict(self=MECH, name="eps0"), "Mechanism.privacy_settings": dict(self=MECH),
        "Mechanism.checked": dict(self=MECH, values={"eps0": 1.0}),
        "Mechanism.model": dict(self=MECH, values={"eps0": 1.0}, compositions=1, accuracy=1e-3),
        "Mechanism.evaluate": dict(self=MECH, verb="delta", targets=[0.5], values={"eps0": 1.0},
                                   compositions=1, accuracy=1e-3)})
_add("mechanisms", names=dict(), get=dict(name="rr"))
_add("core.renyi",
     check_orders=dict(lam=[2.0, 3.0]),
     log_divergence=dict(logp=np.log([0.75, 0.25]), logq=np.log([0.25, 0.75]), lam=2.0),
     renyi_pmfs=dict(p=[0.75, 0.25], q=[0.25, 0.75], lam=[2.0]), renyi_pld=dict(pld=PLD_, lam=[2.0]),
     renyi_pld_bracket=dict(pld=PLD_, lam=[2.0], max_loss=2.0), gdp_rdp=dict(mu=1.0, lam=[2.0]),
     eps_from_rdp=dict(lam=[2.0, 4.0], rdp=[0.1, 0.3], delta=1e-5, method="improved"))
_add("core.tradeoff",
     tradeoff_segments=dict(p=[0.75, 0.25], q=[0.25, 0.75]), tradeoff_pmfs=dict(p=[0.75, 0.25], q=[0.25, 0.75]),
     tradeoff_at=dict(p=[0.75, 0.25], q=[0.25, 0.75], alpha=0.3),
     renyi_from_tradeoff=dict(da=[0.25, 0.75], db=[0.75, 0.25], lam=2.0),
     gaussian_tradeoff=dict(mu=1.0, alpha=0.3), gdp_delta=dict(mu=1.0, eps=0.5),
     log_gaussian_delta=dict(sigma=2.0, eps=0.5, sensitivity=1.0), gaussian_delta=dict(sigma=2.0, eps=0.5))
_RR_PAIR = PLDPair.from_pmfs([0.75, 0.25], [0.25, 0.75])
_add("core.types", **{"Model.from_pmfs": dict(cls=Model, p=[0.75, 0.25], q=[0.25, 0.75], info=None),
                      "Model.of": dict(cls=Model, component=_RR_PAIR, info=None),
                      "Model.pairs_for_composing": dict(self=Model.of(_RR_PAIR), total_rounds=2,
                                                        accuracy=1e-3),
                      "PLDPair.from_pmfs": dict(cls=PLDPair, p=[0.75, 0.25], q=[0.25, 0.75]),
                      "PLDPair.of": dict(cls=PLDPair, pq=_RR_PAIR.pq[0][0], qp=None, tail_cut=0.0,
                                         max_loss=1.0),
                      "PLDPair.plds": dict(self=_RR_PAIR),
                      "Method.constant": dict(cls=Method, delta=0.0, eps=0.0, rounds=1)})
_add("core.validate",
     real=dict(name="x", x=1.0), reals=dict(name="x", xs=[1.0]), integer=dict(name="i", x=3),
     probability=dict(name="p", x=0.5), pmf=dict(name="p", p=[0.5, 0.5]))

_add("bounds.closed_forms",
     erlingsson_epsilon=dict(n=1000, eps0=0.4, delta=1e-6, strict=False),
     erlingsson_delta=dict(eps=0.5, n=1000, eps0=0.5), balle_delta=dict(eps=0.5, n=1000, eps0=0.5, k=2),
     balle_krr_delta=dict(n=1000, gamma=0.5, k=2, eps=0.5), balle_epsilon=dict(n=1000, gamma=0.5, k=2, delta=1e-6),
     advanced_composition=dict(eps=0.1, delta=1e-6, n_c=10, delta_prime=1e-6),
     balle_epsilon_composed=dict(n=1000, gamma=0.5, k=2, delta=1e-6, n_c=3),
     fmt21_epsilon_log=dict(n=1000, eps0=0.5, log_delta=-14.0), fmt21_closed_form=dict(n=1000, eps0=0.5, delta=1e-6),
     fmt21_epsilon_composed=dict(n=1000, eps0=0.5, delta=1e-6, compositions=3),
     fmt_epsilon=dict(n=1000, eps0=0.5, delta=1e-6), fmt_delta=dict(eps=0.5, n=1000, eps0=0.5),
     fmt_clones_pmfs=dict(n=50, eps0=1.0), fmt_clones_delta=dict(eps=0.5, n=50, eps0=1.0))
_add("bounds.renyi",
     girgis_upper=dict(n=1000, eps0=0.5, lam=[2.0]), girgis_upper_full=dict(n=1000, eps0=0.5, lam=[2]),
     girgis_lower=dict(n=1000, eps0=0.5, lam=[2.0]), cor2_rdp=dict(n=1000, eps0=0.5, lam=[2.0]))

_add("mechanisms.rr",
     rr_pmfs=dict(eps0=1.0), rr_delta_exact=dict(eps0=1.0, eps=0.5, k=2), rr_composed_pld=dict(eps0=1.0, k=2),
     rr_model=dict(eps0=1.0))
_add("mechanisms.custom", load_pmfs=dict(path="PMFS_FILE"), custom_model=dict(pmfs="PMFS_FILE"))
_add("mechanisms.gaussian_shuffle",
     log_ratio=dict(y=np.array([[0.1, 0.2], [0.3, -0.1]]), sigma=1.0),
     delta_mc=dict(n=5, sigma=1.0, eps=0.5, samples=200, seed=0, alpha=1e-3, chunk=100))
_add("mechanisms.histogram",
     krr_probs=dict(eps0=1.0, k=3), kappa1=dict(eps0=1.0, k=3), kappa2=dict(eps0=1.0, k=3),
     log_kappa3=dict(n=10, n_x0=2, eps0=1.0, k=3, s=1), log_mu=dict(s=1, r=1, n=10, n_x0=2, eps0=1.0, k=3),
     tau=dict(s=1, r=1, n=10, n_x0=2, eps0=1.0, k=3), log_count_pmfs_closed=dict(n=10, n_x0=2, eps0=1.0, k=3),
     v_s=dict(n=10, n_x0=2, eps0=1.0, k=3, v_form="corrected"),
     delta_hat=dict(eps=0.5, n=10, n_x0=2, eps0=1.0, k=3, v_form="corrected"),
     count_pmfs_exact=dict(n=10, n_x0=2, eps0=1.0, k=3),
     delta_count_exact=dict(eps=0.5, n=10, n_x0=2, eps0=1.0, k=3, direction="both"),
     delta_count_worst=dict(eps=0.5, n=10, eps0=1.0, k=3), histogram_pmfs=dict(counts_others=[1, 1, 1], eps0=1.0, k=3),
     delta_histogram_exact=dict(eps=0.5, n=3, eps0=1.0, k=3),
     delta_histogram_homogeneous=dict(eps=0.5, n=4, eps0=1.0, k=3, z=2),
     histogram_model=dict(n=10, n_x0=2, k=3, eps0=1.0))
_add("mechanisms.krr",
     krr_model=dict(adversary="strong", n=20, gamma=0.5, k=3, tail=1e-60),
     exact_atoms=dict(adversary="strong", n=20, gamma=0.5, k=3, tail=1e-40),
     krr_route=dict(adversary="strong", n=20, gamma=0.5, k=3, compositions=1),
     delta_bracket=dict(adversary="strong", n=20, gamma=0.5, k=3, eps=[0.5], compositions=1, accuracy=1e-3),
     epsilon_bracket=dict(adversary="strong", n=20, gamma=0.5, k=3, delta=[1e-3], compositions=1, accuracy=1e-3))
_add("mechanisms.krr.base",
     check_params=dict(n=20, gamma=0.5, k=3), krr_probs=dict(gamma=0.5, k=3), krr_pmfs=dict(gamma=0.5, k=3),
     eps0_from_gamma=dict(gamma=0.5, k=3), gamma_from_eps0=dict(eps0=1.0, k=3),
     strong_pld=dict(n=20, gamma=0.5, k=3, tail=1e-40), weak_loss=dict(u=1, w=1, b=2, gamma=0.5, k=3),
     weak_pld=dict(n=20, gamma=0.5, k=3, tail=1e-40),
     adversary_pld=dict(adversary="weak", n=20, gamma=0.5, k=3, tail=1e-40),
     hockey_stick_pair=dict(pl=KRRPLD, eps=0.5))
_add("mechanisms.krr.checks",
     view_pmfs=dict(n=4, gamma=0.5, k=3, view="strong", others=None),
     brute_delta=dict(n=4, gamma=0.5, k=3, view="strong", eps=0.5, others=None, n_c=1),
     plain_worst_delta=dict(n=4, gamma=0.5, k=3, eps=0.5),
     reading_independent_tail=dict(n=20, gamma=0.5, k=3, eps=0.5),
     reading_pmf_pair=dict(n=20, gamma=0.5, k=3, eps=0.5), strong_readings=dict(n=20, gamma=0.5, k=3, eps=0.5),
     reading_weak_independent_tail=dict(n=20, gamma=0.5, k=3, eps=0.5, tail=1e-30),
     weak_readings=dict(n=20, gamma=0.5, k=3, eps=0.5),
     independent_losses=dict(n=20, gamma=0.5, k=3, tail=1e-30),
     composed_tail=dict(losses=[0.5, -0.5], probs=[0.6, 0.4], inf_mass=0.0, n_c=2, eps=0.5, h=1e-3))
_add("mechanisms.krr.lattice",
     weak_pld_lattice=dict(n=20, gamma=0.5, k=3), strong_pld_lattice=dict(n=20, gamma=0.5, k=3),
     pair_from_atoms=dict(pl=KRRPLD, h=1e-3))
_add("mechanisms.krr.stream",
     weak_delta_lower=dict(n=20, gamma=0.5, k=3, eps=np.array([0.5]), tail=1e-12, stride=1),
     strong_delta_lower=dict(n=20, gamma=0.5, k=3, eps=np.array([0.5]), tail=1e-12),
     delta_streamed=dict(adversary="strong", n=20, gamma=0.5, k=3, eps=[0.5], tail=1e-12),
     epsilon_streamed=dict(adversary="strong", n=20, gamma=0.5, k=3, delta=[1e-3], rtol=2e-3),
     weak_delta_blocked=dict(n=20, gamma=0.5, k=3, eps=np.array([0.5]), tail=1e-12, rtol=1e-3, target=1e-3))
_add("mechanisms.mixnet.bitflip",
     pmf_A=dict(n=10, m=2, q=0.3, tail=0.0), g=dict(x=0.5, q=0.3), rho=dict(n=10, m=2, q=0.3),
     pi_ratio=dict(n=10, m=2, q=0.3), pair_pmfs=dict(n=10, m=2, q=0.3, tail=0.0),
     pair_plds=dict(n=10, m=2, q=0.3, tail=1e-40), pair_plds_lower=dict(n=10, m=2, q=0.3, tail=1e-40),
     delta_pair=dict(n=10, m=2, q=0.3, eps=0.5, tail=1e-40),
     delta_worst=dict(n=10, q=0.3, eps=0.5, ms=[0, 2], tail=1e-40),
     q_needed=dict(n=10, eps=1.0, delta=0.1, m=0, tol=1e-2), seed_q_lemma45=dict(n=100, eps=1.0, delta=1e-3),
     seed_q_prop41=dict(n=100, eps=1.0, delta=1e-3), m_grid=dict(n=10, size=4),
     q_needed_worst=dict(n=10, eps=1.0, delta=0.1, ms=[0, 2], tol=1e-2),
     bitflip_model=dict(n=10, q=0.3, m=0, compositions=1),
     delta_bracket=dict(n=10, q=0.3, eps=[0.5], m=0, compositions=1, accuracy=1e-3),
     epsilon_bracket=dict(n=10, q=0.3, delta=[1e-3], m=0, compositions=1, accuracy=1e-3))
_add("mechanisms.mixnet.bitflip_worst",
     worst_brackets=dict(n=10, q=0.3, verb="delta", targets=[0.5], rtol=2e-3, tail=1e-40),
     block_search=dict(n=10, ends=lambda nn, m: (np.array([0.1]), np.array([0.1 + 0.01 * m])), size=1,
                       rtol=2e-3, floor=0.0, max_pairs=40))
_add("mechanisms.mixnet.fake_flip",
     fake_flip_bracket=dict(n=10, m=3, d=2, q=0.3, eps=0.5, r=(5, 4)), seed_q_sec6=dict(m=10, eps=1.0, delta=1e-3))
_add("mechanisms.mixnet.fake_records",
     fake_pld=dict(m=10, d=2, tail=1e-40), fake_delta=dict(m=10, d=2, eps=0.5, tail=1e-40),
     fake_model=dict(m=10, d=2, tail=1e-40), fake_delta_bracket=dict(m=10, d=2, eps=[0.5], compositions=1, accuracy=1e-3),
     fake_epsilon_bracket=dict(m=10, d=2, delta=[1e-3], compositions=1, accuracy=1e-3),
     m_needed=dict(d=2, eps=1.0, delta=1e-2, m_max=1000), seed_m_over_d=dict(eps=1.0, delta=1e-3))
_add("mechanisms.randomizer",
     upper_delta=dict(dec=DEC, n=20, eps=0.5), upper_epsilon=dict(dec=DEC, n=20, delta=1e-3),
     upper_pld=dict(dec=DEC, n=20, compositions=2, accuracy=1e-3), view_pmfs=dict(view=VIEW, n=20),
     certified_lower=dict(pld=PLD_, eps=0.5, trials=0), view_delta=dict(view=VIEW, n=20, eps=0.5),
     view_epsilon=dict(view=VIEW, n=20, delta=1e-3), view_plds=dict(view=VIEW, n=20, compositions=2, accuracy=1e-3),
     decompositions=dict(family="krr", matrix=None, k=3, d=0, eps0=1.0),
     randomizer_model=dict(n=20, family="matrix", matrix=R3, k=0, d=0, eps0=0.0, compositions=1, accuracy=1e-3),
     delta_bracket=dict(n=20, eps=[0.5], compositions=1, family="krr", k=3, eps0=1.0),
     epsilon_bracket=dict(n=20, delta=[1e-3], compositions=1, family="krr", k=3, eps0=1.0),
     randomizer_rdp=dict(params={"n": 20, "family": "krr", "matrix": None, "k": 3, "d": 0, "eps0": 1.0}, orders=[2.0]))
_add("mechanisms.randomizer.decompose", matrix_delta=dict(R=[[0.75, 0.25], [0.25, 0.75]], eps=0.5))
_add("mechanisms.randomizer.decompose",
     **{"View.symmetric": dict(self=VIEW), "View.off0": dict(self=VIEW), "View.off1": dict(self=VIEW),
        "Decomposition.options": dict(self=DEC),
        "Decomposition.mass": dict(self=DEC)},
     check_matrix=dict(matrix=R3, name="matrix"), load_matrix=dict(path="MATRIX_FILE"), matrix_eps0=dict(R=R3),
     why_eps0_infinite=dict(R=R3),
     pair_decomposition=dict(R=np.array(R3), i=0, j=1), matrix_decompositions=dict(R=R3), olh_g=dict(eps0=1.0),
     family_decomposition=dict(family="krr", eps0=1.0, k=3, d=0))
_add("mechanisms.randomizer.exact", exact_worst_delta=dict(matrix=R3, n=3, eps=0.5, rounds=1),
     dataset_delta=dict(matrix=R3, others=[2, 2], eps=0.5))
UPAIR = unary.unary_pair("oue", 3.0, 20)
_add("mechanisms.randomizer.unary",
     bit_probabilities=dict(family="sue", eps0=1.0), unary_matrix=dict(family="oue", d=3, eps0=1.0),
     unary_pair=dict(family="oue", eps0=3.0, n=20), delta_m=dict(pair=UPAIR, m=5, eps=0.5),
     delta=dict(pair=UPAIR, eps=0.5, blocks=4), upper_epsilon=dict(pair=UPAIR, target=0.1),
     pld_blocks=dict(pair=UPAIR, max_atoms=1e6),
     upper_pld=dict(pair=UPAIR, compositions=1, accuracy=1e-2, blocks=4),
     dataset_view=dict(family="oue", eps0=3.0, n=20), view_atoms=dict(family="oue", eps0=3.0, n=20))
_add("mechanisms.randomizer", plds_epsilon=dict(plds=[PLD_], delta=0.1, trials=0))
_add("mechanisms.randomizer.noise",
     noise_law=dict(noise="laplace", scale=1.0), **{"Noise.gamma": dict(self=NZ)},
     upper_delta=dict(noise="laplace", n=3, eps=0.5, scale=1.0, step=0.03),
     view_delta=dict(noise="laplace", n=3, eps=0.5, scale=1.0, levels=200),
     upper_epsilon=dict(noise="laplace", n=3, delta=0.1, scale=1.0, floor=0.0),
     view_epsilon=dict(noise="laplace", n=3, delta=0.1, scale=1.0),
     delta_bracket=dict(noise="laplace", n=3, eps=0.5, scale=1.0),
     epsilon_bracket=dict(noise="laplace", n=3, delta=0.1, scale=1.0),
     view_sums=dict(nz=NZ, n=3, levels=200),
     lattice_view_delta=dict(p0=[0.6, 0.4], p1=[0.4, 0.6], n=3, eps=0.5),
     count_delta=dict(nz=NZ, n=3, eps=0.5, q=0.05), gauss_sum_delta=dict(mu=0.5, eps=0.5),
     lower_delta=dict(noise="laplace", n=3, eps=0.5, scale=1.0),
     local_delta=dict(noise="gaussian", eps=0.5, rounds=2, scale=1.0),
     local_epsilon=dict(noise="gaussian", delta=0.1, rounds=2, scale=1.0))
_add("mechanisms.randomizer.noise_discrete",
     discrete_matrix=dict(noise=DLAP, n=3, compositions=1),
     blanket_delta=dict(matrix=[[0.5, 0.3, 0.2], [0.2, 0.3, 0.5]], n=3, eps=0.5, step=0.03),
     delta_bracket=dict(noise=DLAP, n=3, eps=[0.5], compositions=1),
     epsilon_bracket=dict(noise=DLAP, n=3, delta=[0.1], compositions=1))
_add("mechanisms.randomizer.noise_compose",
     envelope_pld=dict(eps=np.array([0.0, 1.0]), u=np.array([0.5, 0.1])),
     profile_plds=dict(noise="laplace", n=3, scale=1.0, points=2), view_plds=dict(nz=NZ, n=3),
     accounting_plds=dict(n=3, noise="laplace", scale=1.0),
     composed_delta=dict(noise="laplace", n=3, eps=[0.5], compositions=2, scale=1.0, points=2),
     composed_epsilon=dict(noise="laplace", n=3, delta=[0.1], compositions=2, scale=1.0, points=2),
     noise_model=dict(n=3, noise="laplace", scale=1.0, compositions=1))
_add("mechanisms.randomizer.noise_pairs",
     blanket_pair_delta=dict(noise="laplace", n=3, eps=0.5, x0=0.0, x1=1.0, scale=1.0),
     others_at_delta=dict(noise="laplace", n=3, eps=0.5, c=0.0, scale=1.0, step=0.1))
_add("mechanisms.randomizer.noise_crowd",
     crowd_upper_delta=dict(noise="laplace", n=3, eps=0.5, scale=1.0, step=0.05),
     crowd_delta=dict(noise="laplace", n=3, eps=0.5, scale=1.0),
     crowd_epsilon=dict(noise="laplace", n=3, delta=0.1, scale=1.0))
_add("mechanisms.clones.compose",
     clone_model=dict(n=50, eps0=1.0, compositions=1, pair="fmt21", accuracy=1e-3, rounds=None),
     delta_bracket=dict(n=50, eps0=1.0, eps=[0.5], compositions=1, pair="fmt21", accuracy=1e-3, rounds=None),
     epsilon_bracket=dict(n=50, eps0=1.0, delta=[1e-3], compositions=1, pair="fmt21", accuracy=1e-3, rounds=None),
     clone_plds=dict(n=50, eps0=1.0, pair="fmt21", compositions=2, accuracy=1e-3))
_add("mechanisms.clones.fmt21",
     erlingsson_epsilon=dict(n=2000, eps0=0.4, delta=1e-6),
     feldman_delta=dict(n=50, eps0=1.0, eps=0.5, step=None, pair="fmt21"),
     feldman_epsilon=dict(n=50, eps0=1.0, delta=1e-3, step=None, num_iterations=20, pair="fmt21"))
_add("mechanisms.clones.pairs",
     general_pair=dict(p=0.5, u=0.3, w=0.2, name="general"), check_params=dict(n=50, eps0=1.0, pair="fmt21"),
     clone_probability=dict(eps0=1.0, pair="fmt21"), report_probability=dict(eps0=1.0),
     shared_weights=dict(n=50, eps0=1.0, pr=PAIR, s=3),
     loss=dict(s=3, a=1, al=0.5, be=0.3, ga=0.2), conditional_tails=dict(s=3, k=1, al=0.5, be=0.3, ga=0.2),
     conditional_tails_walk=dict(s=3, k=1, al=0.5, be=0.3, ga=0.2),
     boost_rtol=dict(m=1000),
     loss_threshold=dict(s=3, al=0.5, be=0.3, ga=0.2, eps=0.5), s_range=dict(n=50, eps0=1.0, pr=PAIR, tau=1e-18),
     delta_inf=dict(n=50, eps0=1.0, pair="fmt21"), has_unmatched=dict(n=50, eps0=1.0, pair="fmt21"),
     prepare=dict(n=50, eps0=1.0, pr=PAIR, tau=1e-18),
     bracket_at=dict(prep=PREP, eps=0.5, slope=False),
     delta_bracket_single=dict(n=50, eps0=1.0, eps=0.5, pair="fmt21", tau=None),
     epsilon_bracket_single=dict(n=50, eps0=1.0, delta=1e-3, pair="fmt21", tau=None),
     clone_top_loss=dict(n=50, eps0=1.0, pr=PAIR), decomposition_holds=dict(R=R3, eps0=1.0, pair="fmt21", tol=1e-12))
_add("mechanisms.clones.pld",
     atoms_at=dict(n=50, eps0=1.0, pr=PAIR, s=np.array([3]), a=np.array([1])),
     clone_pmfs=dict(n=20, eps0=1.0, pair="fmt21"), clone_pld_exact=dict(n=20, eps0=1.0, pair="fmt21"),
     term_counts=dict(n=50, eps0=1.0, tau=1e-18, pair="fmt21"),
     kept_atoms=dict(n=50, eps0=1.0, pr=PAIR, tau=1e-18, max_atoms=10 ** 6),
     clone_pld=dict(n=50, eps0=1.0, pair="fmt21", tau=1e-18, side="upper", max_atoms=10 ** 6),
     clone_pld_grid=dict(n=50, eps0=1.0, h=1e-3, side="upper", pair="fmt21", tau=1e-18),
     grid_cost=dict(n=50, eps0=1.0, h=1e-3, pair="fmt21", tau=1e-18),
     clone_pld_binned=dict(n=50, eps0=1.0, h=1e-3, pair="fmt21", tau=1e-18, max_atoms=10 ** 6, chunk=10 ** 4))
_add("mechanisms.clones.renyi",
     clone_rdp=dict(n=50, eps0=1.0, lam=[2.0], pair="fmt21", tau=None),
     chen_pmfs=dict(n=20, eps0=1.0, p_delta=None), chen_printed_logpmfs=dict(n=20, eps0=1.0, p_delta=None),
     chen_printed_rdp=dict(n=20, eps0=1.0, lam=[2.0], p_delta=None), shuffled_rr_logpmfs=dict(n=20, eps0=1.0),
     shuffled_rr_rdp=dict(n=20, eps0=1.0, lam=[2.0]), chen_thm1_check=dict(n=20, eps0=1.0, t=0.5))
_add("mechanisms.clones.subsample",
     subsampled_delta=dict(n=50, m=10, eps0=1.0, eps=0.5, tau=1e-30), subsampled_pld=dict(n=50, m=10, eps0=1.0),
     subsampled_epsilon=dict(n=50, m=10, eps0=1.0, delta=[1e-3], compositions=1, accuracy=2e-3),
     subsampled_delta_bracket=dict(n=50, m=10, eps0=1.0, eps=[0.5], compositions=1, accuracy=2e-3),
     subsampled_model=dict(n=50, m=10, eps0=1.0))

_add("analyses.sgd",
     clip_l1=dict(g=np.array([3.0, -4.0]), C=1.0), laplace_scale=dict(C=1.0, eps0=1.0, m=10, k=1),
     clipped_gradient_sum=dict(theta=THETA, X=X, y=Y, C=1.0),
     laplace_ldp_gradient=dict(theta=THETA, X=X, y=Y, C=1.0, eps0=1.0, m=4, rng=RNG),
     accuracy=dict(theta=THETA, X=X, y=Y),
     shuffled_sgd=dict(X=X, y=Y, m=2, T=2, eps0=1.0, C=1.0, eta=0.1, seed=0, n_classes=None),
     alg1_rdp=dict(m=100, T=10, eps0=1.0, lam=[2.0], accountant="cor2"),
     eps0_for_budget=dict(m=100, T=10, budget=5.0, lam=[2.0, 8.0], accountant="cor2", lo=1e-3, hi=10.0, rtol=1e-3))
_add("analyses.utility",
     krr_channel=dict(eps0=1.0, k=3), krr_privatize=dict(x=[0, 1, 2], eps0=1.0, k=3, rng=RNG),
     matrix_inversion=dict(counts=[5.0, 3.0, 2.0], eps0=1.0, k=3), project_simplex=dict(y=[0.5, 0.7, -0.1]),
     tv_distance=dict(p=[0.5, 0.5], q=[0.25, 0.75]),
     analytic_gaussian_delta=dict(sigma=2.0, eps=0.5, sensitivity=1.0),
     analytic_gaussian_sigma=dict(eps=0.5, delta=1e-5, sensitivity=1.0),
     classical_gaussian_sigma=dict(eps=0.5, delta=1e-5, sensitivity=1.0),
     discretised_normal=dict(n=20, k=5, rng=RNG, var=2.0),
     synthetic_checkins=dict(n=20, shape=(4, 4), rng=RNG, n_hot=2, spread=0.08),
     release_once=dict(x=np.array([0, 1, 2, 1, 0]), k=3, eps0=1.0, sigma=1.0, rng=RNG),
     utility_runs=dict(x=np.array([0, 1, 2, 1, 0]), k=3, eps0=1.0, sigma=1.0, runs=2, seed=0))

_add("accountant",
     **{"ShuffledEvent.to_named_tuple": dict(self=EVENT), "ShuffledEvent.values": dict(self=EVENT),
        "ShuffleAccountant.accuracy": dict(self="ACCOUNTANT"),
        "ShuffleAccountant.compose": dict(self="ACCOUNTANT", event=EVENT, count=1),
        "ShuffleAccountant.get_delta_bracket": dict(self="ACCOUNTANT_RR", target_epsilon=0.5),
        "ShuffleAccountant.get_epsilon_bracket": dict(self="ACCOUNTANT_RR", target_delta=1e-3),
        "ShuffleAccountant.get_delta": dict(self="ACCOUNTANT_RR", target_epsilon=0.5),
        "ShuffleAccountant.get_epsilon": dict(self="ACCOUNTANT_RR", target_delta=1e-3)})
_add("mechanisms",
     mechanism=dict(name="rr"), mechanism_names=dict(),
     mechanism_brackets=dict(name="rr", verb="delta", targets=[0.5], compositions=1, accuracy=1e-3, eps0=1.0))
_add("interop", to_dp_accounting=dict(pld_pq=PLD_, pld_qp=PLD2, value_discretization_interval=1e-3,
                                      pessimistic_estimate=True))

SPECIMENS = S

# ---- per-function roles that differ from ROLE_BY_NAME ------------------------------------------

ROLES: dict[str, dict[str, str | None]] = {
    **{f"shuffle_lib.mechanisms.randomizer.unary.{f}": {"pair": "object"}
       for f in ("delta", "upper_pld")},
    "shuffle_lib.mechanisms.randomizer.unary.upper_epsilon": {"pair": "object", "target": "prob_lt1"},
    "shuffle_lib.mechanisms.randomizer.unary.delta_m": {"pair": "object", "m": "count"},
    "shuffle_lib.mechanisms.randomizer.unary.pld_blocks": {"pair": "object", "max_atoms": "pos"},
    # eps: one eps or a sequence of them
    "shuffle_lib.mechanisms.randomizer.exact.dataset_delta": {"others": "ints0", "eps": "reals"},
    "shuffle_lib.mechanisms.randomizer.unary.unary_matrix": {"d": "count"},
    "shuffle_lib.mechanisms.randomizer.plds_epsilon": {"plds": "object"},
    **{f"shuffle_lib.mechanisms.clones.compose.{f}": {"rounds": "triples"}
       for f in ("clone_model", "delta_bracket", "epsilon_bracket")},
    # max_loss None means no bound on the cut mass's loss; eps may be +inf (disjoint laws)
    "shuffle_lib.core.types.PLDPair.of": {"max_loss": "nonneg", "tail_cut": "prob"},
    "shuffle_lib.core.types.Method.constant": {"eps": None},
    # the binomial helpers are vectorised: j, n, m, N may be arrays of integers; j may be negative
    # (log P = -inf outside 0..n, as clones.renyi uses it)
    "shuffle_lib.core.binomial.binom_logpmf": {"p": "prob", "j": "ints", "n": "ints0"},
    "shuffle_lib.core.binomial.tail_range": {"p": "prob", "m": "ints0"},
    "shuffle_lib.core.binomial.binom_window": {"p": "prob", "N": "ints0"},
    "shuffle_lib.mechanisms.clones.pairs.general_pair": {"p": "prob", "u": "prob", "w": "prob", "name": None},
    "shuffle_lib.core.extreme.log_mgf": {"lam": "nonneg"},
    "shuffle_lib.core.fourier.compose": {"lam": "nonneg"},
    "shuffle_lib.core.grid.discretise": {"lam": "nonneg"},
    "shuffle_lib.mechanisms.mixnet.bitflip_worst.block_search": {"ends": "object", "size": "count",
                                                                  "floor": "nonneg", "max_pairs": "count"},
    "shuffle_lib.core.grid.compose_on_grid": {"lam": "nonneg"},
    "shuffle_lib.mechanisms.randomizer.noise.upper_epsilon": {"floor": "nonneg"},
    "shuffle_lib.core.renyi.log_divergence": {"lam": "order", "logp": "array", "logq": "array"},
    "shuffle_lib.core.tradeoff.renyi_from_tradeoff": {"lam": "order", "da": "array", "db": "array"},
    "shuffle_lib.core.calibrate.search": {"lo": "real", "hi": "real", "direction": "choice", "name": None},
    "shuffle_lib.analyses.sgd.eps0_for_budget": {"lo": "pos", "hi": "pos"},
    # vectorised over s and r (arrays of integers are valid); z = 0 (x0) is documented valid
    "shuffle_lib.mechanisms.histogram.log_mu": {"s": "ints0", "r": "ints0"},
    "shuffle_lib.mechanisms.histogram.tau": {"s": "ints0", "r": "ints0"},
    "shuffle_lib.mechanisms.histogram.log_kappa3": {"s": "ints0"},
    "shuffle_lib.mechanisms.histogram.delta_histogram_homogeneous": {"z": "count0"},
    # the clones kernels are vectorised over s (and a, k, al, be, ga): arrays are valid; k <= 0 is
    # valid in conditional_tails (the tail from k <= 0 is the whole mass)
    "shuffle_lib.mechanisms.clones.pairs.shared_weights": {"s": "ints0"},
    "shuffle_lib.mechanisms.clones.pairs.loss": {"s": "ints0", "a": "ints0", "al": "probs", "be": "probs",
                                                 "ga": "probs"},
    "shuffle_lib.mechanisms.clones.pairs.conditional_tails": {"s": "ints0", "k": "ints", "al": "probs",
                                                              "be": "probs", "ga": "probs"},
    "shuffle_lib.mechanisms.clones.pairs.conditional_tails_walk": {"s": "ints0", "k": "ints",
                                                                   "al": "probs", "be": "probs",
                                                                   "ga": "probs"},
    "shuffle_lib.mechanisms.clones.pairs.loss_threshold": {"s": "ints0", "al": "probs", "be": "probs",
                                                           "ga": "probs"},
    "shuffle_lib.mechanisms.clones.pld.atoms_at": {"s": "array", "a": "array"},
    # weak_loss is vectorised over its counts (tests/test_krr.py passes arrays)
    "shuffle_lib.mechanisms.krr.base.weak_loss": {"u": "ints0", "w": "ints0", "b": "ints0", "k": "ints0"},
    "shuffle_lib.mechanisms.randomizer.decompose.pair_decomposition": {"i": "count0", "j": "count0"},
    "shuffle_lib.mechanisms.krr.checks.composed_tail": {"losses": "array", "inf_mass": "prob"},
    "shuffle_lib.core.pld.pld_from_losses": {"losses": "array", "inf_mass": "prob"},
    "shuffle_lib.mechanisms.mixnet.bitflip.g": {"x": "reals"},
    "shuffle_lib.core.evaluate.finite_or_none": {"x": None},
    # eps0 = inf is documented as "no noise" (the non-private baseline of Chen et al. 2024's experiments)
    **{f"shuffle_lib.analyses.sgd.{f}": {"eps0": "pos_inf"}
       for f in ("laplace_scale", "laplace_ldp_gradient", "shuffled_sgd")},
    # mu = 0 (identical Gaussians) is a valid GDP level; eps0 = 0 is k-RR with gamma = 1 (all uniform)
    "shuffle_lib.core.tradeoff.gaussian_tradeoff": {"mu": "nonneg"},
    "shuffle_lib.core.renyi.gdp_rdp": {"mu": "nonneg"},
    "shuffle_lib.mechanisms.krr.base.gamma_from_eps0": {"eps0": "nonneg"},
    "shuffle_lib.analyses.utility.project_simplex": {"y": "array"},
    "shuffle_lib.analyses.utility.matrix_inversion": {"counts": "array"},
    "shuffle_lib.analyses.utility.krr_privatize": {"x": "array"},
    "shuffle_lib.analyses.utility.release_once": {"x": "array"},
    "shuffle_lib.analyses.utility.utility_runs": {"x": "array"},
    "shuffle_lib.analyses.utility.tv_distance": {"p": "array", "q": "array"},
    "shuffle_lib.mechanisms.gaussian_shuffle.log_ratio": {"y": "array"},
    "shuffle_lib.analyses.sgd.clip_l1": {"g": "array"},
    # A_0(m) is defined (pmf_A's documented range is 0 <= m <= n): n = 0 is valid there
    "shuffle_lib.mechanisms.mixnet.bitflip.pmf_A": {"n": "count0"},
    "shuffle_lib.mechanisms.mixnet.bitflip.rho": {"n": "count0"},
    "shuffle_lib.core.pld.check_components": {"name": None},
    # k, d, eps0 = 0 mean "not given" (the randomiser's family does not use them)
    **{f"shuffle_lib.mechanisms.randomizer.{f}": {"k": "count0", "d": "count0", "eps0": "nonneg"}
       for f in ("decompositions", "randomizer_model")},
    "shuffle_lib.mechanisms.randomizer.decompose.family_decomposition": {"k": "count0", "d": "count0"},
    # the numeric randomisers: the envelope's values u are deltas in [0, 1]; the differing pair
    # (x0, x1) and the others' input c lie in [0, 1] (0 included)
    "shuffle_lib.mechanisms.randomizer.noise_compose.envelope_pld": {"u": "probs"},
    "shuffle_lib.mechanisms.randomizer.noise_pairs.blanket_pair_delta": {"x0": "prob", "x1": "prob"},
    "shuffle_lib.mechanisms.randomizer.noise_pairs.others_at_delta": {"c": "prob"},
}

# ---- not swept --------------------------------------------------------------------------------

NOT_SWEPT = {
    **{f"shuffle_lib.core.budget.{f}": "the per-query limits: sizes and a budget the routes compute, "
       "not user input (time_limit is a generator-based context manager whose checks run on entry; "
       "tests/test_budget.py refuses its bad values)"
       for f in ("check_bytes", "check_seconds", "check_time", "check_work", "default_time_limit",
                 "time_limit")},
    **{f"shuffle_lib.core.two_atom.{f}": "the exact two-atom route of core.fourier, on components the "
       "accountant has already checked (not an input boundary)"
       for f in ("applies", "composed", "positive_floor")},
    **{f"shuffle_lib.cli.{f}": "command-line entry points: swept option by option by the CLI's own bad-input "
       "test (the command line's own bad-input sweep)" for f in ("run", "run_calibrate", "run_rdp", "main")},
    **{f"shuffle_lib.core.grid.{f}": "arithmetic of the grid accountant shared with core.fourier, on arrays and "
       "PLDs the accountant has already checked (not an input boundary)"
       for f in ("dot", "inf_mass", "log_masses", "rounding_gain")},
    "shuffle_lib.core.grid.resident_bytes": "takes no argument (reads the process's resident set)",
    **{f"shuffle_lib.core.search.{f}": "the search loops: a predicate and ends the caller has "
       "validated, each caller's own stopping rule (the callers are swept)"
       for f in ("arithmetic", "geometric", "integer_mid", "narrow", "step_out", "illinois",
                 "narrow_arrays", "secant_from_guess")},
    **{f"shuffle_lib.core.grid.Composed.{f}": "the unchecked reading the searches of core.fourier call in "
       "their loops on arguments already checked; grid.delta_upper/delta_lower check them and are swept"
       for f in ("delta_upper", "delta_lower")},
    "shuffle_lib.core.types.Model.composable": "a property: no argument",
    "shuffle_lib.core.types.Method.capped": "takes two callables (certified caps) that its callers "
        "build from validated parameters; the capped methods are swept through the mechanisms",
    **{f"shuffle_lib.core.accuracy.{f}": "the accuracy contract's bookkeeping, called by "
       "Mechanism.evaluate on targets and brackets it has already checked (Mechanism.evaluate and "
       "mechanism_brackets are swept); its definition is pinned by tests/test_accuracy.py"
       for f in ("annotate", "collect", "delta_rtol", "eps_demand", "finer_accuracy", "half_width",
                 "limit_of", "met", "note")},
    "shuffle_lib.core.evaluate.answer": "the one path from built models to answers: its models are "
        "built by Mechanism.model / the accountant from checked parameters, its targets and keywords "
        "checked by evaluate.brackets (Mechanism.evaluate, mechanism_brackets and the accountant's "
        "get_*_bracket are swept)",
    "shuffle_lib.core.fourier.shared_steering": "a context manager with no argument",
    "shuffle_lib.core.evaluate.refined_epsilon": "the eps refinement Mechanism.evaluate runs on the "
        "model, targets and first brackets that evaluate.brackets has just checked (Mechanism.evaluate "
        "and mechanism_brackets are swept)",
    **{f"shuffle_lib.core.progress.{f}": "the progress bar's switches and ticks: no numeric input "
       "(tests/test_progress.py pins them)"
       for f in ("advance", "enabled", "quiet", "set_progress", "task")},
    **{f"shuffle_lib.core.registry.Mechanism.{f}": "reads the declaration's structure (which "
       "parameters spell which); the values it sees are validated by Mechanism.checked, which is swept"
       for f in ("alternatives", "build_params", "given_alternatives")},
    "shuffle_lib.core.pld.PLD.trusted": "the unchecked constructor for arrays just computed in the "
                                        "checked form (hot loops); PLD() itself checks",
    "shuffle_lib.core.registry.register": "mutates the global registry (registering a bad mechanism would leak "
                                          "into other tests); its argument is a declaration, checked by "
                                          "tests/test_registry.py",
    "shuffle_lib.core.validate.json_file": "reads a file by path; swept through load_pmfs and load_matrix",
    **{f"shuffle_lib.mechanisms.randomizer.noise.Noise.{f}": "the noise's elementwise kernels on arrays "
       "(numpy's semantics: NaN in, NaN out), evaluated on grids their callers built from validated "
       "arguments; the Noise itself is checked when it is made" for f in ("loss", "y_of_loss", "tail", "mass")},
    "shuffle_lib.mechanisms.randomizer.noise.positive_part_mean": "a building block called only "
        "with the lattice laws its two callers built (swept through them)",
    "shuffle_lib.mechanisms.randomizer.noise.dominating_exceedance": "a building block called only "
        "with the cell masses its two callers computed from validated arguments (swept through them)",
    "shuffle_lib.mechanisms.randomizer.noise.chi2_log": "an estimate of a Noise's chi^2 that only "
        "chooses lattice steps; the Noise is checked when it is made (swept through its callers)",
    "shuffle_lib.mechanisms.randomizer.noise.eps_search": "the eps search loop: a predicate and a "
        "target its callers have validated (the callers are swept)",
    "shuffle_lib.mechanisms.randomizer.noise.sum_on_window": "a building block called only with lattice laws "
                                                             "its callers computed from validated arguments "
                                                             "(swept through upper_delta, view_sums, "
                                                             "blanket_pair_delta)",
    "shuffle_lib.cli.user_words": "rewrites an error message's parameter names into option names (text in, "
                                  "text out); swept through every CLI error by tests/test_cli_bad_input.py",
}
NOT_SWEPT.update({f"shuffle_lib.core.validate.{f}": "the checks themselves (their `name` is whatever the caller "
                  "names): swept through every function that uses them"
                  for f in ("real", "reals", "integer", "integers", "array", "probability", "pmf", "choice", "stochastic_matrix", "instance", "floats")})

# ---- known defects, not yet fixed ----------------------------------------------------------------
# Arguments the sweep still faults, with the kinds found (accepted: a bad value returned an answer;
# unnamed: a ValueError not naming the argument; an exception name: that exception escaped).
# Reported by tests/test_bad_input.py, not failed; an entry the sweep no longer faults fails as stale.
# Empty: every defect the sweep found is fixed at its source;
# a new one belongs here only with a reason, and is better fixed.
OPEN: dict[str, dict[str, str]] = {
}
