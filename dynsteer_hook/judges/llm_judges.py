"""Tier 2 and Tier 3 stage judges that ask a language model (through ``dynsteer_hook.llm``).

Both take any client with ``complete_json(messages, output, ...)`` (``LLMClient`` in use,
a fake in tests) and never raise for a model's misbehaviour or an unreachable provider:
the verdict comes back without the failed dimensions and with ``degraded`` saying why, and
the evaluator falls back to a lower tier and records it.
"""

from __future__ import annotations

import statistics
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel

from dynsteer_hook.judges.base import DimensionScore, JudgeRequest, Verdict
from dynsteer_hook.judges.templates import (
    SpecialistJudgement,
    StandardJudgement,
    specialist_messages,
    standard_messages,
)
from dynsteer_hook.model.errors import LLMError
from dynsteer_hook.model.spending import Spend

T = TypeVar("T", bound=BaseModel)


class JsonClient(Protocol):
    """What the judges need from an LLM client."""

    @property
    def model(self) -> str:
        """The model string."""
        ...

    @property
    def endpoint(self) -> str | None:
        """Where the model is served, with any secret removed (None: the provider's own endpoint)."""
        ...

    def complete_json(self, messages: Any, output: type[T], *, temperature: float | None = None,
                      max_tokens: int | None = None, sample: int = 0) -> Any:
        """A completion validated as ``output`` (value None when the answer was unusable).

        ``sample`` numbers the calls a judge makes with the same prompt (Tier 2's samples, Tier 3's
        passes); the answer does not depend on it, a cache of answers keys on it.
        """
        ...


def _made_by(client: JsonClient, **settings: Any) -> dict[str, Any]:
    """How a judge was made, as its report shows it: the model, the endpoint without secrets, the sampling."""
    return {"model": client.model, "endpoint": client.endpoint, **settings}


def _usage(reply: Any) -> tuple[int, float]:
    usage = reply.completion.usage
    return int(usage.total_tokens), float(usage.cost_usd)


def _spend(reply: Any) -> Spend:
    """One answered call as the cost records count it."""
    u = reply.completion.usage
    prompt, answer = getattr(u, "prompt_tokens", None), getattr(u, "completion_tokens", None)
    known = bool(getattr(u, "cost_known", True))
    if prompt is None or answer is None:  # a client of its own that counts only the total: the split is unknown
        return Spend(1, cost_usd=float(u.cost_usd), tokens_known=False, cost_known=known)
    return Spend(1, int(prompt), int(answer), float(u.cost_usd), tokens_known=bool(getattr(u, "tokens_known", True)), cost_known=known)


@dataclass(frozen=True)
class StandardJudge:
    """Tier 2: one multi-field JSON pass over every requested dimension, over ``samples`` samples.

    Scores are averaged over the usable samples; the reported confidence is the mean
    confidence lowered by the samples' disagreement (one minus twice the score spread).
    """

    client: JsonClient
    samples: int = 2
    temperature: float = 0.7
    max_tokens: int = 800
    name: str = "tier2-standard"

    def settings(self) -> dict[str, Any]:
        """How this judge was made (model, endpoint without secrets, samples, temperature, answer limit)."""
        return {"judge": self.name} | _made_by(self.client, samples=self.samples, temperature=self.temperature, max_tokens=self.max_tokens)

    def __call__(self, request: JudgeRequest) -> Verdict:
        messages = standard_messages(request)
        good: list[StandardJudgement] = []
        problems: list[str] = []
        tokens, cost, calls, spend = 0, 0.0, 0, Spend()
        for i in range(max(1, self.samples)):
            try:
                reply = self.client.complete_json(messages, StandardJudgement, temperature=self.temperature, max_tokens=self.max_tokens,
                                                  sample=i)
            except LLMError as exc:
                problems.append(str(exc))
                break  # the provider is down: more samples would only wait longer
            calls += 1
            t, c = _usage(reply)
            tokens, cost, spend = tokens + t, cost + c, spend + _spend(reply)
            if reply.value is None:
                problems.append(f"unusable answer ({reply.rule}): {reply.error}")
            else:
                good.append(reply.value)
        scores: dict[str, DimensionScore] = {}
        for d in request.dimensions:
            votes = [g.dimensions[d] for g in good if d in g.dimensions]
            if not votes:
                continue
            values = [v.score for v in votes]
            mean = statistics.fmean(values)
            spread = statistics.pstdev(values) if len(values) > 1 else 0.0
            confidence = statistics.fmean(v.confidence for v in votes) * max(0.0, 1.0 - 2.0 * spread)
            closest = min(votes, key=lambda v: abs(v.score - mean))
            cited = sorted({t for v in votes for t in v.cited_steps})
            scores[d] = DimensionScore(mean, confidence, closest.rationale, tuple(cited))
        missing = [d for d in request.dimensions if d not in scores]
        degraded = None
        if problems or missing:
            degraded = "; ".join(problems[:2]) or f"no score for {missing}"
        return Verdict(scores=scores, judge=f"{self.name}:{self.client.model}", tier=2, degraded=degraded,
                       tokens=tokens, cost_usd=cost, calls=calls, spend=spend)


