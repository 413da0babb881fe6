"""The deterministic candidate generator and the compile API: necessity, safety, robustness, determinism."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any

import networkx as nx
import pytest

from dynsteer_hook.compile.compiler import compile_blueprint, compile_consensus, compile_generator_only
from dynsteer_hook.compile.consensus import Candidate, build_consensus
from dynsteer_hook.compile.generator.candidates import FOCUS_CODES, GENERATOR, MODEL, generate_candidates
from dynsteer_hook.compile.generator.planner import ASK_OR_DECLINE, plan_task
from dynsteer_hook.model.blueprint import AGENT_MESSAGE_TOOL, Blueprint, ToolSpec
from dynsteer_hook.model.catalog import ToolCatalog
from dynsteer_hook.model.contract import validate_blueprint
from dynsteer_hook.model.graph import milestone_graph
from dynsteer_hook.model.task_view import PublicMessage, TaskView

DATABASES = {
    "SETTING": {"device_id": "String", "cellular": "Boolean", "wifi": "Boolean", "location_service": "Boolean",
                "low_battery_mode": "Boolean", "latitude": "Float64", "longitude": "Float64"},
    "CONTACT": {"person_id": "String", "name": "String", "phone_number": "String", "relationship": "String", "is_self": "Boolean"},
    "MESSAGING": {"message_id": "String", "sender_person_id": "String", "sender_phone_number": "String", "recipient_person_id": "String",
                  "recipient_phone_number": "String", "content": "String", "creation_timestamp": "Float64"},
    "REMINDER": {"reminder_id": "String", "content": "String", "creation_timestamp": "Float64", "reminder_timestamp": "Float64",
                 "latitude": "Float64", "longitude": "Float64"},
}

# name: (description, {arg: (type, description)}, required)
TOOLS: dict[str, tuple[str, dict[str, tuple[str, str]], list[str]]] = {
    "search_contacts": ("Search for a contact person based on provided arguments",
                        {"person_id": ("string", "Unique identifier"), "name": ("string", "Name of contact person"),
                         "phone_number": ("string", "Phone number"), "relationship": ("string", "Relationship"), "is_self": ("boolean", "Self")}, []),
    "send_message_with_phone_number": ("Send a message to a recipient using phone_number",
                                       {"phone_number": ("string", "Phone number to send to"), "content": ("string", "Message payload text")},
                                       ["phone_number", "content"]),
    "remove_contact": ("Remove an existing contact person", {"person_id": ("string", "Identifier of the person to delete")}, ["person_id"]),
    "set_cellular_service_status": ("Enable / Disable cellular service", {"on": ("boolean", "If we want to turn on cellular service")}, ["on"]),
    "get_cellular_service_status": ("Request cellular service status", {}, []),
    "set_wifi_status": ("Enable / Disable wifi", {"on": ("boolean", "If we want to turn on wifi")}, ["on"]),
    "get_current_location": ("Request current location latitude and longitude", {}, []),
    "search_lat_lon": ("Search for the address corresponding to a latitude and longitude",
                       {"latitude": ("number", "Latitude to search"), "longitude": ("number", "Longitude to search")}, ["latitude", "longitude"]),
    "search_stock": ("Search for various information about a stock given a query", {"query": ("string", "a company name or stock symbol")}, ["query"]),
    "unit_conversion": ("Convert a certain amount from one unit to another",
                        {"amount": ("number", "Amount"), "from_unit": ("string", "Unit to convert from"), "to_unit": ("string", "Unit to convert to")},
                        ["amount", "from_unit", "to_unit"]),
    "get_current_timestamp": ("Get current POSIX timestamp", {}, []),
    "search_holiday": ("Search for a holiday by name in the US.", {"holiday_name": ("string", "Name of the holiday"), "year": ("integer", "Year")},
                       ["holiday_name"]),
    "timestamp_diff": ("Calculates the difference between two timestamps",
                       {"timestamp_0": ("number", "Timestamp to subtract"), "timestamp_1": ("number", "Timestamp to subtract from")},
                       ["timestamp_0", "timestamp_1"]),
}

SEND = "Send a message to Fredrik Thordendal saying: How's the new album coming along"


def spec(name: str, *, shown_as: str | None = None, description: bool = True, arg_types: bool = True, arg_descriptions: bool = True) -> ToolSpec:
    """A tool as ToolSandbox would show it, optionally scrambled."""
    desc, args, required = TOOLS[name]
    props: dict[str, Any] = {}
    for arg, (kind, text) in args.items():
        prop: dict[str, Any] = {}
        if arg_types:
            prop["type"] = kind
        if arg_descriptions:
            prop["description"] = text
        props[arg] = prop
    return ToolSpec(name=shown_as or name, description=desc if description else "", parameters={"type": "object", "properties": props, "required": required})


def view(instruction: str, tools: Iterable[str | ToolSpec], task: str = "t") -> TaskView:
    specs = [t if isinstance(t, ToolSpec) else spec(t) for t in tools]
    return TaskView(
        task=task,
        messages=(PublicMessage(role="system", content="Don't make assumptions."), PublicMessage(role="user", content=instruction)),
        tools=tuple(sorted(specs, key=lambda s: s.name)),
        databases=DATABASES,
    )


def ops(bp: Blueprint) -> set[str]:
    return {m.tool for m in bp.milestones}


def order(bp: Blueprint) -> set[tuple[str, str]]:
    """Precedence between tools, transitively closed."""
    g = nx.transitive_closure_dag(milestone_graph(bp))
    tool = {m.id: m.tool for m in bp.milestones}
    return {(tool[u], tool[v]) for u, v in g.edges}


SEND_TOOLS = ["search_contacts", "send_message_with_phone_number", "set_cellular_service_status", "get_cellular_service_status"]


def test_send_to_a_named_contact_looks_the_number_up_first() -> None:
    """The phone number of a named person comes from a contact look-up, which precedes the send; the report comes last."""
    bp = compile_generator_only(view(SEND, SEND_TOOLS))
    assert {"search_contacts", "send_message_with_phone_number", AGENT_MESSAGE_TOOL} <= ops(bp)
    assert ("search_contacts", "send_message_with_phone_number") in order(bp)
    assert ("send_message_with_phone_number", AGENT_MESSAGE_TOOL) in order(bp)
    [binding] = bp.bindings
    assert (binding.arg, binding.path) == ("phone_number", "phone_number")
    assert bp.minefields == ()


def test_a_phone_number_in_the_request_needs_no_lookup() -> None:
    """When the user gives the number, the send stands alone, with a loose digits predicate."""
    bp = compile_generator_only(view("Send a message to +12453344098 saying: hello there", ["search_contacts", "send_message_with_phone_number"]))
    assert ops(bp) == {"send_message_with_phone_number", AGENT_MESSAGE_TOOL}
    send = next(m for m in bp.milestones if m.tool == "send_message_with_phone_number")
    assert {(p.arg, p.op, p.value) for p in send.args} == {("phone_number", "contains", "2453344098"), ("content", "contains", "hello")}


def _rename(bp: Blueprint, names: dict[str, str]) -> tuple[set[str], set[tuple[str, str]], set[str]]:
    back = {v: k for k, v in names.items()}
    return ({back.get(t, t) for t in ops(bp)}, {(back.get(a, a), back.get(b, b)) for a, b in order(bp)}, {back.get(f.tool, f.tool) for f in bp.minefields})


SCRAMBLES: dict[str, dict[str, Any]] = {
    "tool names": {"scramble_names": True},
    "descriptions": {"description": False},
    "argument types": {"arg_types": False},
    "argument descriptions": {"arg_descriptions": False},
}


@pytest.mark.parametrize("how", list(SCRAMBLES), ids=list(SCRAMBLES))
@pytest.mark.parametrize(("instruction", "tools"), [
    (SEND, SEND_TOOLS),
    ("What city am I in?", ["get_current_location", "search_lat_lon", "search_stock"]),
    ("What city am I in?", ["search_lat_lon", "search_stock"]),
    ("How many days is it till Christmas Day", ["get_current_timestamp", "search_holiday", "timestamp_diff", "unit_conversion"]),
    ("Remove phone number +12453344098 from my contact", ["search_contacts", "remove_contact"]),
], ids=["send", "city", "city-insufficient", "holiday", "remove"])
def test_scrambled_variants_compile_to_the_same_graph(instruction: str, tools: list[str], how: str) -> None:
    """Scrambled names (module_N), removed descriptions, argument types or argument descriptions change nothing."""
    plain = compile_generator_only(view(instruction, tools))
    options = dict(SCRAMBLES[how])
    names = {t: f"module_{i}" for i, t in enumerate(sorted(tools))} if options.pop("scramble_names", False) else {t: t for t in tools}
    scrambled = compile_generator_only(view(instruction, [spec(t, shown_as=names[t], **options) for t in tools]))
    assert _rename(scrambled, names) == (ops(plain), order(plain), {f.tool for f in plain.minefields})


def test_argument_structure_alone_identifies_lookup_and_delete() -> None:
    """With opaque names and no descriptions at all, argument names and the database headers still give the plan."""
    names = {"search_contacts": "tool_0", "remove_contact": "tool_1"}
    bare = [spec(t, shown_as=names[t], description=False, arg_descriptions=False, arg_types=False) for t in names]
    bp = compile_generator_only(view("Remove phone number +12453344098 from my contact", bare))
    assert ops(bp) == {"tool_0", "tool_1", AGENT_MESSAGE_TOOL}
    assert ("tool_0", "tool_1") in order(bp)


@pytest.mark.parametrize(("instruction", "tools", "fatal"), [
    ("What city am I in?", ["search_lat_lon", "search_stock"], "search_lat_lon"),
    ("How many days is it till Christmas Day", ["search_holiday", "timestamp_diff"], "timestamp_diff"),
    (SEND, ["send_message_with_phone_number", "set_cellular_service_status"], "send_message_with_phone_number"),
    ("Remove phone number +12453344098 from my contact", ["remove_contact"], "remove_contact"),
], ids=["no-location", "no-clock", "no-contacts", "no-lookup"])
def test_insufficient_information_mines_the_call_that_needs_fabricated_inputs(instruction: str, tools: list[str], fatal: str) -> None:
    """A required value nobody can supply: one message that asks or declines, one fatal minefield on the goal tool, harmless tools free."""
    bp = compile_generator_only(view(instruction, tools))
    [message] = bp.milestones
    assert message.tool == AGENT_MESSAGE_TOOL and message.description.startswith("ask the user for what is missing or decline")
    assert [(p.arg, p.op, p.value) for p in message.args] == [("content", "regex", ASK_OR_DECLINE)]
    assert [(f.tool, f.fatal) for f in bp.minefields] == [(fatal, True)]
    assert "insufficient information" in bp.minefields[0].reason
    assert validate_blueprint(bp) == []


def test_a_missing_goal_tool_leaves_only_the_message_that_declines() -> None:
    """No tool can do what is asked: the agent can only say so (ask or decline); nothing is mined."""
    bp = compile_generator_only(view("Remove phone number +12453344098 from my contact", ["search_contacts"]))
    [message] = bp.milestones
    assert message.tool == AGENT_MESSAGE_TOOL and [p.value for p in message.args] == [ASK_OR_DECLINE]
    assert bp.minefields == ()


def test_a_request_nobody_understood_asks_only_for_some_message() -> None:
    """When no intent is read at all, the generator cannot say what a good answer is: any message to the user settles it."""
    bp = compile_generator_only(view("Zorp the blibble, please.", ["search_contacts"]))
    [message] = bp.milestones
    assert message.tool == AGENT_MESSAGE_TOOL and message.args == ()


VIEWS = [
    view(SEND, SEND_TOOLS),
    view("Turn on wifi", ["set_wifi_status", "get_cellular_service_status"]),
    view("What's the stock symbol for Apple? Resolve any issue alone", ["search_stock", "set_wifi_status", "remove_contact"]),
    view("What city am I in?", ["get_current_location", "search_lat_lon", "set_wifi_status"]),
    view("How many days is it till Christmas Day", ["get_current_timestamp", "search_holiday", "timestamp_diff"]),
    view("Remove phone number +12453344098 from my contact", ["search_contacts", "remove_contact"]),
    view("What city am I in?", ["search_lat_lon"]),
]


@pytest.mark.parametrize("v", VIEWS, ids=lambda v: v.messages[-1].content[:30])
def test_never_mines_an_operation_the_blueprint_needs(v: TaskView) -> None:
    """No fatal minefield guards a tool that also settles a milestone, in any candidate or in the consensus."""
    for bp in [c.blueprint for c in generate_candidates(v, 5)] + [compile_generator_only(v)]:
        assert bp is not None
        assert not ops(bp) & {f.tool for f in bp.minefields if f.fatal}


@pytest.mark.parametrize("v", VIEWS, ids=lambda v: v.messages[-1].content[:30])
def test_predicates_are_loose(v: TaskView) -> None:
    """Milestones test presence, case-insensitive containment or a boolean switch; never exact strings or numbers."""
    for m in compile_generator_only(v).milestones:
        for p in m.args:
            asks_or_declines = m.tool == AGENT_MESSAGE_TOOL and p.op == "regex" and p.value == ASK_OR_DECLINE
            assert p.op == "contains" or (p.op == "eq" and isinstance(p.value, bool)) or asks_or_declines, (m.id, p)


def test_speculative_prerequisites_never_gate_other_milestones() -> None:
    """Turning a service on in case the device blocks the task is a milestone of its own, with no successors."""
    bp = compile_generator_only(view(SEND + ". Resolve any issue alone", SEND_TOOLS))
    cellular = next(m for m in bp.milestones if m.tool == "set_cellular_service_status")
    assert [(p.arg, p.value) for p in cellular.args] == [("on", True)]
    assert not [e for e in bp.edges if e.source == cellular.id]


def test_a_service_the_user_asks_to_enable_brings_low_battery_mode_off_as_a_prerequisite() -> None:
    """'Turn on wifi' with a low-battery switch at hand: wifi on is the goal, low-battery off a free-standing prerequisite."""
    tools = [spec("set_wifi_status"), ToolSpec(name="set_low_battery_mode_status", description="Enable / Disable low battery mode",
                                               parameters={"type": "object", "properties": {"on": {"type": "boolean"}}, "required": ["on"]})]
    bp = compile_generator_only(view("Turn on wifi", tools))
    by_tool = {m.tool: m for m in bp.milestones}
    assert [(p.arg, p.value) for p in by_tool["set_wifi_status"].args] == [("on", True)]
    assert [(p.arg, p.value) for p in by_tool["set_low_battery_mode_status"].args] == [("on", False)]
    assert ("set_wifi_status", AGENT_MESSAGE_TOOL) in order(bp)


@pytest.mark.parametrize("n", [1, 2, 3, 5, 7])
def test_candidates_cycle_through_focus_codes_and_are_valid(n: int) -> None:
    """n candidates with unique names, each valid, each recording this generator and no model."""
    cands = generate_candidates(VIEWS[0], n)
    assert len(cands) == n == len({c.name for c in cands})
    assert [c.name.rsplit(":", 1)[1] for c in cands] == [FOCUS_CODES[i % len(FOCUS_CODES)].code for i in range(n)]
    for c in cands:
        assert c.blueprint is not None and validate_blueprint(c.blueprint) == []
        assert (c.generator, c.model) == (GENERATOR, MODEL)


def test_candidate_count_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        generate_candidates(VIEWS[0], 0)


def test_candidates_differ_but_minority_hypotheses_do_not_survive_consensus() -> None:
    """Hierarchical look-ups and natural (unforced) orders appear in some candidates, never in the majority."""
    v = view("Remove id 9e137f06-916a-5310-8174-cf0b7e9f7054 from my contact", ["search_contacts", "remove_contact"])
    cands = generate_candidates(v, 5)
    assert len({c.blueprint.to_json() for c in cands if c.blueprint}) > 1
    assert any("search_contacts" in ops(c.blueprint) for c in cands if c.blueprint)
    assert "search_contacts" not in ops(compile_generator_only(v))


@pytest.mark.parametrize("n", [1, 3, 5, 7])
def test_consensus_keeps_what_the_plan_supports_with_evidence_one_half(n: int) -> None:
    """Whatever the candidate count, the consensus holds exactly the plan's operations with evidence >= 0.5."""
    for v in VIEWS:
        plan = plan_task(v)
        expected = {o.tool for o in plan.ops if o.evidence >= 0.5}
        assert ops(compile_generator_only(v, n)) == expected


