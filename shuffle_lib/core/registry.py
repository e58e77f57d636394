"""The mechanism registry: each mechanism declared once, as data, and read by everything else.

A :class:`Mechanism` names its parameters (:class:`Param`: type, allowed range, which direction is
more private, help text), its source (paper and equation) and one ``build(**params)`` returning a
:class:`~shuffle_lib.core.types.Model`.  The command line, the evaluation
of brackets (:mod:`shuffle_lib.core.evaluate`), calibration, the Renyi route and the atlas chapter
are generated from these declarations; a mechanism module never parses arguments itself.

The mechanism modules register on import (``register(Mechanism(...))``).  The core knows no
mechanism: the complete registry is read through the mechanism layer's ``names`` and ``get``,
whose import registers every declaration.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from shuffle_lib.core import evaluate, progress
from shuffle_lib.core import validate as v
from shuffle_lib.core.constants import EPS_MAX, MAX_COMPOSITIONS
from shuffle_lib.core.fourier import DEFAULT_ACCURACY
from shuffle_lib.core.renyi import LAM_MAX
from shuffle_lib.core.types import ArrayLike, Bracket, Model

Direction = Literal["up", "down"]
Verb = Literal["delta", "epsilon", "rdp"]


@dataclass(frozen=True)
class Param:
    """One parameter of a mechanism.

    ``kind`` is ``int``, ``float`` or ``str``; ``lo``/``hi`` (with ``lo_open``/``hi_open``) the
    allowed range of a number, ``choices`` that of a string.  ``more_private`` marks a privacy
    setting that ``calibrate`` may solve for: ``"up"`` if larger values are more private (n,
    gamma), ``"down"`` if smaller ones are (eps0).  ``parse`` converts command-line text when
    the value is not a plain number (e.g. bitflip's ``--m worst``).  ``default`` ``None`` means
    required, unless another parameter ``derives`` this one.  ``placeholder`` marks a default that
    means "not given" (``--k 0`` of a randomiser with no k): the help shows no default and the
    parameter line leaves it out.

    ``derives`` and ``convert`` make the parameter an alternative spelling of another: given
    instead of the parameter named ``derives``, ``convert(value, others)`` computes that one from
    it and the other (checked) values, e.g. k-RR's ``--eps0`` for ``--gamma``.  Giving both is an
    error; the build receives the derived parameter only.
    """

    name: str
    kind: type
    help: str
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False
    choices: tuple[str, ...] | None = None
    default: Any = None
    more_private: Direction | None = None
    parse: Callable[[str], Any] | None = None
    placeholder: bool = False
    derives: str | None = None
    convert: Callable[[Any, dict], Any] | None = None

    def __post_init__(self):
        if (self.derives is None) != (self.convert is None):
            raise ValueError(f"parameter {self.name}: derives and convert go together.")

    @property
    def option(self) -> str:
        """The command-line spelling: ``--n-x0`` for ``n_x0``."""
        return "--" + self.name.replace("_", "-")

    def check(self, value: Any) -> Any:
        """The value, validated against the declared range (ValueError naming the option)."""
        if self.choices is not None:
            if value not in self.choices:
                raise ValueError(
                    f"{self.option} must be one of {', '.join(self.choices)}, got {value!r}."
                )
            return value
        lo = -math.inf if self.lo is None else self.lo
        hi = math.inf if self.hi is None else self.hi
        if self.kind is int:
            return v.integer(self.name, value, lo=lo, hi=hi)
        if self.kind is float:
            return v.real(self.name, value, lo, hi, lo_open=self.lo_open, hi_open=self.hi_open)
        return value


@dataclass(frozen=True)
class Mechanism:
    """A mechanism's one declaration.

    ``build(**params) -> Model`` receives every declared parameter (validated) plus, when the
    mechanism asks for them in ``uses``, the run's ``compositions`` and ``accuracy``.  ``rdp``
    (optional) is the mechanism's own certified Renyi method ``rdp(params, orders) -> [Bracket]``;
    without it the generic route divides the PLDs of the build.  ``calibration_range`` (optional)
    narrows the search range of a solved parameter given the fixed ones (e.g. n > n_x0);
    it returns None for a parameter it does not narrow.
    ``example`` holds a small valid setting (used by the contract tests and the atlas).
    """

    name: str
    summary: str
    source: str
    params: tuple[Param, ...]
    build: Callable[..., Model]
    example: dict = field(default_factory=dict)
    uses: tuple[str, ...] = ()
    rdp: Callable[[dict, ArrayLike], list[Bracket]] | None = None
    calibration_range: Callable[[str, dict], tuple[float, float] | None] | None = None

    def param(self, name: str) -> Param:
        """The declared parameter ``name`` (ValueError naming the mechanism if it has none)."""
        for p in self.params:
            if p.name == name:
                return p
        raise ValueError(f"mechanism {self.name} has no parameter --{name.replace('_', '-')}.")

    @property
    def privacy_settings(self) -> tuple[str, ...]:
        """The parameters ``calibrate`` may solve for."""
        return tuple(p.name for p in self.params if p.more_private is not None)

    @property
    def build_params(self) -> tuple[Param, ...]:
        """The parameters the build receives: all but the alternative spellings."""
        return tuple(p for p in self.params if p.derives is None)

    def alternatives(self, name: str) -> tuple[Param, ...]:
        """The parameters that are alternative spellings of ``name``."""
        return tuple(p for p in self.params if p.derives == name)

    def given_alternatives(self, values: dict) -> dict:
        """The alternative spellings among ``values`` that are given (not None), checked."""
        return {p.name: p.check(values[p.name]) for p in self.params
                if p.derives is not None and values.get(p.name) is not None}

    def checked(self, values: dict) -> dict:
        """Every build parameter validated (defaults filled in, alternatives converted), in
        declaration order."""
        unknown = set(values) - {p.name for p in self.params}
        if unknown:
            raise ValueError(f"mechanism {self.name} has no parameter {sorted(unknown)[0]!r}.")
        given = self.given_alternatives(values)
        derived = {}
        for name in given:
            target = self.param(self.param(name).derives or "")
            if values.get(target.name) is not None or target.name in derived:
                raise ValueError(f"give {target.option} or {self.param(name).option}, not both.")
            derived[target.name] = name
        out = {}
        for p in self.build_params:
            if p.name in derived:
                continue
            value = values.get(p.name, p.default)
            if value is None:
                alts = " or ".join(a.option for a in self.alternatives(p.name))
                raise ValueError(f"mechanism {self.name} needs {p.option}"
                                 + (f" (or {alts})." if alts else "."))
            out[p.name] = p.check(value)
        for target_name, name in derived.items():
            alt = self.param(name)
            assert alt.convert is not None     # checked at construction
            out[target_name] = self.param(target_name).check(alt.convert(given[name], out))
        return {p.name: out[p.name] for p in self.build_params}

    def model(self, values: dict, compositions: int = 1,
              accuracy: float = DEFAULT_ACCURACY) -> tuple[dict, Model]:
        """(the parameters as the command line's JSON reports them, the model): the declared
        parameters checked (defaults filled in), then the build, given the run's
        ``compositions`` and ``accuracy`` when the declaration ``uses`` them."""
        compositions = v.integer("compositions", compositions, lo=1, hi=MAX_COMPOSITIONS)
        accuracy = v.real("accuracy", accuracy, 0.0, 1.0, lo_open=True)
        params = self.checked(values)
        extra: dict[str, Any] = {}
        if "compositions" in self.uses:
            extra["compositions"] = compositions
        if "accuracy" in self.uses:
            extra["accuracy"] = accuracy
        model = self.build(**params, **extra)
        return dict(params, **self.given_alternatives(values), **model.info), model

    def evaluate(self, verb: Verb, targets: ArrayLike, values: dict, compositions: int = 1,
                 accuracy: float = DEFAULT_ACCURACY) -> tuple[dict, list[Bracket]]:
        """(parameters, certified brackets) of ``compositions`` rounds, one per target: delta at
        eps (``verb="delta"``), eps at delta (``"epsilon"``), or the Renyi divergence at orders
        (``"rdp"``, max over both directions; the mechanism's own method when it declares one,
        else the divergence of the build's PLDs).  Renyi divergence adds up over independent
        rounds, so ``rdp`` of K rounds is K times one round's.  delta and eps brackets carry
        ``accuracy_met`` and ``limit`` (:func:`shuffle_lib.core.accuracy.annotate`); an eps bracket
        that misses its accuracy within what the grid explains is evaluated again finer, the
        model built again at that accuracy when the declaration ``uses`` it
        (:func:`shuffle_lib.core.evaluate.refined_epsilon`).  The one path from a declaration to
        numbers: the command line and ``mechanism_brackets`` both take it."""
        v.choice("verb", verb, ("delta", "epsilon", "rdp"))
        compositions = v.integer("compositions", compositions, lo=1, hi=MAX_COMPOSITIONS)
        accuracy = v.real("accuracy", accuracy, 0.0, 1.0, lo_open=True)
        if verb == "rdp":
            orders = v.reals("order", targets, lo=1.0, hi=LAM_MAX, lo_open=True)
            if self.rdp is not None:
                params = self.checked(values)
                brs = self.rdp(params, orders)
            else:
                params, model = self.model(values)
                brs = evaluate.rdp_brackets(model, orders)
            return params, [Bracket(compositions * b.lower, compositions * b.upper) for b in brs]
        if verb == "delta":
            targets = v.reals("eps", targets, lo=0.0, hi=EPS_MAX)
        params, model = self.model(values, compositions, accuracy)
        goal: Literal["delta", "epsilon"] = "delta" if verb == "delta" else "epsilon"
        rebuild = ((lambda a: self.model(values, compositions, a)[1])
                   if "accuracy" in self.uses else None)
        with progress.task(f"{verb} {self.name}"):
            return params, evaluate.answer([(model, rebuild)], goal, targets, compositions,
                                           accuracy)


REGISTRY: dict[str, Mechanism] = {}


def register(mech: Mechanism) -> Mechanism:
    """Add a declaration (once per name)."""
    if mech.name in REGISTRY and REGISTRY[mech.name] is not mech:
        raise ValueError(f"mechanism {mech.name!r} is declared twice.")
    REGISTRY[mech.name] = mech
    return mech
