"""Agents of known quality (scripts/known_agents.py): clean solvers ToolSandbox scores 1.0, variants with one
recorded fault, and the fault's place (k, t) on dynsteer's dual clock in a real run's events file.

Every script is generated right before it is played, as ToolSandbox builds some targets from the wall clock.
"""

from __future__ import annotations

import ast
import json
import time
from pathlib import Path
from typing import Any

import known_agents as ka
import pytest
from known_quality.dialogue import GIVE_UP, user_requests
from known_quality.faults import LOOP_LENGTH, MALFORMED_KINDS, loop, malformed
from known_quality.hidden import milestone_tools, read_hidden, valid_path_tools
from known_quality.order import breaks_guardrail, plan_order
from known_quality.verify import NATIVE
from known_quality.world import World, agent_catalog
from ts_support import FAULT_SAMPLE

import dynsteer_hook
from dynsteer_hook.files.events import read_events
from dynsteer_hook.toolsandbox.live.runner import RunOptions
from dynsteer_hook.toolsandbox.roles.scripted import load_script

pytestmark = pytest.mark.toolsandbox

# Real scenarios of every category and every augmentation (the full coverage is the script's job).
CLEAN_SAMPLE = [
    "cellular_off",  # single tool
    "search_phone_number_with_name",  # single tool, answer from the result
    "add_contact_with_name_and_phone_number",  # single tool, a row added
    "send_message_with_contact_content_cellular_off",  # multi-tool, state dependency
    "find_days_till_holiday_wifi_off",  # state dependency, guardrail order, clock value passed on
    "turn_on_wifi_low_battery_mode_implicit",  # two settings in order
    "update_contact_relationship_with_relationship_twice_multiple_user_turn",  # two user requests
    "modify_contact_with_message_recency_multiple_user_turn",  # multi-turn, open searches
    "remove_contact_by_phone_no_remove_contact_insufficient_information",  # insufficient, hidden message
    "find_days_till_holiday_insufficient_information",  # insufficient, minefield only
    "add_reminder_content_and_date_and_time",  # argument from a later goal's timestamp
    "search_reminder_with_recency_upcoming",  # clock value passed on
    "search_message_with_recency_oldest_3_distraction_tools",
    "remove_contact_by_phone_10_distraction_tools",
    "get_wifi_all_tools",
    "send_message_with_contact_content_cellular_off_3_distraction_tools_tool_name_scrambled",
    "modify_reminder_with_recency_latest_3_distraction_tools_tool_description_scrambled",
    "search_sender_phone_number_with_content_3_distraction_tools_arg_description_scrambled",
    "update_contact_with_id_and_phone_number_3_distraction_tools_arg_type_scrambled",
]

VARIANT_SAMPLE = FAULT_SAMPLE

LIVE = RunOptions(agent="Scripted", user="Scripted", evaluator="dynsteer")


def _fresh_clean(name: str, scenario: Any, out: Path) -> tuple[ka.KnownScript, dict[str, Any]]:
    script, result = ka.play_fresh(lambda now: ka.clean_solver(name, scenario, now), scenario, out)
    assert isinstance(script, ka.KnownScript), script
    assert result is not None
    return script, result


@pytest.mark.parametrize("name", CLEAN_SAMPLE)
def test_clean_solver_scores_one_in_toolsandbox(scenarios: dict[str, Any], tmp_path: Path, name: str) -> None:
    """The generated clean solver, played by the Scripted roles, gets ToolSandbox similarity 1.0 without a crash."""
    script, result = _fresh_clean(name, scenarios[name], tmp_path)
    assert result["exception_type"] is None, result["traceback"]
    assert result["similarity"] == 1.0, (result["milestone_mapping"], script.to_json())
    assert ka.scores_one(result)


def test_clean_solver_file_is_in_the_scripted_role_format(scenarios: dict[str, Any], tmp_path: Path) -> None:
    """A generated script file reads back through the package's own script loader with the same steps and turns."""
    name = "update_contact_relationship_with_relationship_twice_multiple_user_turn"
    script = ka.clean_solver(name, scenarios[name])
    assert isinstance(script, ka.KnownScript)
    path = tmp_path / "s.json"
    path.write_text(json.dumps({name: script.to_json()}))
    loaded = load_script(path)[name]
    assert [s.model_dump(exclude_none=True) for s in loaded.agent] == script.to_json()["agent"]
    assert loaded.user == ["Update the all friends in my contact book as my enemy.", "Update them back to my friends."]


