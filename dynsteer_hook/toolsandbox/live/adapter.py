"""The middleware inside ToolSandbox's execution loop: how the loop reaches the hook.

``Scenario.play`` calls ``roles[recipient].respond()`` until the conversation ends. Each
role is wrapped in a ``GuardedRole``: after the role appended its SANDBOX rows, the rows
are mapped to the core's events (raw clock k) and handed to the rollout's hook
(``hook.RolloutHook.on_event``; the ``LiveHook`` feeds the evaluator), and the end of each
agent turn to ``on_turn_end``. An agent's tool call rows are handed on before the execution
environment gets its turn, so a fatal minefield halts the run before the call executes. A
``Halt`` raised by the hook stops the rollout there: the conversation is marked inactive,
``play`` returns normally, and ToolSandbox evaluates and stores the partial trajectory.

Before any of that, every row a role addressed to the execution environment goes through
the tool-call gate (``calls.inspect_code``): whichever role wrote it (the package's own or
ToolSandbox's), source that is not exactly a call of one of the role's offered tools is
replaced by a rejection that only raises an error, so nothing else ever runs.

Nothing here holds an ``ExecutionContext``: parallel tool calls are executed on deep
copies and the current context is swapped globally, so it is always re-read.
"""

from __future__ import annotations

import ast
import json
import re
import time
from collections import Counter
from collections.abc import Mapping
from typing import Any, Literal

import polars as pl

from dynsteer_hook.model.errors import Halt
from dynsteer_hook.model.events import AgentMessage, Event, StateChange, SystemMessage, ToolCall, ToolResult, UserMessage
from dynsteer_hook.model.records import StopRecord
from dynsteer_hook.model.spending import UNKNOWN, Spend
from dynsteer_hook.toolsandbox import _quiet  # noqa: F401 - must precede the tool_sandbox imports
from dynsteer_hook.toolsandbox.calls import GatedCall, inspect_code, offered_tools
from dynsteer_hook.toolsandbox.live.hook import EventSeen, RolloutHook, Spent, TurnEnded
from dynsteer_hook.toolsandbox.live.limits import LimitTracker

from tool_sandbox.common.execution_context import DatabaseNamespace, RoleType, get_current_context
from tool_sandbox.roles.base_role import BaseRole

STATE_NAMESPACES = (
    DatabaseNamespace.SETTING,
    DatabaseNamespace.CONTACT,
    DatabaseNamespace.MESSAGING,
    DatabaseNamespace.REMINDER,
)
_CALL = re.compile(r"^(?P<id>.+?)_parameters = (?P<args>[^\n]*)\n(?P=id)_response = (?P<name>[^(\n]+)\(")

_SPENDERS = {RoleType.AGENT: "agent", RoleType.USER: "user"}
"""The roles whose models' spending the rollout's cost record and budget count (the judges are the evaluator's own)."""

Snapshots = dict[str, pl.DataFrame]
"""Table frames by namespace, each holding the table's whole snapshot history."""


def parse_call_code(code: str) -> tuple[str | None, dict[str, Any] | None, str | None]:
    """(function name, arguments, raw payload) of a ToolSandbox tool-call code string."""
    m = _CALL.match(code or "")
    if m is None:
        return None, None, code
    name = m.group("name").strip()
    try:
        value = ast.literal_eval(m.group("args"))
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return name, None, m.group("args")
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return name, value, None
    return name, None, value if isinstance(value, str) else repr(value)


def _tables() -> dict[str, pl.DataFrame]:
    # The context's frames themselves, read only. ToolSandbox replaces a table's frame on
    # every write, so keeping references is a free snapshot and an unchanged table is the
    # very same object afterwards. (Its public get_database filters the whole history on
    # every call, which would cost more than the evaluation itself.)
    return get_current_context()._dbs  # type: ignore[no-any-return]


def snapshot_databases() -> Snapshots:
    """References to every world-state table's frame (polars frames are immutable: no copy)."""
    tables = _tables()
    return {str(ns): tables[ns] for ns in STATE_NAMESPACES}


def _newest(frame: pl.DataFrame) -> pl.DataFrame:
    """The newest snapshot in a table frame, without its index column and null headguard."""
    newest = frame.filter(pl.col("sandbox_message_index") == frame["sandbox_message_index"].max()).drop("sandbox_message_index")
    return newest.filter(~pl.all_horizontal(pl.all().is_null())) if newest.width else newest


