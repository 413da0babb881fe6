"""`dynsteer run` and `dynsteer demo` through the command line entry point."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ts_support import BLUEPRINTS, SCRIPTS, A, B

from dynsteer_hook.cli import main

pytestmark = pytest.mark.toolsandbox


def _only_dir(base: Path) -> Path:
    dirs = [p for p in base.iterdir() if p.is_dir()]
    assert len(dirs) == 1, dirs
    return dirs[0]


def test_native_evaluator_writes_toolsandbox_outputs_only(scenarios: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--evaluator native plays as ToolSandbox does: its summary and trajectories, no dynsteer files."""
    code = main(["run", "--agent", "Scripted", "--user", "Scripted", "--script", str(SCRIPTS / "clean_solver.json"),
                 "-s", A, "-p", "1", "-o", str(tmp_path), "--evaluator", "native"])
    assert code == 0
    out = _only_dir(tmp_path)
    assert out.name.startswith("agent_Scripted_user_Scripted_")
    summary = json.loads((out / "result_summary.json").read_text())
    assert summary["per_scenario_results"][0]["similarity"] == pytest.approx(1.0)
    assert set(summary) == {"per_scenario_results", "category_aggregated_results", "git_sha"}
    assert not (out / "dynsteer_summary.json").exists()
    assert not list((out / "trajectories" / A).glob("dynsteer_*"))
    assert "Storing outputs to" in capsys.readouterr().out


def test_dynsteer_run_prints_a_verdict_per_scenario(scenarios: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The default evaluator is dynsteer; each scenario gets a one-line verdict."""
    code = main(["run", "--agent", "Scripted", "--user", "Scripted", "--script", str(SCRIPTS / "looping_agent.json"),
                 "-s", B, "-p", "1", "-o", str(tmp_path), "--n-stag", "5"])
    assert code == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith(B + ":"))
    assert "HALTED frontier_stagnation" in line and "t=5" in line
    out = _only_dir(tmp_path)
    assert json.loads((out / "dynsteer_summary.json").read_text())["halts_by_reason"] == {"frontier_stagnation": 1}


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--agent", "Scripted", "--user", "Scripted", "-s", A], "needs --script"),
        (["--agent", "Scripted", "--user", "Scripted", "--script", "missing.json", "-s", A], "does not exist"),
        (["--agent", "Scripted", "--user", "Scripted", "--script", str(SCRIPTS / "clean_solver.json"), "-s", "no_such_scenario"], "unknown scenario"),
        (["--agent", "Scripted", "--user", "Scripted", "--script", str(SCRIPTS / "minefield_agent.json"), "-s", A], "has no entry"),
        (["--agent", "Scripted", "--user", "Scripted", "--script", str(SCRIPTS / "clean_solver.json"), "-s", A, "--blueprints", "nowhere"], "no blueprint"),
        (["--agent", "Scripted", "--user", "Scripted", "--script", str(SCRIPTS / "clean_solver.json"), "-s", A, "--theta-fail", "3"], "theta_fail=3.0 is not accepted"),
        (["--agent", "Scripted", "--user", "Scripted", "--script", str(SCRIPTS / "clean_solver.json"), "-s", A, "-p", "0"], "at least 1"),
    ],
)
def test_bad_run_input_is_one_sentence_and_exit_2(scenarios: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                  argv: list[str], needle: str) -> None:
    """Mistakes in flags or files end in one clear sentence on stderr, no traceback, nothing played."""
    code = main(["run", *argv, "-o", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2
    assert needle in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not any(tmp_path.rglob("conversation.json"))


def test_malformed_blueprint_stops_the_run_before_it_starts(scenarios: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A broken blueprint file is reported by path before any scenario plays."""
    bps = tmp_path / "bps"
    bps.mkdir()
    (bps / f"{A}.json").write_text((BLUEPRINTS / f"{A}.json").read_text().replace('"edges": [', '"edges": [{"source": "ghost", "target": "report"}, ', 1))
    code = main(["run", "--agent", "Scripted", "--user", "Scripted", "--script", str(SCRIPTS / "clean_solver.json"),
                 "-s", A, "-o", str(tmp_path / "out"), "--blueprints", str(bps)])
    err = capsys.readouterr().err
    assert code == 2 and "ghost" in err and str(bps) in err
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("conversation.json"))


SCRAMBLED = "send_message_with_contact_content_cellular_off_3_distraction_tools_tool_name_scrambled"


def _decisions(out: Path) -> dict[str, Any]:
    """Every scenario's verdict in ``dynsteer_summary.json`` without the seconds it took."""
    summary = json.loads((out / "dynsteer_summary.json").read_text())
    return {p["name"]: p for p in summary["per_scenario"]} | {
        "halts_by_reason": summary["halts_by_reason"], "outcomes": summary["outcomes"]}


@pytest.mark.slow
@pytest.mark.xdist_group("ray")
@pytest.mark.usefixtures("ray_instance")
def test_run_on_ray_decides_as_local_processes(scenarios: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``dynsteer run --engine ray`` (a local Ray instance) plays the scenarios as Ray tasks to the same verdicts,
    summaries and ToolSandbox similarities as ``--engine local``."""
    outs = {}
    for engine in ("local", "ray"):
        argv = ["run", "--agent", "Scripted", "--user", "Scripted", "--script", str(SCRIPTS / "looping_agent.json"),
                "-s", B, SCRAMBLED, "-p", "2", "-o", str(tmp_path / engine), "--engine", engine, "--blueprints", str(BLUEPRINTS)]
        assert main(argv) == 0
        outs[engine] = _only_dir(tmp_path / engine)
    local, ray = (_decisions(outs[e]) for e in ("local", "ray"))
    assert local == ray
    assert set(local) >= {B, SCRAMBLED} and local["halts_by_reason"]  # the looping agent is halted on both engines
    similarity = {e: {r["name"]: r["similarity"] for r in json.loads((outs[e] / "result_summary.json").read_text())["per_scenario_results"]}
                  for e in outs}
    assert similarity["local"] == similarity["ray"]
    assert (outs["ray"] / "trajectories" / SCRAMBLED / "dynsteer_report.json").is_file()


def test_ray_address_without_the_ray_engine_is_refused_by_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--ray-address`` with the local engine is one sentence, before any scenario loads."""
    code = main(["run", "--agent", "Scripted", "--user", "Scripted", "--script", str(SCRIPTS / "looping_agent.json"),
                 "-s", B, "-o", str(tmp_path), "--ray-address", "ray://127.0.0.1:1"])
    err = capsys.readouterr().err
    assert code == 2 and "--engine ray" in err and len(err.strip().splitlines()) == 1
