"""The ``rdp`` verb of the CLI against closed forms and direct sums."""

import json
import math

import numpy as np

from shuffle_lib.core import renyi
from shuffle_lib.mechanisms.clones import pld as clone_pld


def test_rr_matches_the_closed_form(cli):
    out = json.loads(cli("rdp", "rr", "--eps0", "1", "--order", "2", "3.5", "--json").stdout)
    assert set(out) == {"mechanism", "params", "results", "seconds"}
    a = 1 / (1 + math.exp(-1.0))
    for r in out["results"]:
        lam = r["order"]
        want = math.log(a ** lam * (1 - a) ** (1 - lam) + (1 - a) ** lam * a ** (1 - lam)) / (lam - 1)
        assert abs(r["rdp_lower"] - want) <= 1e-12 * want and abs(r["rdp_upper"] - want) <= 1e-12 * want


def test_ldp_shuffle_brackets_the_direct_sum(cli):
    n, eps0 = 150, 1.5
    p, q = clone_pld.clone_pmfs(n, eps0)
    p, q = p / p.sum(), q / q.sum()
    out = json.loads(cli("rdp", "ldp-shuffle", "--n", str(n), "--eps0", str(eps0), "--order", "2", "8", "--json").stdout)
    for r in out["results"]:
        direct = max(renyi.renyi_pmfs(p, q, [r["order"]])[0][0], renyi.renyi_pmfs(p, q, [r["order"]])[1][0])
        assert r["rdp_lower"] * (1 - 1e-9) <= direct <= r["rdp_upper"] * (1 + 1e-9)
        assert np.isfinite(r["rdp_upper"])


def test_bad_order(cli):
    r = cli("rdp", "rr", "--eps0", "1", "--order", "1")
    assert r.returncode == 2 and "order must lie in" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_rdp_bitflip_bracket_contains_the_exact_divergence():
    """bitflip's CLI PLD carries a tail cut at +inf; with the reported max_loss = log(p/q) the rdp
    verb brackets the exact (uncut) divergence instead of returning null, also for --m worst."""
    from shuffle_lib import cli
    from shuffle_lib.core import renyi
    from shuffle_lib.mechanisms.mixnet import bitflip as bf
    n, q, orders = 30, 0.2, [2.0, 8.0]
    worst = np.zeros(2)
    for m in range(n):
        P, Q = bf.pair_pmfs(n, m, q)
        exact = np.maximum(*renyi.renyi_pmfs(P, Q, orders))
        worst = np.maximum(worst, exact)
        if m in (0, 3):
            _, out = cli.run_rdp(["bitflip", "--n", str(n), "--q", str(q), "--m", str(m), "--order", "2", "8"])
            for r, x in zip(out["results"], exact):
                assert r["rdp_lower"] <= x * (1 + 1e-12) and x <= r["rdp_upper"], (m, r, x)
    _, out = cli.run_rdp(["bitflip", "--n", str(n), "--q", str(q), "--m", "worst", "--order", "2", "8"])
    for r, x in zip(out["results"], worst):
        assert r["rdp_lower"] <= x * (1 + 1e-12) and x <= r["rdp_upper"], (r, x)