def _table_change(namespace: str, before: pl.DataFrame, after: pl.DataFrame) -> StateChange | None:
    if before.equals(after):
        return None
    b_rows, a_rows = before.to_dicts(), after.to_dicts()
    key = before.columns[0] if before.columns else None
    b_keys = [r[key] for r in b_rows] if key else []
    a_keys = [r[key] for r in a_rows] if key else []
    if key and len(set(b_keys)) == len(b_keys) and len(set(a_keys)) == len(a_keys):
        b_by, a_by = dict(zip(b_keys, b_rows, strict=True)), dict(zip(a_keys, a_rows, strict=True))
        added = tuple(r for k, r in a_by.items() if k not in b_by)
        removed = tuple(r for k, r in b_by.items() if k not in a_by)
        updated = tuple((b_by[k], r) for k, r in a_by.items() if k in b_by and b_by[k] != r)
    else:  # duplicate keys: a multiset difference of whole rows
        def frozen(r: dict[str, Any]) -> str:
            return json.dumps(r, sort_keys=True, default=str)

        b_count, a_count = Counter(frozen(r) for r in b_rows), Counter(frozen(r) for r in a_rows)
        added = tuple(json.loads(x) for x in (a_count - b_count).elements())
        removed = tuple(json.loads(x) for x in (b_count - a_count).elements())
        updated = ()
    change = StateChange(namespace, added, removed, updated)
    return None if change.empty else change


def state_changes(before: Snapshots, after: Snapshots) -> tuple[StateChange, ...]:
    """Row-level changes between the newest snapshots of two sets of table frames."""
    out: list[StateChange] = []
    for ns, b in before.items():
        a = after[ns]
        if a is b:
            continue  # no write replaced the frame: nothing changed
        c = _table_change(ns, _newest(b), _newest(a))
        if c is not None:
            out.append(c)
    return tuple(out)


def _result_value(row: dict[str, Any]) -> Any:
    trace = row.get("tool_trace")
    if trace:
        try:
            return json.loads(trace[0]).get("result")
        except (json.JSONDecodeError, AttributeError, IndexError):
            pass
    return None if row.get("tool_call_exception") else row.get("content")


def _gated_event(call_id: str, gated: GatedCall, actor: Literal["agent", "user"]) -> ToolCall:
    tool = gated.tool or gated.name
    return ToolCall(
        call_id=call_id,
        tool=tool,
        arguments=gated.arguments.value,
        raw_arguments=gated.arguments.raw,
        canonical_tool=gated.execution_name if gated.execution_name and gated.execution_name != tool else None,
        actor=actor,
        rejected=gated.rejected,
        suspected_tools=gated.suspects,
    )


def simulator_only(row: Mapping[str, Any]) -> bool:
    """Rows only the user simulator sees (its few-shot examples): no role of this rollout made them."""
    visible = row.get("visible_to")
    return visible is not None and [str(v) for v in visible] == [str(RoleType.USER)]


class RowMapper:
    """Maps SANDBOX rows to core events (skipping the user simulator's private rows)."""

    def __init__(self) -> None:
        self._user_call = 0
        self._last_user_call: str | None = None

    def map(self, row: dict[str, Any], changes: tuple[StateChange, ...] = (), gated: GatedCall | None = None) -> Event | None:
        """The event of one row, or ``None`` for rows the agent never sees or acts on.

        Args:
            row: A SANDBOX row.
            changes: The database changes to attach to a result row.
            gated: The gate's verdict on a call row (what the evaluator must believe about
                the call); without one the call's source is parsed.
        """
        sender, recipient = str(row["sender"]), str(row["recipient"])
        if simulator_only(row):
            return None  # user-simulator few-shot examples
        content = row.get("content") or ""
        if sender == RoleType.SYSTEM:
            return SystemMessage(content) if recipient == RoleType.AGENT else None
        if sender == RoleType.USER and recipient == RoleType.AGENT:
            return UserMessage(content)
        if sender == RoleType.AGENT and recipient == RoleType.USER:
            return AgentMessage(content)
        if sender == RoleType.AGENT and recipient == RoleType.EXECUTION_ENVIRONMENT:
            if gated is not None:
                return _gated_event(row.get("openai_tool_call_id") or f"agent:{row.get('sandbox_message_index')}", gated, "agent")
            name, args, raw = parse_call_code(content)
            agent_name = row.get("openai_function_name") or name or "?"
            return ToolCall(
                call_id=row.get("openai_tool_call_id") or f"agent:{row.get('sandbox_message_index')}",
                tool=agent_name,
                arguments=args,
                raw_arguments=raw,
                canonical_tool=name if name and name != agent_name else None,
            )
        if sender == RoleType.EXECUTION_ENVIRONMENT and recipient == RoleType.AGENT:
            return ToolResult(
                call_id=row.get("openai_tool_call_id") or "?",
                result=_result_value(row),
                exception=row.get("tool_call_exception"),
                state_changes=changes,
            )
        if sender == RoleType.USER and recipient == RoleType.EXECUTION_ENVIRONMENT:
            self._user_call += 1
            self._last_user_call = f"user:{self._user_call}"
            if gated is not None:
                return _gated_event(self._last_user_call, gated, "user")
            name, args, raw = parse_call_code(content)
            return ToolCall(self._last_user_call, name or "?", args, raw, None, actor="user")
        if sender == RoleType.EXECUTION_ENVIRONMENT and recipient == RoleType.USER:
            return ToolResult(self._last_user_call or "user:?", _result_value(row), row.get("tool_call_exception"), changes)
        return None