def test_scrambled_scenario_gets_agent_facing_names(scenarios: dict[str, Any]) -> None:
    """Under tool-name scrambling every call uses the scenario's scrambled name of the tool it means."""
    name = "send_message_with_contact_content_cellular_off_3_distraction_tools_tool_name_scrambled"
    script = ka.clean_solver(name, scenarios[name])
    assert isinstance(script, ka.KnownScript)
    ctx = scenarios[name].starting_context
    calls = [c for _, _, c in script.calls()]
    assert calls and all(c.name == ctx.get_agent_facing_tool_name(c.tool) != c.tool for c in calls)


def test_clock_prediction_is_what_toolsandbox_checks(scenarios: dict[str, Any], tmp_path: Path) -> None:
    """A script passes on its predicted clock value; five seconds late, ToolSandbox no longer scores it 1.0 unless its clock is held."""
    name = "find_days_till_holiday"
    script = ka.clean_solver(name, scenarios[name])
    assert isinstance(script, ka.KnownScript) and len(script.clock) == 1
    diff = next(c for _, _, c in script.calls() if c.tool == "timestamp_diff")
    assert diff.arguments["timestamp_0"] == script.clock[0]
    stale = ka.clean_solver(name, scenarios[name], time.time() - 5)
    assert isinstance(stale, ka.KnownScript)
    assert ka.play(stale, scenarios[name], tmp_path / "wall")["similarity"] < 1.0
    with ka.predicted_clock(stale.clock):  # what play_fresh does: the sandbox's clock gives the predicted moment
        assert ka.play(stale, scenarios[name], tmp_path / "held")["similarity"] == 1.0


def test_guardrails_decide_the_milestone_order(scenarios: dict[str, Any]) -> None:
    """Wifi goes on before the clock read: in index order it would change SETTING between two guarded milestones."""
    task = read_hidden(scenarios["find_days_till_holiday_wifi_off"])
    order = plan_order(task)
    assert order is not None and order.index(1) < order.index(0)
    by_index = {m.index: m for m in task.milestones}
    assert breaks_guardrail(sorted(by_index), by_index) == "milestone 1 changes SETTING between milestones 0 and 3"
    assert breaks_guardrail(order, by_index) is None


def test_network_scenarios_are_skipped_with_the_reason(scenarios: dict[str, Any]) -> None:
    """A scenario whose milestones need a RapidAPI tool gets no script, and the reason names the tool."""
    made = ka.clean_solver("find_temperature", scenarios["find_temperature"])
    assert isinstance(made, ka.Skip)
    assert "search_weather_around_lat_lon" in made.reason


def test_coverage_counts_variants_of_offline_bases(scenarios: dict[str, Any], tmp_path: Path) -> None:
    """An all-tools variant (RapidAPI distraction tools offered) of an offline base is offline; a network base is not."""
    picked = {n: scenarios[n] for n in ("wifi_off_all_tools", "find_temperature_3_distraction_tools")}
    cov = ka.verify_clean(picked, tmp_path)
    assert cov.offline == ["wifi_off_all_tools"]
    assert set(cov.verified) == {"wifi_off_all_tools"}
    assert "RapidAPI" in cov.skipped["find_temperature_3_distraction_tools"]
    assert cov.table()[-1] == ("ALL", 1, 1)


def _fresh_variant(kind: str, name: str, scenario: Any, out: Path, options: RunOptions = NATIVE) -> tuple[ka.Variant, dict[str, Any]]:
    made, result = ka.play_fresh(lambda now: ka.fresh_variant(kind, name, scenario, now), scenario, out, options)
    assert isinstance(made, ka.Variant), made
    assert result is not None
    return made, result


def _check_fault_shape(v: ka.Variant, scenario: Any) -> None:
    """Asserts that the variant is its clean script with exactly the recorded fault injected."""
    s, clean = v.fault.step, v.clean.steps
    assert v.script.steps[:s] == clean[:s]
    assert v.script.steps[s : s + len(v.injected)] == v.injected
    assert v.script.steps[s + len(v.injected) :] == clean[v.resume :]
    assert v.script.user == v.clean.user
    faulty = v.script.steps[s].calls[v.fault.call]
    world = World(scenario)
    for step in v.script.steps[:s]:
        for c in step.calls:
            world.call(c.tool, c.arguments)
    if v.kind == "repeat":
        assert v.injected == (clean[s - 1],) and v.resume == s
        outcome = world.probe(faulty.tool, faulty.arguments)
        assert outcome.ok and not outcome.changed
    elif v.kind in ("malformed", "wrong_tool"):
        right = clean[v.resume].calls[0]
        bad = v.injected[-1].calls[0]
        assert bad.tool == right.tool and bad.arguments != right.arguments
        assert len(set(bad.arguments.items()) ^ set(right.arguments.items())) <= 2  # one argument differs, is missing or extra
        assert not world.probe(bad.tool, bad.arguments).ok and world.probe(right.tool, right.arguments).ok
        if v.kind == "wrong_tool":
            needed = {c.tool for _, _, c in v.clean.calls()}
            assert len(v.injected) == 2 and faulty.tool not in needed | valid_path_tools(needed)
            outcome = world.probe(faulty.tool, faulty.arguments)
            assert outcome.ok and not outcome.changed
    elif v.kind == "loop":
        assert v.resume == len(clean) and len(v.injected) == LOOP_LENGTH + 1
        assert all(st.calls == (faulty,) for st in v.injected[:-1])
        assert v.injected[-1].say == GIVE_UP.format(tool=faulty.name)
        assert not world.probe(faulty.tool, faulty.arguments).ok
    else:
        assert v.kind == "minefield" and v.resume == s == 0
        assert faulty.tool in {m.tool for m in read_hidden(scenario).mines}
        assert agent_catalog(scenario)[faulty.tool] == faulty.name


