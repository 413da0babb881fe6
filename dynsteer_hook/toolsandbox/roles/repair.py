"""Text no encoder accepts, repaired before ToolSandbox stores it.

ToolSandbox keeps every message in a polars table, whose Rust side panics on a lone UTF-16
surrogate (``"\\ud800"``, which any JSON text can spell and any model can produce). So each
role's messages (the agent's, the user's, the execution environment's tool output) have such
characters replaced with U+FFFD as they are added, and the number replaced is counted, for
the report to say so. A call's arguments are not repaired: the gate refuses them as malformed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import attrs

from dynsteer_hook.model.json_text import repair_text
from dynsteer_hook.toolsandbox import _quiet  # noqa: F401 - must precede the tool_sandbox imports

from tool_sandbox.common.message_conversion import Message
from tool_sandbox.roles.base_role import BaseRole

_TEXT_FIELDS = ("content", "openai_tool_call_id", "openai_function_name", "tool_call_exception")


@dataclass
class TextRepairs:
    """What was repaired in one rollout: the messages touched and the characters replaced, by role."""

    messages: int = 0
    characters: int = 0
    roles: dict[str, int] | None = None

    def note(self) -> str | None:
        """The report's sentence about the repairs, or None when there were none."""
        if not self.messages:
            return None
        by = ", ".join(f"{role} {n}" for role, n in sorted((self.roles or {}).items()))
        return (f"{self.messages} message(s) ({by}) held {self.characters} lone UTF-16 surrogate(s), text no encoder "
                "accepts; each was replaced with U+FFFD before it was stored")


def repair_message(message: Message) -> tuple[Message, int]:
    """The message with every lone surrogate in its text fields replaced, and how many were."""
    changes: dict[str, Any] = {}
    n = 0
    for name in _TEXT_FIELDS:
        value = getattr(message, name)
        if isinstance(value, str):
            fixed, k = repair_text(value)
            if k:
                changes[name], n = fixed, n + k
    trace = message.tool_trace
    if trace:
        fixed_trace = [repair_text(x) if isinstance(x, str) else (x, 0) for x in trace]
        k = sum(c for _, c in fixed_trace)
        if k:
            changes["tool_trace"], n = [x for x, _ in fixed_trace], n + k
    return (attrs.evolve(message, **changes), n) if changes else (message, 0)


def guard_text(role: BaseRole, repairs: TextRepairs) -> BaseRole:
    """Make ``role`` repair the messages it adds (in place; the role is returned)."""
    add = role.add_messages
    name = str(role.role_type)

    def add_messages(messages: list[Message]) -> None:
        out = []
        for m in messages:
            fixed, n = repair_message(m)
            if n:
                repairs.messages += 1
                repairs.characters += n
                repairs.roles = {**(repairs.roles or {}), name: (repairs.roles or {}).get(name, 0) + 1}
            out.append(fixed)
        add(out)

    role.add_messages = add_messages
    return role
