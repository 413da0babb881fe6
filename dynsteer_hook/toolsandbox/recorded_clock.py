"""The clock of a recording: ToolSandbox's scenarios built and played at the time a rollout was recorded.

ToolSandbox dates what a scenario holds from the wall clock when it is built (messages of "three days
ago", a reminder "in an hour") and what its evaluation expects (a reminder for "tomorrow 5PM", the days
until Christmas), and its tools read the clock while the rollout plays. A recording made on another
day only re-executes to the same similarity on the same clock. So ``at_recorded_time`` moves this
process's clock (``time-machine``: ``time.time``, ``datetime.now`` and the local time zone, in
process) to the recording's start, the scenario is built from ToolSandbox's own builders under it
(``scenario_at``), and the clock then moves on as the recording did, move by move.

Building all 1,032 scenarios takes about 5 s; a rerun builds only the family of builders that holds the
base scenario (0.3 to 0.6 s) and takes the variant's tools, augmentations and categories (none of
which depend on the clock) from the scenarios ``load_scenarios`` gives, which is exactly what
ToolSandbox's ``named_scenarios`` does to the base scenario (checked against it for every scenario by
the tests).
"""

from __future__ import annotations

import ast
import contextlib
import copy
import datetime as dt
import math
import statistics
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from dynsteer_hook.model.errors import ScenarioError
from dynsteer_hook.toolsandbox import _quiet  # noqa: F401 - must precede the tool_sandbox imports
from dynsteer_hook.toolsandbox.scenarios import load_scenarios

from tool_sandbox.common.scenario import Scenario

__all__ = ["RecordedClock", "at_recorded_time", "base_name", "recorded_build_time", "scenario_at", "starting_row_offsets"]

_VARIANTS = (
    "_3_distraction_tools_tool_description_scrambled",
    "_3_distraction_tools_arg_description_scrambled",
    "_3_distraction_tools_tool_name_scrambled",
    "_3_distraction_tools_arg_type_scrambled",
    "_3_distraction_tools",
    "_10_distraction_tools",
    "_all_tools",
)
_FAMILY_OF: dict[str, dict[str, int]] = {}  # backend -> base scenario name -> index of its family builder


def base_name(name: str) -> str:
    """The base scenario a variant augments (the name itself for a base scenario)."""
    for suffix in _VARIANTS:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _families() -> list[Callable[..., dict[str, Scenario]]]:
    from tool_sandbox.scenarios import (
        named_insufficient_information_scenarios,
        named_multiple_tool_call_scenarios,
        named_multiple_user_turn_scenarios,
        named_single_tool_call_scenarios,
    )

    return [named_single_tool_call_scenarios, named_multiple_tool_call_scenarios, named_multiple_user_turn_scenarios,
            named_insufficient_information_scenarios]


def _backend(preferred_tool_backend: str) -> Any:
    from tool_sandbox.common.tool_discovery import ToolBackend

    return ToolBackend[preferred_tool_backend]


def _family_index(base: str, preferred_tool_backend: str) -> int:
    """Which family builder makes ``base`` (found once per process by building them all, at any time)."""
    index = _FAMILY_OF.get(preferred_tool_backend)
    if index is None:
        backend = _backend(preferred_tool_backend)
        index = {}
        for i, family in enumerate(_families()):
            index.update(dict.fromkeys(family(preferred_tool_backend=backend), i))
        _FAMILY_OF[preferred_tool_backend] = index
    if base not in index:
        raise ScenarioError(f"unknown scenario {base!r}; list them with 'dynsteer scenarios'")
    return index[base]


def scenario_at(name: str, preferred_tool_backend: str = "DEFAULT", variant: Scenario | None = None) -> Scenario:
    """The scenario ``name`` built now, on whatever clock this process has (see ``at_recorded_time``).

    ``variant`` is the scenario as ``load_scenarios`` gives it (its tools, augmentations and categories), best
    loaded before the clock is moved, when the scenario cache can serve it.

    Raises:
        ScenarioError: No such scenario.
    """
    if variant is None:
        variant = load_scenarios([name], preferred_tool_backend)[name]
    base = base_name(name)
    family = _families()[_family_index(base, preferred_tool_backend)]
    scenario = copy.deepcopy(family(preferred_tool_backend=_backend(preferred_tool_backend))[base])
    context, kept = scenario.starting_context, variant.starting_context
    context.tool_allow_list = copy.deepcopy(kept.tool_allow_list)
    context.tool_deny_list = copy.deepcopy(kept.tool_deny_list)
    context.tool_augmentation_list = copy.deepcopy(kept.tool_augmentation_list)
    scenario.categories = copy.deepcopy(variant.categories)
    return scenario


