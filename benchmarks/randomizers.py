"""Speed of the randomizer bracket against its two peers: prints a table, never pass/fail.

    python benchmarks/randomizers.py [--family krr|oue] [--eps0 1 3] [--n 1000000] [--compositions 1 10]
                                     [--wang DIR] [--su DIR]

Workload: one eps(delta = 1e-6) of the shuffled k-RR (k = 10) or OUE (d = 100) at n = 1e6, for
K = 1 and 10 rounds: this project's certified bracket (``randomizer.epsilon_bracket``) and its
seconds, and, in the same run, the peers' eps and seconds when their checkouts are given:

* ``--wang DIR``: Wang et al., "Privacy amplification via shuffling: unified, simplified, and
  tightened", VLDB 2024 (code ``wangsw/PrivacyAmplification``).  K = 1: their
  ``amplificationUB(p, beta, q, q, n, delta, T)`` (variation-ratio parameters from their README
  table; T bisection steps, eps resolution eps0 / 2^T).  K > 1: their Fourier composition
  ``homogeneousComposition`` of ``sequentialComposition/use_Hoeffding_and_FFT.py`` (only that
  file's imports and function definitions are loaded, not its experiments), inverted on a grid of eps.
* ``--su DIR``: Su, Cheng, Wang, "Decomposition-based optimal bounds for privacy amplification via
  shuffling", IEEE S&P 2026, arXiv 2504.07414 (code
  ``Optimal-amplification-bound/Decomposition-Based-Optimal-Bounds-for-Shuffle-DP``): their
  ``FFTbound(mechanism).get_eps(eps0, n, delta)``.  Their code calls CuPy; without it numpy is put
  in its place (the same calls on the CPU).  Their FFT has 2^ceil(log2(n x ~2400)) points, so it
  fits this machine's memory only up to n = 1e4; beyond, and for K > 1 (they compose only by a
  joint randomiser whose support grows as (outputs)^K), the table says so.  No published timing
  of theirs at n = 1e6 is quoted here.

Measured here (shared 2-core machine, other jobs running): ours, k-RR eps0 = 1, n = 1e6: 7 s
(K = 1), 367 s (K = 10); Wang et al. 22-28 s (K = 1, T = 20), their K = 10 Fourier composition
111 s already at n = 1e4 (its PLD is built by a Python double loop over ~n atoms, so n = 1e6 is
not run: WANG_K_MAX_N); Su et al. 70 s at n = 1e3 and 476 s at n = 1e4 (numpy FFT, ~17
bisection steps of one FFT each).

The peers' code is never part of this repository; their commits are read from DIR/PEER_COMMIT
(written when checking out) or ``git -C DIR rev-parse HEAD``.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
import math
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from shuffle_lib.mechanisms import randomizer as rz
from shuffle_lib.mechanisms.randomizer.decompose import olh_g

DELTA = 1e-6
K_RR, D_DOMAIN = 10, 100
SU_MAX_N = 10 ** 4        # Su et al.'s FFT length 2^ceil(log2(n x ~2400)): 2^25 complex at n = 1e4
WANG_K_MAX_N = 10 ** 4    # their get_omega is a Python double loop over ~n atoms: 111 s at n = 1e4, K = 10 here


def timed(f, *a, **k):
    t = time.perf_counter()
    out = f(*a, **k)
    return out, time.perf_counter() - t


def ours(family: str, eps0: float, n: int, compositions: int, delta: float = DELTA):
    """(Bracket, seconds) of this project's eps(delta)."""
    extra = {"k": K_RR} if family == "krr" else {"d": D_DOMAIN}
    (b,), secs = timed(rz.epsilon_bracket, n, delta, compositions=compositions, family=family, eps0=eps0, **extra)
    return b, secs


