"""Packaging: the wheel a user installs, its console script, and a light
``import shuffle_lib`` whose lazy names all still work.

The install into a clean virtual environment (numpy and scipy from PyPI) takes minutes: it is marked
``slow`` and runs only with ``SHUFFLE_SLOW=1``.  No test here measures time: the import test checks
*what* is imported, not how long it takes.
"""

import configparser
import email.parser
import importlib.util
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tomllib
import venv
import zipfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
SLOW = pytest.mark.skipif(os.environ.get("SHUFFLE_SLOW") != "1", reason="clean-venv install: set SHUFFLE_SLOW=1")
IGNORE = shutil.ignore_patterns(".*", "_build", "_vendor", "build", "dist", "*.egg-info", "__pycache__",
                                "node_modules")


def _python(code: str, cwd: pathlib.Path = ROOT, **kw) -> subprocess.CompletedProcess:
    """``python -c code`` on this checkout (not on an installed copy)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=600, **kw)


def _source_copy(dest: pathlib.Path) -> pathlib.Path:
    """The checkout without its build outputs and hidden folders, so a build leaves the checkout clean.
    ``tests/`` and ``chapters/`` stay in it: the wheel must leave them out by itself."""
    shutil.copytree(ROOT, dest, ignore=IGNORE)
    return dest


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> pathlib.Path:
    """The wheel ``pip wheel`` builds (without build isolation when setuptools can build one here: offline)."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = _source_copy(tmp / "src")
    local = importlib.util.find_spec("setuptools") is not None and importlib.util.find_spec("wheel") is not None
    cmd = [sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "--quiet", "-w", str(tmp / "dist")]
    r = subprocess.run(cmd + (["--no-build-isolation", "--no-index"] if local else []),
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr
    (whl,) = (tmp / "dist").glob("shuffle_lib-*.whl")
    return whl


def _dist_info(whl: pathlib.Path, name: str) -> str:
    with zipfile.ZipFile(whl) as z:
        (path,) = [n for n in z.namelist() if n.endswith(f".dist-info/{name}")]
        return z.read(path).decode()


# ---- the wheel ----

def test_the_wheel_holds_every_module_and_nothing_else(wheel):
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
    modules = {p.relative_to(ROOT).as_posix() for p in (ROOT / "shuffle_lib").rglob("*.py")}
    assert len(modules) > 40
    assert modules - names == set()
    for sub in ("core", "bounds", "mechanisms", "analyses", "mechanisms/krr", "mechanisms/clones", "mechanisms/mixnet"):
        assert f"shuffle_lib/{sub}/__init__.py" in names, sub
    package = {n for n in names if not n.startswith("shuffle_lib-")}
    assert package == modules, package ^ modules            # no tests, chapters, notebooks, caches
    assert all(n.split("/")[0].endswith(".dist-info") for n in names - package)


def test_the_wheel_requires_numpy_and_scipy_only(wheel):
    meta = email.parser.Parser().parsestr(_dist_info(wheel, "METADATA"))
    requires = meta.get_all("Requires-Dist")
    plain = sorted(r for r in requires if "extra ==" not in r)
    assert plain == sorted(PYPROJECT["project"]["dependencies"]) == ["numpy>=1.26", "scipy>=1.11"]
    assert sorted(meta.get_all("Provides-Extra")) == ["dp-accounting", "interop"]
    extras = sorted(r.split(";")[0].strip() for r in requires if "extra ==" in r)
    assert extras == ["dp-accounting>=0.4"] * 2
    assert meta["Name"] == "shuffle-lib" and meta["Requires-Python"] == ">=3.11"


def test_the_wheel_declares_the_console_script(wheel):
    ep = configparser.ConfigParser()
    ep.read_string(_dist_info(wheel, "entry_points.txt"))
    assert dict(ep["console_scripts"]) == {"shuffle-accounting": "shuffle_lib.cli:main"}


# ---- the console script, without installing ----

def test_pyproject_names_cli_main():
    target = PYPROJECT["project"]["scripts"]["shuffle-accounting"]
    assert target == "shuffle_lib.cli:main"
    module, func = target.split(":")
    from shuffle_lib import cli
    assert importlib.import_module(module) is cli and getattr(cli, func) is cli.main


@pytest.mark.parametrize("args, code", [(["delta", "rr", "--eps0", "1", "--eps", "0.5", "--json"], 0),
                                        (["delta", "rr", "--eps0", "-1", "--eps", "0.5"], 2),
                                        (["delta", "no-such-mechanism", "--eps", "0.5"], 2)])
def test_mains_return_value_is_the_exit_code(args, code):
    """What the wrapper pip writes for ``[project.scripts]`` does: ``sys.exit(main())``."""
    r = subprocess.run([sys.executable, "-c", "import sys; from shuffle_lib.cli import main; sys.exit(main())", *args],
                       capture_output=True, text=True, cwd=ROOT, timeout=300,
                       env=dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))))
    assert r.returncode == code, r.stderr
    if code == 0:
        assert json.loads(r.stdout)["results"][0]["delta_upper"] > 0
    else:
        assert r.stderr.startswith("error:") and r.stdout == ""


# ---- a light import, every name still there ----

