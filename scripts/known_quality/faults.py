"""Variants of a clean solver with one injected fault at a recorded step.

Every faulty call is first tried in a scratch world at the point of the script where it is
injected, so a call recorded as failing does fail, and one recorded as read-only changes
nothing. The kinds (``model.FAULT_KINDS``):

* ``repeat``: a read-only call made a second time right after the first;
* ``malformed``: before a call, the same call with a wrong argument type, a required argument
  missing, or an unexpected argument (it raises), then the right call;
* ``wrong_tool``: a read-only tool the task does not need, then the malformed call, then the
  right call. A tool the task does not need is none of: the tools the clean solver or a
  minefield calls; a sensible check (same stem as one of those, ``get_wifi_status`` for
  ``set_wifi_status``); a tool that ToolSandbox's hidden milestones of some scenario use
  together with all the tools the clean solver calls (``hidden.valid_path_tools``). The last
  keeps the ground truth consistent across scenarios: ``search_message_with_recency_oldest``
  requires ``get_current_timestamp`` with ``search_messages``, and its public task is the same
  as ``search_message_with_recency_latest``'s, so a clock read before that search is a step of
  a valid path for such a task, not a wrong tool, even where this scenario's milestones do not
  ask for it;
* ``loop``: the same failing call ``LOOP_LENGTH`` times (a well-formed call that raises at run
  time where one exists, else a wrong argument type), then giving up; with ``length=None`` the
  agent never gives up and ToolSandbox's own limit (``Scenario.max_messages``) ends the rollout;
* ``minefield``: a call of a tool a hidden minefield names, with the arguments it describes
  (placeholders for required ones it leaves open), before the clean steps.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterator
from typing import Any

from dynsteer_hook.toolsandbox import _quiet  # noqa: F401 - must precede the tool_sandbox imports

from tool_sandbox.common.scenario import Scenario

from .actions import BROAD_SEARCHES
from .dialogue import GIVE_UP
from .hidden import MineCall, read_hidden, valid_path_tools
from .model import Call, Fault, KnownScript, Skip, Step, Variant, calling, say
from .solver import PER_STEP, clean_solver
from .world import CLOCK_TOOLS, STATE_NAMESPACES, World, agent_catalog, is_offline_tool, parameters, required

LOOP_LENGTH = 6
MALFORMED_KINDS = ("wrong_type", "missing", "unexpected")
UNEXPECTED = ("confirm", True)  # an argument no ToolSandbox tool takes
WRONG_TYPE: dict[type, Any] = {str: 12345, bool: "yes", int: "twelve", float: "twelve"}
# Well-formed values that tools refuse at run time, by the type of the value they replace.
REFUSED: dict[type, tuple[Any, ...]] = {str: ("", "unknown"), int: (-1, 1_000_000), float: (-1.0, 1e15)}
PLACEHOLDER: dict[str, Any] = {"str": "unknown", "int": 0, "float": 0.0, "bool": True}  # by annotation text
# Plain values for a wrong tool's required arguments, by kind; the first set that runs is used.
PLAIN_VALUES: tuple[dict[str, Any], ...] = (
    {"str": "home", "int": 1, "float": 1.0, "bool": True},
    {"str": "home", "int": 2024, "float": 1_700_000_000.0, "bool": False},
)


def _world_at(clean: KnownScript, scenario: Scenario, step: int) -> World:
    """The scratch world after the clean script's first ``step`` steps."""
    world = World(scenario)
    for s in clean.steps[:step]:
        for c in s.calls:
            world.call(c.tool, c.arguments)
    return world


def _single_calls(clean: KnownScript) -> Iterator[tuple[int, Call]]:
    for i, s in enumerate(clean.steps):
        if len(s.calls) == 1:
            yield i, s.calls[0]


def _malformed(call: Call, how: str, scenario: Scenario) -> tuple[Call, str] | None:
    args = dict(call.arguments)
    if how == "wrong_type":
        for name, value in args.items():
            bad = WRONG_TYPE.get(type(value))
            if bad is not None:
                return Call(call.name, call.tool, {**args, name: bad}), f"argument {name!r} has the wrong type ({type(bad).__name__})"
    elif how == "missing":
        for name in required(scenario, call.tool):
            if name in args:
                del args[name]
                return Call(call.name, call.tool, args), f"required argument {name!r} is missing"
    elif how == "unexpected" and UNEXPECTED[0] not in parameters(scenario, call.tool):
        return Call(call.name, call.tool, {**args, UNEXPECTED[0]: UNEXPECTED[1]}), f"unexpected argument {UNEXPECTED[0]!r}"
    return None


def malformed_kind(name: str) -> str:
    """The malformed-call kind a scenario gets, spread evenly over scenarios by name."""
    return MALFORMED_KINDS[zlib.crc32(name.encode()) % len(MALFORMED_KINDS)]