def commit(peer_dir: str) -> str:
    """The peer checkout's commit (DIR/PEER_COMMIT, else git), for the record."""
    f = Path(peer_dir) / "PEER_COMMIT"
    if f.exists():
        return f.read_text().strip()[:12]
    try:
        return subprocess.run(["git", "-C", peer_dir, "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()[:12]
    except (OSError, subprocess.CalledProcessError):
        return "unknown-commit"


# ---- Wang et al. (VLDB 2024): the variation-ratio bound ----

def _hr_size(d: int) -> int:
    return 2 ** math.ceil(math.log2(d + 1))      # as this project's hr family: K = 2^ceil(log2(d+1)) outputs


def wang_params(family: str, eps0: float, mod) -> tuple[float, float, float, str]:
    """(p, beta, q, how) of Wang et al.'s README table for a family (q0 = q1 = q).  OUE is not in
    their table: beta is its total variation (e^eps0 - 1)/(2(e^eps0 + 1)), p = q = e^eps0, by their
    definition; SUE is their 'binary RR (RAPPOR)' row (not in computeUBParameters).  With these
    parameters their pair is no upper bound for OUE, SUE or k-RR with k >= 3: a small dataset's
    exact delta exceeds it (tests/test_randomizer_wang.py), so their numbers for these families
    are comparisons, not certified bounds."""
    e = math.exp(eps0)
    if family == "krr":
        return (*mod.computeUBParameters(eps0, "krr", K_RR)[:3], f"computeUBParameters(eps0,'krr',{K_RR})")
    if family in ("olh", "blh"):
        g = olh_g(eps0) if family == "olh" else 2
        return (*mod.computeUBParameters(eps0, "localhash", g)[:3], f"computeUBParameters(eps0,'localhash',{g})")
    if family == "hr":
        K = _hr_size(D_DOMAIN)
        return (*mod.computeUBParameters(eps0, "hardamard", (K, K // 2))[:3],
                f"computeUBParameters(eps0,'hardamard',({K},{K // 2}))")
    if family == "sue":
        h = math.exp(eps0 / 2)
        return e, (h - 1) / (h + 1), e, "README row 'binary RR (RAPPOR)': beta=(e^(eps0/2)-1)/(e^(eps0/2)+1), p=q=e^eps0"
    if family == "oue":
        return e, (e - 1) / (2 * (e + 1)), e, "not in their table: beta=TV=(e^eps0-1)/(2(e^eps0+1)), p=q=e^eps0"
    raise ValueError(f"family must be one of krr, sue, oue, olh, blh, hr, got {family!r}.")


def _load_functions(path: Path) -> dict:
    """A script's imports and function definitions only (its experiments at module level are not run)."""
    tree = ast.parse(path.read_text())
    tree.body = [s for s in tree.body if isinstance(s, (ast.Import, ast.ImportFrom, ast.FunctionDef))]
    ns: dict = {"__name__": "peer_functions"}
    exec(compile(tree, str(path), "exec"), ns)
    return ns


def _wang_composed_deltas(ns, n, p, beta, q, eps_grid, K, nx, L):
    """Their homogeneousComposition's printed 'k: K eps: e delta : d' lines (it returns nothing)."""
    ns["dx"] = 2 * L / nx                       # a module-level global of their script
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        ns["homogeneousComposition"](n, p, beta, q, q, nx, L, np.asarray(eps_grid), K)
    out = []
    for line in buf.getvalue().splitlines():
        if line.startswith("k:"):
            parts = line.split()
            out.append((float(parts[3]), complex(parts[-1].strip("()") if "j" in parts[-1] else parts[-1]).real))
        if "OUTSIDE" in line:
            raise RuntimeError("Wang et al.'s PLD has mass outside [-L, L]; raise L.")
    return out


def wang_eps(wang_dir: str, family: str, eps0: float, n: int, compositions: int = 1, delta: float = DELTA,
             T: int = 20, nx: int = 2 * 10 ** 7, L: float = 50.0, grid: int = 60):
    """(eps, seconds, how) of Wang et al.'s code.  K = 1: amplificationUB with T bisection steps.
    K > 1: their Fourier composition on two eps grids (the second inside the first's crossing cell),
    eps = the smallest grid point whose delta <= target (an upper end to the grid step)."""
    sys.path.insert(0, wang_dir)
    import unifiedamplification as ua
    p, beta, q, how = wang_params(family, eps0, ua)
    e1, t1 = timed(ua.amplificationUB, p, beta, q, q, n, delta, T)
    base = f"wangsw/PrivacyAmplification@{commit(wang_dir)} {how}"
    if compositions == 1:
        return e1, t1, f"{base}; amplificationUB(p,beta,q,q,n,delta,T={T})"
    ns = _load_functions(Path(wang_dir) / "sequentialComposition" / "use_Hoeffding_and_FFT.py")
    t0 = time.perf_counter()
    lo, hi = e1, compositions * e1
    for _ in range(2):
        pts = _wang_composed_deltas(ns, n, p, beta, q, np.linspace(lo, hi, grid), compositions, nx, L)
        ok = [e for e, d in pts if d <= delta]
        if not ok:
            return math.nan, time.perf_counter() - t0, f"{base}; homogeneousComposition: delta > target on [{lo}, {hi}]"
        up = min(ok)
        lo, hi = max(lo, up - (hi - lo) / (grid - 1)), up
    return hi, time.perf_counter() - t0 + t1, (f"{base}; homogeneousComposition(n,p,beta,q,q,nx={nx},L={L:g},eps grid,"
                                               f"k={compositions}) inverted on 2x{grid}-point grids in [eps_1, K eps_1]")


# ---- Su, Cheng, Wang (IEEE S&P 2026): the general clone, by FFT ----

SU_CLASSES = {"krr": ("RRMechanism", "RRMechanism_lowerbound"), "sue": ("RapporMechanism", "RapporMechanism_lowerbound"),
              "oue": ("OUEMechanism", "OUEMechanism_lowerbound"),
              "blh": ("BinaryLocalHashMechanism", "BLHMechanism_lowerbound"),
              "hr": ("HadamardResponseMechanism", "HRMechanism_lowerbound")}


def _su_modules(su_dir: str):
    try:
        import cupy  # noqa: F401
    except ImportError:
        sys.modules["cupy"] = np                 # their cp.fft / cp.pad / cp.maximum / ... on the CPU
    sys.path.insert(0, su_dir)
    import amplification_bounds as ab
    import mechanisms as me
    return ab, me


def su_eps(su_dir: str, family: str, eps0: float, n: int, delta: float = DELTA, lower: bool = False):
    """(eps, seconds, how) of Su et al.'s FFTbound (or FFTLowerBound on their lower-bound dataset),
    or None where their code has no such family (olh) or n > SU_MAX_N (memory)."""
    if family not in SU_CLASSES or n > SU_MAX_N:
        return None
    ab, me = _su_modules(su_dir)
    cls = getattr(me, SU_CLASSES[family][1 if lower else 0])
    mech = cls(eps0, K_RR) if family == "krr" else cls(eps0)
    bound = (ab.FFTLowerBound if lower else ab.FFTbound)(mech)
    with contextlib.redirect_stdout(io.StringIO()):   # their get_eps prints 'bingo!'
        e, secs = timed(bound.get_eps, eps0, n, delta)
    args = f"({eps0:g}, {K_RR})" if family == "krr" else f"({eps0:g})"
    note = "; D>>1 form (d=100 correction < 1e-20)" if family == "sue" else "; d-free form"
    note = "" if family == "krr" else note
    return e, secs, (f"Optimal-amplification-bound/Decomposition-Based-Optimal-Bounds-for-Shuffle-DP@{commit(su_dir)} "
                     f"{'FFTLowerBound' if lower else 'FFTbound'}({cls.__name__}{args}).get_eps(eps0,n,delta), "
                     f"numpy for cupy{note}")


# ---- the table ----

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--family", choices=("krr", "oue", "sue"), default="krr")
    ap.add_argument("--eps0", type=float, nargs="+", default=[1.0, 3.0])
    ap.add_argument("--n", type=int, default=10 ** 6)
    ap.add_argument("--compositions", type=int, nargs="+", default=[1, 10])
    ap.add_argument("--wang", metavar="DIR", help="a checkout of wangsw/PrivacyAmplification")
    ap.add_argument("--su", metavar="DIR", help="a checkout of Decomposition-Based-Optimal-Bounds-for-Shuffle-DP")
    a = ap.parse_args()
    n = a.n
    print(f"eps(delta={DELTA:g}) of the shuffled {a.family} ({'k' if a.family == 'krr' else 'd'}="
          f"{K_RR if a.family == 'krr' else D_DOMAIN}), n = {n:.0e}; seconds are wall-clock, this run")
    print(f"{'eps0':>4} {'K':>3} | {'ours [lower, upper]':<26} {'s':>8} | {'Wang et al.':>11} {'s':>8} | "
          f"{'Su et al.':>11} {'s':>8}")
    for e0 in a.eps0:
        for K in a.compositions:
            b, t = ours(a.family, e0, n, K)
            w = s = "-", ""
            if a.wang and K > 1 and n > WANG_K_MAX_N:
                w = "too slow", f"(n>{WANG_K_MAX_N:.0e})"
            elif a.wang:
                we, wt, _ = wang_eps(a.wang, a.family, e0, n, K)
                w = f"{we:.6f}", f"{wt:.1f}"
            if a.su:
                if K > 1:
                    s = "no K-round", ""
                elif n > SU_MAX_N:
                    s = "too big", "(memory)"
                else:
                    se, st, _ = su_eps(a.su, a.family, e0, n)
                    s = f"{se:.6f}", f"{st:.1f}"
            print(f"{e0:>4g} {K:>3} | [{b.lower:.6f}, {b.upper:.6f}]{'':<6} {t:>8.1f} | {w[0]:>11} {w[1]:>8} | "
                  f"{s[0]:>11} {s[1]:>8}")


if __name__ == "__main__":
    main()