def _rewrite_calls(rewrites: dict[int, GatedCall]) -> None:
    """Replace the source (and id) of call rows in place, before the execution environment reads them."""
    tables = _tables()
    frame = tables[DatabaseNamespace.SANDBOX]
    index = pl.col("sandbox_message_index")
    content, call_id = pl.col("content"), pl.col("openai_tool_call_id")
    for i, verdict in rewrites.items():
        content = pl.when(index == i).then(pl.lit(verdict.code)).otherwise(content)
        call_id = pl.when((index == i) & pl.col("openai_tool_call_id").is_not_null()).then(pl.lit(verdict.call_id)).otherwise(call_id)
    tables[DatabaseNamespace.SANDBOX] = frame.with_columns(content.alias("content"), call_id.alias("openai_tool_call_id"))


def end_conversation_now() -> None:
    """Mark the last SANDBOX row inactive, so ``Scenario.play`` stops after this turn."""
    ctx = get_current_context()
    last = ctx.get_database(DatabaseNamespace.SANDBOX)
    if last.is_empty() or not last["conversation_active"][-1]:
        return
    ctx.update_database(DatabaseNamespace.SANDBOX, last.with_columns(pl.lit(False).alias("conversation_active")))


class RolloutSession:
    """Hands one rollout's SANDBOX rows to its hook as events, in order, each exactly once.

    Args:
        hook: Told every mapped event (``on_event``, which may raise ``Halt``) and the end of each
            agent turn (execution batch) with its seconds and tokens (``on_turn_end``; tokens
            ``None`` when the role does not count them), so a replay can say what a stop would
            have saved.
        scenario: The scenario's name, carried by every payload.
    """

    def __init__(self, hook: RolloutHook, scenario: str, limits: LimitTracker | None = None) -> None:
        self._hook = hook
        self.limits = limits if limits is not None else LimitTracker()
        self._scenario = scenario
        self.events = 0
        self.agent_turns = 0
        self._previous_sender = ""
        self._mapper = RowMapper()
        self._last_index = -1
        self.opened = False
        self.stop: StopRecord | None = None
        self.rows_seen = 0
        self.rewritten = 0
        self._gated: dict[int, GatedCall] = {}
        self._told: dict[RoleType, Spend] = {}  # what each role's spending was when the hook was last told

    def gate(self, role_type: RoleType) -> None:
        """Pass the role's new calls through the gate, rewriting any that must not run as written."""
        frame = _tables()[DatabaseNamespace.SANDBOX]
        new = frame.filter(pl.col("sandbox_message_index") > self._last_index)
        offered: dict[str, str] | None = None
        rewrites: dict[int, GatedCall] = {}
        position = 0
        for row in new.iter_rows(named=True):
            if row["sender"] is None or str(row["sender"]) != role_type or str(row["recipient"]) != RoleType.EXECUTION_ENVIRONMENT:
                continue
            index = int(row["sandbox_message_index"])
            if offered is None:
                offered = offered_tools(role_type)
            call_id = row.get("openai_tool_call_id")
            verdict = inspect_code(row.get("content") or "", row.get("openai_function_name"), call_id, offered, f"call_{index}")
            position += 1
            if position > self.limits.limits.max_parallel_calls:  # past the per-turn cap: refused, never run
                verdict = self.limits.past_cap(verdict, position)
            self._gated[index] = verdict
            if verdict.code != row.get("content") or (call_id is not None and verdict.call_id != call_id):
                rewrites[index] = verdict
        if rewrites:
            _rewrite_calls(rewrites)
            self.rewritten += len(rewrites)

    def spent(self, role_type: RoleType, role: BaseRole) -> None:
        """Tell the hook what the agent's or the user's model has spent so far, when the role counts it (the LiteLLM
        roles), and once, as unknown, when it is a model that does not (ToolSandbox's own LLM roles); scripted roles
        spend nothing and are not told. The hook may raise ``Halt`` (a budget)."""
        if role_type not in _SPENDERS:
            return
        spending = getattr(role, "spending", None)
        if callable(spending):
            spend = spending()
            if spend != self._told.get(role_type):  # a turn that made no model call changes nothing
                self._told[role_type] = spend
                self._hook.on_spend(Spent(self._scenario, _SPENDERS[role_type], spend, getattr(role, "model_name", None)))
        elif role_type not in self._told and isinstance(getattr(role, "model_name", None), str):
            self._told[role_type] = UNKNOWN
            self._hook.on_spend(Spent(self._scenario, _SPENDERS[role_type], UNKNOWN, role.model_name))

    def turn_done(self, seconds: float, tokens: int | None) -> None:
        """Report the agent turn that just ended (its number is ``agent_turns``)."""
        self._hook.on_turn_end(TurnEnded(self._scenario, self.agent_turns, seconds, tokens))

    def sync(self, before: Snapshots | None = None) -> None:
        """Feed rows appended since the last sync; the first result row carries the state change."""
        frame = _tables()[DatabaseNamespace.SANDBOX]
        new = frame.filter(pl.col("sandbox_message_index") > self._last_index)
        if new.is_empty():
            return
        pending_changes = state_changes(before, snapshot_databases()) if before is not None else ()
        for row in new.sort("sandbox_message_index", maintain_order=True).iter_rows(named=True):
            if row["sender"] is None:
                continue  # a null headguard row
            self._last_index = int(row["sandbox_message_index"])
            self.rows_seen += 1
            if not simulator_only(row):
                sender = str(row["sender"])
                if sender == RoleType.AGENT and self._previous_sender != RoleType.AGENT:
                    self.agent_turns += 1
                self._previous_sender = sender
            is_result = str(row["sender"]) == RoleType.EXECUTION_ENVIRONMENT
            event = self._mapper.map(row, pending_changes if is_result else (), self._gated.pop(self._last_index, None))
            if is_result:
                pending_changes = ()
            if event is not None:
                self.events += 1
                self._hook.on_event(EventSeen(self._scenario, self.events, self.agent_turns, event))


