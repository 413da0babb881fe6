"""Compiling a view into a stored blueprint: the public-view hash cache, --force, failures that write nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from llm_graphs import VIEW, good_graph, hallucinated_graph

from dynsteer_hook.compile.consensus import Candidate
from dynsteer_hook.compile.generator.candidates import deterministic_source
from dynsteer_hook.files.blueprints import load_blueprint
from dynsteer_hook.files.store import compile_to_file, default_min_valid, stored_view_hash
from dynsteer_hook.model.task_view import TaskView


class Metered:
    """A stand-in LLM source: fixed answers with tokens and cost, counting its calls."""

    model = "stub-model"

    def __init__(self, *answers: str) -> None:
        self.answers = answers
        self.calls = 0

    def __call__(self, view: TaskView, n: int) -> list[Candidate]:
        self.calls += 1
        return [
            Candidate.from_text(f"stub#{i}", self.answers[i % len(self.answers)], generator="stub", model="stub-model")
            for i in range(n)
        ]


def _graph_for(view: TaskView, text: str) -> str:
    """An answer as a blueprint over the view's catalog (what Candidate.from_text reads)."""
    data = json.loads(text)
    data["task"] = view.task
    data["catalog"] = [t.model_dump() for t in view.tools]
    return json.dumps(data)


def test_compiled_blueprint_is_stored_with_its_view_hash(tmp_path: Path) -> None:
    """The written file parses and carries the view's digest."""
    path = tmp_path / "message_alice.json"
    outcome = compile_to_file(VIEW, path, sources=[deterministic_source], n=3)
    assert outcome.status == "compiled" and outcome.valid == 3 and outcome.candidates == 3
    assert stored_view_hash(path) == VIEW.digest()
    assert load_blueprint(path) == outcome.blueprint


def test_an_unchanged_view_is_not_recompiled(tmp_path: Path) -> None:
    """Same hash on disk: the sources are not called; --force calls them again."""
    path = tmp_path / "b.json"
    src = Metered(_graph_for(VIEW, good_graph()))
    compile_to_file(VIEW, path, sources=[src], n=2)
    before = path.read_bytes()
    assert compile_to_file(VIEW, path, sources=[src], n=2).status == "up-to-date"
    assert src.calls == 1 and path.read_bytes() == before
    assert compile_to_file(VIEW, path, sources=[src], n=2, force=True).status == "compiled"
    assert src.calls == 2


def test_a_blueprint_compiled_another_way_is_recompiled(tmp_path: Path) -> None:
    """Same view, but a model the stored blueprint never used, or another candidate count: recompiled."""
    path = tmp_path / "b.json"
    compile_to_file(VIEW, path, sources=[deterministic_source], n=2)
    src = Metered(_graph_for(VIEW, good_graph()))
    assert compile_to_file(VIEW, path, sources=[deterministic_source, src], n=2).status == "compiled"
    assert src.calls == 1 and "stub-model" in load_blueprint(path).provenance.models  # type: ignore[union-attr]
    assert compile_to_file(VIEW, path, sources=[deterministic_source, src], n=2).status == "up-to-date"
    assert compile_to_file(VIEW, path, sources=[deterministic_source, src], n=3).status == "compiled"
    assert compile_to_file(VIEW, path, sources=[deterministic_source], n=3).status == "compiled"  # 3 candidates, not 6


def test_a_changed_view_is_recompiled(tmp_path: Path) -> None:
    """Another user message changes the hash, so the stored blueprint is stale."""
    path = tmp_path / "b.json"
    compile_to_file(VIEW, path, sources=[deterministic_source], n=1)
    changed = VIEW.model_copy(update={"messages": (*VIEW.messages[:1], VIEW.messages[1].model_copy(update={"content": "Text Bob."}))})
    assert compile_to_file(changed, path, sources=[deterministic_source], n=1).status == "compiled"
    assert stored_view_hash(path) == changed.digest() != VIEW.digest()


def test_too_few_valid_candidates_write_nothing_and_say_why(tmp_path: Path) -> None:
    """A failed compile leaves no file (and an old file untouched), and reports pruned reasons."""
    path = tmp_path / "b.json"
    src = Metered(_graph_for(VIEW, good_graph()), _graph_for(VIEW, hallucinated_graph()), "{oops")
    outcome = compile_to_file(VIEW, path, sources=[src], n=3, min_valid=2)
    assert outcome.status == "failed" and not path.exists()
    assert outcome.valid == 1 and {p.rule for p in outcome.pruned} == {"schema", "parse"}
    assert outcome.error is not None and "fewer than the minimum 2" in outcome.error
    path.write_text("old")
    compile_to_file(VIEW, path, sources=[src], n=3, min_valid=2)
    assert path.read_text() == "old"


def test_an_unreadable_stored_blueprint_is_recompiled(tmp_path: Path) -> None:
    """A corrupt file has no hash, so it is replaced."""
    path = tmp_path / "b.json"
    path.write_text("{not json")
    assert stored_view_hash(path) is None
    assert compile_to_file(VIEW, path, sources=[deterministic_source], n=1).status == "compiled"


@pytest.mark.parametrize(("total", "need"), [(1, 1), (2, 2), (5, 3), (10, 6)])
def test_default_minimum_is_a_strict_majority(total: int, need: int) -> None:
    """Most of the candidates asked for must survive validation."""
    assert default_min_valid(total) == need


def test_no_llm_means_no_tokens(tmp_path: Path) -> None:
    """Generator-only blueprints record no tokens or cost (None, not 0)."""
    outcome = compile_to_file(VIEW, tmp_path / "b.json", sources=[deterministic_source], n=2)
    assert outcome.tokens is None and outcome.cost_usd is None
    assert outcome.blueprint is not None and outcome.blueprint.provenance is not None
    assert outcome.blueprint.provenance.tokens is None
