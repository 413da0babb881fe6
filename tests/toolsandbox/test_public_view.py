"""The public task view: exactly what the agent sees, never the hidden evaluation."""

from __future__ import annotations

import copy
from typing import Any

import polars as pl
import pytest
from ts_support import B, D, E

from dynsteer_hook.toolsandbox.scenario_view import public_view

from tool_sandbox.common.evaluation import Milestone, Minefield, SnapshotConstraint, snapshot_similarity
from tool_sandbox.common.execution_context import DatabaseNamespace, RoleType

pytestmark = pytest.mark.toolsandbox

CANARY = "CANARY-7f3a9c-do-not-leak"


def _planted(scenarios: dict[str, Any], name: str) -> Any:
    """A copy of a scenario with the canary in its milestones, minefields and user-simulator instructions."""
    sc = copy.deepcopy(scenarios[name])
    sc.starting_context.add_to_database(
        namespace=DatabaseNamespace.SANDBOX,
        rows=[{"sender": RoleType.SYSTEM, "recipient": RoleType.USER, "content": f"Secret goal: {CANARY}", "visible_to": [RoleType.USER]}],
    )
    target = pl.DataFrame({"sender": [RoleType.AGENT], "recipient": [RoleType.USER], "content": [CANARY]})
    sc.evaluation.milestone_matcher.milestones.append(
        Milestone(snapshot_constraints=[SnapshotConstraint(database_namespace=DatabaseNamespace.SANDBOX, snapshot_constraint=snapshot_similarity, target_dataframe=target)])
    )
    sc.evaluation.minefield_matcher.milestones.append(
        Minefield(snapshot_constraints=[SnapshotConstraint(database_namespace=DatabaseNamespace.SANDBOX, snapshot_constraint=snapshot_similarity, target_dataframe=target)])
    )
    return sc


@pytest.mark.parametrize("name", [B, D, E])
def test_hidden_milestones_minefields_and_user_instructions_never_reach_the_view(scenarios: dict[str, Any], name: str) -> None:
    """A canary planted in every hidden part of a scenario is absent from its public view."""
    sc = _planted(scenarios, name)
    assert CANARY in repr(sc.evaluation.milestone_matcher.milestones[-1].snapshot_constraints[0].target_dataframe.to_dicts())
    assert CANARY in repr(sc.evaluation.minefield_matcher.milestones[-1].snapshot_constraints[0].target_dataframe.to_dicts())
    assert CANARY in repr(sc.starting_context.get_database(DatabaseNamespace.SANDBOX)["content"].to_list())
    view = public_view(name, sc)
    assert CANARY not in view.model_dump_json()
    assert view.digest() == public_view(name, scenarios[name]).digest()


def test_view_holds_only_agent_visible_messages(scenarios: dict[str, Any]) -> None:
    """The system prompt and the user's opening message; no few-shot or simulator rows."""
    view = public_view(B, scenarios[B])
    assert [m.role for m in view.messages] == ["system", "user"]
    assert "Fredrik Thordendal" in view.messages[1].content
    assert all("User A" not in m.content for m in view.messages)


def test_scrambled_names_are_shown_as_the_agent_sees_them(scenarios: dict[str, Any]) -> None:
    """Tool-name scrambling hides the execution-facing names from the view."""
    names = {t.name for t in public_view(E, scenarios[E]).tools}
    assert {"setting_5", "contact_3", "messaging_1"} <= names
    assert not names & {"set_cellular_service_status", "search_contacts", "send_message_with_phone_number"}


def test_distraction_and_augmentation_variants_change_the_catalog(scenarios: dict[str, Any]) -> None:
    """Distraction tools add tools; description and argument-type scrambling strip them from schemas."""
    base = public_view(B, scenarios[B])
    ten = public_view(B + "_10_distraction_tools", scenarios[B + "_10_distraction_tools"])
    assert len(ten.tools) > len(base.tools) and {t.name for t in base.tools} <= {t.name for t in ten.tools}
    typed = public_view(B + "_3_distraction_tools_arg_type_scrambled", scenarios[B + "_3_distraction_tools_arg_type_scrambled"])
    props = [p for t in typed.tools for p in t.parameters.get("properties", {}).values()]
    assert props and all("type" not in p for p in props)
    nodesc = public_view(B + "_3_distraction_tools_tool_description_scrambled", scenarios[B + "_3_distraction_tools_tool_description_scrambled"])
    stripped = [t.name for t in nodesc.tools if t.description == ""]
    assert {"search_contacts", "send_message_with_phone_number", "set_cellular_service_status"} <= set(stripped)


def test_end_conversation_is_not_an_agent_tool(scenarios: dict[str, Any]) -> None:
    """The user-only end_conversation tool is not part of the agent's catalog."""
    assert "end_conversation" not in {t.name for t in public_view(B, scenarios[B]).tools}


def test_database_headers_are_columns_without_rows(scenarios: dict[str, Any]) -> None:
    """Initial databases appear as headers (column -> type), never as rows."""
    view = public_view(B, scenarios[B])
    assert set(view.databases) == {"SETTING", "CONTACT", "MESSAGING", "REMINDER"}
    assert view.databases["CONTACT"]["phone_number"] == "String"
    assert "+12453344098" not in view.model_dump_json()


def test_every_scenario_has_a_distinct_stable_view(scenarios: dict[str, Any]) -> None:
    """All 1032 scenarios yield a view; digests are unique and do not depend on run order."""
    digests = {name: public_view(name, sc).digest() for name, sc in scenarios.items()}
    assert len(scenarios) == 1032 and len(set(digests.values())) == 1032