def _tokens(role: BaseRole) -> int | None:
    """Tokens a role has spent so far, when it counts them (the LiteLLM roles do)."""
    spent = getattr(role, "spent", None)
    if not callable(spent):
        return None
    info = spent()
    return int(info.get("prompt_tokens", 0)) + int(info.get("completion_tokens", 0))


class GuardedRole(BaseRole):
    """Wraps a ToolSandbox role: after it responds, its rows go through the gate and to the rollout's hook."""

    def __init__(self, inner: BaseRole, session: RolloutSession) -> None:
        self.inner = inner
        self.session = session
        self.role_type = inner.role_type

    def respond(self, ending_index: int | None = None) -> None:
        session = self.session
        if session.stop is not None or session.limits.overdue(session.agent_turns):
            end_conversation_now()
            return
        try:
            if not session.opened:  # the scenario's opening messages, present before the first turn
                session.sync()
                session.opened = True
            before = snapshot_databases() if self.role_type == RoleType.EXECUTION_ENVIRONMENT else None
            turns, tokens, start = session.agent_turns, _tokens(self.inner), time.perf_counter()
            self.inner.respond(ending_index=ending_index)
            seconds = time.perf_counter() - start
            if self.role_type in (RoleType.AGENT, RoleType.USER):
                session.gate(self.role_type)
            try:
                session.sync(before)
            finally:  # told even when the turn's rows halted the rollout: the report says what it cost
                session.spent(self.role_type, self.inner)
            if self.role_type == RoleType.AGENT and session.agent_turns > turns:
                session.turn_done(seconds, None if tokens is None else (_tokens(self.inner) or 0) - tokens)
        except Halt as halt:
            session.stop = halt.stop
            end_conversation_now()

    def reset(self) -> None:
        self.inner.reset()

    def teardown(self) -> None:
        self.inner.teardown()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
