"""Candidate graphs sampled from a language model: the LLM ``CandidateSource`` (paper eq. 2 input).

Each of the ``n`` candidates is a separate call at the client's temperature (llama.cpp
ignores ``n``), up to ``concurrency`` of them in flight at once (threads; the candidates
keep their index order whatever order the answers arrive in), under the next focus code of ``compile.generator.candidates.FOCUS_CODES`` for diversity,
with Prompt Template 1 (``compile.candidate_prompt``). An answer that is empty, not JSON or not a graph
becomes a candidate without a graph, its raw text kept and its reason recorded, so that
consensus prunes it; tokens and cost ride on every candidate into the blueprint's
provenance. A candidate whose every attempt ran out of time is pruned the same way (the
model may be slow on this prompt only); other transport failures that survive the client's
retries (``LLMUnavailableError``: refused connections, 429, 5xx) and configuration errors
(``LLMUsageError``) propagate: they are not a model's answer and would fail every candidate.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import structlog

from dynsteer_hook.compile.candidate_prompt import CandidateGraph, candidate_messages, candidate_schema
from dynsteer_hook.compile.consensus import Candidate
from dynsteer_hook.compile.generator.candidates import FOCUS_CODES, Focus
from dynsteer_hook.llm.client import LLMClient
from dynsteer_hook.model.errors import LLMUnavailableError
from dynsteer_hook.model.task_view import TaskView

GENERATOR = "dynsteer-llm@1"
"""Generator name recorded in blueprint provenance for LLM-sampled candidates."""

# Through the standard library's logging: a program embedding the package sees its warnings only, unless it
# configures logging (the command line does, in logs.py).
_log = structlog.wrap_logger(logging.getLogger(__name__))


def candidate_name(model: str, index: int, focus: Focus) -> str:
    """The name of LLM candidate ``index`` (unique across models and batches)."""
    return f"llm:{model}#{index}:{focus.code}"


@dataclass(frozen=True)
class LLMSource:
    """Samples candidate graphs from one model; a ``CandidateSource``.

    Attributes:
        client: The model endpoint and its retry, timeout and accounting settings.
        focus_codes: Exploration heuristics, cycled through candidate by candidate.
        max_tokens: Answer length limit per candidate (None: the client's).
        concurrency: Calls in flight at once (1: one after another; a local CPU server gains nothing).
    """

    client: LLMClient
    focus_codes: tuple[Focus, ...] = FOCUS_CODES
    max_tokens: int | None = None
    concurrency: int = 1

    def __post_init__(self) -> None:
        if not self.focus_codes:
            raise ValueError("focus_codes must name at least one focus")
        if self.concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {self.concurrency}")

    @property
    def model(self) -> str:
        """The model string (the compile cache records which models made a blueprint)."""
        return self.client.model

    def __call__(self, view: TaskView, n: int) -> list[Candidate]:
        """``n`` candidates for ``view``, one call each.

        Raises:
            ValueError: ``n`` is below 1.
            LLMUsageError: The model string, key or request is wrong.
            LLMUnavailableError: The provider kept failing through every retry (not by timing out).
        """
        if n < 1:
            raise ValueError(f"candidate count must be at least 1, got {n}")
        self.client.check()
        schema = candidate_schema(view)

        def one(i: int) -> Candidate:
            return self._one(view, i, self.focus_codes[i % len(self.focus_codes)], schema)

        if self.concurrency == 1 or n == 1:
            return [one(i) for i in range(n)]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, n), thread_name_prefix="llm-candidate") as pool:
            return list(pool.map(one, range(n)))  # index order; the first failure propagates

    def _one(self, view: TaskView, index: int, focus: Focus, schema: dict[str, Any]) -> Candidate:
        name = candidate_name(self.client.model, index, focus)
        messages = candidate_messages(view, index, focus.code, focus.instruction, schema)
        try:
            answer = self.client.complete_json(messages, CandidateGraph, schema=schema, max_tokens=self.max_tokens)
        except LLMUnavailableError as exc:
            if exc.kind != "timeout":
                raise
            return Candidate(name, None, str(exc), GENERATOR, self.client.model, rule="timeout")
        done = answer.completion
        _log.debug("llm_source.candidate", task=view.task, candidate=name, ok=answer.value is not None, rule=answer.rule,
                 tokens=done.usage.total_tokens, attempts=done.attempts, seconds=round(done.seconds, 3))
        usage = done.usage
        if answer.value is None:
            return Candidate(name, None, answer.error, GENERATOR, self.client.model, rule=answer.rule or "parse",
                             raw=done.text, tokens=usage.total_tokens, cost_usd=usage.cost_usd)
        return Candidate(name, answer.value.to_blueprint(view), None, GENERATOR, self.client.model,
                         raw=done.text, tokens=usage.total_tokens, cost_usd=usage.cost_usd)

def llm_source(
    client: LLMClient, *, focus_codes: Sequence[Focus] = FOCUS_CODES, max_tokens: int | None = None, concurrency: int = 1
) -> LLMSource:
    """The LLM candidate source for ``compiler.compile_blueprint(view, sources=[...])``."""
    return LLMSource(client, tuple(focus_codes), max_tokens, concurrency)
