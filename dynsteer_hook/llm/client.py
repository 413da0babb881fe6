"""The client every language-model call of the package goes through, by litellm.

Every LLM call of the package (blueprint candidate synthesis, tier 2/3 stage judges, the
LiteLLM agent and user) goes through ``LLMClient``: any litellm model string and ``api_base`` (OpenAI,
Anthropic, vLLM, Ollama, a llama.cpp server). The client owns:

* retries, through tenacity: timeouts, 429, 5xx and connection errors (``classify``) are
  retried a bounded number of times with exponential backoff and jitter (``transport``,
  honouring ``Retry-After`` up to the cap), each wait logged as ``llm.retry``; other 4xx answers (bad
  key, bad request, unknown model) are not retried;
* a deadline per attempt: ``timeout`` bounds the whole attempt, from connecting to the
  last byte of the answer, so a server that trickles a few bytes at a time is cut off
  too (the HTTP client's own timeouts only bound each read); with retries a call ends
  within (1 + ``max_retries``) x ``timeout`` plus the backoff waits;
* accounting: tokens from the provider's usage block, cost from
  ``litellm.completion_cost`` when litellm knows the model's price, else 0 with a note;
* a JSON mode (``complete_json``) that asks the provider for JSON where it can, then
  validates the answer itself with ``Model.model_validate_json``.

Errors: ``LLMUsageError`` for what the user must fix (model string, API key, rejected
request), ``LLMUnavailableError`` when the provider keeps failing through every retry.
Model misbehaviour (empty, not JSON, wrong shape) is not an exception here: it comes
back in the ``JsonCompletion`` with the raw text, and ``unwrap`` turns it into
``LLMOutputError`` for callers that want one.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

import openai  # litellm's errors derive from the OpenAI client's
import structlog
from pydantic import BaseModel
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

from dynsteer_hook.llm._litellm import litellm, llm_errors
from dynsteer_hook.llm.completion import MAX_SECONDS, Completion, JsonCompletion, JsonMode, Message, ModelToolCall, Usage
from dynsteer_hook.llm.endpoint import LOCAL_PLACEHOLDER_KEY, endpoint_without_secrets
from dynsteer_hook.llm.output import parse_output
from dynsteer_hook.llm.transport import Backoff, classify, rejected_key, run_with_deadline, short_error, warm_up
from dynsteer_hook.model.errors import LLMError, LLMUnavailableError, LLMUsageError
from dynsteer_hook.model.json_text import repair_text

# Through the standard library's logging: a program embedding the package sees its warnings only, unless it
# configures logging (the command line does, in logs.py).
_log = structlog.wrap_logger(logging.getLogger(__name__))

T = TypeVar("T", bound=BaseModel)


@dataclass(frozen=True)
class LLMClient:
    """Settings of one model endpoint, and the calls made through it.

    Attributes:
        model: A litellm model string, e.g. ``openai/gpt-4o-mini``, ``anthropic/claude-3-5-haiku-latest``,
            ``ollama/llama3``, or ``openai/<name>`` with ``api_base`` for any OpenAI-compatible server.
        api_base: Endpoint URL (vLLM, Ollama, llama.cpp, a proxy); None for the provider's own.
        api_key: Key to send; None lets litellm read the provider's environment variable.
        timeout: Seconds one attempt may take as a whole, from connecting to the last byte of
            the answer; a call makes at most 1 + ``max_retries`` attempts, with backoff waits
            between them.
        max_retries: Retries after the first attempt for timeouts, 429, 5xx and connection errors.
        backoff_base: Seconds before the first retry; doubled for each next one.
        backoff_max: Cap on one wait, also on a server's Retry-After.
        temperature: Sampling temperature unless a call sets its own.
        max_tokens: Answer length limit unless a call sets its own (None: the provider's default).
        json_mode: How ``complete_json`` asks for JSON: ``object`` sends
            ``{"type": "json_object", "schema": ...}`` (llama.cpp, vLLM, Ollama), ``schema`` sends
            OpenAI's ``json_schema`` type, ``off`` sends nothing; ``auto`` picks ``object`` for a custom
            ``api_base``, ``schema`` where litellm says the model supports it, else a plain
            ``json_object``. A provider that rejects the format is asked again without it.
        extra: More keyword arguments for ``litellm.completion`` (e.g. ``mock_response`` in tests).
        sleep: The waiting function between retries (tests pass a recorder).
        flags: The prefix of the command-line flags that configured this model (``agent`` for
            ``--agent-api-base``...), so that an error names the flags of the command that was run;
            empty: the unprefixed ``--api-base``...
    """

    model: str
    api_base: str | None = None
    api_key: str | None = field(default=None, repr=False)
    timeout: float = 120.0
    max_retries: int = 3
    backoff_base: float = 1.0
    backoff_max: float = 30.0
    temperature: float = 0.7
    max_tokens: int | None = 2048
    json_mode: JsonMode = "auto"
    extra: Mapping[str, Any] = field(default_factory=dict)
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False, compare=False)
    flags: str = field(default="", repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.model or not self.model.strip():
            raise LLMUsageError("the model string is empty; pass a litellm model such as openai/gpt-4o-mini")
        if self.max_retries < 0:
            raise LLMUsageError(f"max_retries {self.max_retries} must be 0 or more")
        if not 0 < self.timeout <= MAX_SECONDS:  # NaN fails too; a longer wait would overflow the attempt's timer
            raise LLMUsageError(f"timeout {self.timeout} must be a positive number of seconds, at most {MAX_SECONDS:g}")
        if not (0 <= self.backoff_base <= MAX_SECONDS and 0 <= self.backoff_max <= MAX_SECONDS):
            raise LLMUsageError(f"backoff_base and backoff_max must be between 0 and {MAX_SECONDS:g} seconds")

    def flag(self, name: str) -> str:
        """The command-line flag that sets ``name`` (``api_base`` -> ``--agent-api-base`` for an agent's model)."""
        return f"--{self.flags + '-' if self.flags else ''}{name.replace('_', '-')}"

    @property
    def endpoint(self) -> str | None:
        """``api_base`` with any secret removed (None: the provider's own endpoint)."""
        return endpoint_without_secrets(self.api_base)

    def with_options(self, **changes: Any) -> LLMClient:
        """A copy with some settings changed."""
        return replace(self, **changes)

    # -- configuration checks -------------------------------------------------------

    def provider(self) -> str:
        """The litellm provider the model string names.

        Raises:
            LLMUsageError: litellm cannot tell the provider from the model string.
        """
        try:
            _, provider, _, _ = litellm.get_llm_provider(self.model, api_base=self.api_base)
        except Exception:
            raise LLMUsageError(
                f"model {self.model!r} names no provider litellm knows; write it as provider/model, e.g. openai/gpt-4o-mini, "
                f"anthropic/claude-3-5-haiku-latest, ollama/llama3, or openai/<name> with {self.flag('api_base')} for an OpenAI-compatible server"
            ) from None
        return str(provider)

    def _resolved_key(self) -> str | None:
        if self.api_key is not None:
            return self.api_key
        if "mock_response" in self.extra or "mock_timeout" in self.extra:
            return LOCAL_PLACEHOLDER_KEY
        env = litellm.validate_environment(model=self.model, api_base=self.api_base)
        missing = [k for k in env.get("missing_keys", []) if not k.endswith("_API_BASE")]
        if not missing:
            return None
        if self.api_base:
            return LOCAL_PLACEHOLDER_KEY
        raise LLMUsageError(
            f"model {self.model!r} needs an API key: set {' or '.join(missing)} in the environment, "
            f"or name another variable with {self.flag('api_key_env')}"
        )

    def check(self) -> None:
        """Check the model string and the API key before the first call.

        Raises:
            LLMUsageError: Unknown provider or missing API key (one sentence naming the fix).
        """
        self.provider()
        self._resolved_key()

    def _response_format(self, schema: Mapping[str, Any] | None) -> dict[str, Any] | None:
        mode = self.json_mode
        if mode == "auto" and not self.api_base:
            try:
                native = schema is not None and bool(litellm.supports_response_schema(self.model))
            except Exception:  # litellm raises for models it has never heard of
                native = False
            if not native:
                return {"type": "json_object"}  # hosted APIs may reject an unknown "schema" key
            mode = "schema"
        if mode == "off":
            return None
        if mode == "schema" and schema is not None:
            return {"type": "json_schema", "json_schema": {"name": "output", "schema": dict(schema), "strict": False}}
        fmt: dict[str, Any] = {"type": "json_object"}
        if schema is not None:
            fmt["schema"] = dict(schema)
        return fmt

    # -- calls ------------------------------------------------------------------------

    def _call(self, kwargs: dict[str, Any]) -> Any:
        # The deadline covers the whole answer: litellm's timeout only bounds each read.
        return run_with_deadline(lambda: litellm.completion(**kwargs), self.timeout)

    def _request(self, messages: Sequence[Message], temperature: float | None, max_tokens: int | None,
                 response_format: Mapping[str, Any] | None, tools: Sequence[Mapping[str, Any]] | None,
                 tool_choice: str | None) -> dict[str, Any]:
        """The keyword arguments of ``litellm.completion`` for one call (the model string and key checked first)."""
        self.provider()
        key = self._resolved_key()
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": [dict(m) for m in messages],
            "temperature": self.temperature if temperature is None else temperature,
            "timeout": self.timeout,
            "max_retries": 0,  # the OpenAI client's own retries would multiply ours
            "num_retries": 0,
            "drop_params": True,  # providers without a parameter (seed, response_format) ignore it
        }
        limit = self.max_tokens if max_tokens is None else max_tokens
        if limit is not None:
            kwargs["max_tokens"] = limit
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if key is not None:
            kwargs["api_key"] = key
        if response_format is not None:
            kwargs["response_format"] = dict(response_format)
        if tools:
            kwargs["tools"] = [dict(t) for t in tools]
            if tool_choice is not None:
                kwargs["tool_choice"] = tool_choice
        kwargs.update(self.extra)
        return kwargs

    def complete(
        self,
        messages: Sequence[Message],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        response_format: Mapping[str, Any] | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | None = None,
    ) -> Completion:
        """One chat completion, with bounded retries.

        ``tools`` (OpenAI function-tool definitions) lets the model answer with tool calls,
        returned in ``Completion.tool_calls``; ``tool_choice`` (``auto``, ``required``, ``none``)
        is sent with them when given. Local servers need it: llama.cpp's function-calling chat
        formats ignore the tools unless the request sets it.

        Raises:
            LLMUsageError: The configuration or the request is wrong (not retried).
            LLMUnavailableError: Timeouts, 429, 5xx or connection errors through every retry.
        """
        kwargs = self._request(messages, temperature, max_tokens, response_format, tools, tool_choice)
        warm_up(self.model)
        notes: list[str] = []
        calls = 0

        def attempt() -> Any:
            nonlocal calls
            while True:
                calls += 1
                try:
                    return self._call(kwargs)
                except llm_errors.BadRequestError as exc:
                    if "response_format" not in kwargs or rejected_key(exc) or isinstance(exc, llm_errors.ContextWindowExceededError):
                        raise
                    # Some providers reject JSON mode; the answer is validated anyway, so ask again at once without it.
                    notes.append(f"the provider rejected response_format ({short_error(exc)}); asked again without it")
                    del kwargs["response_format"]

        def before_sleep(state: RetryCallState) -> None:
            failure = state.outcome.exception() if state.outcome is not None else None
            delay = state.next_action.sleep if state.next_action is not None else 0.0
            kind = classify(failure) if failure is not None else None
            _log.warning("llm.retry", model=self.model, kind=kind, attempt=calls, delay_s=delay, error=short_error(failure))
            notes.append(f"attempt {calls}: {kind} ({short_error(failure)}); retried after {delay:.2f} s")

        retrying = Retrying(
            retry=retry_if_exception(lambda exc: not rejected_key(exc) and classify(exc) is not None),
            stop=stop_after_attempt(self.max_retries + 1),
            wait=Backoff(self.backoff_base, self.backoff_max),
            sleep=self.sleep,
            before_sleep=before_sleep,
            reraise=True,
        )
        start = time.perf_counter()
        try:
            response = retrying(attempt)
        except Exception as exc:
            error = self._failure(exc, calls)
            if error is None:
                raise  # not a provider's answer: a bug, let it show
            raise error from None
        seconds = time.perf_counter() - start
        return self._completion(response, calls, seconds, notes)

    def complete_json(
        self,
        messages: Sequence[Message],
        output: type[T],
        *,
        schema: Mapping[str, Any] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        sample: int = 0,
    ) -> JsonCompletion[T]:
        """A completion whose answer is validated as ``output``; misbehaviour is returned, not raised.

        Args:
            messages: Chat messages.
            output: The pydantic model the answer must match (validated with ``model_validate_json``).
            schema: JSON Schema sent to the provider; defaults to ``output``'s own schema.
            temperature: Overrides the client's temperature.
            max_tokens: Overrides the client's limit.
            sample: Which of several calls with the same prompt this is (a judge's samples); the
                request does not depend on it (``llm.cache`` keys stored answers on it).

        Raises:
            LLMUsageError: As ``complete``.
            LLMUnavailableError: As ``complete``.
        """
        fmt = self._response_format(schema if schema is not None else output.model_json_schema())
        completion = self.complete(messages, temperature=temperature, max_tokens=max_tokens, response_format=fmt)
        parsed = parse_output(completion.text, output, truncated=completion.truncated)
        return JsonCompletion(completion, parsed.value, parsed.rule, parsed.error)

    # -- helpers ----------------------------------------------------------------------

    def _where(self) -> str:
        return f"provider of {self.model}" + (f" at {self.endpoint}" if self.api_base else "")

    def _failure(self, exc: BaseException, attempts: int) -> LLMError | None:
        """The error a failed call ends in: a usage error, unavailability after the retries, or None (not a provider's answer)."""
        if rejected_key(exc):
            return LLMUsageError(f"{self._where()} rejected the API key ({short_error(exc)}); check the key or {self.flag('api_key_env')}")
        if isinstance(exc, llm_errors.ContextWindowExceededError):
            return LLMUsageError(
                f"the conversation no longer fits the context window of {self._where()} ({short_error(exc)}); "
                "give the server a larger context (llama.cpp: --n_ctx) or lower the answer length limit"
            )
        kind = classify(exc)
        if kind is not None:
            return self._unavailable(kind, exc, attempts)
        if isinstance(exc, openai.OpenAIError):
            return LLMUsageError(f"{self._where()} refused the request ({short_error(exc)}); check the model name and options")
        return None

    def _unavailable(self, kind: str, exc: BaseException, attempts: int) -> LLMUnavailableError:
        what = {
            "timeout": f"did not answer within {self.timeout:g} s",
            "connection": "could not be reached",
            "rate-limit": "kept answering 429 (rate limit)",
            "server": "kept failing with server errors",
        }[kind]
        fix = {
            "timeout": f"raise {self.flag('timeout')} or use a faster model",
            "connection": f"check {self.flag('api_base')} and that the server is running",
            "rate-limit": f"wait, or raise {self.flag('max_retries')}",
            "server": "try again later or check the server's log",
        }[kind]
        return LLMUnavailableError(
            f"the {self._where()} {what} after {attempts} attempt{'s' if attempts != 1 else ''} (last error: {short_error(exc)}); {fix}",
            attempts=attempts,
            kind=kind,
        )

    def _completion(self, response: Any, attempts: int, seconds: float, notes: list[str]) -> Completion:
        choice = response.choices[0] if getattr(response, "choices", None) else None
        message = getattr(choice, "message", None)
        text = getattr(message, "content", None) or ""
        usage = getattr(response, "usage", None)
        prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
        answer = int(getattr(usage, "completion_tokens", 0) or 0)
        told = bool(prompt or answer)  # litellm stands in zeros for a usage block the provider did not send
        cost, known = 0.0, True
        try:
            cost = float(litellm.completion_cost(completion_response=response) or 0.0)
        except Exception:
            known = False
            notes.append(f"cost unknown: litellm has no price for {self.model}; counted as 0")
        if not told:  # no usage block: whatever litellm would price is a guess, and the tokens are unknown
            cost, known = 0.0, False
            notes.append(f"tokens unknown: {self.model} sent no usage; counted as 0")
        text, repaired = repair_text(text if isinstance(text, str) else str(text))
        if repaired:  # a lone surrogate: text no encoder accepts, so no report or table could hold the answer
            notes.append(f"{repaired} lone UTF-16 surrogate(s) in the answer replaced with U+FFFD")
        return Completion(
            text=text,
            model=self.model,
            usage=Usage(prompt, answer, cost, known, told),
            attempts=attempts,
            seconds=seconds,
            finish_reason=getattr(choice, "finish_reason", None),
            notes=tuple(notes),
            tool_calls=_tool_calls(message),
        )


def _tool_calls(message: Any) -> tuple[ModelToolCall, ...]:
    calls = []
    for i, call in enumerate(getattr(message, "tool_calls", None) or ()):
        function = getattr(call, "function", None)
        name = getattr(function, "name", None)
        # A call without a name is kept (as the name ""): it is a malformed call the agent and the
        # evaluator must see, not an answer to drop.
        arguments = getattr(function, "arguments", None)
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments if arguments is not None else {})
        calls.append(ModelToolCall(id=str(getattr(call, "id", None) or f"call_{i}"), name=str(name or ""), arguments=arguments))
    return tuple(calls)
