"""A tool catalog: the agent-facing JSON schemas, and argument conformity checks against them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from dynsteer_hook.model.blueprint import ToolSpec
from dynsteer_hook.model.json_types import is_json_type


@dataclass(frozen=True, slots=True)
class ArgIssue:
    """One way a call does not fit its tool's schema."""

    rule: str  # rejected | unknown-tool | unknown-arg | missing-arg | type | unparseable
    arg: str | None
    message: str


def type_fits(schema: Mapping[str, Any], value: Any) -> bool:
    """Whether ``value`` fits a JSON-schema property (types, unions, enums); unknown shapes fit."""
    if value is None:
        return True  # optional arguments are routinely passed as null
    for key in ("anyOf", "oneOf"):
        if key in schema and isinstance(schema[key], list):
            return any(type_fits(sub, value) for sub in schema[key] if isinstance(sub, Mapping))
    if "enum" in schema and isinstance(schema["enum"], list) and value not in schema["enum"]:
        return False
    declared = schema.get("type")
    if declared is None:
        return True
    names = declared if isinstance(declared, list) else [declared]
    # A type name JSON Schema does not know says nothing, so the value fits.
    return any(is_json_type(value, name) is not False for name in names)


class ToolCatalog:
    """Tool name -> schema, with argument checks. Immutable after construction."""

    __slots__ = ("_specs",)

    def __init__(self, specs: Iterable[ToolSpec]) -> None:
        self._specs: dict[str, ToolSpec] = {s.name: s for s in specs}

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def __len__(self) -> int:
        return len(self._specs)

    def names(self) -> list[str]:
        """Tool names in catalog order."""
        return list(self._specs)

    def specs(self) -> list[ToolSpec]:
        """Tool specs in catalog order."""
        return list(self._specs.values())

    def spec(self, name: str) -> ToolSpec | None:
        """The tool's spec, or ``None``."""
        return self._specs.get(name)

    def properties(self, name: str) -> dict[str, Any]:
        """Argument name -> property schema for a tool (empty when unknown)."""
        spec = self._specs.get(name)
        if spec is None:
            return {}
        props = spec.parameters.get("properties", {})
        return dict(props) if isinstance(props, Mapping) else {}

    def required(self, name: str) -> list[str]:
        """Required argument names of a tool (empty when unknown)."""
        spec = self._specs.get(name)
        if spec is None:
            return []
        req = spec.parameters.get("required", [])
        return [str(r) for r in req] if isinstance(req, list) else []

    def check_arguments(self, tool: str, arguments: Mapping[str, Any] | None) -> list[ArgIssue]:
        """Schema conformity problems of a call; empty when it fits."""
        if tool not in self._specs:
            return [ArgIssue("unknown-tool", None, f"tool {tool!r} is not in the catalog")]
        if arguments is None:
            return [ArgIssue("unparseable", None, f"arguments of {tool!r} could not be parsed as a JSON object")]
        props = self.properties(tool)
        issues: list[ArgIssue] = []
        for arg, value in arguments.items():
            if arg not in props:
                issues.append(ArgIssue("unknown-arg", arg, f"{tool!r} has no argument {arg!r}"))
            elif not type_fits(props[arg], value):
                issues.append(
                    ArgIssue("type", arg, f"argument {arg!r} of {tool!r} should be {props[arg].get('type')}, got {type(value).__name__}")
                )
        for arg in self.required(tool):
            if arg not in arguments:
                issues.append(ArgIssue("missing-arg", arg, f"required argument {arg!r} of {tool!r} is missing"))
        return issues
