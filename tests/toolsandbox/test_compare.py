"""``dynsteer compare`` on recorded runs of scripted agents of known quality: the tables of the paper
(Table 1 per agent, the pair tests and DS of eq. 10 for both evaluators, Table 3 of virtual stops)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from shipped_runs import ShippedRuns
from ts_support import SCRIPTS, script_names

from dynsteer_hook.cli import main
from dynsteer_hook.toolsandbox.live.runner import RunOptions, run_scenarios

pytestmark = [pytest.mark.toolsandbox, pytest.mark.slow]

REPEATS = 2


def _sloppy(tmp: Path) -> Path:
    """The clean solver with a malformed call (an unexpected argument) before its first call in every scenario."""
    data = json.loads((SCRIPTS / "clean_solver.json").read_text())
    for name, script in data.items():
        if name.startswith("_"):
            continue
        first = next((s for s in script["agent"] if "tool_calls" in s), None)
        if first is not None:
            call = first["tool_calls"][0]
            script["agent"].insert(0, {"tool_calls": [{"name": call["name"], "arguments": {**call["arguments"], "bogus": 1}}]})
    path = tmp / "sloppy.json"
    path.write_text(json.dumps(data))
    return path


@pytest.fixture(scope="module")
def agents(scenarios: dict[str, Any], shipped_runs: ShippedRuns, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Three scripted agents over the same five scenarios, two recorded repeats each (native runs): the clean and the
    alternative solvers are the session's shipped runs, the sloppy one is played here; a scripted agent's repeats are
    the same rollout, so the second repeat is a copy of the first."""
    tmp = tmp_path_factory.mktemp("agents")
    sloppy = tmp / "sloppy" / "repeat_0"
    options = RunOptions(agent="Scripted", user="Scripted", evaluator="native", script=_sloppy(tmp))
    run_scenarios({n: scenarios[n] for n in script_names("clean_solver")}, options, sloppy, 1)
    first = {"clean": shipped_runs("clean_solver", "native").folder, "alternative": shipped_runs("alternative_path", "native").folder,
             "sloppy": sloppy}
    out: dict[str, Path] = {}
    for agent, played in first.items():
        for r in range(REPEATS):
            if tmp / agent / f"repeat_{r}" != played:
                shutil.copytree(played, tmp / agent / f"repeat_{r}")
        out[agent] = tmp / agent
    return out


@pytest.fixture(scope="module")
def compared(agents: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path, str]:
    out = tmp_path_factory.mktemp("compare")
    code = main(["compare", *(f"{a}={p}" for a, p in agents.items()), "-o", str(out), "--no-progress"])
    assert code == 0
    return json.loads((out / "compare.json").read_text()), out, (out / "compare.md").read_text()


def test_every_agent_gets_its_table_1_row(compared: tuple[dict[str, Any], Path, str]) -> None:
    """Per agent: both evaluators' means over repeats (identical repeats: std 0), stop rate, saturation, judge calls."""
    result, _, _ = compared
    n = len(script_names("clean_solver"))
    for name, a in result["agents"].items():
        assert a["repeats"] == REPEATS and a["trajectories"] == REPEATS * n, name
        assert a["dynsteer"]["std_over_repeats"] == 0.0 and a["native"]["std_over_repeats"] == 0.0
        assert 0.0 <= a["dynsteer"]["mean"] <= 1.0 and a["judge"]["calls"] > 0
    assert result["agents"]["clean"]["native"]["saturation"] == 1.0  # ToolSandbox scores every clean run 1.0


def test_the_sloppy_agent_ranks_below_the_clean_one_only_under_dynsteer(compared: tuple[dict[str, Any], Path, str]) -> None:
    """ToolSandbox scores the sloppy and the clean solver alike; DynSTEER separates them with a significant paired test."""
    result, _, _ = compared
    agents = result["agents"]
    assert agents["sloppy"]["native"]["mean"] == agents["clean"]["native"]["mean"]
    assert agents["sloppy"]["dynsteer"]["mean"] < agents["clean"]["dynsteer"]["mean"]
    pairs = {(p["a"], p["b"]): p for p in result["evaluators"]["dynsteer"]["pairs"]}
    assert pairs[("clean", "sloppy")]["significant"]
    native_pairs = {(p["a"], p["b"]): p for p in result["evaluators"]["native"]["pairs"]}
    assert not native_pairs[("clean", "sloppy")]["significant"]
    ds = result["evaluators"]["dynsteer"]["discriminability"]
    assert ds["ds"] > result["evaluators"]["native"]["discriminability"]["ds"]


