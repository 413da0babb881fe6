"""The one module that talks to language models, through litellm.

Every LLM call of the package (blueprint candidate synthesis now, tier 2/3 stage judges
later) goes through ``LLMClient``: any litellm model string and ``api_base`` (OpenAI,
Anthropic, vLLM, Ollama, a llama.cpp server). The client owns:

* retries, through tenacity: timeouts, 429, 5xx and connection errors (``classify``) are
  retried a bounded number of times with exponential backoff and jitter (honouring
  ``Retry-After`` up to the cap), each wait logged as ``llm.retry``; other 4xx answers (bad
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

import contextvars
import json
import os
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Generic, Literal, TypeVar
from urllib.parse import urlsplit, urlunsplit

import structlog
from pydantic import BaseModel
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt, wait_exponential, wait_random
from tenacity.wait import wait_base

from dynsteer_hook.llm_output import excerpt, parse_output
from dynsteer_hook.model.errors import ConfigError, LLMError, LLMOutputError, LLMUnavailableError, LLMUsageError

# litellm downloads a price map at import unless told otherwise; the user's choice wins.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm  # after the environment variable above
import openai  # litellm's errors derive from the OpenAI client's
from litellm import exceptions as llm_errors

litellm.suppress_debug_info = True  # it prints provider lists to stdout on errors otherwise

_log = structlog.get_logger(__name__)

T = TypeVar("T", bound=BaseModel)

Message = Mapping[str, Any]
JsonMode = Literal["auto", "object", "schema", "off"]

LOCAL_PLACEHOLDER_KEY = "no-key"
"""Sent to a custom ``api_base`` when no key is configured: local servers ignore it."""


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens and cost of one or more calls."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    cost_known: bool = True

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.cost_usd + other.cost_usd,
            self.cost_known and other.cost_known,
        )


@dataclass(frozen=True, slots=True)
class ModelToolCall:
    """One tool call a model asked for; ``arguments`` is the model's JSON text, unparsed."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class Completion:
    """One answered call."""

    text: str
    model: str
    usage: Usage
    attempts: int
    seconds: float
    finish_reason: str | None = None
    notes: tuple[str, ...] = ()
    tool_calls: tuple[ModelToolCall, ...] = ()

    @property
    def truncated(self) -> bool:
        """The provider stopped at the token limit."""
        return self.finish_reason == "length"


@dataclass(frozen=True, slots=True)
class JsonCompletion(Generic[T]):
    """An answered call whose text was validated as ``T``; ``value`` is None when it was not."""

    completion: Completion
    value: T | None
    rule: str | None = None  # empty | json | shape
    error: str | None = None

    def unwrap(self) -> T:
        """The validated value.

        Raises:
            LLMOutputError: The answer was empty, not JSON or of the wrong shape (raw text kept).
        """
        if self.value is None:
            raise LLMOutputError(
                f"model {self.completion.model} answered unusably: {self.error}",
                raw=self.completion.text,
                rule=self.rule or "shape",
            )
        return self.value


def price_known(model: str) -> bool:
    """Whether litellm's price map has ``model`` (else its cost is counted as 0)."""
    try:
        info = litellm.get_model_info(model)
    except Exception:  # litellm raises for models it has never heard of
        return False
    return bool(info.get("input_cost_per_token") or info.get("output_cost_per_token"))


class Backoff(wait_base):
    """How long to wait before the next attempt: exponential with jitter, capped; a server's Retry-After wins up to the cap.

    Before retry n (1-based) the wait is ``base * 2**(n - 1)`` plus a random share of up to one
    ``base`` (so that clients failing together do not retry together), never more than ``cap``.
    """

    def __init__(self, base: float, cap: float) -> None:
        self.base, self.cap = base, cap
        self._exponential = wait_exponential(multiplier=base, max=cap) + wait_random(0, base)

    def __call__(self, retry_state: RetryCallState) -> float:
        delay = min(self.cap, float(self._exponential(retry_state)))
        failure = retry_state.outcome.exception() if retry_state.outcome is not None else None
        after = _retry_after(failure) if failure is not None else None
        if after is not None and after > delay:
            delay = min(self.cap, after)
        return max(0.0, delay)


class _AttemptTimeoutError(Exception):
    """One attempt outlived the client's ``timeout`` while the answer was still arriving (or not)."""


