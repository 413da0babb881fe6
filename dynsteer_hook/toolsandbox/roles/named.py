"""Agent and user roles by the names ToolSandbox's CLI uses, imported only when chosen.

ToolSandbox's own CLI imports every provider SDK up front; here a role's module is
imported when it is picked, so a run with scripted roles needs none of them.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from dynsteer_hook.llm.settings import ModelSettings
from dynsteer_hook.model.errors import ScenarioError

if TYPE_CHECKING:
    from tool_sandbox.roles.base_role import BaseRole

SCRIPTED = "Scripted"
LITELLM = "LiteLLM"


@dataclass(frozen=True, slots=True)
class RoleFactory:
    """Where a role class lives and the keyword arguments it is built with."""

    target: str
    kwargs: Mapping[str, Any] = field(default_factory=dict)

    def load(self) -> type[BaseRole]:
        from dynsteer_hook.toolsandbox import _quiet  # noqa: F401

        module_name, _, cls_name = self.target.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise ScenarioError(
                f"role {cls_name} needs the package {exc.name!r}, which is not installed; pip install it or pick another role"
            ) from None
        cls: type[BaseRole] = getattr(module, cls_name)
        return cls

    def model_name(self, fallback: str) -> str:
        """The model name ToolSandbox uses in output directory names."""
        if "model_name" in self.kwargs:
            return str(self.kwargs["model_name"])
        try:
            return str(getattr(self.load(), "model_name", fallback))
        except ScenarioError:
            return fallback

    def build(self) -> BaseRole:
        return self.load()(**self.kwargs)


_R = "tool_sandbox.roles."
AGENTS: dict[str, RoleFactory] = {
    "Hermes": RoleFactory(_R + "hermes_api_agent:HermesAPIAgent", {"model_name": "NousResearch/Hermes-2-Pro-Mistral-7B"}),
    "Gorilla": RoleFactory(_R + "gorilla_api_agent:GorillaAPIAgent", {"model_name": "gorilla-llm/gorilla-openfunctions-v2"}),
    "MistralOpenAIServer": RoleFactory(_R + "mistral_api_agent:MistralOpenAIServerAgent", {"model_name": "mistralai/Mistral-7B-Instruct-v0.3"}),
    "GPT_3_5_0125": RoleFactory(_R + "openai_api_agent:GPT_3_5_0125_Agent"),
    "GPT_4_0125": RoleFactory(_R + "openai_api_agent:GPT_4_0125_Agent"),
    "GPT_4_o_2024_05_13": RoleFactory(_R + "openai_api_agent:GPT_4_o_2024_05_13_Agent"),
    "Claude_3_Opus": RoleFactory(_R + "anthropic_api_agent:ClaudeOpusAgent"),
    "Claude_3_Sonnet": RoleFactory(_R + "anthropic_api_agent:ClaudeSonnetAgent"),
    "Claude_3_Haiku": RoleFactory(_R + "anthropic_api_agent:ClaudeHaikuAgent"),
    "Gemini_1_0": RoleFactory(_R + "gemini_agent:GeminiAgent", {"model_name": "gemini-1.0-pro"}),
    "Gemini_1_5": RoleFactory(_R + "gemini_agent:GeminiAgent", {"model_name": "gemini-1.5-pro-001"}),
    "Gemini_1_5_Flash": RoleFactory(_R + "gemini_agent:GeminiAgent", {"model_name": "gemini-1.5-flash-001"}),
    "Cli": RoleFactory(_R + "cli_role:CliAgent"),
    "Cohere_Command_R": RoleFactory(_R + "cohere_agent:CohereAgent", {"model_name": "CohereForAI/c4ai-command-r-v01"}),
    "Cohere_Command_R_Plus": RoleFactory(_R + "cohere_agent:CohereAgent", {"model_name": "CohereForAI/c4ai-command-r-plus"}),
    "Unhelpful": RoleFactory(_R + "unhelpful_agent:UnhelpfulAgent"),
}
USERS: dict[str, RoleFactory] = {
    "GPT_3_5_0125": RoleFactory(_R + "openai_api_user:GPT_3_5_0125_User"),
    "GPT_4_0125": RoleFactory(_R + "openai_api_user:GPT_4_0125_User"),
    "GPT_4_o_2024_05_13": RoleFactory(_R + "openai_api_user:GPT_4_o_2024_05_13_User"),
    "Cli": RoleFactory(_R + "cli_role:CliUser"),
}
AGENT_CHOICES = [*AGENTS, SCRIPTED, LITELLM]
USER_CHOICES = [*USERS, SCRIPTED, LITELLM]


AGENT_MODEL = ModelSettings(prefix="agent", temperature=0.0, timeout=120.0, max_retries=3, max_tokens=1024)
"""Defaults of the LiteLLM agent's model (``--agent-*``, ``DYNSTEER_AGENT_*``): greedy answers."""
USER_MODEL = ModelSettings(prefix="user", temperature=0.7, timeout=120.0, max_retries=3, max_tokens=1024)
"""Defaults of the LiteLLM user's model (``--user-*``, ``DYNSTEER_USER_*``)."""


def litellm_role(kind: Literal["agent", "user"], settings: ModelSettings) -> BaseRole:
    """The LiteLLM agent or user, calling ``settings``' model through a checked client."""
    from dynsteer_hook.toolsandbox.roles.litellm_roles import LiteLLMAgent, LiteLLMUser

    tool_choice = None if settings.tool_choice == "omit" else settings.tool_choice
    return (LiteLLMAgent if kind == "agent" else LiteLLMUser)(settings.client(), tool_choice=tool_choice)
