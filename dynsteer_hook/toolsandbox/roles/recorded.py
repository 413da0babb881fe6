"""The agent and the user of a recording, played again move by move in the recording's scenario.

A ``Playback`` holds one transcript (``offline.transcripts``) and its cursor; ``RecordedAgent`` and
``RecordedUser`` are ToolSandbox roles that take their next move from it. Every call passes the same
tool-call gate as a live agent's, so a recording is as untrusted as a model.

A recording reproduces when the world answers every call as it answered in the recording. What
legitimately differs between two executions is kept apart from what does not:

* identifiers ToolSandbox draws at random (``add_contact`` returns a fresh UUID): the recorded one is
  mapped to the new one, and later calls and messages that pass it on get the new one, as the agent
  would have;
* where an object lies in memory, which a printed exception may show (``<Expr ... at 0x7FA9B27B16D0>``);
* clock readings: the clock is moved to the recording's start plus the time the recording had spent
  before each move (its latencies), so a reading lands within seconds of the recorded one; numbers that
  look like timestamps and differ by less than ``CLOCK_SLACK`` count as the same.

Anything else (another value, an error where the recording had none, a call the scenario refuses, the
conversation ending early or the recording running out) is a divergence: the first is kept with the
recording's step where it happened, and playing goes on so that the run still ends cleanly.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from dynsteer_hook.toolsandbox import _quiet  # noqa: F401 - must precede the tool_sandbox imports
from dynsteer_hook.toolsandbox.calls import gate, offered_tools
from dynsteer_hook.toolsandbox.offline.transcripts import Move, RecordedCall, Transcript
from dynsteer_hook.toolsandbox.recorded_clock import RecordedClock
from dynsteer_hook.toolsandbox.roles.scripted import DONE_MESSAGE

from tool_sandbox.common.execution_context import RoleType
from tool_sandbox.common.message_conversion import Message
from tool_sandbox.roles.base_role import BaseRole

__all__ = ["CLOCK_SLACK", "Divergence", "Playback", "RecordedAgent", "RecordedUser", "same_result"]

CLOCK_SLACK = 300.0
"""Seconds by which a timestamp in a result may differ from the recorded one and still be the same reading."""
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_ADDRESS = re.compile(r"\b0x[0-9A-Fa-f]{6,16}\b")  # an object's address in a printed exception differs from run to run
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_EPOCH = (1.0e9, 1.0e10)  # seconds since 1970: 2001 to 2286


@dataclass(frozen=True, slots=True)
class Divergence:
    """Where a re-execution first stopped following its recording, and how."""

    step: str
    reason: str

    def as_dict(self) -> dict[str, str]:
        """The divergence as a JSON object."""
        return {"step": self.step, "reason": self.reason}


def _timestamp(token: str) -> float | None:
    try:
        value = float(token)
    except ValueError:
        return None
    return value if math.isfinite(value) and _EPOCH[0] <= value <= _EPOCH[1] else None


def _numbers_close(recorded: str, actual: str) -> bool:
    """Whether two texts are the same but for timestamps within ``CLOCK_SLACK`` of each other."""
    rec, act = _NUMBER.split(recorded), _NUMBER.split(actual)
    if rec != act:
        return False
    for a, b in zip(_NUMBER.findall(recorded), _NUMBER.findall(actual), strict=True):
        if a == b:
            continue
        ta, tb = _timestamp(a), _timestamp(b)
        if ta is None or tb is None or abs(ta - tb) > CLOCK_SLACK:
            return False
    return True


def same_result(recorded: str, actual: str, ids: dict[str, str]) -> tuple[bool, dict[str, str]]:
    """Whether ``actual`` is the recorded answer, and the identifiers it newly maps (recorded -> actual).

    Identifiers already mapped are compared through ``ids``; identifiers drawn afresh pair up in order.
    """
    recorded, actual = _ADDRESS.sub("0x?", recorded.strip()), _ADDRESS.sub("0x?", actual.strip())
    if recorded == actual:
        return True, {}
    rec_ids, act_ids = _UUID.findall(recorded), _UUID.findall(actual)
    fresh: dict[str, str] = {}
    if len(rec_ids) == len(act_ids):
        for r, a in zip(rec_ids, act_ids, strict=True):
            if r == a:
                continue
            known = ids.get(r, fresh.get(r))
            if known is not None and known != a:
                return False, {}
            fresh[r] = a
        if fresh or rec_ids:
            recorded = _UUID.sub(lambda m: ids.get(m.group(0), fresh.get(m.group(0), m.group(0))), recorded)
    if recorded == actual or _numbers_close(recorded, actual):
        return True, fresh
    return False, {}


def _swap(value: Any, ids: dict[str, str]) -> Any:
    """``value`` with every mapped identifier replaced (inside strings, lists and objects)."""
    if not ids:
        return value
    if isinstance(value, str):
        return _UUID.sub(lambda m: ids.get(m.group(0), m.group(0)), value)
    if isinstance(value, list):
        return [_swap(v, ids) for v in value]
    if isinstance(value, dict):
        return {k: _swap(v, ids) for k, v in value.items()}
    return value


def _clip(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass
class Playback:
    """One transcript being played: the next move, the identifier map, the clock and the first divergence.

    Args:
        transcript: The recording.
        clock: This process's clock on the recording's time (``recorded_clock``), or None to leave the clock alone.
    """

    transcript: Transcript
    clock: RecordedClock | None = None
    cursor: int = 0
    ids: dict[str, str] = field(default_factory=dict)
    divergence: Divergence | None = None
    compared: int = 0  # calls whose answers were compared
    pending: list[tuple[str, RecordedCall]] = field(default_factory=list)  # (call id, call) of the last batch, unanswered

    def diverge(self, step: str, reason: str) -> None:
        """Keep the first divergence."""
        if self.divergence is None:
            self.divergence = Divergence(step, _clip(reason, 300))

    def peek(self) -> Move | None:
        """The next move, if the recording has one."""
        return self.transcript.moves[self.cursor] if self.cursor < len(self.transcript.moves) else None

    def take(self) -> Move:
        """The next move, the clock moved to when the recording made it: to the time a clock reading of the move
        returned, else to the recording's start plus the time it had spent before the move."""
        move = self.transcript.moves[self.cursor]
        if self.clock is not None:
            read = next((t for c in move.calls if c.result is not None and not c.arguments and (t := _timestamp(c.result.content.strip())) is not None), None)
            if read is not None:
                self.clock.to(read)
            else:
                self.clock.at(sum(s or 0.0 for s in self.transcript.latencies[: self.cursor]))
        self.cursor += 1
        return move

    @property
    def finished(self) -> bool:
        """Whether every move was played."""
        return self.cursor >= len(self.transcript.moves)

    def check_answers(self, messages: list[Message]) -> None:
        """Compare the answers to the last batch with the recorded ones (once the agent sees them)."""
        if not self.pending:
            return
        answers = {m.openai_tool_call_id: m for m in messages
                   if m.sender == RoleType.EXECUTION_ENVIRONMENT and m.recipient == RoleType.AGENT and m.openai_tool_call_id}
        for call_id, call in self.pending:
            answer = answers.get(call_id)
            if call.result is None:
                continue  # the recording ended before this call was answered
            self.compared += 1
            if answer is None:
                self.diverge(call.step, f"{call.name} got no answer")
                continue
            actual = str(answer.content or "")
            same, fresh = same_result(call.result.content, actual, self.ids)
            if same:
                self.ids.update(fresh)
                continue
            failed_now, failed_then = bool(answer.tool_call_exception), call.result.exception is not None
            if failed_now and not failed_then:
                why = f"{call.name} failed ({_clip(str(answer.tool_call_exception))}) where the recording got {_clip(call.result.content)}"
            elif failed_then and not failed_now:
                why = f"{call.name} succeeded ({_clip(actual)}) where the recording failed ({_clip(call.result.exception or '')})"
            else:
                why = f"{call.name} answered {_clip(actual)} where the recording got {_clip(call.result.content)}"
            self.diverge(call.step, why)
        self.pending = []

    def arguments(self, call: RecordedCall) -> dict[str, Any] | str:
        """The call's arguments with the identifiers of this execution."""
        swapped: dict[str, Any] | str = _swap(call.arguments, self.ids)
        return swapped

    def text(self, text: str | None) -> str:
        """A message with the identifiers of this execution."""
        return str(_swap(text or "", self.ids))

    def outcome(self) -> dict[str, Any]:
        """What the re-execution shows of the recording: reproduced so far or not, where it diverged."""
        out: dict[str, Any] = {"moves": len(self.transcript.moves), "played": self.cursor, "compared_calls": self.compared}
        if self.divergence is not None:
            out["divergence"] = self.divergence.as_dict()
        return out