def _run_with_deadline(fn: Callable[[], Any], seconds: float) -> Any:
    """``fn()`` in a daemon thread; its result, or its exception, if it ends within ``seconds``.

    On expiry the attempt is abandoned, not stopped (Python cannot stop a thread blocked in a
    read): the thread is a daemon, so it never holds up the exit of the process, and it ends by
    itself when the server finishes or goes silent for the HTTP client's read timeout.

    Raises:
        _AttemptTimeoutError: ``fn`` did not end within ``seconds``.
    """
    outcome: list[tuple[bool, Any]] = []
    done = threading.Event()
    context = contextvars.copy_context()  # litellm keeps per-call state in context variables

    def attempt() -> None:
        try:
            outcome.append((True, context.run(fn)))
        except BaseException as exc:  # handed to the waiting thread, which re-raises it
            outcome.append((False, exc))
        finally:
            done.set()

    threading.Thread(target=attempt, name="dynsteer-llm-attempt", daemon=True).start()
    if not done.wait(seconds):
        raise _AttemptTimeoutError(f"no complete answer within {seconds:g} s")
    ok, value = outcome[0]
    if ok:
        return value
    raise value


_warmed: set[str] = set()
_warm_lock = threading.Lock()


def _warm_up(model: str) -> None:
    """Run litellm's lazy imports for ``model`` once per process, before any deadline starts.

    litellm imports its HTTP stack and much of itself on the first real request; on a busy
    machine that takes seconds, which are not the provider's and must not eat a short
    ``timeout``. An offline mock completion and the HTTP stack's import do that work up front.
    """
    with _warm_lock:
        if model in _warmed:
            return
        _warmed.add(model)
        try:
            import httpcore  # noqa: F401  # what litellm's HTTP client imports on its first request

            litellm.completion(model=model, messages=[{"role": "user", "content": "ping"}], mock_response="ok")
        except Exception:  # a warm-up that fails changes nothing: the real call reports the problem
            pass


def _status(exc: BaseException) -> int | None:
    code = getattr(exc, "status_code", None)
    return code if isinstance(code, int) else None


def _retry_after(exc: BaseException) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    try:
        value = headers.get("retry-after")
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def _connection_refused(exc: BaseException) -> bool:
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return False
        if isinstance(seen, ConnectionRefusedError) or "connection refused" in str(seen).lower() or type(seen).__name__ == "ConnectError":
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _rejected_key(exc: BaseException) -> bool:
    """The provider refused the key (401, 403): the user's to fix, never retried."""
    return isinstance(exc, (llm_errors.AuthenticationError, llm_errors.PermissionDeniedError)) or _status(exc) in (401, 403)


def classify(exc: BaseException) -> str | None:
    """The retryable kind of a provider error (``timeout``, ``connection``, ``rate-limit``, ``server``), or None if retrying cannot help."""
    if isinstance(exc, (llm_errors.Timeout, _AttemptTimeoutError)):
        return "timeout"
    status = _status(exc)
    if isinstance(exc, llm_errors.RateLimitError) or status == 429:
        return "rate-limit"
    if _connection_refused(exc):
        return "connection"
    if isinstance(exc, llm_errors.APIConnectionError):
        return "connection"
    if status is not None and status >= 500:
        return "server"
    if status is None and isinstance(exc, llm_errors.APIError):
        return "server"
    return None


_REPEATED_PREFIX = re.compile(r"\b(\w+): \1: ")


def _short(exc: BaseException | None) -> str:
    text = _REPEATED_PREFIX.sub(r"\1: ", str(exc).replace("litellm.", "")).replace("OpenAIException - ", "")
    return excerpt(text, 200)


def endpoint_without_secrets(url: str | None) -> str | None:
    """The endpoint as a report may show it: scheme, host, port and path; no user, password, query or fragment.

    Keys sometimes ride in an endpoint (``https://user:key@host/v1``, ``...?api_key=...``); none of that is kept.
    """
    if not url:
        return None
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:  # not a URL (a malformed port): keep only what cannot be a secret
        return "(unreadable endpoint)"
    if not parts.scheme or not host:
        return "(unreadable endpoint)"
    host = f"[{host}]" if ":" in host else host
    return urlunsplit((parts.scheme, host + port, parts.path, "", ""))


