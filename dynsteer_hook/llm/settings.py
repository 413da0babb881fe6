"""One way to configure a model, whoever it serves: the judges, the agent, the user simulator, the compiler.

``ModelSettings`` is a small frozen value (it travels to ``spawn`` worker processes and Ray
tasks); ``client()`` makes the checked ``LLMClient`` inside the process that calls the model.
Each field is declared once, with its help (``option``): ``dynsteer_hook.flags`` turns the
fields into the flags of one model under a prefix (``--judge-model``, ``--agent-api-base``,
``--compile-timeout``...) and reads them back, each also from the environment variable
``DYNSTEER_<PREFIX>_<FIELD>`` (``DYNSTEER_JUDGE_MODEL``, ``DYNSTEER_AGENT_API_BASE``...): a flag
beats the environment, which beats the default. API keys never travel in settings: only the
name of the variable holding one does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Literal

from dynsteer_hook.llm.completion import MAX_RETRIES, MAX_SECONDS
from dynsteer_hook.model.errors import ConfigError

if TYPE_CHECKING:
    from dynsteer_hook.llm.client import LLMClient

JsonMode = Literal["auto", "object", "schema", "off"]
JSON_MODES: tuple[str, ...] = ("auto", "object", "schema", "off")
ToolChoice = Literal["auto", "required", "none", "omit"]
TOOL_CHOICES: tuple[str, ...] = ("auto", "required", "none", "omit")


def option(help: str, *, kind: Callable[[str], Any] = str, metavar: str | None = None,
           choices: tuple[str, ...] | None = None) -> dict[str, Any]:
    """What a settings field's flag and environment variable say and take: the ``metadata`` it is declared with.

    Args:
        help: The flag's help, without the default and the variable (``flags`` adds both).
        kind: Reads the flag's or the variable's text.
        metavar: The flag's placeholder in the help (argparse's own when None).
        choices: The only values accepted.
    """
    return {"help": help, "kind": kind, "metavar": metavar, "choices": choices}


def env_name(prefix: str, field: str) -> str:
    """The environment variable of one field of one model, e.g. ``DYNSTEER_JUDGE_API_BASE``."""
    return f"DYNSTEER_{prefix.upper()}_{field.upper()}"


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

    model: str | None = field(default=None, metadata=option(
        "litellm model string, e.g. openai/gpt-4o-mini, anthropic/claude-3-5-haiku-latest, ollama/llama3, or openai/<name> with an api base",
        metavar="MODEL"))
    api_base: str | None = field(default=None, metadata=option("endpoint of an OpenAI-compatible server (vLLM, Ollama, llama.cpp, a proxy)", metavar="URL"))
    api_key_env: str | None = field(default=None, metadata=option("environment variable holding the API key (default: the provider's own)", metavar="VAR"))
    temperature: float = field(default=0.7, metadata=option("sampling temperature", kind=float, metavar="FLOAT"))
    timeout: float = field(default=120.0, metadata=option("seconds per attempt of a call, whole answer included", kind=float, metavar="FLOAT"))
    max_retries: int = field(default=3, metadata=option("retries on timeouts, 429, 5xx and connection errors", kind=int, metavar="INT"))
    max_tokens: int | None = field(default=2048, metadata=option("answer length limit per call", kind=int, metavar="INT"))
    backoff: float = field(default=1.0, metadata=option("seconds before the first retry, doubled for each next one (at most 30)", kind=float,
                                                        metavar="SECONDS"))
    json_mode: JsonMode = field(default="auto", metadata=option("how JSON answers are asked for: auto, object, schema or off", choices=JSON_MODES))
    tool_choice: ToolChoice = field(default="auto", metadata=option(
        "tool_choice sent with the offered tools: auto (local servers such as llama.cpp ignore tools without it), required, none, "
        "or omit (send nothing)", choices=TOOL_CHOICES))
    prefix: str = "model"

    def flag(self, field: str) -> str:
        """The command-line flag of one of the fields, e.g. ``--agent-api-key-env``."""
        return f"--{self.prefix}-{field.replace('_', '-')}"

    def check(self, origins: Mapping[str, str] | None = None) -> None:
        """Fail with one sentence naming where a value came from when it is out of range (a model need not be set).

        Args:
            origins: Field -> the flag or environment variable that gave it (default: the flag).
        """
        # NaN passes every comparison, and a wait of 1e308 s overflows the thread's timer: both are refused here.
        problems = [
            (not 0 < self.timeout <= MAX_SECONDS, "timeout", f"must be positive and at most {MAX_SECONDS:g} (seconds)"),
            (not 0 <= self.max_retries <= MAX_RETRIES, "max_retries", f"must be between 0 and {MAX_RETRIES}"),
            (self.max_tokens is not None and self.max_tokens < 1, "max_tokens", "must be at least 1"),
            (not 0 <= self.backoff <= MAX_SECONDS, "backoff", f"must be between 0 and {MAX_SECONDS:g} (seconds)"),
            (not 0 <= self.temperature <= 2, "temperature", "must be between 0 and 2"),
            (self.json_mode not in JSON_MODES, "json_mode", f"must be one of {', '.join(JSON_MODES)}"),
            (self.tool_choice not in TOOL_CHOICES, "tool_choice", f"must be one of {', '.join(TOOL_CHOICES)}"),
        ]
        for bad, name, rule in problems:
            if bad:
                where = (origins or {}).get(name, self.flag(name))
                raise ConfigError(f"{where} {rule}, not {getattr(self, name)!r}")

    def client(self) -> LLMClient:
        """A checked client for this model.

        Raises:
            ConfigError: No model is set, a value is out of range, or the named key variable is not set.
            LLMUsageError: Unknown provider or missing key (one sentence naming the fix).
        """
        from dynsteer_hook.llm.client import LLMClient
        from dynsteer_hook.llm.endpoint import api_key_from_env

        if not self.model:
            raise ConfigError(f"no model is set; pass {self.flag('model')} (or set {env_name(self.prefix, 'model')})")
        self.check()
        client = LLMClient(
            self.model, api_base=self.api_base, api_key=api_key_from_env(self.api_key_env, self.flag("api_key_env")),
            timeout=self.timeout, max_retries=self.max_retries, backoff_base=self.backoff, temperature=self.temperature,
            max_tokens=self.max_tokens, json_mode=self.json_mode, flags="" if self.prefix == "model" else self.prefix,
        )
        client.check()
        return client


FIELDS: tuple[str, ...] = tuple(f.name for f in fields(ModelSettings) if f.name != "prefix")
"""The fields of a model that are flags and environment variables (``prefix`` names them)."""
