"""The README's examples run as written.

Every command of the README's ``bash`` blocks except the set-up ones (``pip install``, ``make``) is
run from the repository's root, and every ``python`` block is run in a fresh interpreter: each must
exit 0, and a command with ``--json`` must print one JSON object.  ``.venv/bin/python`` is the
interpreter running the tests when the checkout has no ``.venv`` of its own (a worktree sharing
another checkout's environment); the console script is looked up beside that interpreter (and is
``python -m shuffle_lib`` in an environment installed before it existed; tests/test_packaging.py
checks the script itself).
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
SETUP = ("pip ", "make ")


def blocks(lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", README, flags=re.DOTALL | re.MULTILINE)


def commands() -> list[str]:
    out = []
    for block in blocks("bash"):
        for line in block.splitlines():
            cmd = line.split(" #", 1)[0].strip() if not line.lstrip().startswith("#") else ""
            if cmd and not cmd.startswith(SETUP):
                out.append(cmd)
    return out


def _env() -> dict:
    env = dict(os.environ)
    env["PATH"] = str(pathlib.Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env


def _as_written(cmd: str) -> list[str]:
    argv = shlex.split(cmd)
    if argv[0] == ".venv/bin/python" and not (ROOT / argv[0]).exists():
        argv[0] = sys.executable
    if argv[0] == "shuffle-accounting" and shutil.which(argv[0], path=_env()["PATH"]) is None:
        # an environment installed before the console script existed: the same program, by module
        argv[:1] = [sys.executable, "-m", "shuffle_lib"]
    return argv


COMMANDS = commands()
PYTHON_BLOCKS = blocks("python")


def test_the_readme_has_examples():
    assert any("shuffle_lib" in c or "shuffle-accounting" in c for c in COMMANDS), COMMANDS
    assert PYTHON_BLOCKS, "no python block found in README.md"


@pytest.mark.parametrize("cmd", COMMANDS, ids=[c[:60] for c in COMMANDS])
def test_command_runs_as_written(cmd):
    done = subprocess.run(_as_written(cmd), cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"`{cmd}` exited {done.returncode}:\n{done.stderr[-2000:]}"
    if "--json" in cmd:
        assert isinstance(json.loads(done.stdout), dict), done.stdout[:500]
    else:
        assert done.stdout.strip(), f"`{cmd}` printed nothing"


@pytest.mark.parametrize("code", PYTHON_BLOCKS, ids=[f"block{i + 1}" for i in range(len(PYTHON_BLOCKS))])
def test_python_block_runs_as_written(code):
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=_env(), capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, f"README block exited {done.returncode}:\n{code}\n{done.stderr[-2000:]}"
