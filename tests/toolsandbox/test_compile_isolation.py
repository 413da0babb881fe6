"""Security: the blueprint compiler never sees a scenario's hidden milestones, minefields or user-simulator instructions."""

from __future__ import annotations

import copy
from typing import Any

import polars as pl
import pytest
from ts_support import B, C, D, E

from dynsteer_hook.compile.compiler import compile_generator_only
from dynsteer_hook.compile.generator.candidates import generate_candidates
from dynsteer_hook.toolsandbox.quality.reference import reference_graph
from dynsteer_hook.toolsandbox.scenario_view import public_view

from tool_sandbox.common.evaluation import Milestone, Minefield, SnapshotConstraint, snapshot_similarity
from tool_sandbox.common.execution_context import DatabaseNamespace, RoleType

pytestmark = pytest.mark.toolsandbox

CANARY = "search_contacts CANARY-41d2 Fredrik send_message_with_phone_number"


def _planted(scenario: Any) -> Any:
    """A copy with the canary (which also names real tools and a contact) in every hidden part."""
    sc = copy.deepcopy(scenario)
    sc.starting_context.add_to_database(
        namespace=DatabaseNamespace.SANDBOX,
        rows=[{"sender": RoleType.SYSTEM, "recipient": RoleType.USER, "content": f"You are the user. {CANARY}", "visible_to": [RoleType.USER]}],
    )
    message = pl.DataFrame({"sender": [RoleType.AGENT], "recipient": [RoleType.USER], "content": [CANARY]})
    call = pl.DataFrame({"sender": [RoleType.AGENT], "recipient": [RoleType.EXECUTION_ENVIRONMENT], "content": [CANARY]})
    sc.evaluation.milestone_matcher.milestones.append(
        Milestone(snapshot_constraints=[SnapshotConstraint(database_namespace=DatabaseNamespace.SANDBOX, snapshot_constraint=snapshot_similarity, target_dataframe=message)])
    )
    sc.evaluation.minefield_matcher.milestones.append(
        Minefield(snapshot_constraints=[SnapshotConstraint(database_namespace=DatabaseNamespace.SANDBOX, snapshot_constraint=snapshot_similarity, target_dataframe=call)])
    )
    return sc


@pytest.mark.parametrize("name", [B, C, D, E])
def test_canary_in_hidden_data_reaches_neither_view_nor_candidates_nor_blueprint(scenarios: dict[str, Any], name: str) -> None:
    """Planted in milestones, minefields and the SYSTEM->USER instructions, the canary is nowhere in what the compiler makes."""
    sc = _planted(scenarios[name])
    assert CANARY in repr(sc.starting_context.get_database(DatabaseNamespace.SANDBOX)["content"].to_list())
    assert CANARY in repr(sc.evaluation.milestone_matcher.milestones[-1].snapshot_constraints[0].target_dataframe.to_dicts())
    view = public_view(name, sc)
    assert "CANARY" not in view.model_dump_json()
    candidates = generate_candidates(view, 5)
    assert all("CANARY" not in (c.blueprint.to_json() if c.blueprint else "") for c in candidates)
    bp = compile_generator_only(view)
    assert "CANARY" not in bp.to_json()
    # The planted data changes nothing the compiler produces.
    assert bp.to_json() == compile_generator_only(public_view(name, scenarios[name])).to_json()


def test_canary_is_visible_to_the_metric_code_only(scenarios: dict[str, Any]) -> None:
    """The reference (metric side) does read hidden data: a planted minefield on a real tool shows up there."""
    sc = _planted(scenarios[B])
    sc.evaluation.minefield_matcher.milestones.append(
        Minefield(snapshot_constraints=[SnapshotConstraint(
            database_namespace=DatabaseNamespace.SANDBOX, snapshot_constraint=snapshot_similarity,
            target_dataframe=pl.DataFrame({"sender": [RoleType.AGENT], "recipient": [RoleType.EXECUTION_ENVIRONMENT], "content": ["search_contacts"]}),
        )])
    )
    ref = reference_graph(B, sc, scenarios[B])
    assert "search_contacts" in ref.fatal_minefields
    assert "search_contacts" not in {f.tool for f in compile_generator_only(public_view(B, sc)).minefields}
