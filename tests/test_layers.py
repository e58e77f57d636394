"""The package's layers: imports go one way, no cycles, no private names across modules, no
argument parsing in a mechanism.  The import graph is read from the source with ``ast``, and a
module loaded by name (``importlib.import_module("shuffle_lib...")``) counts as imported."""

import ast
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent / "shuffle_lib"
LAYER = {"core": 0, "bounds": 1, "mechanisms": 2, "analyses": 3}   # top-level modules (cli, interop, __init__): 4
IMPORTERS = {"import_module", "__import__"}   # importlib.import_module("x"), __import__("x")


def _module(path: pathlib.Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module(p): p for p in ROOT.rglob("*.py")}


def _source(path) -> str:
    return path.read_text() if isinstance(path, pathlib.Path) else path


def _imports(path, modules=None):
    """(imported module, names, line) for every shuffle_lib import, top-level and in functions,
    including a module loaded by a string constant (``importlib.import_module``, ``__import__``).
    ``path`` is a file or, for the tests of this checker, a module's source text."""
    modules = MODULES if modules is None else modules
    tree = ast.parse(_source(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("shuffle_lib"):
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                yield (sub if sub in modules else node.module), alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom) and node.level:
            raise AssertionError(f"{path}: relative import at line {node.lineno}; use shuffle_lib.<layer>... paths")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("shuffle_lib"):
                    yield alias.name, None, node.lineno
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            arg = node.args[0]
            if name in IMPORTERS and isinstance(arg, ast.Constant) and isinstance(arg.value, str) \
                    and arg.value.startswith("shuffle_lib"):
                yield arg.value, None, node.lineno


def _private_uses(path, modules=None):
    """(module, private name, line) for each ``_name`` (not a dunder) reached across modules: imported
    from another shuffle_lib module, or read as an attribute of a name bound to one
    (``from shuffle_lib.core import grid as F`` ... ``F._dot``)."""
    modules = MODULES if modules is None else modules
    tree = ast.parse(_source(path))
    bound = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("shuffle_lib"):
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                if sub in modules:
                    bound[alias.asname or alias.name] = sub
                elif _private(alias.name):
                    yield node.module, alias.name, node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("shuffle_lib"):
                    bound[alias.asname or "shuffle_lib"] = alias.name if alias.asname else "shuffle_lib"
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            head, *rest = _dotted(node.value).split(".")
            if head in bound:
                target = ".".join([bound[head], *rest])
                if target in modules or target == "shuffle_lib":
                    yield target, node.attr, node.lineno


def _dotted(node) -> str:
    """``a.b.c`` for a chain of attributes on a name, "" for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([node.id, *reversed(parts)]) if isinstance(node, ast.Name) else ""


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


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
    bad = [f"{m} uses {name} of {t} (line {line})"
           for m, p in MODULES.items() for t, name, line in _private_uses(p) if t != m]
    assert not bad, "\n".join(bad)


def test_the_core_names_no_mechanism():
    """Not even in a string: the core loads nothing of the layers above it."""
    bad = [f"{m}: {line.strip()}" for m, p in MODULES.items() if _layer(m) == 0
           for line in p.read_text().splitlines()
           if any(f"shuffle_lib.{layer}" in line for layer in ("mechanisms", "analyses", "cli", "interop"))]
    assert not bad, "\n".join(bad)


VIOLATING = {   # a synthetic core module: one violation of each kind the checks must see
    "by_string": 'import importlib\nimportlib.import_module("shuffle_lib.mechanisms")\n',
    "dunder_import": '__import__("shuffle_lib.mechanisms.rr")\n',
    "from_private": "from shuffle_lib.core.grid import _dot\n",
    "attribute": "from shuffle_lib.core import grid as F\nx = F._dot(1, 2)\n",
    "dotted_attribute": "import shuffle_lib.core.grid\nshuffle_lib.core.grid._dot(1, 2)\n",
}


@pytest.mark.parametrize("kind", sorted(VIOLATING))
def test_the_checks_see_a_violating_module(kind):
    """The checks are not vacuous: each synthetic violation is found (a core module that loads a
    mechanism by name, or a module that reaches another's private name)."""
    src = VIOLATING[kind]
    upward = [t for t, _, _ in _imports(src) if _layer(t) > 0]
    private = list(_private_uses(src))
    assert (upward if kind in ("by_string", "dunder_import") else private), kind
    clean = "from shuffle_lib.core import grid as F\nimport importlib\nx = F.dot(1, 2)\n" \
            "importlib.import_module('numpy')\n"
    assert not list(_private_uses(clean)) and all(_layer(t) == 0 for t, _, _ in _imports(clean))


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
