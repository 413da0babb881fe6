"""``dynsteer rerun``: recorded rollouts played again in their scenarios, on their clock, with dynsteer live.

The recordings here are made by the tests: a scripted agent plays a scenario at a chosen moment (this process's
clock moved there), ToolSandbox scores it, and the rollout is written as a trajectory record (the format of the
DynSTEER reference implementation's recordings) or kept as ToolSandbox's own run folder.
"""

from __future__ import annotations

import ast
import datetime as dt
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import time_machine

from dynsteer_hook.toolsandbox.live.playing import RunOptions, play_scenario
from dynsteer_hook.toolsandbox.offline.rerun import label_transcripts, rerun_recordings, with_build_times
from dynsteer_hook.toolsandbox.offline.transcripts import TranscriptError, find_transcripts, read_transcript
from dynsteer_hook.toolsandbox.recorded_clock import recorded_build_time, scenario_at, starting_row_offsets
from dynsteer_hook.toolsandbox.roles.recorded import same_result
from dynsteer_hook.toolsandbox.roles.scripted import ScenarioScript, ScriptedAgent, ScriptedUser

from tool_sandbox.common.execution_context import DatabaseNamespace, RoleType, get_current_context
from tool_sandbox.roles.execution_environment import ExecutionEnvironment

pytestmark = pytest.mark.slow

WHEN = dt.datetime(2026, 8, 5, 4, 48, 20, tzinfo=dt.timezone.utc)  # a Wednesday
NATIVE = RunOptions(agent="Scripted", user="Scripted", evaluator="native")
LIVE = RunOptions(agent="Scripted", user="Scripted", evaluator="dynsteer", write_events=False)


def _steps_of_context(first_index: int) -> list[dict[str, Any]]:
    """The current context's conversation from ``first_index`` on, as trajectory record steps."""
    frame = get_current_context().get_database(DatabaseNamespace.SANDBOX, get_all_history_snapshots=True,
                                               drop_sandbox_message_index=False)
    steps = []
    names = {RoleType.AGENT: "agent", RoleType.USER: "user", RoleType.EXECUTION_ENVIRONMENT: "environment"}
    for row in frame.iter_rows(named=True):
        index = row["sandbox_message_index"]
        if row["sender"] is None or index < first_index:
            continue
        actor, recipient = names.get(row["sender"], "system"), names.get(row["recipient"], "system")
        step: dict[str, Any] = {"step_id": f"s{index}", "actor": actor, "recipient": recipient, "content": row["content"],
                                "openai_tool_call_id": row["openai_tool_call_id"], "tool_call": None, "tool_result": None,
                                "event_type": "message"}
        if actor == "agent" and recipient == "environment":
            first = row["content"].split("\n", 1)[0]
            step["event_type"] = "tool_call"
            step["tool_call"] = {"name": row["openai_function_name"], "arguments": ast.literal_eval(first.split(" = ", 1)[1])}
        elif actor == "environment" and recipient == "agent":
            step["event_type"] = "tool_result"
            step["tool_result"] = {"success": row["tool_call_exception"] is None, "content": row["content"],
                                   "exception": row["tool_call_exception"]}
        steps.append(step)
    return steps


def record(name: str, script: ScenarioScript, when: dt.datetime, out: Path, *, built: dt.datetime | None = None,
           max_messages: int | None = None) -> dict[str, Any]:
    """Play ``script`` in scenario ``name`` with this process's clock at ``when`` (the scenario built at ``built``,
    default ``when``) and return the rollout as a trajectory record with ToolSandbox's similarity."""
    with time_machine.travel(built or when, tick=True) as traveller:
        scenario = scenario_at(name)
        scenario.max_messages = max_messages or scenario.max_messages
        first = scenario.starting_context.max_sandbox_message_index + 1
        traveller.move_to(when)
        roles = {RoleType.USER: ScriptedUser(script.user), RoleType.EXECUTION_ENVIRONMENT: ExecutionEnvironment(),
                 RoleType.AGENT: ScriptedAgent(script.agent)}
        result = play_scenario((name, scenario), options=NATIVE, output_directory=out, roles=(roles, None))
        steps = _steps_of_context(first)
    assert result.similarity is not None, result.traceback
    return {"scenario_id": name, "summary": {"score": result.similarity, "started_at": when.isoformat()},
            "trajectory": {"steps": steps}}


