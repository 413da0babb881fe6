"""Agent and user roles by the names ToolSandbox's CLI uses, imported only when chosen.

ToolSandbox's own CLI imports every provider SDK up front; here a role's module is
imported when it is picked, so a run with scripted roles needs none of them.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from dynsteer_hook.errors import ScenarioError

if TYPE_CHECKING:
    from dynsteer_hook.llm import LLMClient

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


@dataclass(frozen=True)
class RoleModelSettings:
    """The model behind a LiteLLM agent or user (a small frozen value, so it travels to worker processes).

    Attributes:
        role: ``agent`` or ``user``: which role it plays (and which flags named it).
        model: A litellm model string, e.g. ``openai/gpt-4o-mini``, or ``openai/<name>`` with ``api_base``.
        api_base: Endpoint of an OpenAI-compatible server (vLLM, Ollama, llama.cpp); None for the provider's own.
        api_key_env: Environment variable holding the key; None lets litellm read the provider's own variable.
        temperature: Sampling temperature.
        timeout: Seconds allowed per call.
        max_retries: Retries on timeouts, 429, 5xx and connection errors.
        max_tokens: Answer length limit per turn.
        tool_choice: Sent with the offered tools: ``auto`` (the default: the model may call
            them; local servers such as llama.cpp ignore tools without it), ``required``,
            ``none``, or ``None`` to send nothing.
    """

    role: Literal["agent", "user"]
    model: str
    api_base: str | None = None
    api_key_env: str | None = None
    temperature: float = 0.0
    timeout: float = 120.0
    max_retries: int = 3
    max_tokens: int = 1024
    tool_choice: Literal["auto", "required", "none"] | None = "auto"

    def client(self) -> LLMClient:
        """A checked client for this model.

        Raises:
            ConfigError: The named key variable is not set.
            LLMUsageError: Unknown provider or missing key (one sentence naming the fix).
        """
        from dynsteer_hook.llm import LLMClient, api_key_from_env

        client = LLMClient(
            self.model, api_base=self.api_base, api_key=api_key_from_env(self.api_key_env, f"--{self.role}-api-key-env"),
            timeout=self.timeout, max_retries=self.max_retries, temperature=self.temperature, max_tokens=self.max_tokens,
        )
        client.check()
        return client

    def build(self) -> BaseRole:
        from dynsteer_hook.toolsandbox.llm_roles import LiteLLMAgent, LiteLLMUser

        return (LiteLLMAgent if self.role == "agent" else LiteLLMUser)(self.client(), tool_choice=self.tool_choice)