@pytest.mark.parametrize(("kind", "name"), VARIANT_SAMPLE)
def test_variant_is_its_clean_solver_plus_the_recorded_fault(scenarios: dict[str, Any], tmp_path: Path, kind: str, name: str) -> None:
    """Each variant equals its clean solver except for the injected steps, the first of which is the recorded faulty call."""
    v = ka.variant(kind, ka.clean_solver(name, scenarios[name]), scenarios[name])
    assert isinstance(v, ka.Variant), v
    _check_fault_shape(v, scenarios[name])


@pytest.mark.parametrize(("kind", "name"), VARIANT_SAMPLE)
def test_variant_scores_in_toolsandbox_as_its_fault_implies(scenarios: dict[str, Any], tmp_path: Path, kind: str, name: str) -> None:
    """Recovered faults keep similarity 1.0; a loop leaves the task unfinished; a minefield call nullifies the run."""
    v, result = _fresh_variant(kind, name, scenarios[name], tmp_path)
    assert result["exception_type"] is None, result["traceback"]
    if kind in ("repeat", "malformed", "wrong_tool"):
        assert result["similarity"] == 1.0, (result["milestone_mapping"], v.fault)
    elif kind == "loop":
        assert result["similarity"] < 1.0
    else:
        assert result["minefield_similarity"] > 0 and result["similarity"] == 0


@pytest.mark.parametrize("how", MALFORMED_KINDS)
def test_each_malformed_kind_is_a_call_that_fails(scenarios: dict[str, Any], how: str) -> None:
    """A wrong argument type, a missing required argument and an unexpected argument each make a call that raises."""
    name = "send_message_with_contact_content_cellular_off"
    clean = ka.clean_solver(name, scenarios[name])
    assert isinstance(clean, ka.KnownScript)
    v = malformed(clean, scenarios[name], how)
    assert isinstance(v, ka.Variant)
    assert how.replace("_", " ") in v.fault.detail
    _check_fault_shape(v, scenarios[name])


def test_stuck_loop_runs_until_toolsandbox_ends_the_rollout(scenarios: dict[str, Any], tmp_path: Path) -> None:
    """With no length the loop agent never gives up: ToolSandbox's own message limit ends the rollout, task unfinished."""
    name = "remove_contact_by_phone"
    scenario = scenarios[name]
    clean = ka.clean_solver(name, scenario)
    assert isinstance(clean, ka.KnownScript)
    v = loop(clean, scenario, length=None)
    assert isinstance(v, ka.Variant)
    bad = v.injected[0].calls[0]
    assert v.injected == tuple(ka.Step(calls=(bad,)) for _ in range(scenario.max_messages))  # no giving up
    assert v.resume == len(clean.steps) and "limit of" in v.fault.detail
    result = ka.play(v.script, scenario, tmp_path)
    assert result["exception_type"] is None and result["similarity"] < 1.0
    assert result["turn_count"] >= scenario.max_messages  # ended by the limit, not by the script
    assert loop(clean, scenario).injected[-1].say is not None  # the default still gives up after LOOP_LENGTH calls


def test_variants_without_a_fitting_call_say_why(scenarios: dict[str, Any]) -> None:
    """An insufficient-information solver makes no call: no repeat, malformed or loop variant, each with its reason."""
    name = "find_days_till_holiday_insufficient_information"
    clean = ka.clean_solver(name, scenarios[name])
    for kind in ("repeat", "malformed", "loop"):
        made = ka.variant(kind, clean, scenarios[name])
        assert isinstance(made, ka.Skip) and made.reason.startswith(f"no {kind} variant: ")


