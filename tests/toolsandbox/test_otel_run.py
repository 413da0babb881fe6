"""`dynsteer run --otel` and `dynsteer replay --otel` on real ToolSandbox scenarios, against an OTLP/HTTP collector the
test starts: one trace per rollout, the stage verdicts on the calls that closed them, the halt and the intercepted call."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from otel_receiver import Received, attributes, otlp_receiver, trickling_port
from ts_support import SCRIPTS, A, D, E

from dynsteer_hook.cli import EXIT_USAGE, main
from dynsteer_hook.model.blueprint import AGENT_MESSAGE_TOOL
from dynsteer_hook.otel.export import FLUSH_DEADLINE

pytestmark = pytest.mark.toolsandbox


def _run(script: str, scenario: str, out: Path, url: str, *extra: str) -> int:
    return main(["run", "--agent", "Scripted", "--user", "Scripted", "--script", str(SCRIPTS / f"{script}.json"), "-s", scenario,
                 "-p", "1", "-o", str(out), "--otel", url, *extra])


def _run_dir(base: Path) -> Path:
    [run] = [p for p in base.iterdir() if p.is_dir()]
    return run


def _report(run: Path, scenario: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run / "trajectories" / scenario / "dynsteer_report.json").read_text())
    return data


def _by_name(got: Received) -> dict[str, list[Any]]:
    found: dict[str, list[Any]] = {}
    for s in got.spans():
        found.setdefault(s.name, []).append(s)
    return found


def test_a_clean_run_is_one_trace_with_a_verdict_per_stage_on_its_closing_call(scenarios: dict[str, Any], tmp_path: Path) -> None:
    """The rollout span (agent Scripted, outcome completed), a span per agent call, an evaluation per judged stage
    whose span is a call of the stage's tool in the same trace."""
    with otlp_receiver() as (url, got):
        assert _run("clean_solver", A, tmp_path, url) == 0
    report = _report(_run_dir(tmp_path), A)
    spans = _by_name(got)
    [root] = spans["invoke_agent Scripted"]
    root_attrs = attributes(root)
    assert root_attrs["dynsteer.scenario"] == A and root_attrs["dynsteer.outcome"] == "completed" and root_attrs["dynsteer.source"] == "run"
    calls = [s for name, ss in spans.items() if name.startswith("execute_tool") for s in ss]
    assert calls and all(s.parent_span_id == root.span_id and s.trace_id == root.trace_id for s in calls)
    assert len(calls) == sum(len(step["tools"]) for step in report["steps"])
    records = got.records()
    assert len(records) == len(report["stages"]) > 0
    by_span = {s.span_id: s for s in calls}
    for stage, record in zip(report["stages"], records, strict=True):
        values = attributes(record)
        assert values["dynsteer.milestone"] == stage["milestone"] and values["gen_ai.evaluation.score.value"] == stage["composite"]
        if stage["tool"] == AGENT_MESSAGE_TOOL:  # settled by a message to the user: no call closed it
            assert record.span_id == root.span_id
        else:
            assert attributes(by_span[record.span_id])["dynsteer.tool.resolved"] == stage["tool"]
    assert {s["tool"] for s in report["stages"]} - {AGENT_MESSAGE_TOOL}


def test_a_fatal_call_is_intercepted_and_the_halt_is_the_rollout_status(scenarios: dict[str, Any], tmp_path: Path) -> None:
    """The minefield agent's fatal call is a span never executed; the rollout span is an error naming the halt."""
    with otlp_receiver() as (url, got):
        assert _run("minefield_agent", D, tmp_path, url) == 0
    stop = _report(_run_dir(tmp_path), D)["stop"]
    spans = _by_name(got)
    [root] = spans["invoke_agent Scripted"]
    assert root.status.code == 2 and root.status.message.startswith("halted: fatal_minefield")
    assert attributes(next(e for e in root.events if e.name == "dynsteer.stop"))["dynsteer.stop.k"] == stop["k"]
    [fatal] = [s for ss in spans.values() for s in ss if attributes(s).get("dynsteer.intercepted")]
    values = attributes(fatal)
    assert values["dynsteer.tool_call.executed"] is False and values["dynsteer.k"] == stop["k"] and fatal.status.code == 2


