"""``dynsteer replay`` over recorded ToolSandbox runs: the same decisions as live, virtual stops mapped
onto the recorded agent turns, and bad recordings skipped with their reason while the rest go on."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from shipped_runs import SHIPPED_SCRIPTS, ShippedRuns
from ts_support import BLUEPRINTS, SCRIPTS, B, D, script_names

from dynsteer_hook.cli import main
from dynsteer_hook.model.config import EvaluatorConfig
from dynsteer_hook.toolsandbox.live.runner import RunOptions, run_scenarios
from dynsteer_hook.toolsandbox.offline.recording import BatchCost
from dynsteer_hook.toolsandbox.offline.replay import ReplayOptions, replay_runs, virtual_stop

pytestmark = pytest.mark.toolsandbox

SCRIPTS_PLAYED = SHIPPED_SCRIPTS


@pytest.fixture(scope="module")
def recorded(shipped_runs: ShippedRuns) -> dict[tuple[str, str], Path]:
    """Every shipped script played once live with dynsteer and once natively: the run folders (shared: read only)."""
    return {(script, evaluator): shipped_runs(script, evaluator).folder for script in SCRIPTS_PLAYED for evaluator in ("dynsteer", "native")}


def _report(folder: Path, name: str) -> dict[str, Any]:
    return json.loads((folder / "trajectories" / name / "dynsteer_report.json").read_text())


def _decisions(report: dict[str, Any]) -> dict[str, Any]:
    """What must not differ between a live run and its replay."""
    return {
        "outcome": report["outcome"], "score": report["score"], "settled": report["settled"], "k": report["k"], "t": report["t"],
        "stop": None if report["stop"] is None else {k: report["stop"][k] for k in ("reason", "k", "t", "anchor", "dimension")},
        "stages": [(s["milestone"], s["t"], s["k"], s["composite"], s["window"]) for s in report["stages"]],
        "first_error": report["first_error"],
        "transcript": report["transcript"],  # the same conversation, call for call, with the same clocks and labels
        "native": report["native"],  # ToolSandbox's similarity, of the cut trajectory when the live run was halted
    }


@pytest.mark.parametrize("script", SCRIPTS_PLAYED)
def test_replaying_a_live_run_reaches_the_same_decisions(recorded: dict[tuple[str, str], Path], script: str, tmp_path: Path) -> None:
    """Replaying what `dynsteer run` recorded gives the same stages, score, first error and stop (same k and t)."""
    live = recorded[(script, "dynsteer")]
    summary = replay_runs([live], ReplayOptions(blueprint_dir=BLUEPRINTS), tmp_path)
    assert summary["skipped"] == 0 and summary["replayed"] == len(script_names(script))
    for name in script_names(script):
        assert _decisions(_report(tmp_path / live.name, name)) == _decisions(_report(live, name)), name


@pytest.mark.parametrize("script", SCRIPTS_PLAYED)
def test_replaying_a_native_run_stops_where_the_live_run_stopped(recorded: dict[tuple[str, str], Path], script: str, tmp_path: Path) -> None:
    """A run recorded without the hook, replayed, halts virtually at the live halt's k and t (or not at all, as live)."""
    native = recorded[(script, "native")]
    summary = replay_runs([native], ReplayOptions(blueprint_dir=BLUEPRINTS), tmp_path)
    for r in summary["per_scenario"]:
        live = _report(recorded[(script, "dynsteer")], r["scenario"])
        if live["stop"] is None:
            assert r["virtual_stop"] is None and r["stop"] is None
        else:
            assert (r["stop"]["reason"], r["stop"]["k"], r["stop"]["t"]) == (live["stop"]["reason"], live["stop"]["k"], live["stop"]["t"])
            v = r["virtual_stop"]
            assert 1 <= v["b_stop"] <= v["b_full"] == r["batches"]
            assert v["stop_progress"] == pytest.approx(v["b_stop"] / v["b_full"], abs=1e-6)
            assert v["saved_progress"] == pytest.approx(1 - v["stop_progress"], abs=1e-6)


def test_minefield_stop_falls_on_the_turn_of_the_hazardous_call(recorded: dict[tuple[str, str], Path], tmp_path: Path) -> None:
    """The minefield agent's send is its second turn of three: b_stop = 2, b_full = 3, q = 1/3."""
    summary = replay_runs([recorded[("minefield_agent", "native")]], ReplayOptions(blueprint_dir=BLUEPRINTS), tmp_path)
    r = next(x for x in summary["per_scenario"] if x["scenario"] == D)
    assert r["stop"]["reason"] == "fatal_minefield"
    assert (r["virtual_stop"]["b_stop"], r["virtual_stop"]["b_full"]) == (2, 3)
    assert summary["stops_by_reason"]["fatal_minefield"]["halted_runs"] == 1