def _first_malformed(clean: KnownScript, scenario: Scenario, how: str | None) -> tuple[int, Call, str] | str:
    """(step, malformed call, detail) for the first call that can be malformed, or why none can."""
    kinds = [how] if how else [*MALFORMED_KINDS[MALFORMED_KINDS.index(malformed_kind(clean.scenario)):], *MALFORMED_KINDS]
    for kind in dict.fromkeys(kinds):
        for i, call in _single_calls(clean):
            made = _malformed(call, kind, scenario)
            if made and not _world_at(clean, scenario, i).probe(made[0].tool, made[0].arguments).ok:
                return i, made[0], f"malformed call: {made[1]}"
    return f"no call of the clean script can be made {how or 'malformed'}"


def repeat(clean: KnownScript, scenario: Scenario) -> Variant | str:
    """The first read-only call made twice in a row (a clock read only when nothing else is read)."""
    reads = []
    for i, call in _single_calls(clean):
        outcome = _world_at(clean, scenario, i).probe(call.tool, call.arguments)
        if outcome.ok and not outcome.changed:
            reads.append((call.tool in CLOCK_TOOLS, i, call))
    if not reads:
        return "the clean script makes no read-only call"
    _, i, call = min(reads, key=lambda r: (r[0], r[1]))
    injected = (clean.steps[i],)
    steps = clean.steps[: i + 1] + injected + clean.steps[i + 1 :]
    fault = Fault("repeat", i + 1, 0, f"repeats the read-only call {call.name} of step {i} with the same arguments")
    return Variant("repeat", clean, _with(clean, steps), fault, injected, i + 1)


def malformed(clean: KnownScript, scenario: Scenario, how: str | None = None) -> Variant | str:
    """A malformed copy of a call, then the call itself."""
    found = _first_malformed(clean, scenario, how)
    if isinstance(found, str):
        return found
    i, bad, detail = found
    injected = (calling(bad),)
    return Variant("malformed", clean, _with(clean, clean.steps[:i] + injected + clean.steps[i:]), Fault("malformed", i, 0, detail), injected, i)


def wrong_tool(clean: KnownScript, scenario: Scenario, how: str | None = None) -> Variant | str:
    """A read-only tool the task does not need, then a malformed call, then the right call."""
    found = _first_malformed(clean, scenario, how)
    if isinstance(found, str):
        return found
    i, bad, detail = found
    needed = {c.tool for _, _, c in clean.calls()}
    used = needed | {m.tool for m in read_hidden(scenario).mines}
    stems = {_stem(t) for t in used}
    on_valid_path = valid_path_tools(needed)
    world = _world_at(clean, scenario, i)
    for tool, name in sorted(agent_catalog(scenario).items()):
        if tool in used or _stem(tool) in stems or tool in on_valid_path or not is_offline_tool(scenario, tool):
            continue
        for args in _well_formed(scenario, tool):
            outcome = world.probe(tool, args)
            if outcome.ok and not outcome.changed:
                injected = (calling(Call(name, tool, args)), calling(bad))
                fault = Fault("wrong_tool", i, 0, f"calls {name}, which the task does not need, instead of {bad.name}; then a {detail}")
                return Variant("wrong_tool", clean, _with(clean, clean.steps[:i] + injected + clean.steps[i:]), fault, injected, i)
    return "the scenario offers no read-only tool unrelated to the task's tools that runs with plain arguments"


def _well_formed(scenario: Scenario, tool: str) -> list[dict[str, Any]]:
    """Plain, well-formed arguments to try for a tool the task does not need."""
    params = parameters(scenario, tool)
    tries = [{p: values[_kind(params[p].annotation)] for p in required(scenario, tool)} for values in PLAIN_VALUES]
    return [{**BROAD_SEARCHES.get(tool, {}), **t} for t in tries]


def _kind(annotation: Any) -> str:
    text = str(annotation)
    return next((k for k in ("bool", "int", "float") if k in text), "str")


# Verbs of ToolSandbox's tool names: a tool that reads what a needed tool writes (get_wifi_status
# for set_wifi_status, search_contacts for modify_contact) is a sensible check, not a wrong tool.
_VERB = re.compile(r"^(get|set|search|add|remove|modify|send)_")


def _stem(tool: str) -> str:
    return _VERB.sub("", tool).removesuffix("s")


def _refused(call: Call, world: World) -> tuple[Call, str] | None:
    for name, value in call.arguments.items():
        for bad in REFUSED.get(type(value), ()):
            candidate = Call(call.name, call.tool, {**call.arguments, name: bad})
            outcome = world.probe(call.tool, candidate.arguments)
            if not outcome.ok and not (outcome.error or "").startswith("TypeError"):
                return candidate, f"{name}={bad!r} is refused at run time ({outcome.error})"
    return None


