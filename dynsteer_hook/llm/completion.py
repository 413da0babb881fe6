"""What a model call returns: its text, tokens and cost, the tool calls it asked for, and, for a JSON
call, the validated object or why there is none. Plain frozen values: no litellm, no I/O."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel

from dynsteer_hook.model.errors import LLMOutputError

MAX_SECONDS = 86_400.0
"""Longest timeout or backoff a call accepts: a day (a thread's wait overflows long before 1e308 s)."""
MAX_RETRIES = 100
"""Most retries a call's settings accept: with backoff, more would hold a run for hours against a dead server."""

T = TypeVar("T", bound=BaseModel)

Message = Mapping[str, Any]
JsonMode = Literal["auto", "object", "schema", "off"]


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens and cost of one or more calls (``tokens_known`` false: a provider sent no usage, its tokens count 0)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    cost_known: bool = True
    tokens_known: bool = True

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.cost_usd + other.cost_usd,
            self.cost_known and other.cost_known,
            self.tokens_known and other.tokens_known,
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
