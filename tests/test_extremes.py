"""Certified answers at the extremes of the double range: infinite Renyi divergences stay
infinite, divergences stay in [0, inf], brackets contain values computed here independently
(mpmath at 60 digits, closed forms), and valid input near the ends of the declared ranges gets an
answer or a one-line refusal (exit 2), never a traceback."""

import json
import math

import mpmath as mp
import pytest

from shuffle_lib import cli
from shuffle_lib.mechanisms.clones.pairs import general_pair
from shuffle_lib.mechanisms.clones.renyi import clone_rdp

mp.mp.dps = 60


def run_json(capsys, *argv):
    """(exit code, parsed JSON or None, stderr) of the CLI run in process."""
    code = cli.main([*argv, "--json"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else None), err


def koskela_unmatched_mass(n, eps0):
    """P-mass where Q = 0 in the koskela pair: q (p/2)^(n-1), p = e^-eps0, q = e^eps0/(e^eps0+1)."""
    e = mp.mpf(eps0)
    return mp.e ** e / (mp.e ** e + 1) * (mp.e ** -e / 2) ** (n - 1)


@pytest.mark.parametrize("n, eps0, orders", [(1000, 1, ["2"]), (10_000, 2, ["2", "32"])])
def test_rdp_is_infinite_when_the_unmatched_atom_is_below_the_double_range(capsys, n, eps0, orders):
    mass = koskela_unmatched_mass(n, eps0)
    assert 0 < mass < mp.mpf("1e-400")            # positive, yet it underflows as a double
    code, out, _ = run_json(capsys, "rdp", "ldp-shuffle", "--pair", "koskela", "--n", str(n),
                            "--eps0", str(eps0), "--order", *orders)
    assert code == 0
    assert all(r["rdp_lower"] is None and r["rdp_upper"] is None for r in out["results"])


def test_clone_rdp_of_a_general_pair_with_an_underflowing_unmatched_atom_is_infinite():
    p, u, n = 0.5, 0.5, 3000                       # w = 0: the user adds to a or to nothing
    assert u * (mp.mpf(p) / 2) ** (n - 1) > 0       # ~1e-1806, positive: D_lam = inf for lam > 1
    brs = clone_rdp(n, 1.0, [2.0, 50.0], pair=general_pair(p, u, 0.0))
    assert all(b.lower == math.inf and b.upper == math.inf for b in brs)


def test_rdp_of_a_nearly_non_private_subsampled_shuffle_stays_in_zero_to_eps0(capsys):
    """eps0 = 1e-320: every loss lies in [-eps0, eps0], so 0 <= D_lam <= eps0 for every order; the
    bracket was [-4.4e-16, -4.4e-16] (rounding of a PLD whose masses sum to 1 - 2e-16)."""
    code, out, _ = run_json(capsys, "rdp", "ldp-shuffle-subsampled", "--n", "1000", "--eps0", "1e-320",
                            "--subset", "100", "--order", "2", "64")
    assert code == 0
    for r in out["results"]:
        assert 0.0 <= r["rdp_lower"] <= 1e-320 and r["rdp_upper"] >= max(r["rdp_lower"], 0.0)
        assert r["rdp_upper"] < 1e-12