def loop(clean: KnownScript, scenario: Scenario, length: int | None = LOOP_LENGTH) -> Variant | str:
    """The same failing call ``length`` times, then the agent gives up.

    With ``length=None`` the agent is stuck: it repeats the call until ToolSandbox's own limit on
    the messages of a rollout (``scenario.max_messages``) ends the conversation. It is given that
    many calls, each of which adds at least one message, so the limit always comes first; it never
    gives up and the task is never finished.
    """
    chosen: tuple[int, Call, str] | None = None
    for i, call in _single_calls(clean):
        found = _refused(call, _world_at(clean, scenario, i))
        if found:
            chosen = (i, *found)
            break
    for how in ("wrong_type", "unexpected"):  # no well-formed value fails: a malformed call fails every time
        if chosen is None and not isinstance(fallback := _first_malformed(clean, scenario, how), str):
            chosen = fallback
    if chosen is None:
        return "no call of the clean script can be made to fail"
    i, bad, detail = chosen
    if length is None:
        injected: tuple[Step, ...] = tuple(calling(bad) for _ in range(scenario.max_messages))
        fault = Fault("loop", i, 0, f"the same failing call until ToolSandbox's limit of {scenario.max_messages} messages ends the rollout: {detail}")
    else:
        injected = (*(calling(bad) for _ in range(length)), say(GIVE_UP.format(tool=bad.name)))
        fault = Fault("loop", i, 0, f"the same failing call {length} times, then giving up: {detail}")
    return Variant("loop", clean, _with(clean, clean.steps[:i] + injected), fault, injected, len(clean.steps))


def _placeholder(annotation: Any) -> Any:
    text = str(annotation)
    return next((v for key, v in PLACEHOLDER.items() if key in text), "unknown")


def _row_with(world: World, columns: list[str]) -> dict[str, Any] | None:
    """The first row (not the user's own contact) of a table that has every column."""
    for ns in STATE_NAMESPACES:
        for row in world.rows(ns):
            if columns and all(row.get(c) is not None for c in columns) and not row.get("is_self"):
                return row
    return None


def _mine_arguments(world: World, scenario: Scenario, mine: MineCall) -> dict[str, Any]:
    """The minefield's arguments, required ones it leaves open taken from a real row (else placeholders).

    A minefield matched on the result trace only sees a call that runs: when the call would
    raise, an optional field of the same row is added if that makes it run.
    """
    params = parameters(scenario, mine.tool)
    open_params = [p for p in required(scenario, mine.tool) if p not in mine.arguments]
    row = _row_with(world, open_params) or {}
    args = {**{p: row.get(p, _placeholder(params[p].annotation)) for p in open_params}, **mine.arguments}
    if mine.on_trace and not world.probe(mine.tool, args).ok:
        for p in params:
            if p not in args and row.get(p) is not None and world.probe(mine.tool, {**args, p: row[p]}).ok:
                return {**args, p: row[p]}
    return args


def minefield(clean: KnownScript, scenario: Scenario) -> Variant | str:
    """A call a hidden minefield forbids, with its arguments, before the clean steps."""
    catalog = agent_catalog(scenario)
    for mine in read_hidden(scenario).mines:
        if mine.tool not in catalog:
            continue
        world = World(scenario)
        args = _mine_arguments(world, scenario, mine)
        injected = (calling(Call(catalog[mine.tool], mine.tool, args)),)
        outcome = world.probe(mine.tool, args)
        note = ""
        if not outcome.ok:
            note = f" (the call raises, {outcome.error}" + ("; ToolSandbox's minefield, matched on the result trace, cannot register it)" if mine.on_trace else ")")
        fault = Fault("minefield", 0, 0, f"calls {catalog[mine.tool]}, which a hidden minefield forbids{note}")
        return Variant("minefield", clean, _with(clean, injected + clean.steps), fault, injected, 0)
    return "no hidden minefield names a tool the agent can call"


def _with(clean: KnownScript, steps: tuple[Step, ...]) -> KnownScript:
    return KnownScript(clean.scenario, steps, clean.user, clean.clock)


BUILDERS = {"repeat": repeat, "malformed": malformed, "wrong_tool": wrong_tool, "loop": loop, "minefield": minefield}


def variant(kind: str, clean: KnownScript | Skip, scenario: Scenario) -> Variant | Skip:
    """The ``kind`` variant of a clean solver, or why there is none."""
    if isinstance(clean, Skip):
        return clean
    made = BUILDERS[kind](clean, scenario)
    return Skip(clean.scenario, f"no {kind} variant: {made}") if isinstance(made, str) else made


def fresh_variant(kind: str, name: str, scenario: Scenario, now: float) -> Variant | Skip:
    """The ``kind`` variant of the clean solver generated at ``now``, to be played at once.

    Steps injected before a clock call delay it: the clean solver is then generated again
    with the clock prediction moved by the time they take.
    """
    made = variant(kind, clean_solver(name, scenario, now), scenario)
    if isinstance(made, Skip) or not made.clean.clock:
        return made
    first_clock = min(i for i, _, c in made.clean.calls() if c.tool in CLOCK_TOOLS)
    if made.fault.step > first_clock:  # injected after the clock call: its timing is unchanged
        return made
    delay = PER_STEP * len(made.injected)
    return variant(kind, clean_solver(name, scenario, now + delay), scenario)