def test_a_step_of_a_valid_path_elsewhere_in_toolsandbox_is_no_wrong_tool(scenarios: dict[str, Any]) -> None:
    """The 'oldest message' searches require a clock read with the message search, so the clock is no wrong tool for a
    'latest message' search, though its own milestones do not ask for it; an unrelated read still is one."""
    name = "search_message_with_recency_latest_3_distraction_tools"
    scenario = scenarios[name]
    clean = ka.clean_solver(name, scenario)
    assert isinstance(clean, ka.KnownScript)
    needed = {c.tool for _, _, c in clean.calls()}
    assert needed == {"search_messages"}
    assert "get_current_timestamp" in valid_path_tools(needed) - milestone_tools(read_hidden(scenario))
    assert "get_current_timestamp" in agent_catalog(scenario)
    assert {"get_current_timestamp", "search_messages"} <= milestone_tools(read_hidden(scenarios["search_message_with_recency_oldest"]))
    v = ka.variant("wrong_tool", clean, scenario)
    assert isinstance(v, ka.Variant), v
    wrong = v.injected[0].calls[0].tool
    assert wrong != "get_current_timestamp" and wrong not in valid_path_tools(needed)
    _check_fault_shape(v, scenario)
    plain = "search_message_with_recency_latest"  # offers no other read-only tool
    made = ka.variant("wrong_tool", ka.clean_solver(plain, scenarios[plain]), scenarios[plain])
    assert isinstance(made, ka.Skip) and "no read-only tool" in made.reason
    assert valid_path_tools(()) == frozenset()


@pytest.mark.parametrize(("kind", "name"), [*VARIANT_SAMPLE[::2], VARIANT_SAMPLE[-1]])
def test_call_clock_finds_the_faulty_call_in_a_live_run(scenarios: dict[str, Any], tmp_path: Path, kind: str, name: str) -> None:
    """In a dynsteer run's events file, (k, t) of the recorded fault is its tool_call event and the evaluator's step holding it."""
    v, result = _fresh_variant(kind, name, scenarios[name], tmp_path, LIVE)
    trajectory = tmp_path / "trajectories" / name
    found = ka.call_clock(trajectory / "dynsteer_events.jsonl", v.fault.step, v.fault.call)
    faulty = v.script.steps[v.fault.step].calls[v.fault.call]
    event = list(read_events(trajectory / "dynsteer_events.jsonl"))[found.k - 1]
    assert (event.tool, dict(event.arguments or {})) == (faulty.name, faulty.arguments)
    assert found.call_id == f"call_{v.fault.step + 1}_{v.fault.call}"  # the Scripted agent numbers its steps from 1
    report = json.loads((trajectory / "dynsteer_report.json").read_text())
    if result["dynsteer"]["halted"] and result["dynsteer"]["stop"]["reason"] == "fatal_minefield":
        assert result["dynsteer"]["stop"]["k"] == found.k  # halted before the faulty call ran
        assert found.t == report["t"] + 1
    else:
        step = next(s for s in report["steps"] if s["t"] == found.t)
        assert step["k_start"] <= found.k <= step["k_end"] and faulty.name in step["tools"]


def test_package_never_imports_the_known_agents() -> None:
    """No module of the package imports the generator, which reads hidden evaluation data."""
    root = Path(dynsteer_hook.__file__).parent
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            assert not any(n.split(".")[0] in {"known_agents", "known_quality"} for n in names), path


@pytest.mark.parametrize(
    ("instruction", "requests"),
    [
        ("Ask User B create a reminder to buy chocolate milk 3/22/2024 5PM. You do not have any more information.",
         ["Create a reminder to buy chocolate milk 3/22/2024 5PM."]),
        ("Search how many days it is till Christmas Day. Christmas Day is 12/25/2026. Do not leak this information.",
         ["Search how many days it is till Christmas Day."]),
        ("Find the content of your (User A's) oldest message. It should be Hey kid. Do not leak this information.",
         ["Find the content of my oldest message."]),
        ("Update the phone number of the last person you (User A) sent a message to to +10293847563.You do not know who the person is.",
         ["Update the phone number of the last person I sent a message to to +10293847563."]),
        ("Ask User B to update the all friends in (User A's) contact book as (User A's) enemy. After User B did so, ask User B to "
         "update them back to (User A's) friends. You do not have more information.",
         ["Update the all friends in my contact book as my enemy.", "Update them back to my friends."]),
        ("Send a message to Fredrik Thordendal saying: How's the new album coming along. You only know Fredrik Thordendal is in "
         "your contact. You don not have more information.",
         ["Send a message to Fredrik Thordendal saying: How's the new album coming along."]),
    ],
)
def test_user_requests_come_from_the_instruction_in_the_users_voice(instruction: str, requests: list[str]) -> None:
    """The scripted user's turns are the instruction's requests, first person, without what the simulator must keep to itself."""
    assert user_requests(instruction) == requests
