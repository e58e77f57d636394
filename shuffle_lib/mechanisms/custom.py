"""Any pair of PMFs the user supplies: ``custom --pmfs FILE`` with FILE a JSON object
``{"p": [...], "q": [...]}`` on one ordered support.  The exact PLDs of the pair, both
directions."""

from __future__ import annotations

from shuffle_lib.core import validate as v
from shuffle_lib.core.registry import Mechanism, Param, register
from shuffle_lib.core.types import Model


def load_pmfs(path: str) -> tuple[list, list]:
    """(p, q) from a JSON file ``{"p": [...], "q": [...]}`` (ValueError naming ``--pmfs``
    otherwise)."""
    data = v.json_file("--pmfs", path)
    if not isinstance(data, dict) or "p" not in data or "q" not in data:
        raise ValueError(f'--pmfs: {path!r} must hold an object {{"p": [...], "q": [...]}}.')
    return data["p"], data["q"]


def custom_model(pmfs: str) -> Model:
    """The exact pair read from the file ``pmfs``."""
    p, q = load_pmfs(pmfs)
    try:
        return Model.from_pmfs(p, q)
    except ValueError as e:
        raise ValueError(f"--pmfs: {pmfs!r}: {e}") from None


register(
    Mechanism(
        name="custom",
        summary="two PMFs from a JSON file (--pmfs)",
        source="any pair (Koskela, Heikkilä & Honkela 2021 Def. 4: the PLD of a pair)",
        params=(
            Param(
                "pmfs",
                str,
                'JSON file {"p": [...], "q": [...]} on one ordered support (numbers only; '
                f"at most {v.JSON_MAX_BYTES / 1e6:g} MB)",
            ),
        ),
        build=custom_model,
    )
)