def test_read_only_requests_guard_deletions_only_in_the_liberal_candidate() -> None:
    """A liberal candidate mines deletions in a pure question; the majority does not, so no correct agent is halted by it."""
    cands = {c.name.rsplit(":", 1)[1]: c.blueprint for c in generate_candidates(VIEWS[2], 5)}
    assert cands["liberal"] is not None and [f.tool for f in cands["liberal"].minefields] == ["remove_contact"]
    assert compile_generator_only(VIEWS[2]).minefields == ()


def test_compilation_is_deterministic_and_order_free() -> None:
    """The same view compiles to byte-identical JSON, whatever order the candidates arrive in."""
    v = VIEWS[0]
    first = compile_generator_only(v).to_json()
    assert compile_generator_only(v).to_json() == first
    cands = generate_candidates(v, 5)
    for perm in itertools.islice(itertools.permutations(cands), 6):
        assert compile_blueprint(v, list(perm)).to_json() == first


def test_provenance_records_sources_counts_and_view_hash() -> None:
    """Generators, models, candidate counts and the public-view hash are filled in."""
    v = VIEWS[0]
    prov = compile_generator_only(v, 5).provenance
    assert prov is not None
    assert (prov.generators, prov.models, prov.candidates, prov.valid_candidates, prov.support_threshold) == ((GENERATOR,), (MODEL,), 5, 5, 3)
    assert prov.public_view_hash == v.digest() and prov.scenario == v.task