@dataclass(frozen=True)
class ExpertJudge:
    """Tier 3: a specialist per dimension with ``passes`` deliberation passes (each reviews the last).

    The dimensions are independent, so up to ``concurrency`` of them are judged at once; the
    passes of one dimension stay in order. The verdict does not depend on which finished first.
    """

    client: JsonClient
    passes: int = 2
    temperature: float = 0.2
    max_tokens: int = 1200
    concurrency: int = 4
    name: str = "tier3-specialist"

    def settings(self) -> dict[str, Any]:
        """How this judge was made (model, endpoint without secrets, passes, temperature, answer limit)."""
        return {"judge": self.name} | _made_by(self.client, passes=self.passes, temperature=self.temperature, max_tokens=self.max_tokens)

    def _dimension(self, request: JudgeRequest, d: str) -> tuple[DimensionScore | None, list[str], int, float, int, Spend]:
        latest: SpecialistJudgement | None = None
        problems: list[str] = []
        tokens, cost, calls, spend = 0, 0.0, 0, Spend()
        for i in range(max(1, self.passes)):
            try:
                reply = self.client.complete_json(specialist_messages(request, d, latest), SpecialistJudgement,
                                                  temperature=self.temperature, max_tokens=self.max_tokens, sample=i)
            except LLMError as exc:
                problems.append(f"{d}: {exc}")
                break
            calls += 1
            t, c = _usage(reply)
            tokens, cost, spend = tokens + t, cost + c, spend + _spend(reply)
            if reply.value is None:
                problems.append(f"{d}: unusable answer ({reply.rule}): {reply.error}")
                break
            latest = reply.value
        score = None if latest is None else DimensionScore(latest.score, latest.confidence, latest.rationale, tuple(latest.cited_steps))
        return score, problems, tokens, cost, calls, spend

    def __call__(self, request: JudgeRequest) -> Verdict:
        dims = list(request.dimensions)
        if self.concurrency > 1 and len(dims) > 1:
            with ThreadPoolExecutor(max_workers=min(self.concurrency, len(dims)), thread_name_prefix="tier3") as pool:
                outcomes = list(pool.map(lambda d: self._dimension(request, d), dims))
        else:
            outcomes = [self._dimension(request, d) for d in dims]
        scores = {d: o[0] for d, o in zip(dims, outcomes, strict=True) if o[0] is not None}
        problems = [p for o in outcomes for p in o[1]]
        return Verdict(scores=scores, judge=f"{self.name}:{self.client.model}", tier=3, degraded="; ".join(problems[:3]) or None,
                       tokens=sum(o[2] for o in outcomes), cost_usd=sum(o[3] for o in outcomes), calls=sum(o[4] for o in outcomes),
                       spend=sum((o[5] for o in outcomes), Spend()))
