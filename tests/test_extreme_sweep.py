"""Every declared mechanism and verb at the edges of its declared ranges, each command line in its
own process under a CPU-time limit (resource.RLIMIT_CPU) and a 4 GB address-space limit
(RLIMIT_AS): an answer (exit 0, nothing on stderr: no RuntimeWarning) or a refusal (exit 2, one
line starting 'error:') passes; a traceback, a hang (killed by the CPU limit) or a memory death
fails.  The parameter edges come from the registry, so a new mechanism is swept without an edit.

By default a fixed sample of cheap edges (the low end of every real range, 1e-320 where it is open
at 0, the example elsewhere) runs;
``SHUFFLE_DEEP=1`` sweeps both ends of every range, with more targets, 10 and 1000 rounds, and the
120 CPU-second limit of the accounting's contract.
"""

import itertools
import math
import os
import resource
import subprocess
import sys

import pytest

from shuffle_lib import mechanisms as registry

DEEP = os.environ.get("SHUFFLE_DEEP") == "1"
CPU_SECONDS = 120 if DEEP else 30
ADDRESS_SPACE = 4 * 2 ** 30
TARGETS = {"delta": ["--eps", "0", "1", "700"], "epsilon": ["--delta", "1e-300", "0.5"],
           "rdp": ["--order", "1.0000001", "2", "10000"]}


def _edges(p):
    """The declared range's edge values of one numeric parameter as command-line text."""
    if p.lo is None or p.hi is None or p.kind not in (int, float):
        return []
    if p.kind is int:
        return [str(int(p.lo)), f"{p.hi:.0e}" if p.hi >= 1e6 else str(int(p.hi))]
    lo = ("1e-320" if p.lo == 0 else repr(p.lo * (1 + 1e-15))) if p.lo_open else repr(p.lo)
    hi = repr(p.hi * (1 - 1e-15)) if p.hi_open else repr(p.hi)
    return [lo, hi]


def _chosen_edges(mech):
    """(parameter, edge text) to sweep: every edge when deep; else the low end of each real range,
    or the example's first value for a mechanism that declares no real parameter."""
    edges = [(p, i, e) for p in mech.params for i, e in enumerate(_edges(p))]
    if DEEP:
        return [(p, e) for p, _, e in edges]
    low_reals = [(p, e) for p, i, e in edges if i == 0 and p.kind is float]
    first = mech.params[0]
    return low_reals or [(first, str(mech.example[first.name]))]


def cases():
    """(id, argv) for every mechanism with an example, verb, parameter and edge."""
    out = []
    for name in registry.names():
        mech = registry.get(name)
        if not mech.example:
            continue
        for p, edge in _chosen_edges(mech):
            values = dict(mech.example, **{p.name: edge})
            base = list(itertools.chain.from_iterable(("--" + k.replace("_", "-"), str(x)) for k, x in values.items()))
            for verb in ("delta", "epsilon", "rdp"):
                rounds = [[]] if verb == "rdp" or not DEEP else [[], ["--compositions", "10"],
                                                                 ["--compositions", "1000"]]
                targets = TARGETS[verb] if DEEP or verb != "delta" else ["--eps", "0", "700"]
                for extra in rounds:
                    argv = [verb, name, *base, *targets, *extra]
                    out.append((f"{verb}-{name}-{p.name}={edge}{'-K' + extra[1] if extra else ''}", argv))
    return out


def _limits():
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_SECONDS, CPU_SECONDS))
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def run_limited(argv):
    env = dict(os.environ, PYTHONWARNINGS="default")     # warnings printed, as a user sees them
    return subprocess.run([sys.executable, "-m", "shuffle_lib", *argv], capture_output=True, text=True,
                          preexec_fn=_limits, env=env, timeout=10 * CPU_SECONDS)


CASES = cases()


@pytest.mark.parametrize("argv", [a for _, a in CASES], ids=[i for i, _ in CASES])
def test_an_edge_of_a_declared_range_is_answered_or_refused_in_one_line(argv):
    r = run_limited(argv)
    if r.returncode < 0:
        pytest.fail(f"killed by signal {-r.returncode} (CPU limit {CPU_SECONDS} s or 4 GB): {' '.join(argv)}")
    assert r.returncode in (0, 2), f"exit {r.returncode}: {' '.join(argv)}\n{r.stderr[-2000:]}"
    if r.returncode == 0:
        assert r.stderr == "", f"a successful run wrote to stderr: {' '.join(argv)}\n{r.stderr[-2000:]}"
    else:
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), r.stderr[-2000:]
        assert "Traceback" not in r.stderr and "max_loss" not in r.stderr


def test_the_sweep_covers_every_mechanism_with_an_example():
    swept = {a[1] for _, a in CASES}
    assert swept == {n for n in registry.names() if registry.get(n).example}
    assert math.isfinite(CPU_SECONDS) and len(CASES) >= 3 * len(swept)