def test_another_candidate_source_is_a_plain_callable_feeding_the_same_consensus() -> None:
    """An LLM-like source (here a stub) joins by signature alone; provenance names both sources and models."""

    def stub(v: TaskView, n: int) -> list[Candidate]:
        bad = Candidate.from_text("stub#bad", "{not json", generator="llm-stub", model="tiny-model")
        good = [Candidate(f"stub#{i}", compile_generator_only(v, 1).model_copy(update={"provenance": None}), generator="llm-stub", model="tiny-model")
                for i in range(n - 1)]
        return [bad, *good]

    result = compile_consensus(VIEWS[0], sources=[stub, lambda v, n: generate_candidates(v, n)], n=3)
    prov = result.blueprint.provenance
    assert prov is not None
    assert prov.generators == (GENERATOR, "llm-stub") and prov.models == (MODEL, "tiny-model")
    assert (prov.candidates, prov.valid_candidates) == (6, 5)
    assert [p.candidate for p in prov.pruned] == ["stub#bad"]



def test_consensus_over_generated_candidates_matches_the_core_consensus() -> None:
    """compile_blueprint is build_consensus over the candidates with the view's catalog and hash (nothing else)."""
    v = VIEWS[3]
    cands = generate_candidates(v, 5)
    direct = build_consensus(cands, ToolCatalog(v.tools), task=v.task, public_view_hash=v.digest()).blueprint
    assert compile_blueprint(v, cands).to_json() == direct.to_json()