def write(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(json.dumps(data))
    return path


def rerun(paths: list[Path], out: Path, options: RunOptions = NATIVE) -> dict[str, dict[str, Any]]:
    transcripts = [t for t in find_transcripts(paths) if not isinstance(t, TranscriptError)]
    results = rerun_recordings(label_transcripts(transcripts), options, out, 1)
    return {r["name"]: r for r in results}


TOMORROW = ScenarioScript.model_validate({
    "agent": [
        {"tool_calls": [{"name": "get_current_timestamp", "arguments": {}}]},
        {"tool_calls": [{"name": "datetime_info_to_timestamp",
                         "arguments": {"year": 2026, "month": 8, "day": 6, "hour": 17, "minute": 0, "second": 0}}]},
        {"tool_calls": [{"name": "add_reminder", "arguments": {"content": "Buy chocolate milk", "reminder_timestamp": 1786035600.0}}]},
        {"say": "Done: a reminder to buy chocolate milk tomorrow at 5 PM."},
    ],
    "user": [],
})


def test_a_dated_recording_reproduces_on_its_own_clock_and_not_on_another(tmp_path: Path) -> None:
    name = "add_reminder_content_and_week_delta_and_time"
    data = record(name, TOMORROW, WHEN, tmp_path / "made")
    assert data["summary"]["score"] > 0.9  # tomorrow 5 PM of 2026-08-05 is the timestamp the script sends
    good = write(tmp_path / "good.json", data)
    later = dict(data, summary={**data["summary"], "started_at": (WHEN + dt.timedelta(days=3)).isoformat()})
    moved = write(tmp_path / "moved.json", later)
    results = rerun([good, moved], tmp_path / "rerun")
    ok = next(r for r in results.values() if r["recording"]["source"].endswith("good.json"))
    off = next(r for r in results.values() if r["recording"]["source"].endswith("moved.json"))
    assert ok["recording"]["reproduced"] is True and ok["similarity"] == pytest.approx(data["summary"]["score"])
    assert ok["recording"]["divergence"] is None
    # Three days later the clock reading differs from the recorded one and tomorrow is another day.
    assert off["recording"]["reproduced"] is False
    assert off["similarity"] < data["summary"]["score"]


ADD_THEN_MODIFY = ScenarioScript.model_validate({
    "agent": [
        {"tool_calls": [{"name": "add_contact", "arguments": {"name": "Stephen Sondheim", "phone_number": "+19876543210"}}]},
        {"say": "Added. Anything else?"},
    ],
    "user": ["Change his number to +10000000001."],
})


def test_fresh_identifiers_are_mapped_and_a_changed_answer_is_named(tmp_path: Path) -> None:
    name = "add_contact_with_name_and_phone_number_all_tools"  # offers modify_contact too
    data = record(name, ADD_THEN_MODIFY, WHEN, tmp_path / "made")
    steps = data["trajectory"]["steps"]
    person = ast.literal_eval(next(s for s in steps if s["event_type"] == "tool_result")["content"])
    # The agent uses the identifier add_contact drew: a rerun draws another, which the recorded call must get.
    ask = next(i for i, s in enumerate(steps) if s["actor"] == "user" and s["recipient"] == "agent")
    call = {"step_id": "s900", "actor": "agent", "recipient": "environment", "event_type": "tool_call", "content": "",
            "openai_tool_call_id": "c9", "tool_call": {"name": "modify_contact", "arguments": {"person_id": person,
                                                                                             "phone_number": "+10000000001"}}}
    answer = {"step_id": "s901", "actor": "environment", "recipient": "agent", "event_type": "tool_result", "content": "None",
              "openai_tool_call_id": "c9", "tool_result": {"success": True, "content": None, "exception": None}}
    data["trajectory"]["steps"] = [*steps[: ask + 1], call, answer, *steps[ask + 1:]]
    mapped = write(tmp_path / "mapped.json", data)
    tampered = json.loads(json.dumps(data))
    tampered["trajectory"]["steps"][ask + 2]["content"] = "'someone else'"
    named = write(tmp_path / "tampered.json", tampered)
    results = rerun([mapped, named], tmp_path / "rerun")
    by_file = {Path(r["recording"]["source"]).name: r["recording"] for r in results.values()}
    assert by_file["mapped.json"]["divergence"] is None and by_file["mapped.json"]["compared_calls"] == 2
    assert by_file["tampered.json"]["reproduced"] is False
    assert by_file["tampered.json"]["divergence"]["step"] == "s900"
    assert "modify_contact answered None where the recording got 'someone else'" in by_file["tampered.json"]["divergence"]["reason"]


def test_same_result_maps_identifiers_and_tolerates_clock_readings_only() -> None:
    ids: dict[str, str] = {}
    a, b = "'fc0d9649-5063-4e07-a440-7919cdc674c7'", "'00000000-1111-4222-8333-444444444444'"
    assert same_result(a, b, ids) == (True, {"fc0d9649-5063-4e07-a440-7919cdc674c7": "00000000-1111-4222-8333-444444444444"})
    assert same_result("1785842875.43", "1785842880.0", ids)[0]  # a clock reading seconds apart
    assert not same_result("1785842875.43", "1785852875.0", ids)[0]  # hours apart
    assert not same_result("42.5", "43.5", ids)[0]  # not a timestamp
    assert not same_result("[]", "[{'a': 1}]", ids)[0]
    crash = "NoDataError: No db entry matching predicate=<Expr ['[(col(\"person_id\"))…'] at 0x{}> found"
    assert same_result(crash.format("7FA9B27B16D0"), crash.format("7F00DEADBEEF"), ids)[0]


def test_build_time_is_read_off_starting_rows_a_recording_shows(tmp_path: Path) -> None:
    """ToolSandbox builds a run's scenarios hours before their rollouts: a recorded search result that shows a starting
    reminder tells when, and a recording of the same run that shows none takes that build time."""
    name = "search_reminder_with_recency_upcoming"
    built = WHEN - dt.timedelta(hours=2)  # the reminder due "in an hour" at building is past when the rollout starts
    search = ScenarioScript.model_validate({"agent": [
        {"tool_calls": [{"name": "search_reminder", "arguments": {"content": "tickets"}}]},
        {"tool_calls": [{"name": "search_reminder", "arguments": {"reminder_timestamp_lowerbound": WHEN.timestamp()}}]},
        {"say": "You have no upcoming reminder."}], "user": []})
    shows = record(name, search, WHEN, tmp_path / "a", built=built)
    blind = record(name, ScenarioScript.model_validate({"agent": search.model_dump()["agent"][1:], "user": []}),
                   WHEN + dt.timedelta(minutes=5), tmp_path / "b", built=built)
    assert blind["trajectory"]["steps"][1]["content"] == "[]"  # nothing upcoming, two hours after building
    offsets = starting_row_offsets()
    told = recorded_build_time(read_transcript(write(tmp_path / "shows.json", shows)).results(), offsets)
    assert told == pytest.approx(built.timestamp(), abs=60)  # building takes seconds on a busy machine
    paths = [tmp_path / "shows.json", write(tmp_path / "blind.json", blind)]
    timed = with_build_times([read_transcript(p) for p in paths])
    assert timed[1].built_from == str(paths[0]) and timed[1].built_at is not None
    results = rerun(paths, tmp_path / "rerun")
    assert all(r["recording"]["reproduced"] is True for r in results.values()), [r["recording"] for r in results.values()]
    alone = rerun([paths[1]], tmp_path / "alone")  # without the other recording its build time is its start: not the same
    assert next(iter(alone.values()))["recording"]["reproduced"] is False


def test_a_recording_longer_than_the_message_limit_plays_whole(tmp_path: Path) -> None:
    name = "cellular_off"
    loop = [{"tool_calls": [{"name": "get_cellular_status", "arguments": {}}]}] * 20  # 40 rows, over ToolSandbox's 30
    many = record(name, ScenarioScript.model_validate({"agent": [*loop, {"say": "done"}], "user": []}), WHEN, tmp_path / "m",
                  max_messages=100)  # recorded under a higher limit than the scenario's 30
    assert len(many["trajectory"]["steps"]) > scenario_at(name).max_messages
    results = rerun([write(tmp_path / "many.json", many)], tmp_path / "rerun")
    check = next(iter(results.values()))["recording"]
    assert check["played"] == check["moves"] and check["reproduced"] is True, check


def test_a_toolsandbox_run_folder_reruns_live_with_the_recorded_similarity_beside(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "POLARS_MAX_THREADS": "1", "HOME": str(tmp_path)}
    subprocess.run([sys.executable, "-m", "dynsteer_hook.cli", "run", "--agent", "Scripted", "--user", "Scripted", "--script",
                    "clean_solver", "-s", "cellular_off", "-p", "1", "-o", str(tmp_path / "runs"), "--evaluator", "native"],
                   check=True, capture_output=True, env=env, timeout=300)
    run = next((tmp_path / "runs").iterdir())
    done = subprocess.run([sys.executable, "-m", "dynsteer_hook.cli", "rerun", str(run), str(tmp_path / "missing.json"),
                           "-o", str(tmp_path / "again")], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 2 and "missing.json does not exist" in done.stderr and "Traceback" not in done.stderr
    done = subprocess.run([sys.executable, "-m", "dynsteer_hook.cli", "rerun", str(run), "-o", str(tmp_path / "again")],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "1 reproduced the recorded similarity" in done.stdout
    out = next((tmp_path / "again").iterdir())
    summary = json.loads((out / "dynsteer_summary.json").read_text())
    assert summary["reexecution"]["reproduced"] == 1
    entry = json.loads((out / "result_summary.json").read_text())["per_scenario_results"][0]
    assert entry["recording"]["recorded_similarity"] == entry["similarity"] == 1.0
    assert entry["dynsteer"]["outcome"] == "completed"
    assert (out / "trajectories" / "cellular_off" / "dynsteer_report.json").is_file()
    assert '"rec": 1.0' in (out / "index.html").read_text().replace('"rec":1.0', '"rec": 1.0')


def test_bad_recordings_are_skipped_with_their_reason(tmp_path: Path) -> None:
    (tmp_path / "recs").mkdir()
    write(tmp_path / "recs" / "a.json", {"scenario_id": "cellular_off", "trajectory": {"steps": [{"actor": "robot"}]}})
    write(tmp_path / "recs" / "b.json", {"trajectory": {}})
    (tmp_path / "recs" / "c.json").write_text("{not json")
    found = list(find_transcripts([tmp_path / "recs"]))
    assert all(isinstance(f, TranscriptError) for f in found)
    text = [str(f) for f in found]
    assert "from 'robot'" in text[0] and "no scenario_id" in text[1] and "c.json" in text[2]


def test_scenarios_built_on_a_moved_clock_never_reach_the_cache() -> None:
    """A rerun builds scenarios on the recording's clock; the cache (dated on the real clock) neither serves them nor
    keeps them, so a later run in any process still gets today's reminders."""
    from dynsteer_hook.toolsandbox import scenarios as cache

    name = "search_reminder_with_recency_upcoming"

    def newest(sc: Any) -> float:
        frame = sc.starting_context.get_database(DatabaseNamespace.REMINDER)
        return max(float(x) for x in frame["creation_timestamp"].to_list() if x is not None)

    with time_machine.travel(dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc), tick=False):
        moved = cache.load_scenarios([name])[name]
    assert newest(moved) < dt.datetime(2020, 1, 2, tzinfo=dt.timezone.utc).timestamp()
    cache._LOADED.clear()  # as a new process would
    today = cache.load_scenarios([name])[name]
    assert newest(today) > dt.datetime.now(dt.timezone.utc).timestamp() - 7 * 86400
