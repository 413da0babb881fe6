"""Blueprint compilation: candidates from one or more sources, then strict-majority consensus.

A candidate source is any callable ``source(view, n) -> list[Candidate]``: the
deterministic generator (``generator.candidates.deterministic_source``) is one; LLM sampling is
another. ``compile_blueprint`` pools the candidates of every source, validates and merges
them (``consensus.build_consensus``) and records provenance: generators, models,
candidate counts and the public-view hash that keys the blueprint cache. Pure: no file
I/O, no model of its own, no ToolSandbox import.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from dynsteer_hook.compile.consensus import Candidate, ConsensusResult, build_consensus
from dynsteer_hook.compile.generator.candidates import deterministic_source
from dynsteer_hook.model.blueprint import Blueprint
from dynsteer_hook.model.catalog import ToolCatalog
from dynsteer_hook.model.task_view import TaskView

CandidateSource = Callable[[TaskView, int], list[Candidate]]
"""Produces ``n`` candidate graphs for a public view."""

DEFAULT_CANDIDATES = 5


def gather_candidates(view: TaskView, sources: Sequence[CandidateSource], n: int = DEFAULT_CANDIDATES) -> list[Candidate]:
    """The candidates of every source, ``n`` from each, in source order."""
    out: list[Candidate] = []
    for source in sources:
        out.extend(source(view, n))
    return out


def compile_consensus(
    view: TaskView,
    candidates: Sequence[Candidate] | None = None,
    *,
    sources: Sequence[CandidateSource] = (deterministic_source,),
    n: int = DEFAULT_CANDIDATES,
    min_valid: int = 1,
) -> ConsensusResult:
    """Consensus over ``candidates`` (or, when none are given, over those ``sources`` produce).

    Raises:
        ConsensusError: Fewer than ``min_valid`` candidates pass contract validation.
    """
    pool = list(candidates) if candidates is not None else gather_candidates(view, sources, n)
    return build_consensus(pool, ToolCatalog(view.tools), task=view.task, min_valid=min_valid, public_view_hash=view.digest())


def compile_blueprint(
    view: TaskView,
    candidates: Sequence[Candidate] | None = None,
    *,
    sources: Sequence[CandidateSource] = (deterministic_source,),
    n: int = DEFAULT_CANDIDATES,
    min_valid: int = 1,
) -> Blueprint:
    """The consensus blueprint of a public view, with its provenance filled in."""
    return compile_consensus(view, candidates, sources=sources, n=n, min_valid=min_valid).blueprint


def compile_generator_only(view: TaskView, n: int = DEFAULT_CANDIDATES) -> Blueprint:
    """The blueprint from the deterministic generator alone (no LLM, no API key)."""
    return compile_blueprint(view, sources=(deterministic_source,), n=n)