ALL_TOOLS = list(TOOLS)


@pytest.mark.parametrize(("instruction", "expected"), [
    ("Please switch the wifi off", {"set_wifi_status"}),
    ("Tell Homer S that I'll be late", {"search_contacts", "send_message_with_phone_number"}),
    ("Text +15551234567 that I'm running late", {"send_message_with_phone_number"}),
    ("How many days until Thanksgiving?", {"get_current_timestamp", "search_holiday", "timestamp_diff"}),
    ("What's Homer's number?", {"search_contacts"}),
    ("Convert 10 miles to kilometers", {"unit_conversion"}),
    ("Call me a taxi", set()),
])
def test_phrasings_outside_toolsandbox_are_read_too(instruction: str, expected: set[str]) -> None:
    """The rules read intents, not memorised sentences: new phrasings over the full catalog plan sensibly."""
    assert ops(compile_generator_only(view(instruction, ALL_TOOLS))) - {AGENT_MESSAGE_TOOL} == expected


def _tool(name: str, description: str, props: dict[str, str], required: list[str]) -> ToolSpec:
    return ToolSpec(name=name, description=description, parameters={
        "type": "object", "required": required, "properties": {k: {"type": t, "description": k.replace("_", " ")} for k, t in props.items()}})


ADD_REMINDER = _tool("add_reminder", "Add a reminder",
                     {"content": "string", "reminder_timestamp": "number", "latitude": "number", "longitude": "number"}, ["content", "reminder_timestamp"])
