"""The JSON Schema type names and the Python values each admits: one table for the tool catalog's
schema checks and the ``type`` predicate of blueprints."""

from __future__ import annotations

from typing import Any

JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "number": (int, float),
    "integer": (int,),
    "boolean": (bool,),
    "array": (list, tuple),
    "object": (dict,),
    "null": (type(None),),
}


def is_json_type(value: Any, name: object) -> bool | None:
    """Whether ``value`` is of the JSON Schema type ``name`` (a boolean is no number); None when ``name`` is no type name."""
    kinds = JSON_TYPES.get(str(name))
    if kinds is None:
        return None
    if isinstance(value, bool) and name in ("number", "integer"):
        return False
    return isinstance(value, kinds)