def test_replay_exports_the_recorded_rollout_with_the_agent_from_the_folder_name(scenarios: dict[str, Any], tmp_path: Path,
                                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Replaying the run's folder with --otel sends the same shape of trace, marked replay; a bare --otel written before
    the folder (which argparse hands to --otel as its value) still replays that folder, to the OTEL_* endpoint."""
    with otlp_receiver() as (url, got):
        assert _run("minefield_agent", D, tmp_path / "live", url) == 0
        live = len(got.spans())
        run = _run_dir(tmp_path / "live")
        assert main(["replay", str(run), "-o", str(tmp_path / "replayed"), "--no-progress", "--otel", url]) == 0
        replayed = got.spans()[live:]
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
        assert main(["replay", "--otel", str(run), "-o", str(tmp_path / "bare"), "--no-progress"]) == 0
        again = got.spans()[live + len(replayed):]
    for spans in (replayed, again):
        [root] = [s for s in spans if s.name.startswith("invoke_agent")]
        assert root.name == "invoke_agent Scripted" and attributes(root)["dynsteer.source"] == "replay" and root.status.code == 2
        assert any(attributes(s).get("dynsteer.intercepted") for s in spans)
    assert (tmp_path / "bare" / "index.html").is_file() and run.is_dir()


def test_otel_with_the_native_evaluator_is_one_sentence(scenarios: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--otel exports dynsteer's verdicts: with --evaluator native it is refused before anything plays."""
    assert _run("clean_solver", A, tmp_path, str(tmp_path / "otel.jsonl"), "--evaluator", "native") == EXIT_USAGE
    err = capsys.readouterr().err
    assert "--otel exports what dynsteer judged" in err and err.count("\n") == 1
    assert not list(tmp_path.iterdir())


@pytest.mark.slow
def test_worker_processes_export_their_rollouts_before_they_exit(scenarios: dict[str, Any], tmp_path: Path) -> None:
    """With -p 2 each spawned worker makes its own exporters and flushes them as it ends: every rollout is in the file,
    the tool names as the agent saw them (scrambled) beside the names they resolved to."""
    path = tmp_path / "otel.jsonl"
    assert main(["run", "--agent", "Scripted", "--user", "Scripted", "--script", str(SCRIPTS / "clean_solver.json"), "-s", A, E,
                 "-p", "2", "-o", str(tmp_path / "runs"), "--otel", str(path)]) == 0
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    spans = [s for x in lines for rs in x.get("resourceSpans", []) for ss in rs["scopeSpans"] for s in ss["spans"]]
    values = [{a["key"]: next(iter(a["value"].values())) for a in s["attributes"]} for s in spans]
    assert sorted(v["dynsteer.scenario"] for v in values if "dynsteer.scenario" in v) == sorted([A, E])
    renamed = [v for v in values if "gen_ai.tool.name" in v and v["gen_ai.tool.name"] != v["dynsteer.tool.resolved"]]
    assert renamed, "the scrambled scenario's calls name tools the agent saw under other names"


@contextmanager
def _stalling(kind: str, tmp_path: Path) -> Iterator[str]:
    """An --otel target whose exports stall: a collector that answers one byte every half second, or a pipe nobody reads."""
    if kind == "trickling":
        with trickling_port() as port:
            yield f"http://127.0.0.1:{port}"
    else:
        os.mkfifo(tmp_path / "pipe")
        yield str(tmp_path / "pipe")


@pytest.mark.parametrize("kind", ["trickling", "pipe"])
def test_telemetry_that_stalls_never_holds_the_run(kind: str, scenarios: dict[str, Any], tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """A run of one scenario with --otel to a collector that trickles its answers or to a pipe nobody reads ends about as
    fast as without --otel (the end waits at most its flush deadline), exit 0 with every file written, and one warning on
    stderr names the target (the SDK alone held such a run for a minute, silently)."""
    start = time.perf_counter()
    assert main(["run", "--agent", "Scripted", "--user", "Scripted", "--script", str(SCRIPTS / "clean_solver.json"), "-s", A,
                 "-p", "1", "-o", str(tmp_path / "plain")]) == 0
    plain = time.perf_counter() - start
    capsys.readouterr()
    with _stalling(kind, tmp_path) as target:
        start = time.perf_counter()
        assert _run("clean_solver", A, tmp_path / "out", target) == 0
        took = time.perf_counter() - start
    assert took < plain + FLUSH_DEADLINE + 3.0, (plain, took)
    run = _run_dir(tmp_path / "out")
    assert {"result_summary.json", "dynsteer_summary.json", "index.html"} <= {p.name for p in run.iterdir()}
    assert _report(run, A)["outcome"] == "completed"
    err = capsys.readouterr().err
    warnings = [line for line in err.splitlines() if "OpenTelemetry" in line]
    assert len(warnings) == 1 and target in warnings[0], err
