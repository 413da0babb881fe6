"""Expert reference graphs from ToolSandbox's hidden milestones, minefields and necessary tools."""

from __future__ import annotations

from typing import Any

import pytest
from ts_support import A, B, D, E

from dynsteer_hook.model.blueprint import AGENT_MESSAGE_TOOL
from dynsteer_hook.toolsandbox.quality.reference import (
    ReferenceGraph,
    base_scenario_name,
    necessary_tools,
    reference_graph,
    reference_graphs,
)
from dynsteer_hook.toolsandbox.scenario_view import public_view

pytestmark = pytest.mark.toolsandbox


@pytest.fixture(scope="module")
def refs(scenarios: dict[str, Any]) -> dict[str, ReferenceGraph]:
    return reference_graphs(scenarios)


def _ops(ref: ReferenceGraph) -> list[tuple[str, str]]:
    return [(n.tool, n.source) for n in ref.nodes]


def test_every_scenario_has_a_reference(scenarios: dict[str, Any], refs: dict[str, ReferenceGraph]) -> None:
    """All 1032 scenarios, each tied to a base variant of the NO_DISTRACTION_TOOLS category."""
    assert len(refs) == len(scenarios) == 1032
    assert {r.base for r in refs.values()} == {n for n, s in scenarios.items() if "NO_DISTRACTION_TOOLS" in map(str, s.categories)}


def test_settings_constraint_becomes_the_setter_and_a_message_becomes_agent_message(refs: dict[str, ReferenceGraph]) -> None:
    """cellular=False in the SETTING database is caused by set_cellular_service_status; AGENT->USER is @agent_message."""
    ref = refs[A]
    assert _ops(ref) == [("set_cellular_service_status", "database:SETTING.cellular"), (AGENT_MESSAGE_TOOL, "agent_message")]
    assert ref.edges == (("m0.0", "m1.0"),)
    assert ref.fatal_minefields == ()


def test_traces_additions_and_edge_list_are_carried_over(refs: dict[str, ReferenceGraph]) -> None:
    """A tool_trace names its tool, a MESSAGING addition the send tool; ToolSandbox's edge list gives the order."""
    ref = refs[B]
    assert [n.tool for n in ref.nodes] == ["set_cellular_service_status", "search_contacts", "send_message_with_phone_number", AGENT_MESSAGE_TOOL]
    assert ref.nodes[2].source == "database:MESSAGING.addition"
    assert set(ref.edges) == {("m0.0", "m2.0"), ("m1.0", "m2.0"), ("m2.0", "m3.0")}
    assert ref.necessary_tools == ("get_cellular_service_status", "search_contacts", "send_message_with_phone_number", "set_cellular_service_status")


def test_scrambled_variant_states_agent_facing_names_and_keeps_canonical_ones(refs: dict[str, ReferenceGraph], scenarios: dict[str, Any]) -> None:
    """Under TOOL_NAME_SCRAMBLED the reference speaks the agent's names; canonical names pool the variants."""
    ref = refs[E]
    assert [n.tool for n in ref.nodes] == ["setting_5", "contact_3", "messaging_1", AGENT_MESSAGE_TOOL]
    assert [n.canonical for n in ref.nodes] == [n.canonical for n in refs[B].nodes]
    assert ref.canonical_name("messaging_1") == "send_message_with_phone_number"
    shown = {t.name for t in public_view(E, scenarios[E]).tools}
    assert {n.tool for n in ref.nodes} - {AGENT_MESSAGE_TOOL} <= shown


def test_minefield_that_contains_a_tool_name_is_fatal_on_that_tool(refs: dict[str, ReferenceGraph]) -> None:
    """'content contains send_message_with_phone_number' on an agent call makes that tool a fatal minefield."""
    ref = refs[D]
    assert ref.nodes == () and ref.fatal_minefields == ("send_message_with_phone_number",)
    assert refs[D + "_3_distraction_tools_tool_name_scrambled"].fatal_minefields == ("messaging_1",)


def test_operations_and_minefields_on_tools_the_agent_cannot_call_are_dropped_with_a_note(refs: dict[str, ReferenceGraph]) -> None:
    """A minefield on a denied tool cannot be stepped on; it is left out and the omission noted."""
    ref = refs["find_min_temperature_weekday_insufficient_information"]
    assert ref.fatal_minefields == ()
    assert any("search_weather_around_lat_lon is not callable" in note for note in ref.notes)


def test_every_reference_operation_is_callable_by_the_agent(scenarios: dict[str, Any], refs: dict[str, ReferenceGraph]) -> None:
    """Reference nodes and minefields only name tools of the scenario's agent-facing catalog."""
    for name in list(refs)[::37]:
        shown = {t.name for t in public_view(name, scenarios[name]).tools}
        ref = refs[name]
        assert {n.tool for n in ref.nodes} - {AGENT_MESSAGE_TOOL} <= shown, name
        assert set(ref.fatal_minefields) <= shown, name


def test_necessary_tools_are_the_base_allow_list_without_user_tools(scenarios: dict[str, Any]) -> None:
    """end_conversation (the user's tool) and denied tools are not necessary tools."""
    tools = necessary_tools(scenarios["remove_contact_by_phone_no_search_contacts_insufficient_information"])
    assert tools == ["remove_contact"]


@pytest.mark.parametrize("suffix", ["", "_3_distraction_tools", "_10_distraction_tools", "_all_tools", "_3_distraction_tools_arg_type_scrambled"])
def test_base_scenario_name_strips_variant_suffixes(suffix: str) -> None:
    assert base_scenario_name(B + suffix) == B


def test_a_single_reference_can_be_built_directly(scenarios: dict[str, Any]) -> None:
    """reference_graph(name, scenario, base) is the per-scenario entry point."""
    ref = reference_graph(E, scenarios[E], scenarios[B])
    assert ref.base == B and "TOOL_NAME_SCRAMBLED" in ref.categories
