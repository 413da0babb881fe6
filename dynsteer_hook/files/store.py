"""Compile a public view into a stored blueprint, skipping views whose blueprint is up to date.

Blueprints are keyed by the SHA-256 of the public view (``TaskView.digest``, kept in the
blueprint's ``provenance.public_view_hash``) and by the recipe that made them (candidate
count and the models of the sources): an unchanged scenario compiled the same way is not
recompiled unless forced; asking for a model the stored blueprint did not use recompiles it. Candidates come from any ``CandidateSource`` (the deterministic generator,
an LLM through ``dynsteer_hook.llm.candidates``, or both); consensus prunes the invalid ones. A compile
with fewer valid candidates than the minimum writes nothing and reports why; a written
blueprint is replaced atomically, never left half-written. LLM transport and usage
errors propagate: they end a batch, they are not one view's failure.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from dynsteer_hook.compile.compiler import DEFAULT_CANDIDATES, CandidateSource, compile_consensus, gather_candidates
from dynsteer_hook.compile.consensus import screen_candidates
from dynsteer_hook.files.blueprints import load_blueprint, save_blueprint
from dynsteer_hook.model.blueprint import Blueprint, PrunedCandidate
from dynsteer_hook.model.catalog import ToolCatalog
from dynsteer_hook.model.errors import BlueprintError, ConsensusError
from dynsteer_hook.model.task_view import TaskView

Status = Literal["compiled", "up-to-date", "failed"]


@dataclass(frozen=True)
class CompileOutcome:
    """What compiling one view did."""

    task: str
    path: Path
    status: Status
    candidates: int = 0
    valid: int = 0
    pruned: tuple[PrunedCandidate, ...] = ()
    tokens: int | None = None
    cost_usd: float | None = None
    seconds: float = 0.0
    error: str | None = None
    blueprint: Blueprint | None = None


def stored_view_hash(path: Path) -> str | None:
    """The public-view hash of the blueprint stored at ``path`` (None: absent, unreadable or unhashed)."""
    if not path.is_file():
        return None
    try:
        prov = load_blueprint(path).provenance
    except BlueprintError:
        return None
    return prov.public_view_hash if prov is not None else None


def _up_to_date(path: Path, digest: str, candidates: int, models: set[str]) -> bool:
    if not path.is_file():
        return False
    try:
        prov = load_blueprint(path).provenance
    except BlueprintError:
        return False
    return prov is not None and prov.public_view_hash == digest and prov.candidates == candidates and models <= set(prov.models)


def source_models(sources: Sequence[CandidateSource]) -> set[str]:
    """The models behind the sources (a source names its model in a ``model`` attribute; the generator has none)."""
    return {m for s in sources if isinstance(m := getattr(s, "model", None), str)}


def default_min_valid(total_candidates: int) -> int:
    """A strict majority of the candidates asked for: most of them must survive validation."""
    return total_candidates // 2 + 1


def compile_to_file(
    view: TaskView,
    path: Path,
    *,
    sources: Sequence[CandidateSource],
    n: int = DEFAULT_CANDIDATES,
    min_valid: int | None = None,
    force: bool = False,
    clock: Callable[[], float] = time.perf_counter,
) -> CompileOutcome:
    """Compile ``view`` with ``sources`` (``n`` candidates each) and store the blueprint at ``path``.

    Args:
        view: The public task view.
        path: Where the blueprint is stored.
        sources: Candidate sources, pooled.
        n: Candidates per source.
        min_valid: Fewest valid candidates accepted; default a strict majority of all candidates.
        force: Recompile even when the stored blueprint has this view's hash and recipe.
        clock: Seconds counter for the timing.

    Raises:
        ValueError: ``n`` is below 1 or no source is given.
        LLMUsageError: An LLM source is misconfigured.
        LLMUnavailableError: An LLM source's provider kept failing through every retry.
    """
    if n < 1:
        raise ValueError(f"candidate count must be at least 1, got {n}")
    if not sources:
        raise ValueError("at least one candidate source is needed")
    digest = view.digest()
    if not force and _up_to_date(path, digest, n * len(sources), source_models(sources)):
        return CompileOutcome(view.task, path, "up-to-date")
    start = clock()
    pool = gather_candidates(view, sources, n)
    need = default_min_valid(len(pool)) if min_valid is None else min_valid
    tokens = sum(c.tokens or 0 for c in pool) if any(c.tokens is not None for c in pool) else None
    cost = sum(c.cost_usd or 0.0 for c in pool) if any(c.cost_usd is not None for c in pool) else None
    try:
        result = compile_consensus(view, pool, min_valid=need)
    except ConsensusError as exc:
        valid, pruned = screen_candidates(pool, ToolCatalog(view.tools))
        return CompileOutcome(view.task, path, "failed", len(pool), len(valid), tuple(pruned), tokens, cost, clock() - start, str(exc))
    save_blueprint(result.blueprint, path)
    prov = result.blueprint.provenance
    return CompileOutcome(
        view.task, path, "compiled", len(pool), len(result.valid), result.pruned,
        prov.tokens if prov else tokens, prov.cost_usd if prov else cost, clock() - start, None, result.blueprint,
    )