class RecordedClock:
    """This process's clock during one re-execution: ``at(seconds)`` puts it at the recording's start plus ``seconds``,
    ``to(epoch)`` at a moment the recording read (it ticks on from either)."""

    def __init__(self, traveller: Any, origin: dt.datetime) -> None:
        self._traveller = traveller
        self._origin = origin

    def at(self, seconds: float) -> None:
        self._traveller.move_to(self._origin + dt.timedelta(seconds=seconds))

    def to(self, epoch: float) -> None:
        self._traveller.move_to(dt.datetime.fromtimestamp(epoch, self._origin.tzinfo))

    @property
    def start(self) -> float:
        """The recording's start, in seconds since the epoch."""
        return self._origin.timestamp()


@contextlib.contextmanager
def at_recorded_time(start: dt.datetime | None, timezone: str = "UTC") -> Iterator[RecordedClock | None]:
    """This process's clock at ``start`` (and the local time zone ``timezone``) while the block runs, and a
    ``RecordedClock`` that moves it. ``None``: the clock is left alone, and the block gets ``None``."""
    if start is None:
        yield None
        return
    from zoneinfo import ZoneInfo

    import time_machine

    origin = start.astimezone(ZoneInfo(timezone))
    with time_machine.travel(origin, tick=True) as traveller:
        yield RecordedClock(traveller, origin)


_ROW_IDS = ("reminder_id", "message_id")
_TIMES = ("creation_timestamp", "reminder_timestamp")
_REFERENCE = dt.datetime(2025, 1, 1, 12, 0, tzinfo=dt.timezone.utc)
_OFFSETS: dict[str, dict[str, dict[str, float]]] = {}  # backend -> row id -> column -> seconds from the build


def _rows_seen(texts: Iterable[str]) -> Iterator[dict[str, Any]]:
    """Rows (dicts) printed in recorded tool results (each result read as a Python literal, never run)."""
    for text in texts:
        if "_id'" not in text or len(text) > 200_000:
            continue
        try:
            value = ast.literal_eval(text.strip())
        except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
            continue
        stack = [value]
        while stack:
            item = stack.pop()
            if isinstance(item, dict):
                yield item
                stack.extend(v for v in item.values() if isinstance(v, (list, dict)))
            elif isinstance(item, (list, tuple)):
                stack.extend(item)


def starting_row_offsets(preferred_tool_backend: str = "DEFAULT") -> dict[str, dict[str, float]]:
    """For every starting row of ToolSandbox's scenarios that carries times (reminders, messages), each time's distance
    in seconds from when its scenario was built (rows whose distance differs between scenarios are left out).

    The rows' identifiers are derived from fixed names, so a recorded result that shows one tells when the recorded
    scenario was built. Found once per process by building the scenarios on a stopped clock.
    """
    if preferred_tool_backend in _OFFSETS:
        return _OFFSETS[preferred_tool_backend]
    import time_machine

    seen: dict[str, dict[str, float]] = {}
    clash: set[str] = set()
    with time_machine.travel(_REFERENCE, tick=False):
        reference = _REFERENCE.timestamp()
        backend = _backend(preferred_tool_backend)
        for family in _families():
            for scenario in family(preferred_tool_backend=backend).values():
                for frame in scenario.starting_context._dbs.values():
                    id_column = next((c for c in _ROW_IDS if c in frame.columns), None)
                    if id_column is None:
                        continue
                    for row in frame.iter_rows(named=True):
                        if not row.get(id_column):
                            continue
                        times = {c: float(row[c]) - reference for c in _TIMES if isinstance(row.get(c), (int, float))}
                        key = str(row[id_column])
                        if key in seen and seen[key] != times:
                            clash.add(key)
                        seen[key] = times
    _OFFSETS[preferred_tool_backend] = {k: v for k, v in seen.items() if k not in clash and v}
    return _OFFSETS[preferred_tool_backend]


def recorded_build_time(results: Iterable[str], offsets: dict[str, dict[str, float]]) -> float | None:
    """When the recorded scenario was built (seconds since the epoch), read off the starting rows its results show
    (their times minus their distance from the build; the median where several show). ``None``: none shows."""
    builds = []
    for row in _rows_seen(results):
        for id_column in _ROW_IDS:
            distance = offsets.get(str(row.get(id_column)))
            if distance is None:
                continue
            for column, offset in distance.items():
                seen = row.get(column)
                if isinstance(seen, (int, float)) and not isinstance(seen, bool) and math.isfinite(seen):
                    builds.append(float(seen) - offset)
    return statistics.median(builds) if builds else None
