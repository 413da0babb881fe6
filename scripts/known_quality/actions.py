"""The tool calls that reach a hidden goal.

A world-state goal names rows, not calls: the calls that produce those rows are read off
the tool family of the table (``add_contact`` adds a CONTACT row, ``send_message_with_phone_number``
a MESSAGING row, a SETTING column has its ``set_<column>`` tool, ...). Updates pass only the
fields that differ from the row as it is at that point of the script, as a careful agent would.

A traced call whose hidden arguments leave a required parameter open gets it from the data
flow: ``datetime_info_to_timestamp`` is given the date and time of the timestamp a later goal
stores (a reminder's time). ToolSandbox's search tools need at least one criterion; when the
hidden trace names none, the search uses a value a later goal needs and the conversation or
an earlier result already holds (a person's id found in a message), and otherwise lists the
whole table (``BROAD_SEARCHES``).
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import Any

from dynsteer_hook.toolsandbox import _quiet  # noqa: F401 - must precede the tool_sandbox imports

from tool_sandbox.common.execution_context import DatabaseNamespace

from .hidden import StateGoal
from .world import World, parameters, required

ToolCall = tuple[str, dict[str, Any]]

SETTING_TOOLS = {
    "cellular": "set_cellular_service_status",
    "wifi": "set_wifi_status",
    "location_service": "set_location_service_status",
    "low_battery_mode": "set_low_battery_mode_status",
}

# (table, kind) -> (tool, key column, {column: parameter}) for the row-level tools.
ROW_TOOLS: dict[tuple[str, str], tuple[str, str | None, dict[str, str]]] = {
    ("CONTACT", "addition"): ("add_contact", None, {"name": "name", "phone_number": "phone_number", "relationship": "relationship", "is_self": "is_self"}),
    ("CONTACT", "removal"): ("remove_contact", "person_id", {"person_id": "person_id"}),
    ("CONTACT", "update"): ("modify_contact", "person_id", {"name": "name", "phone_number": "phone_number", "relationship": "relationship", "is_self": "is_self"}),
    ("MESSAGING", "addition"): ("send_message_with_phone_number", None, {"recipient_phone_number": "phone_number", "content": "content"}),
    ("REMINDER", "addition"): ("add_reminder", None, {"content": "content", "reminder_timestamp": "reminder_timestamp", "latitude": "latitude", "longitude": "longitude"}),
    ("REMINDER", "removal"): ("remove_reminder", "reminder_id", {"reminder_id": "reminder_id"}),
    ("REMINDER", "update"): ("modify_reminder", "reminder_id", {"content": "content", "reminder_timestamp": "reminder_timestamp", "latitude": "latitude", "longitude": "longitude"}),
}


def _setting_calls(goal: StateGoal, world: World) -> list[ToolCall] | str:
    if len(goal.rows) != 1:
        return f"a SETTING goal with {len(goal.rows)} rows"
    current = world.rows(DatabaseNamespace.SETTING)[0]
    calls: list[ToolCall] = []
    for column, value in goal.rows[0].items():
        tool = SETTING_TOOLS.get(column)
        if tool is None or not isinstance(value, bool):
            return f"a SETTING goal on {column}={value!r}"
        if current.get(column) != value:  # already so: nothing to do
            calls.append((tool, {"on": value}))
    return calls


def state_calls(goal: StateGoal, world: World) -> list[ToolCall] | str:
    """The calls that make ``goal`` hold from ``world``'s current state, or why there are none."""
    if goal.namespace == "SETTING" and goal.kind == "snapshot":
        return _setting_calls(goal, world)
    spec = ROW_TOOLS.get((goal.namespace, goal.kind))
    if spec is None:
        return f"a {goal.kind} goal on {goal.namespace}"
    tool, key, columns = spec
    current = {r.get(key): r for r in world.rows(DatabaseNamespace(goal.namespace))} if key else {}
    calls: list[ToolCall] = []
    for row in goal.rows:
        unknown = set(row) - set(columns) - ({key} if key else set())
        if unknown:
            return f"a {goal.kind} goal on {goal.namespace} with columns {sorted(unknown)}"
        if key is None:
            calls.append((tool, {columns[c]: v for c, v in row.items() if v is not None}))
            continue
        if row.get(key) not in current:
            return f"a {goal.kind} goal on {goal.namespace} row {row.get(key)!r} that does not exist"
        args: dict[str, Any] = {key: row[key]}
        if goal.kind == "update":
            changed = {columns[c]: v for c, v in row.items() if c != key and current[row[key]].get(c) != v}
            if not changed:
                return f"an update goal on {goal.namespace} row {row[key]!r} that already holds"
            args.update(changed)
        calls.append((tool, args))
    return calls


# Anything created since 1990 (the tools refuse bounds before 1980).
SINCE_1990 = datetime.datetime(1990, 1, 1).timestamp()
# A criterion that lists a whole table, per search tool (one row per tool).
BROAD_SEARCHES: dict[str, dict[str, Any]] = {
    "search_messages": {"creation_timestamp_lowerbound": SINCE_1990},
    "search_reminder": {"creation_timestamp_lowerbound": SINCE_1990},
    "search_contacts": {"is_self": False},
}


def search_criteria(world: World, tool: str, later: Sequence[StateGoal], grounded: str) -> list[dict[str, Any]]:
    """Criteria to try for a search the hidden trace leaves open, most specific first.

    Args:
        world: The scratch world (for the tool's parameters).
        tool: The execution-facing search tool.
        later: Goals still ahead: their rows hold the values the search should find.
        grounded: Text the agent has seen (user messages, earlier results): a value is only
            searched for when it appears there.
    """
    params = set(parameters(world.scenario, tool))
    specific = [
        {column: value}
        for goal in later for row in goal.rows for column, value in row.items()
        if column in params and isinstance(value, str) and len(value) > 3 and value in grounded
    ]
    broad = [BROAD_SEARCHES[tool]] if tool in BROAD_SEARCHES else []
    return [*specific, *broad]


def _timestamp_parts(later: Sequence[StateGoal]) -> dict[str, int] | None:
    for goal in later:
        for row in goal.rows:
            value = row.get("reminder_timestamp")
            if isinstance(value, (int, float)):
                moment = datetime.datetime.fromtimestamp(float(value))
                return {"year": moment.year, "month": moment.month, "day": moment.day,
                        "hour": moment.hour, "minute": moment.minute, "second": moment.second}
    return None


def complete_arguments(world: World, tool: str, arguments: dict[str, Any], later: Sequence[StateGoal]) -> dict[str, Any] | str:
    """``arguments`` with every required parameter of ``tool`` given, or why one cannot be."""
    missing = [p for p in required(world.scenario, tool) if p not in arguments]
    if not missing:
        return arguments
    if tool == "datetime_info_to_timestamp":
        parts = _timestamp_parts(later)
        if parts is not None:
            return {**parts, **arguments}
    return f"the hidden trace of {tool} leaves its required argument(s) {missing} open and no later goal says what they are"
