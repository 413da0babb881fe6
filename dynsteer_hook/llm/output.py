"""From a model's answer text to a validated pydantic object, or a reason why not.

Models wrap JSON in code fences, lead with prose, trail with remarks, or answer nothing.
``extract_json_object`` finds the first JSON object in the text; ``parse_output``
validates it with ``Model.model_validate_json`` (even when the provider was asked for a
schema) and never raises on model misbehaviour: the failure comes back as a rule and a
one-sentence message, with the raw text kept by the caller. Pure: no litellm, no I/O.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Generic, TypeVar

from pydantic import BaseModel, ValidationError

from dynsteer_hook.model.errors import validation_problem

T = TypeVar("T", bound=BaseModel)

_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n?(.*?)```", re.DOTALL)
_EXCERPT = 120


def excerpt(text: str, limit: int = _EXCERPT) -> str:
    """The start of ``text`` on one line, for messages."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def extract_json_object(text: str) -> str | None:
    """The first JSON object in ``text`` (whole text, a code fence, or embedded in prose), or None."""
    stripped = text.strip()
    if not stripped:
        return None
    candidates = [stripped, *(m.group(1).strip() for m in _FENCE.finditer(text))]
    for chunk in candidates:
        try:
            if isinstance(json.loads(chunk), dict):
                return chunk
        except json.JSONDecodeError:
            pass
    decoder = json.JSONDecoder()
    for m in re.finditer(r"\{", text):
        try:
            obj, end = decoder.raw_decode(text, m.start())
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            return text[m.start() : end]
    return None


@dataclass(frozen=True, slots=True)
class ParsedOutput(Generic[T]):
    """The validated object, or the rule and message saying why there is none."""

    value: T | None
    rule: str | None = None  # empty | json | shape
    error: str | None = None


def parse_output(text: str, model: type[T], *, truncated: bool = False) -> ParsedOutput[T]:
    """Validate the JSON object in ``text`` as ``model``; a failure is data, not an exception.

    Args:
        text: The model's answer.
        model: The pydantic model the answer must match.
        truncated: The provider stopped at the token limit; said in the message, since it
            usually explains a JSON error.
    """
    cut = " (the answer was cut off at the token limit; raise max_tokens)" if truncated else ""
    if not text.strip():
        return ParsedOutput(None, "empty", "the model returned an empty answer" + cut)
    body = extract_json_object(text)
    if body is None:
        return ParsedOutput(None, "json", f"no JSON object in the answer{cut}; it begins {excerpt(text)!r}")
    try:
        return ParsedOutput(model.model_validate_json(body))
    except ValidationError as exc:
        return ParsedOutput(None, "shape", f"the JSON does not match {model.__name__} at {validation_problem(exc)}{cut}")
