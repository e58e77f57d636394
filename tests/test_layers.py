"""The package's layers (issue 13): imports go one way, no cycles, no private names across modules,
no argument parsing in a mechanism.  The import graph is read from the source with ``ast``."""

import ast
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent / "shuffle_lib"
LAYER = {"core": 0, "bounds": 1, "mechanisms": 2, "analyses": 3}   # top-level modules (cli, interop, __init__): 4


def _module(path: pathlib.Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module(p): p for p in ROOT.rglob("*.py")}


def _imports(path: pathlib.Path):
    """(imported module, names, line) for every shuffle_lib import, top-level and in functions."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("shuffle_lib"):
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                yield (sub if sub in MODULES else node.module), alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom) and node.level:
            raise AssertionError(f"{path}: relative import at line {node.lineno}; use shuffle_lib.<layer>... paths")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("shuffle_lib"):
                    yield alias.name, None, node.lineno


def _layer(mod: str) -> int:
    parts = mod.split(".")
    return LAYER.get(parts[1], 4) if len(parts) > 1 else 4


def _graph():
    return {m: {t for t, _, _ in _imports(p) if t != m} for m, p in MODULES.items()}


def test_the_graph_was_read():
    g = _graph()
    assert "shuffle_lib.core.fourier" in g and "shuffle_lib.core.pld" in g["shuffle_lib.core.fourier"]
    assert len(MODULES) > 30


def test_no_import_cycle():
    g = _graph()
    state, stack = {}, []

    def visit(m):
        state[m] = "open"
        stack.append(m)
        for t in sorted(g.get(m, ())):
            if t not in MODULES:
                continue
            if state.get(t) == "open":
                cyc = stack[stack.index(t):] + [t]
                pytest.fail("import cycle: " + " -> ".join(cyc))
            if t not in state:
                visit(t)
        stack.pop()
        state[m] = "done"

    for m in sorted(g):
        if m not in state:
            visit(m)


def test_imports_go_downward():
    bad = []
    for m, p in MODULES.items():
        for t, _, line in _imports(p):
            if t in MODULES and _layer(t) > _layer(m):
                bad.append(f"{m} (layer {_layer(m)}) imports {t} (layer {_layer(t)}) at line {line}")
    assert not bad, "\n".join(bad)


def test_no_private_name_across_modules():
    bad = [f"{m} imports {name} from {t} (line {line})"
           for m, p in MODULES.items() for t, name, line in _imports(p)
           if name and name.startswith("_") and not name.startswith("__") and t != m
           and not (m == "shuffle_lib" and name == "validate")]
    assert not bad, "\n".join(bad)


def test_no_argument_parsing_in_mechanisms():
    for m, p in MODULES.items():
        if _layer(m) < 4:
            src = p.read_text()
            assert "argparse" not in src and "add_argument" not in src, m


def test_a_cycle_would_be_found(tmp_path, monkeypatch):
    """The cycle finder is not vacuous: a two-module cycle on a fake graph fails it."""
    fake = {"shuffle_lib.a": {"shuffle_lib.b"}, "shuffle_lib.b": {"shuffle_lib.a"}}
    monkeypatch.setattr(sys.modules[__name__], "_graph", lambda: fake)
    monkeypatch.setitem(MODULES, "shuffle_lib.a", None)
    monkeypatch.setitem(MODULES, "shuffle_lib.b", None)
    with pytest.raises(pytest.fail.Exception, match="import cycle"):
        test_no_import_cycle()
