"""What an agent-facing tool does, read from its public schema alone (no LLM).

A ``ToolProfile`` says which action a tool performs (read, toggle, create, update,
delete, send, compute), on which subject, what kind of value fills each argument, and
whether it depends on device state (connectivity, location service). Every rule reads
words from four places, any of which may be missing: the tool name (ignored when it is a
scrambled ``module_N`` name), the description (removed in some variants), the argument
names (always present) and argument descriptions, plus the public database headers: a
tool whose arguments are the columns of a local table works on that table. So a tool is
still understood when its name, its description or its argument types are hidden.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dynsteer_hook.model.blueprint import ToolSpec

_VERBS: dict[str, str] = {}
for _verb_action, _verb_words in {
    "read": "search find get request requests query lookup look list retrieve fetch check read show",
    "toggle": "set enable disable toggle turn switch",
    "create": "add create insert new register",
    "update": "modify update edit change rename",
    "delete": "remove delete erase drop",
    "send": "send post notify email",
    "compute": "convert converts conversion calculate calculates compute computes shift shifts diff difference transform",
}.items():
    for _w in _verb_words.split():
        _VERBS[_w] = _verb_action

_ENTITY_OF_TABLE = {"CONTACT": "contact", "MESSAGING": "message", "REMINDER": "reminder"}
_TABLE_WORDS = {"CONTACT": {"contact", "contacts", "person"}, "MESSAGING": {"message", "messages", "messaging"}, "REMINDER": {"reminder", "reminders"}}
_ID_ENTITY = {"person": "contact", "contact": "contact", "reminder": "reminder", "message": "message"}
_DATE_PARTS = {"year", "month", "day", "hour", "minute", "second"}
_EXTERNAL = frozenset({"holiday", "address", "place", "weather", "stock", "currency"})
_OPAQUE = re.compile(r"^[A-Za-z]+(?:_[A-Za-z]+)*_\d+$")
_SPLIT = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


def words(text: str) -> list[str]:
    """Lower-case word tokens of a name or sentence (snake_case and camelCase split)."""
    return [w.lower() for w in _SPLIT.findall(text or "")]


@dataclass(frozen=True, slots=True)
class ArgInfo:
    """One argument and the kind of value that fills it."""

    name: str
    required: bool
    kind: str  # id:<entity> | phone | coord | timestamp | date_part | amount | switch | text
    json_type: str | None


@dataclass(frozen=True, slots=True)
class ToolProfile:
    """The inferred semantics of one tool."""

    name: str
    action: str
    subject: str
    args: tuple[ArgInfo, ...]
    words: frozenset[str]
    opaque_name: bool = False

    @property
    def required(self) -> tuple[ArgInfo, ...]:
        """Arguments the schema requires."""
        return tuple(a for a in self.args if a.required)

    def arg(self, name: str) -> ArgInfo | None:
        """The argument called ``name``, if any."""
        return next((a for a in self.args if a.name == name), None)

    def args_of(self, kind: str) -> tuple[ArgInfo, ...]:
        """Arguments of one kind, required first."""
        return tuple(sorted((a for a in self.args if a.kind == kind), key=lambda a: (not a.required, a.name)))

    @property
    def external(self) -> bool:
        """Whether the tool looks up world knowledge through an online service (needs connectivity)."""
        return self.subject in _EXTERNAL

    @property
    def mutates(self) -> bool:
        """Whether a call changes the user's data or device state."""
        return self.action in ("toggle", "create", "update", "delete", "send")


def _description(spec: ToolSpec) -> str:
    text = spec.description or ""
    for marker in ("\nArgs:", "Args:", "\nReturns:", "Returns:"):
        text = text.split(marker)[0]
    return text


def _properties(spec: ToolSpec) -> dict[str, Any]:
    props = spec.parameters.get("properties", {})
    return dict(props) if isinstance(props, Mapping) else {}


def _arg_kind(name: str, prop: Mapping[str, Any], table_entity: str | None, toggle: bool) -> str:
    parts = words(name)
    if name.endswith("_id") or name == "id":
        stem = next((p for p in reversed(parts[:-1]) if p in _ID_ENTITY), None)
        return f"id:{_ID_ENTITY[stem] if stem else (table_entity or 'thing')}"
    if "phone" in parts:
        return "phone"
    if {"latitude", "longitude", "lat", "lon", "lng"} & set(parts):
        return "coord"
    if "timestamp" in parts:
        return "timestamp"
    if name in _DATE_PARTS:
        return "date_part"
    if name in ("amount", "seconds", "value", "quantity"):
        return "amount"
    if toggle and (name in ("on", "enabled", "enable", "status", "state") or prop.get("type") == "boolean"):
        return "switch"
    return "text"


def _action(name_words: list[str], desc_words: list[str], props: dict[str, Any], required: set[str], table: str | None) -> str:
    if name_words and name_words[0] in _VERBS:
        return _VERBS[name_words[0]]
    if "to" in name_words[1:-1] or {"conversion", "diff"} & set(name_words):
        return "compute"
    for w in desc_words[:8]:
        if w in _VERBS:
            return _VERBS[w]
    for w in name_words:
        if w in _VERBS:
            return _VERBS[w]
    return _action_from_arguments(props, required, table)


def _action_from_arguments(props: dict[str, Any], required: set[str], table: str | None) -> str:
    """The action implied by the argument structure alone (name and description both hidden)."""
    if not props:
        return "read"
    booleans = [a for a, p in props.items() if isinstance(p, Mapping) and p.get("type") == "boolean"]
    if set(props) == {"on"} or (len(props) == 1 and booleans):
        return "toggle"
    if not required or any(a.endswith(("_lowerbound", "_upperbound")) for a in props):
        return "read"
    ids = {a for a in props if a.endswith("_id")}
    if table and required <= ids:
        return "delete" if len(props) == 1 else "update"
    if table and not (required & ids):
        return "create"
    return "compute"


