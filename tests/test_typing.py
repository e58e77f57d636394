"""Every public function of the package is fully annotated and documented.

For each module under ``shuffle_lib`` (the package, ``core``, ``bounds``, ``mechanisms`` with its
subpackages, ``analyses``, ``cli``, ``interop``), every public function *defined* there (not merely
re-exported) and every public method of a public class defined there must carry an annotation
on each parameter (``self``/``cls``, ``*args`` and ``**kwargs`` aside) and on its return, and a
non-empty docstring (which cites its source: seed and equation, or paper and theorem).
"""

import importlib
import inspect
import pkgutil

import pytest

import shuffle_lib


def _modules():
    mods = [shuffle_lib]
    for info in pkgutil.walk_packages(shuffle_lib.__path__, "shuffle_lib."):
        if info.name.endswith("__main__"):          # runs the command line on import
            continue
        mods.append(importlib.import_module(info.name))
    return mods


def _public_functions(module):
    """(qualified name, function) for the public functions and methods defined in ``module``."""
    for name, obj in vars(module).items():
        if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
            continue
        fn = inspect.unwrap(obj) if callable(obj) else obj      # lru_cache and other wrappers
        if inspect.isfunction(fn):
            yield f"{module.__name__}.{name}", fn
        elif inspect.isclass(obj):
            for attr, member in vars(obj).items():
                if attr.startswith("_"):
                    continue
                if isinstance(member, (staticmethod, classmethod)):
                    member = member.__func__
                elif isinstance(member, property):
                    member = member.fget
                # a lambda (e.g. ``property(lambda self: ...)``) has no syntax for annotations
                if inspect.isfunction(member) and member.__name__ != "<lambda>":
                    yield f"{module.__name__}.{name}.{attr}", member


def missing(fn) -> list[str]:
    """What ``fn`` lacks: unannotated parameters, the return annotation, the docstring."""
    sig = inspect.signature(fn)
    out = [f"parameter {p.name!r}" for p in sig.parameters.values()
           if p.name not in ("self", "cls") and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
           and p.annotation is inspect.Parameter.empty]
    if sig.return_annotation is inspect.Signature.empty:
        out.append("return annotation")
    if not (fn.__doc__ or "").strip():
        out.append("docstring")
    return out


FUNCTIONS = [item for mod in _modules() for item in _public_functions(mod)]


def test_the_walk_finds_the_package():
    names = {q for q, _ in FUNCTIONS}
    assert len(FUNCTIONS) > 200
    for q in ("shuffle_lib.core.pld.hockey_stick", "shuffle_lib.mechanisms.krr.base.strong_pld",   # lru_cache
              "shuffle_lib.mechanisms.clones.pairs.bracket_at", "shuffle_lib.cli.main",
              "shuffle_lib.interop.to_dp_accounting", "shuffle_lib.core.registry.Mechanism.checked",
              "shuffle_lib.analyses.sgd.alg1_rdp", "shuffle_lib.bounds.renyi.girgis_upper"):
        assert q in names, q
    # re-exports are checked where they are defined, once
    assert "shuffle_lib.mechanisms.krr.check_params" not in names


def test_every_public_function_is_typed_and_documented():
    bad = [f"{q}: {', '.join(m)}" for q, fn in FUNCTIONS if (m := missing(fn))]
    assert not bad, "\n".join(bad)


def test_the_check_can_fail():
    """The checker is not vacuous: an untyped, undocumented function fails it on every count."""
    def untyped(a, b: int = 1, *args, **kwargs):
        return a

    def typed(a: float, *args, **kwargs) -> float:
        """Documented."""
        return a

    assert missing(untyped) == ["parameter 'a'", "return annotation", "docstring"]
    assert missing(typed) == []
    with pytest.raises(AssertionError, match="untyped"):
        bad = [f"{fn.__name__}: {', '.join(m)}" for fn in (typed, untyped) if (m := missing(fn))]
        assert not bad, "\n".join(bad)
