"""Agent and user roles for any model litellm reaches (``--agent LiteLLM --agent-model MODEL``,
``--user LiteLLM --user-model MODEL``).

ToolSandbox's own LLM roles each need their provider's SDK and key; these go through the
package's LLM client, so any litellm model string and any OpenAI-compatible server (vLLM,
Ollama, a llama.cpp server) can play the agent or simulate the user. Each sees exactly
what ToolSandbox's OpenAI role of the same kind sees (the same message and tool
conversion, scrambled names included, the scenario's user-simulator prompt for the user)
and answers the same way. Every call goes through the tool-call gate (``calls.gate``): a
name that is not one of the role's offered tools, or arguments that are not a JSON object,
never reach the interpreter; the call becomes a tool error the model and the evaluator
see, as they would for any misbehaving agent.
"""

from __future__ import annotations

import re
from typing import Any

from dynsteer_hook.llm.client import LLMClient
from dynsteer_hook.llm.completion import Completion, Usage
from dynsteer_hook.model.spending import Spend
from dynsteer_hook.toolsandbox import _quiet  # noqa: F401 - must precede the tool_sandbox imports
from dynsteer_hook.toolsandbox.calls import gate, offered_tools

from tool_sandbox.common.execution_context import RoleType
from tool_sandbox.common.message_conversion import Message, to_openai_messages
from tool_sandbox.common.tool_conversion import convert_to_openai_tool, convert_to_openai_tools
from tool_sandbox.roles.base_role import BaseRole
from tool_sandbox.roles.openai_api_user import OpenAIAPIUser


def _call_ids(ids: list[str]) -> list[str]:
    """The calls' ids as distinct plain identifiers of at most 48 characters: ToolSandbox names
    variables after them and reads the id back from the code when it rebuilds the conversation."""
    out: list[str] = []
    for i, raw in enumerate(ids):
        ident = re.sub(r"\W", "_", raw[:40], flags=re.ASCII) or f"call_{i}"
        if not ident[0].isalpha():
            ident = "call_" + ident
        while ident in out:
            ident = f"{ident[:40]}_{i}"
        out.append(ident)
    return out


class _LiteLLMRole(BaseRole):
    """Calls through ``LLMClient``; ``calls`` and ``usage`` count what the role spent."""

    def __init__(self, client: LLMClient, *, tool_choice: str | None = "auto") -> None:
        self.client = client
        self.tool_choice = tool_choice
        self.model_name = client.model
        self.calls = 0
        self.usage = Usage()

    answers_to: RoleType
    """Whom a text answer goes to."""
    tools_after: tuple[RoleType, ...]
    """Senders after whose message the role is offered its tools."""

    def _tools(self) -> list[dict[str, Any]]:
        raise NotImplementedError

    def _conversation(self, messages: list[Message]) -> list[dict[str, Any]]:
        raise NotImplementedError

    def _calls(self, completion: Completion) -> list[Message]:
        raise NotImplementedError

    def respond(self, ending_index: int | None = None) -> None:
        messages: list[Message] = self.get_messages(ending_index=ending_index)
        self.messages_validation(messages=messages)
        messages = self.filter_messages(messages=messages)
        if messages[-1].sender == RoleType.SYSTEM:
            return
        offer_tools = messages[-1].sender in self.tools_after
        completion = self.client.complete(self._conversation(messages), tools=self._tools() if offer_tools else None,
                                          tool_choice=self.tool_choice if offer_tools else None)
        self.calls += 1
        self.usage = self.usage + completion.usage
        if completion.tool_calls and offer_tools:
            self.add_messages(self._calls(completion))
        else:
            self.add_messages([Message(sender=self.role_type, recipient=self.answers_to, content=completion.text)])

    def _calls_to_environment(self, completion: Completion, *, openai_ids: bool) -> list[Message]:
        # Through the gate: the model's name is looked up exactly among the role's offered tools
        # and its arguments decoded as JSON; anything else becomes a tool error the model sees.
        offered = offered_tools(self.role_type)
        ids = _call_ids([call.id for call in completion.tool_calls])
        out: list[Message] = []
        for call_id, call in zip(ids, completion.tool_calls, strict=True):
            gated = gate(call_id, call.name, call.arguments, offered)
            out.append(
                Message(
                    sender=self.role_type,
                    recipient=RoleType.EXECUTION_ENVIRONMENT,
                    content=gated.code,
                    openai_tool_call_id=gated.call_id if openai_ids else None,
                    # A nameless call keeps a placeholder name in the history sent back to the model:
                    # providers refuse a tool call whose name is empty.
                    openai_function_name=(call.name or "unnamed_call") if openai_ids else None,
                )
            )
        return out

    def spending(self) -> Spend:
        """What this role's model calls cost so far, as the rollout's cost record counts it."""
        u = self.usage
        return Spend(self.calls, u.prompt_tokens, u.completion_tokens, u.cost_usd, tokens_known=u.tokens_known, cost_known=u.cost_known)

    def spent(self) -> dict[str, Any]:
        """Calls, tokens and cost of this role so far."""
        return {
            "model": self.model_name,
            "calls": self.calls,
            "prompt_tokens": self.usage.prompt_tokens,
            "completion_tokens": self.usage.completion_tokens,
            "cost_usd": round(self.usage.cost_usd, 6),
            "cost_known": self.usage.cost_known,
        }


class LiteLLMAgent(_LiteLLMRole):
    """The agent: tools are offered after a user or tool message, as ToolSandbox's OpenAI agent does."""

    role_type: RoleType = RoleType.AGENT
    answers_to = RoleType.USER
    tools_after = (RoleType.USER, RoleType.EXECUTION_ENVIRONMENT)

    def _tools(self) -> list[dict[str, Any]]:
        return convert_to_openai_tools(self.get_available_tools())  # type: ignore[no-any-return]

    def _conversation(self, messages: list[Message]) -> list[dict[str, Any]]:
        return to_openai_messages(messages)[0]  # type: ignore[no-any-return]

    def _calls(self, completion: Completion) -> list[Message]:
        return self._calls_to_environment(completion, openai_ids=True)


class LiteLLMUser(_LiteLLMRole):
    """The user simulator: prompted by the scenario's system message to the user, offered its tools
    (``end_conversation``) after an agent message, as ToolSandbox's OpenAI user is."""

    role_type: RoleType = RoleType.USER
    answers_to = RoleType.AGENT
    tools_after = (RoleType.AGENT,)

    def _tools(self) -> list[dict[str, Any]]:
        return [convert_to_openai_tool(t) for t in self.get_available_tools().values()]

    def _conversation(self, messages: list[Message]) -> list[dict[str, Any]]:
        return OpenAIAPIUser.to_openai_messages(messages)  # type: ignore[no-any-return]

    def _calls(self, completion: Completion) -> list[Message]:
        # As ToolSandbox's OpenAI user: no OpenAI ids, since the user's own history leaves its tool calls out.
        return self._calls_to_environment(completion, openai_ids=False)
