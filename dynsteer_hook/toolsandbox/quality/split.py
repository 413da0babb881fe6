"""A development / held-out partition of ToolSandbox scenarios that nobody can tune to.

Every scenario belongs to a base scenario (the variant without distraction tools); its
augmented variants (distraction tools, scrambled names, descriptions or argument types) are
the same task in other clothes, so a base and all its variants always fall on the same side.
The side is a fixed function of the base name alone: the first eight bytes of
SHA-256(``SALT`` + base) read as an integer, modulo 1000, below ``HELD_OUT_PER_MILLE`` is
held out. Rules of the blueprint generator are written by looking at the development part
only; the held-out part measures them. Pure: no ToolSandbox import, no file I/O.
"""

from __future__ import annotations

import hashlib
from typing import Literal

Split = Literal["dev", "held-out"]
SPLITS: tuple[str, ...] = ("dev", "held-out", "all")

SALT = "dynsteer-split-v1:"
"""Fixed once; changing it re-deals the scenarios and voids every held-out figure measured before."""

HELD_OUT_PER_MILLE = 300
"""About 30% of the base scenarios are held out."""

VARIANT_SUFFIXES = (
    "_3_distraction_tools_tool_description_scrambled",
    "_3_distraction_tools_arg_description_scrambled",
    "_3_distraction_tools_tool_name_scrambled",
    "_3_distraction_tools_arg_type_scrambled",
    "_10_distraction_tools",
    "_3_distraction_tools",
    "_all_tools",
)
"""Name suffixes of the seven augmented variants of a base scenario, longest first."""


def base_scenario_name(name: str) -> str:
    """The name of the variant without distraction tools that ``name`` was derived from."""
    for suffix in VARIANT_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def split_of(name: str) -> Split:
    """``"held-out"`` or ``"dev"``: the side of the scenario's base, by a fixed hash of the base name."""
    digest = hashlib.sha256((SALT + base_scenario_name(name)).encode("utf-8")).digest()
    return "held-out" if int.from_bytes(digest[:8], "big") % 1000 < HELD_OUT_PER_MILLE else "dev"


def in_split(name: str, split: str) -> bool:
    """Whether scenario ``name`` belongs to ``split`` (``dev``, ``held-out`` or ``all``).

    Raises:
        ValueError: ``split`` is none of those.
    """
    if split == "all":
        return True
    if split not in SPLITS:
        raise ValueError(f"split {split!r} is not one of {', '.join(SPLITS)}")
    return split_of(name) == split
