"""One way to configure a model, whoever it serves: the judges, the agent, the user simulator, the compiler.

``ModelSettings`` is a small frozen value (it travels to ``spawn`` worker processes and Ray
tasks); ``client()`` makes the checked ``LLMClient`` inside the process that calls the model.
``add_model_flags`` gives a parser the flags of one such model under a prefix
(``--judge-model``, ``--agent-api-base``, ``--compile-timeout``...), and ``model_from_args``
reads them back. Every field can also come from the environment variable
``DYNSTEER_<PREFIX>_<FIELD>`` (``DYNSTEER_JUDGE_MODEL``, ``DYNSTEER_AGENT_API_BASE``...): a flag
beats the environment, which beats the default. API keys never travel in settings: only the
name of the variable holding one does.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any, Literal

from dynsteer_hook.model.errors import ConfigError

if TYPE_CHECKING:
    from dynsteer_hook.llm import LLMClient

JsonMode = Literal["auto", "object", "schema", "off"]
JSON_MODES: tuple[str, ...] = ("auto", "object", "schema", "off")
ToolChoice = Literal["auto", "required", "none", "omit"]
TOOL_CHOICES: tuple[str, ...] = ("auto", "required", "none", "omit")
_CHOICES: Mapping[str, tuple[str, ...]] = {"json_mode": JSON_MODES, "tool_choice": TOOL_CHOICES}


@dataclass(frozen=True)
class ModelSettings:
    """The model behind one role, and how it is called.

    Attributes:
        model: A litellm model string, e.g. ``openai/gpt-4o-mini``, or ``openai/<name>`` with
            ``api_base``; None when no model is configured.
        api_base: Endpoint of an OpenAI-compatible server (vLLM, Ollama, llama.cpp); None for the provider's own.
        api_key_env: Environment variable holding the API key; None lets litellm read the provider's own.
        temperature: Sampling temperature.
        timeout: Seconds one attempt may take as a whole, from connecting to the last byte of the answer.
        max_retries: Retries after the first attempt on timeouts, 429, 5xx and connection errors.
        max_tokens: Answer length limit per call (None: the caller's or the provider's default).
        backoff: Seconds before the first retry, doubled for each next one (at most 30 s).
        json_mode: How JSON answers are asked for (see ``LLMClient.json_mode``).
        tool_choice: ``tool_choice`` sent with offered tools (agent and user roles): ``auto``
            (the default: local servers such as llama.cpp ignore tools without it), ``required``,
            ``none``, or ``omit`` to send nothing.
        prefix: Which flags named it (``judge``, ``agent``, ``user``, ``compile``), for messages.
    """

    model: str | None = None
    api_base: str | None = None
    api_key_env: str | None = None
    temperature: float = 0.7
    timeout: float = 120.0
    max_retries: int = 3
    max_tokens: int | None = 2048
    backoff: float = 1.0
    json_mode: JsonMode = "auto"
    tool_choice: ToolChoice = "auto"
    prefix: str = "model"

    def flag(self, field: str) -> str:
        """The command-line flag of one of the fields, e.g. ``--agent-api-key-env``."""
        return f"--{self.prefix}-{field.replace('_', '-')}"

    def check(self, origins: Mapping[str, str] | None = None) -> None:
        """Fail with one sentence naming where a value came from when it is out of range (a model need not be set).

        Args:
            origins: Field -> the flag or environment variable that gave it (default: the flag).
        """
        problems = [
            (self.timeout <= 0, "timeout", "must be positive (seconds)"),
            (self.max_retries < 0, "max_retries", "must be 0 or more"),
            (self.max_tokens is not None and self.max_tokens < 1, "max_tokens", "must be at least 1"),
            (self.backoff < 0, "backoff", "must be 0 or more (seconds)"),
            (not 0 <= self.temperature <= 2, "temperature", "must be between 0 and 2"),
            (self.json_mode not in JSON_MODES, "json_mode", f"must be one of {', '.join(JSON_MODES)}"),
            (self.tool_choice not in TOOL_CHOICES, "tool_choice", f"must be one of {', '.join(TOOL_CHOICES)}"),
        ]
        for bad, field, rule in problems:
            if bad:
                where = (origins or {}).get(field, self.flag(field))
                raise ConfigError(f"{where} {rule}, not {getattr(self, field)!r}")

    def client(self) -> LLMClient:
        """A checked client for this model.

        Raises:
            ConfigError: No model is set, a value is out of range, or the named key variable is not set.
            LLMUsageError: Unknown provider or missing key (one sentence naming the fix).
        """
        from dynsteer_hook.llm import LLMClient, api_key_from_env

        if not self.model:
            raise ConfigError(f"no model is set; pass {self.flag('model')} (or set {env_name(self.prefix, 'model')})")
        self.check()
        client = LLMClient(
            self.model, api_base=self.api_base, api_key=api_key_from_env(self.api_key_env, self.flag("api_key_env")),
            timeout=self.timeout, max_retries=self.max_retries, backoff_base=self.backoff, temperature=self.temperature,
            max_tokens=self.max_tokens, json_mode=self.json_mode,
        )
        client.check()
        return client


FIELDS: tuple[str, ...] = tuple(f.name for f in fields(ModelSettings) if f.name != "prefix")

_HELP: Mapping[str, str] = {
    "model": "litellm model string, e.g. openai/gpt-4o-mini, anthropic/claude-3-5-haiku-latest, ollama/llama3, or openai/<name> with an api base",
    "api_base": "endpoint of an OpenAI-compatible server (vLLM, Ollama, llama.cpp, a proxy)",
    "api_key_env": "environment variable holding the API key (default: the provider's own)",
    "temperature": "sampling temperature",
    "timeout": "seconds per attempt of a call, whole answer included",
    "max_retries": "retries on timeouts, 429, 5xx and connection errors",
    "max_tokens": "answer length limit per call",
    "backoff": "seconds before the first retry, doubled for each next one (at most 30)",
    "json_mode": "how JSON answers are asked for: auto, object, schema or off",
    "tool_choice": "tool_choice sent with the offered tools: auto (local servers such as llama.cpp ignore tools without it), "
                   "required, none, or omit (send nothing)",
}
_METAVARS: Mapping[str, str] = {"api_key_env": "VAR", "backoff": "SECONDS", "model": "MODEL", "api_base": "URL"}


def env_name(prefix: str, field: str) -> str:
    """The environment variable of one field of one model, e.g. ``DYNSTEER_JUDGE_API_BASE``."""
    return f"DYNSTEER_{prefix.upper()}_{field.upper()}"


def _parser(field: str) -> Callable[[str], Any]:
    kind = {"temperature": float, "timeout": float, "backoff": float, "max_retries": int, "max_tokens": int}.get(field)
    return kind if kind is not None else str


def add_model_flags(parser: argparse.ArgumentParser | Any, defaults: ModelSettings, *, title: str,
                    skip: Sequence[str] = (), aliases: Mapping[str, str] | None = None) -> None:
    """Add the flags of one model under ``defaults.prefix`` (``--<prefix>-model``, ``--<prefix>-api-base``...).

    Args:
        parser: The parser (or subparser) to extend.
        defaults: The role's defaults and its prefix; shown in the help.
        title: The heading of the flags' group in the help.
        skip: Fields that mean nothing for this role (no flag is added).
        aliases: Older flag names kept working, field -> flag (``{"model": "--model"}``).
    """
    group = parser.add_argument_group(title)
    for field in FIELDS:
        if field in skip:
            continue
        names = [defaults.flag(field)] + ([aliases[field]] if aliases and field in aliases else [])
        default = getattr(defaults, field)
        shown = f" (default {default})" if default is not None else ""
        choices = _CHOICES.get(field)
        group.add_argument(*names, dest=f"{defaults.prefix}_{field}", default=None, type=_parser(field), choices=choices,
                           metavar=None if choices else _METAVARS.get(field, _parser(field).__name__.upper()),
                           help=f"{_HELP[field]}{shown}; env {env_name(defaults.prefix, field)}")


def setting(args: argparse.Namespace, prefix: str, field: str, default: Any, environ: Mapping[str, str] | None = None) -> Any:
    """One setting: the flag when given, else ``DYNSTEER_<PREFIX>_<FIELD>`` when set, else ``default``.

    Raises:
        ConfigError: The environment variable holds a value of the wrong kind (one sentence naming it).
    """
    value = getattr(args, f"{prefix}_{field}", None)
    if value is not None:
        return value
    env = os.environ if environ is None else environ
    raw = env.get(env_name(prefix, field))
    if raw is None or raw == "":
        return default
    kind = type(default) if default is not None and not isinstance(default, str) else _parser(field)
    try:
        return kind(raw)
    except ValueError:
        raise ConfigError(f"{env_name(prefix, field)}={raw!r} is not {'a number' if kind in (int, float) else 'valid'}; "
                          f"fix or unset the variable, or pass --{prefix}-{field.replace('_', '-')}") from None


def model_from_args(args: argparse.Namespace, defaults: ModelSettings, environ: Mapping[str, str] | None = None) -> ModelSettings:
    """The settings the flags, then the environment, then ``defaults`` give (range-checked).

    Raises:
        ConfigError: A value is out of range or an environment variable is malformed (one sentence).
    """
    env = os.environ if environ is None else environ
    chosen = {f: setting(args, defaults.prefix, f, getattr(defaults, f), env) for f in FIELDS}
    origins = {f: defaults.flag(f) if getattr(args, f"{defaults.prefix}_{f}", None) is not None else env_name(defaults.prefix, f)
               for f in FIELDS if getattr(args, f"{defaults.prefix}_{f}", None) is not None or env.get(env_name(defaults.prefix, f))}
    settings = replace(defaults, **chosen)
    settings.check(origins)
    return settings