def test_a_full_recording_gives_the_seconds_and_tokens_a_stop_would_save(scenarios: dict[str, Any], tmp_path: Path) -> None:
    """A live run that did not halt records each agent turn's cost; a replay that halts sums the later turns. One
    scenario of the looping agent cut to 10 turns, played to its end (ToolSandbox's own similarity of the whole 14-turn
    loop takes about 15 s); the default thresholds stop it at the 8th."""
    names = [B]
    looping = json.loads((SCRIPTS / "looping_agent.json").read_text())[B]
    script = tmp_path / "looping_10.json"
    script.write_text(json.dumps({B: {**looping, "agent": looping["agent"][:10]}}))
    options = RunOptions(agent="Scripted", user="Scripted", script=script,
                         config=EvaluatorConfig().with_overrides(n_stag=1000, structural_patience=1000, low_score_patience=1000))
    [played] = run_scenarios({n: scenarios[n] for n in names}, options, tmp_path / "rec", 1)
    assert played["dynsteer"]["stop"] is None, played["dynsteer"]
    summary = replay_runs([tmp_path / "rec"], ReplayOptions(blueprint_dir=BLUEPRINTS), tmp_path / "out")
    halted = [r for r in summary["per_scenario"] if r["virtual_stop"] is not None]
    assert halted, "the default thresholds stop the looping agent"
    for r in halted:
        assert r["virtual_stop"]["saved_batches"] > 0 and r["virtual_stop"]["seconds_saved"] is not None
        assert r["virtual_stop"]["seconds_saved"] > 0


def test_virtual_stop_progress_follows_eq_p_over_batches() -> None:
    """p = b_stop / b_full, q = 1 - p; costs are summed over the turns after the stop, unknown if any is missing."""
    costs = {1: BatchCost(1.0, 10), 2: BatchCost(2.0, 20), 3: BatchCost(3.0, 30), 4: BatchCost(4.0, None)}
    v = virtual_stop(2, 4, costs)
    assert (v.batch, v.batches, v.saved_batches, v.stop_progress, v.saved_progress) == (2, 4, 2, 0.5, 0.5)
    assert v.seconds_saved == 7.0 and v.tokens_saved is None
    assert virtual_stop(3, 4, {}).seconds_saved is None


def _damage(run: Path, name: str, how: str) -> None:
    folder = run / "trajectories" / name
    ctx = folder / "execution_context.json"
    if how == "missing context":
        ctx.unlink()
    elif how == "truncated context":
        ctx.write_text(ctx.read_text()[:500])
    elif how == "unknown table":
        data = json.loads(ctx.read_text())
        data["_dbs"]["CALENDAR"] = []
        ctx.write_text(json.dumps(data))
    elif how == "unknown tool":
        data = json.loads(ctx.read_text())
        data["tool_allow_list"] = [*(data["tool_allow_list"] or []), "teleport_user"]
        ctx.write_text(json.dumps(data))
    elif how == "missing conversation":
        (folder / "conversation.json").unlink()
    elif how == "no trajectory":
        shutil.rmtree(folder)
    else:  # pragma: no cover
        raise AssertionError(how)


DAMAGE = ["missing context", "truncated context", "unknown table", "unknown tool", "missing conversation"]


@pytest.mark.parametrize("how", DAMAGE)
def test_a_damaged_recording_is_skipped_with_its_reason_and_the_rest_go_on(
    recorded: dict[tuple[str, str], Path], tmp_path: Path, how: str
) -> None:
    """One damaged scenario is skipped with a reason naming the file; the other scenarios are replayed."""
    run = tmp_path / "run"
    shutil.copytree(recorded[("clean_solver", "native")], run)
    names = script_names("clean_solver")
    _damage(run, B, how)
    summary = replay_runs([run], ReplayOptions(blueprint_dir=BLUEPRINTS), tmp_path / "out")
    assert summary["replayed"] == len(names) - 1
    (skip,) = summary["skipped_scenarios"]
    assert skip["scenario"] == B and B in skip["reason"]


