"""llama.cpp's OpenAI-compatible server with a tool-calling chat format whose turns are bounded.

Run it exactly like ``python -m llama_cpp.server`` (same flags); it adds the chat format
``chatml-function-calling-bounded``. llama-cpp-python's ``chatml-function-calling`` generates tool-call
arguments and the follow-up calls of a turn with no token limit (the request's ``max_tokens`` only reaches
plain-text answers), so a small model can spend thousands of tokens on one argument string and a turn
can outlive any deadline. The bounded format hands the stock handler a view of the model whose every
completion is capped by what is left of the request's ``max_tokens`` (default 256) for the whole turn;
when the budget is spent the turn ends. An argument cut short stays cut short: the client receives the
unparseable arguments and treats the call as malformed, as it would from any provider.

It also shows the model the conversation as it was: the stock template renders a ``tool`` message as
an empty, unterminated block, so each one is passed to it as a user message that names the call it
answers; and the template HTML-escapes every text (a quote in an earlier argument comes back as
``&#39;``, which the model then copies into new arguments), so texts are handed to it as already safe,
with one exception: the template's own role markers (``<|im_start|>``, ``<|im_end|>``) are broken up
wherever a message carries them, so a tool result or an argument cannot open a turn of its own.
"""

from __future__ import annotations

import sys
from typing import Any

from llama_cpp import llama_chat_format
from llama_cpp.server.__main__ import main
from markupsafe import Markup

FORMAT = "chatml-function-calling-bounded"
DEFAULT_MAX_TOKENS = 256


class _BudgetedModel:
    """The model as the stock handler sees it: each completion capped by the turn's remaining tokens."""

    def __init__(self, model: Any, budget: int) -> None:
        self._model = model
        self.left = budget

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)

    def create_completion(self, *args: Any, **kwargs: Any) -> Any:
        if self.left <= 0:
            return _empty_completion()
        asked = kwargs.get("max_tokens")
        kwargs["max_tokens"] = self.left if asked is None or asked <= 0 else min(asked, self.left)
        out = self._model.create_completion(*args, **kwargs)
        if isinstance(out, dict):
            self.left -= int(out.get("usage", {}).get("completion_tokens", kwargs["max_tokens"]))
        else:  # a stream: charge the whole cap, it cannot be measured before it is read
            self.left -= kwargs["max_tokens"]
        return out


def _empty_completion() -> dict[str, Any]:
    return {
        "id": "cmpl-budget-spent",
        "object": "text_completion",
        "created": 0,
        "model": "local",
        "choices": [{"text": "", "index": 0, "logprobs": None, "finish_reason": "length"}],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }


def _verbatim(text: str) -> Markup:
    """A message's text for the template: not HTML-escaped, but no ChatML marker survives in it."""
    return Markup(text.replace("<|", "< |"))


def _as_written(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages the stock template renders verbatim: tool results as user messages, texts marked safe."""
    names: dict[str, str] = {}
    out: list[dict[str, Any]] = []
    for message in messages:
        message = dict(message)
        calls = []
        for call in message.get("tool_calls") or []:
            function = dict(call.get("function") or {})
            names[str(call.get("id"))] = str(function.get("name", ""))
            function["arguments"] = _verbatim(str(function.get("arguments") or ""))
            calls.append({**call, "function": function})
        if calls:
            message["tool_calls"] = calls
        if message.get("role") == "tool":
            name = names.get(str(message.get("tool_call_id")), "") or "the call"
            message = {"role": "user", "content": f"Result of {name}:\n{message.get('content') or ''}"}
        if isinstance(message.get("content"), str):
            message["content"] = _verbatim(message["content"])
        out.append(message)
    return out


@llama_chat_format.register_chat_completion_handler(FORMAT)
def bounded_function_calling(llama: Any, messages: list[dict[str, Any]], **kwargs: Any) -> Any:
    asked = kwargs.get("max_tokens")
    budget = asked if isinstance(asked, int) and asked > 0 else DEFAULT_MAX_TOKENS
    return llama_chat_format.chatml_function_calling(
        _BudgetedModel(llama, budget), _as_written(messages), **kwargs
    )


if __name__ == "__main__":
    sys.exit(main())