class RecordedAgent(BaseRole):
    """The agent of a recording: its calls (gated, identifiers mapped) and messages, in the recorded order."""

    role_type: RoleType = RoleType.AGENT

    def __init__(self, playback: Playback) -> None:
        self.playback = playback
        self.turn = 0

    @property
    def steps(self) -> tuple[Move, ...]:
        """The agent's moves of the recording (for the turns a halt saved)."""
        return tuple(m for m in self.playback.transcript.moves if m.agent)

    def respond(self, ending_index: int | None = None) -> None:
        messages = self.get_messages(ending_index=ending_index)
        self.messages_validation(messages=messages)
        messages = self.filter_messages(messages=messages)
        if messages[-1].sender == RoleType.SYSTEM:
            return
        play = self.playback
        play.check_answers(messages)
        move = play.peek()
        while move is not None and not move.agent:
            play.diverge(move.step, f"the agent was asked to act where the recording has the user's {move.kind.replace('_', ' ')}")
            play.take()
            move = play.peek()
        self.turn += 1
        if move is None:
            if play.divergence is None:
                play.diverge("end", "the recording ends where the agent is asked to act again")
            self.add_messages([Message(sender=self.role_type, recipient=RoleType.USER, content=DONE_MESSAGE)])
            return
        play.take()
        if move.kind == "agent_says":
            self.add_messages([Message(sender=self.role_type, recipient=RoleType.USER, content=play.text(move.text))])
            return
        offered = offered_tools(self.role_type)
        out: list[Message] = []
        for i, call in enumerate(move.calls):
            gated = gate(f"call_{self.turn}_{i}", call.name, play.arguments(call), offered)
            if gated.rejected and call.result is not None and call.result.exception is None:
                play.diverge(call.step, f"the scenario refuses {_clip(call.name, 60)}, which the recording executed")
            play.pending.append((gated.call_id, call))
            out.append(Message(sender=self.role_type, recipient=RoleType.EXECUTION_ENVIRONMENT, content=gated.code,
                               openai_tool_call_id=gated.call_id, openai_function_name=call.name))
        self.add_messages(out)


class RecordedUser(BaseRole):
    """The user of a recording: its messages in order, then the end of the conversation."""

    role_type: RoleType = RoleType.USER

    def __init__(self, playback: Playback) -> None:
        self.playback = playback

    def respond(self, ending_index: int | None = None) -> None:
        messages = self.get_messages(ending_index=ending_index)
        self.messages_validation(messages=messages)
        messages = self.filter_messages(messages=messages)
        if messages[-1].sender != RoleType.AGENT:
            return
        play = self.playback
        move = play.peek()
        while move is not None and move.agent:
            play.diverge(move.step, "the user was asked to answer where the recording has the agent act on")
            play.take()
            move = play.peek()
        if move is not None:
            play.take()
        if move is not None and move.kind == "user_says":
            self.add_messages([Message(sender=self.role_type, recipient=RoleType.AGENT, content=play.text(move.text))])
            return
        if move is None and play.transcript.user_ends:
            play.diverge("end", "the recording ends where the user is asked to answer")
        end = gate("user_end", "end_conversation", {}, offered_tools(self.role_type))
        self.add_messages([Message(sender=self.role_type, recipient=RoleType.EXECUTION_ENVIRONMENT, content=end.code)])