def test_import_shuffle_lib_loads_no_numerics():
    r = _python("import json, sys, shuffle_lib\n"
                "print(json.dumps([shuffle_lib.__file__, sorted(sys.modules)]))")
    assert r.returncode == 0, r.stderr
    path, modules = json.loads(r.stdout)
    assert pathlib.Path(path).parent == ROOT / "shuffle_lib"
    heavy = [m for m in modules if m.split(".")[0] in ("numpy", "scipy", "dp_accounting", "matplotlib")]
    assert heavy == []
    assert sorted(m for m in modules if m.startswith("shuffle_lib")) == ["shuffle_lib"]


def test_a_flat_name_loads_only_what_it_needs():
    r = _python("import json, sys, shuffle_lib\nshuffle_lib.Bracket(0, 1)\n"
                "print(json.dumps(sorted(sys.modules)))")
    assert r.returncode == 0, r.stderr
    modules = json.loads(r.stdout)
    assert "shuffle_lib.core.types" in modules
    assert not [m for m in modules if m.split(".")[0] in ("dp_accounting", "matplotlib")]
    assert "scipy.stats" not in modules and "shuffle_lib.mechanisms" not in modules


def test_no_module_name_of_an_earlier_version():
    """The package's modules live at their own paths only: no import hook, no second name."""
    r = _python("import importlib, sys, shuffle_lib\n"
                "assert not [f for f in sys.meta_path if type(f).__module__.startswith('shuffle_lib')]\n"
                "for old in ('krr', 'clone_pld', 'renyi', 'pld', 'bitflip'):\n"
                "    try:\n        importlib.import_module('shuffle_lib.' + old)\n"
                "    except ModuleNotFoundError:\n        pass\n"
                "    else:\n        raise SystemExit(old)\n"
                "    assert not hasattr(shuffle_lib, old), old\n")
    assert r.returncode == 0, r.stderr


def test_the_registry_is_complete_whoever_asks():
    r = _python("from shuffle_lib import mechanisms\nprint(','.join(mechanisms.names()))")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[0].split(",") == ["rr", "custom", "krr-strong", "krr-weak", "ldp-shuffle",
                                              "ldp-shuffle-subsampled", "histogram-krr", "bitflip", "fake-records",
                                              "randomizer"]


def test_every_public_name_resolves():
    r = _python("import shuffle_lib as sl\n"
                "from shuffle_lib import *\n"
                "missing = [n for n in sl.__all__ if n not in globals()]\n"
                "assert not missing, missing\n"
                "assert set(sl.__all__) <= set(dir(sl))\n"
                "assert sl.mechanism('rr').name == 'rr' and sl.rr_pmfs(1.0) and sl.ShuffledEvent\n"
                "assert sl.core and sl.bounds and sl.mechanisms and sl.analyses and sl.cli and sl.interop\n"
                "try:\n    sl.no_such_name\nexcept AttributeError:\n    pass\nelse:\n    raise SystemExit('no error')\n")
    assert r.returncode == 0, r.stderr


# ---- a user's install (slow) ----

@pytest.fixture(scope="module")
def clean_venv(tmp_path_factory) -> pathlib.Path:
    """``pip install .`` (no -e) into a fresh virtual environment: numpy and scipy come from PyPI."""
    tmp = tmp_path_factory.mktemp("venv")
    src = _source_copy(tmp / "src")
    venv.create(tmp / "venv", with_pip=True)
    py = tmp / "venv" / "bin" / "python"
    env = {k: val for k, val in os.environ.items() if k not in ("PYTHONPATH", "PIP_NO_INDEX")}
    r = subprocess.run([str(py), "-m", "pip", "install", "--quiet", "."], cwd=src, env=env,
                       capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, r.stderr
    return tmp / "venv"


def _run(venv_dir: pathlib.Path, *cmd: str) -> subprocess.CompletedProcess:
    env = {k: val for k, val in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([str(venv_dir / "bin" / cmd[0]), *cmd[1:]], capture_output=True, text=True,
                          cwd=venv_dir, env=env, timeout=600)


@pytest.mark.slow
@SLOW
def test_a_clean_install_brings_numpy_and_scipy_only(clean_venv):
    r = _run(clean_venv, "python", "-m", "pip", "list", "--format=json")
    installed = {p["name"].lower() for p in json.loads(r.stdout)} - {"pip", "setuptools", "wheel"}
    assert installed == {"shuffle-lib", "numpy", "scipy"}
    r = _run(clean_venv, "python", "-c", "import shuffle_lib, sys; print(shuffle_lib.__file__)\n"
             "try:\n    shuffle_lib.ShuffleAccountant\nexcept ImportError as e:\n    print(e)")
    assert r.returncode == 0, r.stderr
    where, message = r.stdout.splitlines()
    assert pathlib.Path(where).is_relative_to(clean_venv) and "site-packages" in where
    assert "pip install shuffle-lib[dp-accounting]" in message


@pytest.mark.slow
@SLOW
def test_the_console_script_is_python_m_shuffle_lib(clean_venv):
    args = ["delta", "rr", "--eps0", "1", "--eps", "0.5", "--json"]
    script, module = _run(clean_venv, "shuffle-accounting", *args), _run(clean_venv, "python", "-m", "shuffle_lib", *args)
    assert script.returncode == module.returncode == 0, script.stderr + module.stderr
    a, b = json.loads(script.stdout), json.loads(module.stdout)
    a.pop("seconds"), b.pop("seconds")
    assert a == b and 0.28 < a["results"][0]["delta_upper"] < 0.29
    bad = _run(clean_venv, "shuffle-accounting", "delta", "rr", "--eps0", "-1", "--eps", "0.5")
    assert bad.returncode == 2 and bad.stderr.startswith("error:")