def test_a_scenario_without_a_blueprint_is_skipped(recorded: dict[tuple[str, str], Path], tmp_path: Path) -> None:
    """A recorded scenario with no blueprint in --blueprints is skipped, with the fix in the reason."""
    blueprints = tmp_path / "bp"
    blueprints.mkdir()
    for name in script_names("clean_solver"):
        if name != B:
            shutil.copy(BLUEPRINTS / f"{name}.json", blueprints)
    summary = replay_runs([recorded[("clean_solver", "native")]], ReplayOptions(blueprint_dir=blueprints), tmp_path / "out")
    (skip,) = summary["skipped_scenarios"]
    assert skip["scenario"] == B and "dynsteer compile" in skip["reason"]


def test_replay_command_prints_verdicts_and_writes_summaries(recorded: dict[tuple[str, str], Path], tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """`dynsteer replay` over a folder holding several runs writes each run's reports and one summary."""
    base = tmp_path / "runs"
    base.mkdir()
    for script in ("clean_solver", "minefield_agent"):
        shutil.copytree(recorded[(script, "native")], base / script)
    code = main(["replay", str(base), "-o", str(tmp_path / "out"), "--no-progress"])
    out = capsys.readouterr().out
    assert code == 0
    lines = out.splitlines()
    assert "VIRTUAL STOP fatal_minefield" in out and any("replayed" in x for x in lines)
    assert lines[-1].split()[:2] == ["run", "page"] and lines[-1].endswith("index.html")  # the totals close the output
    summary = json.loads((tmp_path / "out" / "replay_summary.json").read_text())
    assert summary["replayed"] == len(script_names("clean_solver")) + len(script_names("minefield_agent"))
    for script in ("clean_solver", "minefield_agent"):
        assert (tmp_path / "out" / script / "replay_summary.json").is_file()


@pytest.mark.parametrize("args", [["/nonexistent/run"], ["-p", "0", "."], ["--blueprints", "/nonexistent", "."]])
def test_bad_replay_arguments_are_one_sentence(tmp_path: Path, args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """A missing run folder, a bad -p or a missing blueprint folder ends in one sentence and exit status 2."""
    code = main(["replay", *args, "-o", str(tmp_path / "out"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("dynsteer: error:") and "Traceback" not in err


def _without_timing(summary: dict[str, Any]) -> dict[str, Any]:
    rows = [{k: v for k, v in r.items() if k not in ("seconds", "run")} for r in summary["per_scenario"]]
    return {**{k: v for k, v in summary.items() if k not in ("per_scenario", "skipped_scenarios")}, "per_scenario": rows}


@pytest.mark.slow
@pytest.mark.xdist_group("ray")
@pytest.mark.usefixtures("ray_instance")
def test_ray_tasks_give_the_same_replay_as_local_processes(recorded: dict[tuple[str, str], Path], tmp_path: Path) -> None:
    """--engine ray (a local Ray instance) replays to the same summary and reports as one process and as two."""
    run = recorded[("clean_solver", "native")]
    options = ReplayOptions(blueprint_dir=BLUEPRINTS)
    one = replay_runs([run], options, tmp_path / "one")
    pool = replay_runs([run], options, tmp_path / "pool", processes=2)
    ray = replay_runs([run], options, tmp_path / "ray", processes=2, engine="ray")
    assert _without_timing(one) == _without_timing(pool) == _without_timing(ray)
    for name in script_names("clean_solver"):
        assert _decisions(_report(tmp_path / "ray" / run.name, name)) == _decisions(_report(tmp_path / "one" / run.name, name))


def test_a_ray_address_without_the_ray_engine_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--ray-address with the local engine is a mistake said in one sentence."""
    code = main(["replay", str(tmp_path), "-o", str(tmp_path / "out"), "--ray-address", "ray://x:1", "--no-progress"])
    assert code == 2 and "--engine ray" in capsys.readouterr().err


def _strict_json(path: Path) -> Any:
    """A file's JSON, refusing NaN and Infinity (which json.loads accepts, and no other JSON reader does)."""
    def refuse(name: str) -> Any:
        raise AssertionError(f"{path} holds {name}")
    return json.loads(path.read_text(), parse_constant=refuse)


# (what is wrong, how the entry of B is written, whether B's trajectory is still replayed): one bad record in result_summary.json.
BAD_ENTRIES = [
    ("categories-5", '"categories": 5', False),
    ("categories-null", '"categories": null', False),
    ("categories-of-numbers", '"categories": [1, 2]', False),
    ("similarity-text", '"similarity": "abc"', False),
    ("similarity-object", '"similarity": {}', False),
    ("similarity-1e400", '"similarity": 1e400', False),
    ("milestone-similarity-huge-integer", '"milestone_similarity": 1' + "0" * 400, False),
    ("dynsteer-5", '"dynsteer": 5', False),
    ("nested-1e400", '"dynsteer": {"halted": true, "stop": {"reason": "low_score", "k": 1e400}}', False),
    ("entry-null", None, True),
    ("entry-5", 5, True),
]


@pytest.mark.parametrize(("bad", "field", "replayed"), BAD_ENTRIES, ids=[b for b, _, _ in BAD_ENTRIES])
def test_one_bad_record_in_the_result_summary_is_reported_and_the_rest_replayed(
    recorded: dict[tuple[str, str], Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: str, field: str | int | None,
    replayed: bool,
) -> None:
    """One scenario's entry of result_summary.json is damaged: replay exits 0 and reports that record with its reason (the
    file and what is wrong), replays every other scenario with its categories and similarity, and writes both summaries
    and both pages as valid JSON (no NaN, no Infinity)."""
    run = tmp_path / "run"
    shutil.copytree(recorded[("clean_solver", "native")], run)
    names = script_names("clean_solver")
    data = json.loads((run / "result_summary.json").read_text())
    entries = data["per_scenario_results"]
    i = next(n for n, r in enumerate(entries) if r["name"] == B)
    if isinstance(field, str):
        key = field.split(":")[0].strip('"')
        entries[i] = {k: v for k, v in entries[i].items() if k != key} | {key: "@@"}
        text = json.dumps(data).replace('"' + key + '": "@@"', field)
    else:
        entries[i] = field
        text = json.dumps(data)
    (run / "result_summary.json").write_text(text)
    assert main(["replay", str(run), "-o", str(tmp_path / "out"), "--no-progress"]) == 0
    out = capsys.readouterr().out
    summary = _strict_json(tmp_path / "out" / "replay_summary.json")
    _strict_json(tmp_path / "out" / "run" / "replay_summary.json")
    assert (tmp_path / "out" / "index.html").is_file() and (tmp_path / "out" / "run" / "index.html").is_file()
    assert summary["replayed"] == len(names) - (0 if replayed else 1)
    [skip] = summary["skipped_scenarios"]
    assert "result_summary.json" in skip["reason"] and "skipped: " in out
    assert skip["scenario"] == (None if replayed else B)
    for r in summary["per_scenario"]:
        if r["scenario"] != B:
            assert r["categories"] and r["native_similarity"] == 1.0, r["scenario"]


@pytest.mark.parametrize("planted", ["run", "trajectories", "scenario"])
def test_a_link_planted_in_the_output_never_leads_the_replay_into_the_recording(
    recorded: dict[tuple[str, str], Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], planted: str,
) -> None:
    """``-o O`` where ``O/<run>``, ``O/<run>/trajectories`` or ``O/<run>/trajectories/<scenario>`` is a link to the recording:
    one sentence naming the link, exit status 2, and the recording byte for byte as it was."""
    from test_hostile_files import snapshot

    run = tmp_path / "run"
    shutil.copytree(recorded[("clean_solver", "native")], run)
    out = tmp_path / "out"
    target = {"run": run, "trajectories": run / "trajectories", "scenario": run / "trajectories" / B}[planted]
    link = {"run": out / "run", "trajectories": out / "run" / "trajectories", "scenario": out / "run" / "trajectories" / B}[planted]
    link.parent.mkdir(parents=True)
    link.symlink_to(target, target_is_directory=True)
    before = snapshot(run)
    assert main(["replay", str(run), "-o", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "is a symbolic link" in err and str(link) in err and err.count("\n") == 1 and "Traceback" not in err
    assert snapshot(run) == before and not (out / "replay_summary.json").exists()


def test_a_log_linked_into_the_recording_is_refused(recorded: dict[tuple[str, str], Path], tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """A link planted where a scenario's audit log will be appended to (to a file of the recording): one sentence naming
    it, exit status 2, and the recording's file keeps its bytes."""
    run = tmp_path / "run"
    shutil.copytree(recorded[("clean_solver", "native")], run)
    victim = run / "trajectories" / B / "execution_context.json"
    before = victim.read_bytes()
    audit = tmp_path / "out" / "run" / "trajectories" / B / "dynsteer_audit.jsonl"
    audit.parent.mkdir(parents=True)
    audit.symlink_to(victim)
    assert main(["replay", str(run), "-o", str(tmp_path / "out"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert f"{audit} is a symbolic link" in err and err.count("\n") == 1
    assert victim.read_bytes() == before
