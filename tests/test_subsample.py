"""The subsampled shuffler pair (shuffle_lib.mechanisms.clones.subsample): certified against the exact subsampled,
shuffled binary randomised response; reduces to the fmt21 pair at m = n; CLI."""

import json
import math
import subprocess
import sys

import numpy as np
import pytest
from scipy.stats import binom, hypergeom

from shuffle_lib.core import pld
from shuffle_lib.mechanisms import clones
from shuffle_lib.mechanisms.clones import subsample


def rr_subsampled(n, m, eps0, k):
    """Exact: a uniform m-subset of n users reports by binary RR, shuffled (count of ones).
    u holds 0 (X) or 1 (X'); k of the n-1 others hold 0."""
    q = math.exp(eps0) / (1 + math.exp(eps0))
    ones = lambda j, r: np.convolve(binom.pmf(np.arange(j + 1), j, 1 - q), binom.pmf(np.arange(r + 1), r, q))  # noqa
    x0, x1, out = np.zeros(m + 1), np.zeros(m + 1), np.zeros(m + 1)
    for j in range(m):
        w = hypergeom.pmf(j, n - 1, k, m - 1)
        if w > 0:
            base = ones(j, m - 1 - j)
            x0 += w * np.convolve(base, [q, 1 - q])
            x1 += w * np.convolve(base, [1 - q, q])
    for j in (range(m + 1) if m < n else []):
        w = hypergeom.pmf(j, n - 1, k, m)
        if w > 0:
            out += w * ones(j, m - j)
    g = m / n
    return g * x0 + (1 - g) * out, g * x1 + (1 - g) * out


@pytest.mark.parametrize("n,m", [(5, 2), (12, 3), (30, 8), (25, 25)])
def test_dominates_exact_subsampled_rr(n, m):
    for eps0 in (0.5, 2.0, 4.0):
        pl, _ = subsample.subsampled_pld(n, m, eps0)
        for eps in (0.0, 0.1, 0.4):
            exact = max(float(pld.delta_exact(*rr_subsampled(n, m, eps0, k), eps)[0]) for k in range(n))
            b = subsample.subsampled_delta(n, m, eps0, eps)
            assert exact <= b.upper * (1 + 1e-9) + 1e-15
            assert pld.hockey_stick(pl, eps) == pytest.approx(b.upper, rel=1e-9, abs=1e-15)


def test_reduces_to_fmt21_and_amplifies():
    for eps in (0.1, 0.5):
        assert subsample.subsampled_delta(40, 40, 2.0, eps).upper == pytest.approx(
            clones.delta_bracket_single(40, 2.0, eps).upper, rel=1e-12)
    # sampling 1 % is more private than everybody reporting
    a = subsample.subsampled_delta(10 ** 5, 1000, 3.0, 0.1).upper
    b = clones.delta_bracket_single(1000, 3.0, 0.1).upper
    assert a < b


def test_validation_and_cli():
    with pytest.raises(ValueError, match="m must be"):
        subsample.subsampled_delta(10, 11, 1.0, 0.1)
    r = subprocess.run([sys.executable, "-m", "shuffle_lib", "epsilon", "ldp-shuffle-subsampled", "--n", "100000",
                        "--eps0", "3", "--subset", "1000", "--delta", "1e-5", "--compositions", "10", "--json"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    row = json.loads(r.stdout)["results"][0]
    mine = subsample.subsampled_epsilon(10 ** 5, 1000, 3.0, [1e-5], 10, accuracy=2e-4)[0]
    assert row["eps_lower"] <= mine.upper and mine.lower <= row["eps_upper"]
    assert row["eps_upper"] - row["eps_lower"] <= 1e-3 * row["eps_upper"]


def _answered(brackets):
    return [(b.lower, b.upper, b.accuracy_met, b.limit) for b in brackets]


def test_subsampled_brackets_are_the_command_lines_composed(cli_brackets):
    """subsampled_delta_bracket / subsampled_epsilon and ``python -m shuffle_lib delta|epsilon
    ldp-shuffle-subsampled`` return the same brackets, accuracy_met and limit, K = 3 and 2 rounds
    (the epsilon case is refined: see the test below)."""
    lib = subsample.subsampled_delta_bracket(200, 50, 1.0, [0.5, 1.0], compositions=3)
    cli_out = cli_brackets("delta", "ldp-shuffle-subsampled", "--n", 200, "--eps0", 1.0,
                           "--subset", 50, "--compositions", 3, "--eps", 0.5, 1.0)
    assert _answered(lib) == cli_out
    lib = subsample.subsampled_epsilon(10 ** 5, 10 ** 4, 1.0, [1e-5], 2, accuracy=2e-3)
    cli_out = cli_brackets("epsilon", "ldp-shuffle-subsampled", "--n", 10 ** 5, "--eps0", 1.0,
                           "--subset", 10 ** 4, "--compositions", 2, "--delta", 1e-5,
                           "--accuracy", 2e-3)
    assert _answered(lib) == cli_out
    assert all(b.accuracy_met is not None for b in lib)


def test_subsampled_epsilon_refines_what_the_first_grid_leaves_too_wide():
    """n = 1e5, subset 1e4, eps0 = 1, K = 2, delta = 1e-5 at accuracy 2e-3: the first grid
    (evaluate.epsilon_brackets on the same model) gave [0.0081646, 0.0117816], half-width 1.8e-3
    against the contract's 25 a eps = 5.9e-4; subsampled_epsilon now answers [0.0093864, 0.0103203]
    (width 9.3e-4), inside the first bracket and meeting the contract."""
    from shuffle_lib.core import accuracy, evaluate

    model = subsample.subsampled_model(10 ** 5, 10 ** 4, 1.0)
    first = evaluate.epsilon_brackets(model, [1e-5], 2, accuracy=2e-3)[0]
    assert not accuracy.met("epsilon", first, 2e-3, 2), first
    got = subsample.subsampled_epsilon(10 ** 5, 10 ** 4, 1.0, [1e-5], 2, accuracy=2e-3)[0]
    assert got.accuracy_met and accuracy.met("epsilon", got, 2e-3, 2), got
    assert first.lower <= got.lower <= got.upper <= first.upper
    assert got.upper - got.lower < first.upper - first.lower