def _table(arg_names: set[str], text: set[str], databases: Mapping[str, Mapping[str, str]]) -> str | None:
    best: tuple[int, str] | None = None
    for table, entity_words in _TABLE_WORDS.items():
        columns = set(databases.get(table, {}))
        if not columns:
            continue
        stripped = {re.sub(r"_(lower|upper)bound$", "", a) for a in arg_names}
        overlap = len(stripped & columns)
        ids = any(a.endswith("_id") and a in columns for a in arg_names)
        named = bool(entity_words & text)
        if not (named or ids or overlap >= 3):
            continue
        score = overlap + (3 if named else 0) + (2 if ids else 0)
        if best is None or score > best[0]:
            best = (score, table)
    return best[1] if best else None


def _setting(text: set[str]) -> str | None:
    if "battery" in text:
        return "low_battery_mode"
    if "wifi" in text:
        return "wifi"
    if "cellular" in text:
        return "cellular"
    if "location" in text and "service" in text:
        return "location_service"
    return None


def _subject(action: str, text: set[str], props: dict[str, Any], required: set[str], databases: Mapping[str, Mapping[str, str]],
             table: str | None) -> str:
    setting = _setting(text)
    if setting and action in ("toggle", "read") and len(props) <= 1:
        return setting if action == "toggle" else f"status:{setting}"
    if table:
        return _ENTITY_OF_TABLE[table]
    if action == "read" and "current" in text and not required:
        if "timestamp" in text or "time" in text:
            return "now"
        if {"location", "latitude", "longitude"} & text:
            return "here"
    rules: list[tuple[bool, str]] = [
        ("holiday" in text, "holiday"),
        ("weather" in text or "temperature" in text or "forecast" in text, "weather"),
        ("stock" in text, "stock"),
        ("currency" in text, "currency"),
        ("distance" in text, "distance"),
        ("address" in text and bool({"latitude", "longitude"} & required), "address"),
        (bool({"location", "query", "place"} & required) and bool({"latitude", "longitude"} & set(props)), "place"),
        (action in ("read", "compute") and bool(required) and required <= {"latitude", "longitude", "lat", "lon", "lng"}, "address"),
        (("difference" in text or "diff" in text) and "timestamp" in text, "time_diff"),
        (("shift" in text or "shifts" in text) and "timestamp" in text, "shift"),
        ({"year", "month", "day"} <= required, "to_timestamp"),
        ("timestamp" in required and ("datetime" in text or "date" in text), "to_datetime"),
        ("unit" in text or {"from_unit", "to_unit"} <= set(props), "unit"),
        ("seconds" in text and "hours" in text and "timestamp" not in text, "hms"),
        # Argument structure alone, for tools whose name and description are both hidden.
        (len([a for a in required if "timestamp" in a]) >= 2, "time_diff"),
        (any("timestamp" in a for a in required) and bool({"weeks", "days", "hours", "minutes"} & set(props)), "shift"),
        (len(required) == 1 and "timestamp" in next(iter(required)), "to_datetime"),
        (len([a for a in props if {"latitude", "longitude", "lat", "lon"} & set(words(a))]) >= 4, "distance"),
        (any("phone" in a for a in required) and bool({"content", "message", "text", "body"} & required), "message"),
        (set(props) == {"seconds"}, "hms"),
    ]
    return next((subject for hit, subject in rules if hit), "unknown")


def profile_tool(spec: ToolSpec, databases: Mapping[str, Mapping[str, str]]) -> ToolProfile:
    """Infer what one tool does from its public schema and the database headers."""
    opaque = bool(_OPAQUE.match(spec.name)) and words(spec.name)[0] not in _VERBS
    name_words = [] if opaque else words(spec.name)
    # A scrambled ``module_N`` name still hints at its domain (messaging_1), never at its action.
    domain_words = [w for w in words(spec.name) if not w.isdigit()] if opaque else []
    desc_words = words(_description(spec))
    props = _properties(spec)
    required = {str(r) for r in spec.parameters.get("required", []) if isinstance(r, str)}
    arg_words = [w for a in props for w in words(a)]
    argdesc_words = [w for p in props.values() if isinstance(p, Mapping) for w in words(str(p.get("description", "")))]
    text = set(name_words) | set(desc_words) | set(arg_words) | set(argdesc_words)
    subject_words = set(name_words) | set(desc_words) | set(arg_words)
    table = _table(set(props), subject_words | set(domain_words), databases)
    action = _action(name_words, desc_words, props, required, table)
    subject = _subject(action, subject_words, props, required, databases, table)
    if action == "toggle" and not subject.startswith(("wifi", "cellular", "location_service", "low_battery_mode")):
        action = "update"
    if subject == "message" and table is None and action in ("compute", "create"):
        action = "send"
    entity = subject if subject in ("contact", "message", "reminder") else None
    args = tuple(
        ArgInfo(a, a in required, _arg_kind(a, p if isinstance(p, Mapping) else {}, entity, action == "toggle"),
                p.get("type") if isinstance(p, Mapping) and isinstance(p.get("type"), str) else None)
        for a, p in props.items()
    )
    return ToolProfile(spec.name, action, subject, args, frozenset(text), opaque)


def profile_tools(specs: tuple[ToolSpec, ...], databases: Mapping[str, Mapping[str, str]]) -> dict[str, ToolProfile]:
    """Profiles of every tool, by agent-facing name."""
    return {s.name: profile_tool(s, databases) for s in specs}