def test_outputs_are_written_in_three_formats(compared: tuple[dict[str, Any], Path, str]) -> None:
    """compare.md holds Tables 1 and 3 and the pair tests; compare.csv one row per agent; the replays are kept."""
    _, out, md = compared
    assert "## Table 1" in md and "## Table 3" in md and "| dynsteer | clean vs sloppy |" in md
    rows = (out / "compare.csv").read_text().splitlines()
    assert rows[0].startswith("agent,") and len(rows) == 4
    assert (out / "replays" / "clean" / "repeat_0" / "replay_summary.json").is_file()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["only=/nonexistent"], "does not exist"),
        (["a={run}"], "at least two agents"),
        (["a={run}", "a={run}"], "names repeat"),
        (["a={empty}", "b={run}"], "holds no recorded run"),
    ],
)
def test_bad_compare_input_is_one_sentence(tmp_path: Path, args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Missing or empty folders, repeated names and too few agents end in one sentence and exit status 2."""
    (tmp_path / "run" / "trajectories").mkdir(parents=True)
    (tmp_path / "empty").mkdir()
    args = [a.format(run=tmp_path / "run", empty=tmp_path / "empty") for a in args]
    code = main(["compare", *args, "-o", str(tmp_path / "out"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and message in err and "Traceback" not in err


@pytest.fixture(scope="module")
def routed(agents: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path, int]:
    """The same agents compared with the rules-based judge on 127.0.0.1, adaptive ladder against all stages at Tier 3."""
    from rules_judge import RulesJudgeServer

    out = tmp_path_factory.mktemp("routed")
    server = RulesJudgeServer().start()
    try:
        argv = ["compare", *(f"{a}={p}" for a, p in agents.items()), "-o", str(out), "--no-progress", "--against-all-tier3",
                "--judge-model", "openai/rules-judge", "--judge-api-base", server.url, "--judge-max-retries", "0",
                "--judge-cache", str(out / "cache")]
        assert main(argv) == 0
        asked = server.requests
        assert main([*argv[:4], "-o", str(out / "again"), *argv[6:]]) == 0  # same replays, same cache
        assert server.requests == asked, "the re-run asked the judge again"
    finally:
        server.stop()
    return json.loads((out / "compare.json").read_text()), out, asked


def test_all_tier3_baseline_routes_every_stage_to_tier3_and_the_ladder_spends_less(routed: tuple[dict[str, Any], Path, int]) -> None:
    """The baseline's reports use Tier 3 on every dimension of every stage; the adaptive replays spend fewer calls and
    tokens on every agent; the routing table gives both sides, the shares and Kendall tau between the rankings."""
    result, out, asked = routed
    baseline = sorted((out / "all_tier3" / "replays").rglob("dynsteer_report.json"))
    assert baseline
    for path in baseline:
        for stage in json.loads(path.read_text())["stages"]:
            assert {u["used"] for u in stage["tiers"].values()} == {3}, (path, stage["milestone"])
    routing = result["routing"]
    # Repeats and agents sharing a stage share its answers: the judge was asked once per distinct request, each one kept.
    assert asked == len(list((out / "cache").rglob("*.json"))) <= routing["adaptive"]["llm_requests"] + routing["all_tier3"]["llm_requests"]
    for name, agent in routing["agents"].items():
        assert agent["adaptive"]["llm_requests"] < agent["all_tier3"]["llm_requests"], name
        assert agent["adaptive"]["tokens"] < agent["all_tier3"]["tokens"], name
    assert routing["adaptive"]["llm_requests"] > 0  # the sloppy agent's weak stages climbed the ladder
    assert routing["call_share"] == pytest.approx(routing["adaptive"]["llm_requests"] / routing["all_tier3"]["llm_requests"], abs=1e-6)
    assert routing["kendall_tau"] is not None and -1.0 <= routing["kendall_tau"] <= 1.0
    md = (out / "compare.md").read_text()
    assert "## Adaptive ladder against all stages at Tier 3" in md and f"| clean | {routing['agents']['clean']['adaptive']['llm_requests']} |" in md


def test_all_tier3_baseline_without_a_judge_model_is_one_sentence(agents: dict[str, Path], tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["compare", *(f"{a}={p}" for a, p in agents.items()), "-o", str(tmp_path / "o"), "--no-progress", "--against-all-tier3"])
    err = capsys.readouterr().err
    assert code == 2 and "--judge-model" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o" / "replays").exists()