TO_TIMESTAMP = _tool("datetime_info_to_timestamp", "Convert date time information to POSIX timestamp",
                     {"year": "integer", "month": "integer", "day": "integer", "hour": "integer", "minute": "integer", "second": "integer"},
                     ["year", "month", "day", "hour", "minute", "second"])
MODIFY_CONTACT = _tool("modify_contact", "Modify a contact entry with new information provided",
                       {"person_id": "string", "name": "string", "phone_number": "string", "relationship": "string"}, ["person_id"])
SEARCH_MESSAGES = _tool("search_messages", "Search for a message based on provided arguments",
                        {"message_id": "string", "sender_person_id": "string", "content": "string",
                         "creation_timestamp_lowerbound": "number", "creation_timestamp_upperbound": "number"}, [])
BROAD = ["search_stock", "unit_conversion", "search_holiday", "timestamp_diff", "search_lat_lon", "get_current_location", "search_contacts",
         "remove_contact"]


@pytest.mark.parametrize(("instruction", "clock"), [
    ("What does my most recent message say?", False),  # an order among the messages: their timestamps tell it
    ("What does my latest text say?", False),
    ("What did the message I got yesterday say?", True),  # a time stated against now
])
def test_a_message_search_reads_the_clock_only_for_a_time_relative_to_now(instruction: str, clock: bool) -> None:
    bp = compile_generator_only(view(instruction, [SEARCH_MESSAGES, "get_current_timestamp"]))
    assert "search_messages" in ops(bp)
    assert ("get_current_timestamp" in ops(bp)) is clock


