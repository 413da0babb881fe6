"""One signature for every judge tier: a request in, a verdict out.

A judge is any callable ``judge(request) -> Verdict``. Tier 1 is deterministic rules;
Tiers 2 and 3 are LLM judges living with the LLM module. Judges never raise for bad
model output: they return a verdict with ``degraded`` set, and the evaluator falls back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from dynsteer_hook.judges.steps import Step
from dynsteer_hook.model.spending import Spend

TIER_NAMES = {1: "cheap", 2: "standard", 3: "expensive"}


@dataclass(frozen=True, slots=True)
class StageGoal:
    """What the stage had to achieve: the milestone m* and its conditions."""

    milestone: str
    tool: str
    role: str
    description: str
    conditions: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class BindingCheck:
    """Whether a consumed binding's value came from its producer's result."""

    name: str
    arg: str
    value: Any
    from_producer: bool
    seen_elsewhere: bool


@dataclass(frozen=True, slots=True)
class StageContext:
    """Blueprint context a judge may use."""

    task: str
    anchor: str
    settled: tuple[str, ...]
    frontier: tuple[str, ...]
    minefields: tuple[tuple[str, str, str], ...]  # (id, tool, reason)
    tool_schemas: Mapping[str, Mapping[str, Any]]
    bindings: tuple[BindingCheck, ...] = ()
    produces_binding: bool = False
    ungrounded: tuple[str, ...] = ()
    """Identifier-like arguments of the settling call (``arg=value``) never shown to the agent."""


@dataclass(frozen=True, slots=True)
class JudgeRequest:
    """A stage to score: the goal, the dimensions, the evidence window, the context."""

    goal: StageGoal
    dimensions: tuple[str, ...]
    steps: tuple[Step, ...]
    context: StageContext
    tier: int
    settling_t: int


@dataclass(frozen=True, slots=True)
class DimensionScore:
    """A score in [0, 1] with the judge's confidence and its cited evidence (step t values)."""

    score: float
    confidence: float
    rationale: str
    cited_steps: tuple[int, ...] = ()

    @property
    def uncertainty(self) -> float:
        """u_d = 1 - confidence."""
        return 1.0 - self.confidence


@dataclass(frozen=True, slots=True)
class Verdict:
    """Per-dimension scores from one judge call."""

    scores: Mapping[str, DimensionScore]
    judge: str
    tier: int
    degraded: str | None = None
    tokens: int = 0
    cost_usd: float = 0.0
    calls: int = 0
    extra: Mapping[str, Any] = field(default_factory=dict)
    spend: Spend = field(default_factory=Spend)  # the calls' tokens and dollars as the providers told them (``tokens`` and ``cost_usd`` in all)


class Judge(Protocol):
    """A stage judge of any tier.

    A judge may also offer ``settings() -> Mapping[str, Any]``, how it was made (its model,
    endpoint, sampling); the report then records it under ``judges``.
    """

    def __call__(self, request: JudgeRequest) -> Verdict:
        """Score ``request.dimensions`` of the stage."""
        ...