def api_key_from_env(variable: str | None, flag: str) -> str | None:
    """The API key held in ``variable`` (None when no variable is named).

    Raises:
        ConfigError: The variable is named but not set (``flag`` is the option that named it).
    """
    if not variable:
        return None
    key = os.environ.get(variable)
    if not key:
        raise ConfigError(f"environment variable {variable} (from {flag}) is not set; export it or drop the flag")
    return key


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

    def __post_init__(self) -> None:
        if not self.model or not self.model.strip():
            raise LLMUsageError("the model string is empty; pass a litellm model such as openai/gpt-4o-mini")
        if self.max_retries < 0:
            raise LLMUsageError(f"max_retries {self.max_retries} must be 0 or more")
        if self.timeout <= 0:
            raise LLMUsageError(f"timeout {self.timeout} must be a positive number of seconds")
        if self.backoff_base < 0 or self.backoff_max < 0:
            raise LLMUsageError("backoff_base and backoff_max must be 0 or more seconds")

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
                "anthropic/claude-3-5-haiku-latest, ollama/llama3, or openai/<name> with --api-base for an OpenAI-compatible server"
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
            "or name another variable with --api-key-env"
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
        return _run_with_deadline(lambda: litellm.completion(**kwargs), self.timeout)

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

        _warm_up(self.model)
        notes: list[str] = []
        calls = 0

        def attempt() -> Any:
            nonlocal calls
            while True:
                calls += 1
                try:
                    return self._call(kwargs)
                except llm_errors.BadRequestError as exc:
                    if "response_format" not in kwargs or _rejected_key(exc) or isinstance(exc, llm_errors.ContextWindowExceededError):
                        raise
                    # Some providers reject JSON mode; the answer is validated anyway, so ask again at once without it.
                    notes.append(f"the provider rejected response_format ({_short(exc)}); asked again without it")
                    del kwargs["response_format"]

        def before_sleep(state: RetryCallState) -> None:
            failure = state.outcome.exception() if state.outcome is not None else None
            delay = state.next_action.sleep if state.next_action is not None else 0.0
            kind = classify(failure) if failure is not None else None
            _log.warning("llm.retry", model=self.model, kind=kind, attempt=calls, delay_s=delay, error=_short(failure))
            notes.append(f"attempt {calls}: {kind} ({_short(failure)}); retried after {delay:.2f} s")

        retrying = Retrying(
            retry=retry_if_exception(lambda exc: not _rejected_key(exc) and classify(exc) is not None),
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
                request does not depend on it (``judge_cache`` keys stored answers on it).

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
        if _rejected_key(exc):
            return LLMUsageError(f"{self._where()} rejected the API key ({_short(exc)}); check the key or --api-key-env")
        if isinstance(exc, llm_errors.ContextWindowExceededError):
            return LLMUsageError(
                f"the conversation no longer fits the context window of {self._where()} ({_short(exc)}); "
                "give the server a larger context (llama.cpp: --n_ctx) or lower the answer length limit"
            )
        kind = classify(exc)
        if kind is not None:
            return self._unavailable(kind, exc, attempts)
        if isinstance(exc, openai.OpenAIError):
            return LLMUsageError(f"{self._where()} refused the request ({_short(exc)}); check the model name and options")
        return None

    def _unavailable(self, kind: str, exc: BaseException, attempts: int) -> LLMUnavailableError:
        what = {
            "timeout": f"did not answer within {self.timeout:g} s",
            "connection": "could not be reached",
            "rate-limit": "kept answering 429 (rate limit)",
            "server": "kept failing with server errors",
        }[kind]
        fix = {
            "timeout": "raise --timeout or use a faster model",
            "connection": "check --api-base and that the server is running",
            "rate-limit": "wait, or raise --max-retries",
            "server": "try again later or check the server's log",
        }[kind]
        return LLMUnavailableError(
            f"the {self._where()} {what} after {attempts} attempt{'s' if attempts != 1 else ''} (last error: {_short(exc)}); {fix}",
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
        cost, known = 0.0, True
        try:
            cost = float(litellm.completion_cost(completion_response=response) or 0.0)
        except Exception:
            known = False
            notes.append(f"cost unknown: litellm has no price for {self.model}; counted as 0")
        return Completion(
            text=text if isinstance(text, str) else str(text),
            model=self.model,
            usage=Usage(prompt, answer, cost, known),
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
