"""Execute every chapter once, for both the book and the tests.

    python tests/execute_chapters.py [--jobs N] [--book-config OUT.yml] [chapters/NN_slug.md ...]

Each chapter is read as the book build reads it (myst-nb's reader: the same cells, the same
metadata, hence the same jupyter-cache key), executed in ``chapters/`` (the build's working
directory) on ``--jobs`` processes, longest-running last-known first, and stored in the book's
jupyter-cache (``_build/.jupyter_cache``).  ``--book-config`` writes a copy of ``_config.yml``
whose ``execute_notebooks`` is ``cache``: a ``jupyter-book build --config OUT.yml`` then renders
the stored outputs without executing anything, and ``tests/conftest.py`` compares the same
outputs with the executed copies in ``tests/notebooks/`` (nbval's rules and sanitising).  A
chapter that fails is not cached; its traceback is written to ``_build/executed/NN_slug.error``
(which ``tests/conftest.py`` prints in the chapter's failure) and the exit code is 1.  A failure
of the kernel rather than of a cell (it died, or did not answer at start-up) is retried once in a
fresh kernel, and the retry is reported; every other chapter is executed and cached whatever one
of them does, so one failure fails one test, not thirteen.

The cache keys on the code cells only, not on the library: ``make book`` and ``make test`` empty
it before executing, so the book never shows outputs of an older library.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import pathlib
import re
import shutil
import sys
import time
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager

import nbformat
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
CACHE = ROOT / "_build" / ".jupyter_cache"
ERRORS = ROOT / "_build" / "executed"
TIMES = ERRORS / "seconds.json"   # last run's execution times: the next run starts the longest first


def config() -> dict:
    """The book's ``_config.yml``."""
    return yaml.safe_load((ROOT / "_config.yml").read_text())


def book_notebook(md: pathlib.Path):
    """The chapter as the book build reads it (myst-nb's MyST-notebook reader, the book's extensions)."""
    from myst_nb.core.config import NbParserConfig
    from myst_nb.core.read import create_nb_reader
    from myst_parser.config.main import MdParserConfig

    extensions = set(config().get("parse", {}).get("myst_enable_extensions", []))
    text = md.read_text()
    reader = create_nb_reader(str(md), MdParserConfig(enable_extensions=extensions), NbParserConfig(), text)
    if reader is None:
        raise ValueError(f"{md} is not a MyST notebook (no jupytext top matter)")
    return reader.read(text)


def execute(md: pathlib.Path):
    """Execute the chapter as the build would (jupyter-cache's executor, cwd ``chapters/``).

    Returns ``(notebook, error or None, seconds)``; the error names the failing cell and its traceback.  The kernel manager provisions CurveZMQ
    keys (the kernelspec declares support), so the kernel does not warn that it runs over TCP
    without encryption.
    """
    from jupyter_cache.executors.utils import single_nb_execution
    from traitlets.config import Config

    nb = book_notebook(md)
    timeout = config().get("execute", {}).get("timeout", 900)
    encrypted = Config({"KernelManager": {"transport_encryption": "auto"}})   # nbclient still owns the kernel
    # startup_timeout: nbclient's 60 s default is short for a cold venv on a loaded 2-core machine
    result = single_nb_execution(nb, cwd=str(md.parent), timeout=timeout, allow_errors=False, config=encrypted,
                                 startup_timeout=300)
    err = None if result.err is None else _ANSI.sub("", str(result.err))   # the failing cell and its traceback
    return result.nb, err, result.time


