"""Scripted agent and user roles: rollouts with no LLM, for tests, demos and replaying a plan live.

A script maps a scenario name to ``{"agent": [STEP, ...], "user": ["utterance", ...]}``.
A STEP is ``{"say": "text"}`` or ``{"tool_calls": [{"name": AGENT_FACING_NAME,
"arguments": {...}}, ...]}``; several calls in one step are parallel calls. When its
steps run out the agent says it is done; when its utterances run out the user ends the
conversation with ToolSandbox's ``end_conversation`` tool.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from dynsteer_hook.files.inputs import load_json_input
from dynsteer_hook.model.errors import ScenarioError, validation_problem
from dynsteer_hook.toolsandbox import _quiet  # noqa: F401 - must precede the tool_sandbox imports
from dynsteer_hook.toolsandbox.calls import gate, offered_tools

from tool_sandbox.common.execution_context import RoleType
from tool_sandbox.common.message_conversion import Message
from tool_sandbox.roles.base_role import BaseRole

DONE_MESSAGE = "I have completed the task."


class ScriptedCall(BaseModel):
    """One tool call of a step. ``arguments`` may be a string to send a malformed payload."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str = Field(min_length=1, description="Agent-facing tool name (scrambled where the scenario scrambles).")
    arguments: dict[str, Any] | str = Field(default_factory=dict)


class ScriptedStep(BaseModel):
    """Say something to the user, or issue tool calls."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    say: str | None = None
    tool_calls: list[ScriptedCall] | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> ScriptedStep:
        if (self.say is None) == (self.tool_calls is None):
            raise ValueError("a step has exactly one of 'say' or 'tool_calls'")
        if self.tool_calls is not None and not self.tool_calls:
            raise ValueError("'tool_calls' must list at least one call")
        return self


class ScenarioScript(BaseModel):
    """The agent's steps and the user's utterances for one scenario."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    agent: list[ScriptedStep] = Field(default_factory=list)
    user: list[str] = Field(default_factory=list)


def load_script(path: str | Path) -> dict[str, ScenarioScript]:
    """Read a script file (scenario name -> script).

    Raises:
        ScenarioError: Missing, unreadable, not JSON, or malformed (one sentence naming the file or the scenario).
    """
    p = Path(path)
    # A script is as hostile as a model: its lone surrogates are repaired where its messages are stored (roles.repair).
    _, data = load_json_input(p, "script file", "pass --script with a JSON file", ScenarioError, surrogates=True)
    if not isinstance(data, dict):
        raise ScenarioError(f"script file {p} must map scenario names to scripts, found {type(data).__name__}")
    scripts: dict[str, ScenarioScript] = {}
    for name, raw in data.items():
        if name.startswith("_"):
            continue  # comments and metadata
        try:
            scripts[name] = ScenarioScript.model_validate(raw)
        except ValidationError as exc:
            raise ScenarioError(f"script file {p}: scenario {name!r} is malformed at {validation_problem(exc)}") from None
    return scripts


class ScriptedAgent(BaseRole):
    """An agent that plays a fixed list of steps."""

    role_type: RoleType = RoleType.AGENT

    def __init__(self, steps: list[ScriptedStep]) -> None:
        self.steps = list(steps)
        self.turn = 0

    def respond(self, ending_index: int | None = None) -> None:
        messages = self.get_messages(ending_index=ending_index)
        self.messages_validation(messages=messages)
        messages = self.filter_messages(messages=messages)
        if messages[-1].sender == RoleType.SYSTEM:
            return
        step = self.steps[self.turn] if self.turn < len(self.steps) else ScriptedStep(say=DONE_MESSAGE)
        self.turn += 1
        if step.say is not None:
            self.add_messages([Message(sender=self.role_type, recipient=RoleType.USER, content=step.say)])
            return
        # Through the gate: a name that is not an offered tool, or arguments that are not a JSON
        # object, become a tool error the agent sees; a script is as untrusted as a model.
        offered = offered_tools(self.role_type)
        out: list[Message] = []
        for i, call in enumerate(step.tool_calls or []):
            gated = gate(f"call_{self.turn}_{i}", call.name, call.arguments, offered)
            out.append(
                Message(
                    sender=self.role_type,
                    recipient=RoleType.EXECUTION_ENVIRONMENT,
                    content=gated.code,
                    openai_tool_call_id=gated.call_id,
                    openai_function_name=call.name,
                )
            )
        self.add_messages(out)


class ScriptedUser(BaseRole):
    """A user that answers each agent message with the next utterance, then ends the conversation."""

    role_type: RoleType = RoleType.USER

    def __init__(self, utterances: list[str]) -> None:
        self.utterances = list(utterances)
        self.turn = 0

    def respond(self, ending_index: int | None = None) -> None:
        messages = self.get_messages(ending_index=ending_index)
        self.messages_validation(messages=messages)
        messages = self.filter_messages(messages=messages)
        if messages[-1].sender != RoleType.AGENT:
            return
        if self.turn < len(self.utterances):
            text = self.utterances[self.turn]
            self.turn += 1
            self.add_messages([Message(sender=self.role_type, recipient=RoleType.AGENT, content=text)])
            return
        self.add_messages(
            [
                Message(
                    sender=self.role_type,
                    recipient=RoleType.EXECUTION_ENVIRONMENT,
                    content=gate("user_end", "end_conversation", {}, offered_tools(self.role_type)).code,
                )
            ]
        )