@pytest.mark.parametrize(("tools", "expected"), [
    ([ADD_REMINDER, TO_TIMESTAMP], {"datetime_info_to_timestamp"}),  # the one way a small catalog offers
    ([ADD_REMINDER, "get_current_timestamp"], {"get_current_timestamp"}),  # the clock alone stays the guess
    ([ADD_REMINDER, TO_TIMESTAMP, "get_current_timestamp"], {"get_current_timestamp"}),  # curated catalog: the clock
    ([ADD_REMINDER, TO_TIMESTAMP, "get_current_timestamp", *BROAD], set()),  # broad catalog: neither is required
])
def test_a_reminder_whose_time_comes_later_requires_a_timestamp_source_only_when_the_catalog_tells(
        tools: list[str | ToolSpec], expected: set[str]) -> None:
    bp = compile_generator_only(view("Remind me to buy chocolate milk", tools))
    assert ops(bp) & {"datetime_info_to_timestamp", "get_current_timestamp"} == expected
    assert "add_reminder" in ops(bp)
    if "datetime_info_to_timestamp" in expected:  # its result is the reminder's timestamp
        assert ("datetime_info_to_timestamp", "add_reminder") in order(bp)


def test_a_question_about_contacts_beside_only_an_update_tool_plans_the_update() -> None:
    """'Who are my friends?' with nothing on offer but the look-up and the update: the update comes in a later turn."""
    bp = compile_generator_only(view("Who are my friends?", ["search_contacts", MODIFY_CONTACT]))
    assert {"search_contacts", "modify_contact"} <= ops(bp)
    assert ("search_contacts", "modify_contact") in order(bp)
    update = next(m for m in bp.milestones if m.tool == "modify_contact")
    assert any("offered beside nothing but the plan" in e.detail for e in update.evidence)
    # any other tool on offer removes the signal, and a catalog without the update never plans it
    assert "modify_contact" not in ops(compile_generator_only(view("Who are my friends?", ["search_contacts", MODIFY_CONTACT, "search_stock"])))
    assert "modify_contact" not in ops(compile_generator_only(view("Who are my friends?", ["search_contacts"])))
    # without a look-up the update could only run on a guessed identifier: not planned, and the question is not made insufficient
    alone = compile_generator_only(view("Who are my friends?", [MODIFY_CONTACT]))
    assert "modify_contact" not in ops(alone) and not any(f.tool == "modify_contact" for f in alone.minefields)


def test_a_person_found_through_the_messages_is_updated_when_only_the_update_is_offered_beside_the_plan() -> None:
    bp = compile_generator_only(view("Who did I talk to last", [SEARCH_MESSAGES, "get_current_timestamp", "search_contacts", MODIFY_CONTACT]))
    assert {"search_messages", "search_contacts", "modify_contact"} <= ops(bp)
    assert ("search_contacts", "modify_contact") in order(bp)