@contextmanager
def _cache_lock():
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    with open(CACHE.parent / ".jupyter_cache.lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
        except OSError:   # a file system without flock: under make test the writes end before any read
            yield
            return
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def store(md: pathlib.Path, nb, seconds: float) -> None:
    """Put an executed chapter into the book's jupyter-cache, as myst-nb's cache mode does."""
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    with _cache_lock():
        get_cache(str(CACHE)).cache_notebook_bundle(
            CacheBundleIn(nb, str(md), data={"execution_seconds": seconds}),
            check_validity=False, overwrite=True)


def cached(md: pathlib.Path):
    """The chapter's executed notebook from the book's cache, or None when it is not there."""
    from jupyter_cache import get_cache

    if not CACHE.exists():
        return None
    with _cache_lock():
        try:
            return get_cache(str(CACHE)).merge_match_into_notebook(book_notebook(md))[1]
        except KeyError:
            return None


def error_file(md: pathlib.Path) -> pathlib.Path:
    return ERRORS / (md.stem + ".error")


def _run(path: str):
    """``(path, executed notebook or None, error or None, seconds, note)`` for one chapter; never raises.

    jupyter-cache's executor catches a failing cell, nothing else: a kernel that dies or does not
    answer at start-up raises here.  Such a failure is retried once in a fresh kernel (``note``
    says so); a failing cell is not (it would fail again)."""
    note = ""
    for attempt in (1, 2):
        try:
            nb, err, seconds = execute(pathlib.Path(path))
            return path, nbformat.writes(nb), (note + err if err and note else err), seconds, note
        except Exception:   # noqa: BLE001 -- reported in full, never swallowed
            trace = _ANSI.sub("", traceback.format_exc())
            if attempt == 2:
                return path, None, f"{note}the kernel failed again:\n{trace}", 0.0, note
            note = f"retried in a fresh kernel after: {trace.strip().splitlines()[-1]}\n"


def settle(md: pathlib.Path, result) -> tuple[str | None, float]:
    """Cache one chapter's outcome, or write its error file; ``(error or None, seconds)``.

    ``result()`` gives ``_run``'s tuple (a future's ``result``); whatever it or the cache raises --
    a killed worker, a cache that cannot be written -- fails this chapter alone, with the traceback
    and the free disk space in its error file."""
    secs, note = 0.0, ""
    error_file(md).unlink(missing_ok=True)
    try:
        _, text, err, secs, note = result()
        if err is None:
            store(md, nbformat.reads(text, as_version=4), secs)
    except Exception:   # noqa: BLE001 -- reported in full below
        err = _ANSI.sub("", traceback.format_exc())
        err += f"(free disk under {ROOT}: {shutil.disk_usage(ROOT).free / 2**30:.2f} GiB)\n"
    name = md.relative_to(ROOT) if md.is_relative_to(ROOT) else md
    if err is None:
        print(f"executed {name} in {secs:.1f} s" + (f" ({note.strip()})" if note else ""), flush=True)
    else:
        error_file(md).write_text(err)
        print(f"FAILED {name} after {secs:.1f} s:\n{err}", flush=True)
    return err, secs


def book_config(out: pathlib.Path) -> None:
    """``_config.yml`` with ``execute_notebooks: cache`` and the cache above: the build renders, never executes."""
    cfg = config()
    cfg.setdefault("execute", {}).update(execute_notebooks="cache", cache=str(CACHE))
    # Jupyter Book resolves these against the config file's folder, which is no longer the root
    local = cfg.get("sphinx", {}).get("local_extensions") or {}
    for name, path in local.items():
        local[name] = str((ROOT / path).resolve())
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("# generated by tests/execute_chapters.py from _config.yml; do not edit\n"
                   + yaml.safe_dump(cfg, sort_keys=False))


def main(argv=None) -> int:
    from refresh_notebooks import chapters

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("chapters", nargs="*", type=pathlib.Path, help="default: every chapter with code cells")
    ap.add_argument("--jobs", "-j", type=int, default=2, help="chapters executed at once (default 2)")
    ap.add_argument("--book-config", type=pathlib.Path, help="also write the build's config here")
    args = ap.parse_args(argv)
    if args.jobs < 1:
        ap.error(f"--jobs must be >= 1, got {args.jobs}")
    if args.book_config:
        book_config(args.book_config)
    todo = [p.resolve() for p in args.chapters] or chapters()
    ERRORS.mkdir(parents=True, exist_ok=True)
    last = json.loads(TIMES.read_text()) if TIMES.exists() else {}
    todo.sort(key=lambda p: -last.get(p.stem, 0.0))   # stable: folder order when nothing is known
    failed, seconds, start = [], dict(last), time.monotonic()
    with ProcessPoolExecutor(max_workers=min(args.jobs, len(todo))) as pool:
        futures = {pool.submit(_run, str(md)): md for md in todo}
        for fut in as_completed(futures):
            md = futures[fut]
            err, secs = settle(md, fut.result)
            if err is None:
                seconds[md.stem] = round(secs, 1)
            else:
                failed.append(md.name)
    TIMES.write_text(json.dumps(seconds, indent=1, sort_keys=True) + "\n")
    print(f"{len(todo)} chapters executed on {args.jobs} processes in {time.monotonic() - start:.0f} s"
          + (f"; failed: {', '.join(failed)}" if failed else ""), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.path.insert(0, str(pathlib.Path(__file__).parent))
    sys.exit(main())
