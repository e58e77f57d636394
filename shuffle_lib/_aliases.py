"""The module names of earlier versions (``shuffle_lib.krr``, ``shuffle_lib.clone_pld``, ...), imported
on first use.

``import shuffle_lib.krr`` and ``from shuffle_lib import krr`` give the module that now holds the old
module's contents (here :mod:`shuffle_lib.mechanisms.krr`): the same object under two names, so
state such as caches and the registry is shared.  :class:`AliasFinder` answers ``import
shuffle_lib.<old>``; the package's ``__getattr__`` answers ``shuffle_lib.<old>`` by importing it.
Nothing is imported until a name is asked for, which keeps ``import shuffle_lib`` free of numpy
and scipy.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
import types

PACKAGE = "shuffle_lib"

ALIASES = {
    # core
    "pld": "shuffle_lib.core.pld", "fourier": "shuffle_lib.core.fourier", "grid": "shuffle_lib.core.grid",
    "calibrate": "shuffle_lib.core.calibrate", "tradeoff": "shuffle_lib.core.tradeoff",
    "evaluate": "shuffle_lib.core.evaluate", "extreme": "shuffle_lib.core.extreme",
    "registry": "shuffle_lib.core.registry",
    # bounds
    "bounds_literature": "shuffle_lib.bounds.closed_forms", "renyi_bounds": "shuffle_lib.bounds.renyi",
    # mechanisms
    "rr": "shuffle_lib.mechanisms.rr", "krr": "shuffle_lib.mechanisms.krr",
    "krr_checks": "shuffle_lib.mechanisms.krr.checks", "krr_large": "shuffle_lib.mechanisms.krr.large",
    "clones": "shuffle_lib.mechanisms.clones", "clone_pld": "shuffle_lib.mechanisms.clones.pld",
    "clone_compose": "shuffle_lib.mechanisms.clones.compose", "fmt21": "shuffle_lib.mechanisms.clones.fmt21",
    "subsample": "shuffle_lib.mechanisms.clones.subsample", "histogram": "shuffle_lib.mechanisms.histogram",
    "bitflip": "shuffle_lib.mechanisms.mixnet.bitflip", "fake_records": "shuffle_lib.mechanisms.mixnet.fake_records",
    "fake_flip": "shuffle_lib.mechanisms.mixnet.fake_flip",
    "gaussian_shuffle": "shuffle_lib.mechanisms.gaussian_shuffle",
    # analyses
    "sgd": "shuffle_lib.analyses.sgd", "utility": "shuffle_lib.analyses.utility",
}
"""Old name -> the module that holds it now."""

GATHERED = {"renyi": ("shuffle_lib.core.renyi", "shuffle_lib.bounds.renyi", "shuffle_lib.mechanisms.clones.renyi")}
"""Old modules that were split: one namespace holding the public names of the parts (first part's docstring)."""


def gather(name: str, parts: tuple[str, ...]) -> types.ModuleType:
    """One namespace ``shuffle_lib.<name>`` holding the public names of the modules ``parts``."""
    modules = [importlib.import_module(p) for p in parts]
    ns = types.ModuleType(f"{PACKAGE}.{name}", modules[0].__doc__)
    for mod in modules:
        ns.__dict__.update({k: val for k, val in vars(mod).items() if not k.startswith("_")})
    return ns


class AliasFinder:
    """``import shuffle_lib.<old>``: the module that now holds it, registered under the old name too.

    A meta path finder and its own loader (the protocols of ``importlib.abc.MetaPathFinder`` and
    ``importlib.abc.Loader``, without importing ``importlib.abc``: it costs ~30 ms, importlib.resources).
    """

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec | None:
        """A spec for the old names only; every other import is left to the other finders."""
        package, _, name = fullname.rpartition(".")
        if package != PACKAGE or (name not in ALIASES and name not in GATHERED):
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        """The new module itself (imported now), or the gathered namespace of a split one."""
        name = spec.name.rpartition(".")[2]
        if name in GATHERED:
            return gather(name, GATHERED[name])
        module = importlib.import_module(ALIASES[name])
        spec.loader_state = module.__spec__       # the import system overwrites __spec__; exec_module restores it
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        """Nothing to run (the module is already imported); give it back its own ``__spec__``."""
        own = module.__spec__.loader_state
        if own is not None:
            module.__spec__ = own


def install() -> None:
    """Put one :class:`AliasFinder` first on ``sys.meta_path`` (again on a reload: the old one is replaced)."""
    sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != "AliasFinder"
                        or type(f).__module__ != __name__]
    sys.meta_path.insert(0, AliasFinder())
