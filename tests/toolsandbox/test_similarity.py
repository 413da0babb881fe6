"""ToolSandbox's own similarity of a rollout: computed after dynsteer's report, once per snapshot, within a budget.

Its brute-force milestone search asked polars for the same database views at every node (a looping agent's 14
turns: 15 s or more) and grew without bound with the conversation (a turn of 100 parallel calls: minutes; 1,000:
more than ten), while dynsteer's report and the run's summaries waited for it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from ts_support import BLUEPRINTS, SCRIPTS, B, D, script_names

from dynsteer_hook.cli import EXIT_USAGE, main
from dynsteer_hook.toolsandbox.live.runner import RunOptions, run_scenario
from dynsteer_hook.toolsandbox.live.summaries import category_summary
from dynsteer_hook.toolsandbox.roles.scripted import ScenarioScript, ScriptedAgent, ScriptedUser
from dynsteer_hook.toolsandbox.similarity import (
    BEING_COMPUTED,
    INTERRUPTED,
    Deadline,
    SimilarityOptions,
    SimilarityUnknown,
    evaluate,
    over_budget,
)

from tool_sandbox.common.evaluation import Evaluation
from tool_sandbox.common.execution_context import RoleType
from tool_sandbox.roles.execution_environment import ExecutionEnvironment

pytestmark = pytest.mark.toolsandbox

ROOT = Path(__file__).resolve().parents[2]
STATUS = {"name": "get_cellular_service_status", "arguments": {}}


def _context(scenario: Any, name: str, agent: list[dict[str, Any]], user: list[str] | None = None) -> Any:
    """The execution context of ``scenario`` played by ToolSandbox with a scripted agent and user (no dynsteer)."""
    script = ScenarioScript.model_validate({"agent": agent, "user": user or []})
    roles = {RoleType.USER: ScriptedUser(script.user), RoleType.EXECUTION_ENVIRONMENT: ExecutionEnvironment(),
             RoleType.AGENT: ScriptedAgent(script.agent)}
    return scenario.play(roles=roles, scenario_name=name)


def _bits(result: Any) -> Any:
    """An evaluation result with every float as its exact bits: equal iff bit-identical."""
    def canonical(value: Any) -> Any:
        if isinstance(value, float):
            return value.hex()
        if isinstance(value, dict):
            return sorted((repr(k), canonical(v)) for k, v in value.items())
        if isinstance(value, (list, tuple)):
            return [canonical(v) for v in value]
        return value

    return canonical({key: getattr(result, key) for key in ("milestone_mapping", "minefield_mapping", "milestone_similarity",
                                                            "minefield_similarity", "similarity", "turn_count")})


def _both_ways(scenario: Any, context: Any) -> tuple[Any, Any]:
    plain = scenario.evaluation.evaluate(execution_context=context, max_turn_count=scenario.max_messages)
    views = evaluate(scenario.evaluation, context, scenario.max_messages, SimilarityOptions(budget=None))
    return plain, views


SCRIPTED = [(script, name) for script in ("clean_solver", "alternative_path", "minefield_agent", "malformed_arguments")
            for name in script_names(script)]


@pytest.mark.parametrize(("script", "name"), SCRIPTED, ids=[f"{s}-{n}" for s, n in SCRIPTED])
def test_views_computed_once_per_snapshot_leave_the_similarity_bit_identical(scenarios: dict[str, Any], script: str, name: str) -> None:
    """On every shipped scripted rollout (the looping agent's in the slow test below), ToolSandbox's evaluation through
    dynsteer's views gives the very result ToolSandbox alone gives: every mapping, similarity and turn count, bit for bit."""
    data = json.loads((SCRIPTS / f"{script}.json").read_text())[name]
    context = _context(scenarios[name], name, data["agent"], data.get("user"))
    plain, views = _both_ways(scenarios[name], context)
    assert _bits(views) == _bits(plain)


@pytest.mark.slow
@pytest.mark.parametrize("name", script_names("looping_agent"))
def test_the_looping_agents_14_turns_are_evaluated_bit_identically_and_several_times_faster(scenarios: dict[str, Any],
                                                                                           name: str) -> None:
    """The looping agent's 14 turns, played to their end: the same result bit for bit, in a fraction of the time (every
    node of the search asked polars for the same views; each is now computed once)."""
    data = json.loads((SCRIPTS / "looping_agent.json").read_text())[name]
    context = _context(scenarios[name], name, data["agent"])
    start = time.perf_counter()
    plain = scenarios[name].evaluation.evaluate(execution_context=context, max_turn_count=scenarios[name].max_messages)
    alone = time.perf_counter() - start
    start = time.perf_counter()
    views = evaluate(scenarios[name].evaluation, context, scenarios[name].max_messages, SimilarityOptions(budget=None))
    viewed = time.perf_counter() - start
    assert _bits(views) == _bits(plain)
    assert viewed < alone / 2.5, (alone, viewed)


@pytest.mark.slow
def test_a_turn_of_many_parallel_calls_is_evaluated_bit_identically(scenarios: dict[str, Any]) -> None:
    """A turn of 300 parallel calls (every one executed: ToolSandbox alone plays them), on the scenario whose search ends:
    the same result bit for bit."""
    context = _context(scenarios[D], D, [{"tool_calls": [STATUS] * 300}])
    plain, views = _both_ways(scenarios[D], context)
    assert _bits(views) == _bits(plain)


def test_each_view_is_computed_once_and_the_deadline_is_looked_at_on_every_node(scenarios: dict[str, Any]) -> None:
    """The search asks for far more views than there are distinct ones; each distinct one is computed once. The clock is
    looked at on every request for a view and on every node of the search (each copies the milestone graph)."""
    from dynsteer_hook.toolsandbox.similarity import SnapshotViews

    data = json.loads((SCRIPTS / "malformed_arguments.json").read_text())[B]
    context = _context(scenarios[B], B, data["agent"])
    asked: list[int] = []
    real = type(context).get_database

    def counting(self: Any, *args: Any, **kwargs: Any) -> Any:
        asked.append(1)
        return real(self, *args, **kwargs)

    type(context).get_database = counting  # type: ignore[method-assign]
    try:
        deadline = Deadline(None)
        views = SnapshotViews(context, deadline)
        scenarios[B].evaluation.evaluate(execution_context=views, max_turn_count=scenarios[B].max_messages)
        computed = len(asked)
        asked.clear()
        scenarios[B].evaluation.evaluate(execution_context=context, max_turn_count=scenarios[B].max_messages)
    finally:
        type(context).get_database = real  # type: ignore[method-assign]
    # The context's own properties (the last message's index...) read a few more views of their own.
    assert views.computed <= computed <= views.computed + 10 and computed * 5 < len(asked), (views.computed, computed, len(asked))
    assert deadline.checks >= len(asked) // 2


def test_past_its_budget_the_search_stops_at_its_next_node_and_says_why(scenarios: dict[str, Any]) -> None:
    """A search over a turn of 100 parallel calls (minutes, views or not) stops once its budget is spent: unknown, with the
    reason and the turn count, never a similarity of 0; the scenario's own evaluation is left as it was."""
    context = _context(scenarios[B], B, [{"tool_calls": [STATUS] * 100}])
    graph = scenarios[B].evaluation.milestone_matcher.milestone_dag
    start = time.perf_counter()
    with pytest.raises(SimilarityUnknown) as caught:
        evaluate(scenarios[B].evaluation, context, scenarios[B].max_messages, SimilarityOptions(budget=1.0))
    assert time.perf_counter() - start < 3.0
    assert caught.value.reason == over_budget(1.0) and caught.value.turn_count is not None and caught.value.turn_count >= 100
    assert scenarios[B].evaluation.milestone_matcher.milestone_dag is graph and type(graph).__name__ == "DiGraph"


def test_an_interrupted_run_stops_the_search() -> None:
    """A Ctrl-C noted by the run's control stops the search at its next node (reason: interrupted)."""
    from dynsteer_hook.toolsandbox.live.interrupts import InterruptControl
    from dynsteer_hook.toolsandbox.similarity import _Stop

    control = InterruptControl()
    deadline = Deadline(None, control)
    deadline.check()
    control.handle(signal.SIGINT, None)
    with pytest.raises(_Stop) as caught:
        deadline.check()
    assert caught.value.reason == INTERRUPTED


def test_dynsteers_report_is_written_before_toolsandbox_evaluates(scenarios: dict[str, Any], tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """When ToolSandbox starts its evaluation, the scenario's dynsteer report (JSON, Markdown, HTML) and logs are on disk,
    saying the similarity is being computed; afterwards the report holds the similarity."""
    seen: list[dict[str, Any]] = []
    real = Evaluation.evaluate

    def looking(self: Any, *args: Any, **kwargs: Any) -> Any:
        folder = tmp_path / "out" / "trajectories" / D
        report = json.loads((folder / "dynsteer_report.json").read_text())
        seen.append({"native": report["native"], "files": sorted(p.name for p in folder.iterdir())})
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Evaluation, "evaluate", looking)
    options = RunOptions(agent="Scripted", user="Scripted", script=SCRIPTS / "clean_solver.json", blueprint_dir=BLUEPRINTS)
    r = run_scenario((D, scenarios[D]), options=options, output_directory=tmp_path / "out")
    [before] = seen
    assert before["native"]["unknown"] == BEING_COMPUTED and before["native"]["similarity"] is None
    assert {"dynsteer_report.json", "dynsteer_report.md", "dynsteer_report.html", "dynsteer_audit.jsonl"} <= set(before["files"])
    after = json.loads((tmp_path / "out" / "trajectories" / D / "dynsteer_report.json").read_text())
    assert after["native"]["similarity"] == r["similarity"] == 1 and after["native"]["unknown"] is None
    assert "similarity_unknown" not in r


def test_a_similarity_not_computed_is_unknown_everywhere_never_0(scenarios: dict[str, Any], tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """`dynsteer run --similarity-budget` spent before ToolSandbox's search ends: exit 0, the verdict, the result, both
    summaries, the category means and the run page say unknown with the reason (no 0 anywhere), the report says it too;
    conversation.json, ToolSandbox's file of the search's matches, is not written, and the run replays all the same."""
    script = tmp_path / "wide.json"
    script.write_text(json.dumps({B: {"agent": [{"tool_calls": [STATUS] * 100}], "user": []}}))
    start = time.perf_counter()
    code = main(["run", "--agent", "Scripted", "--user", "Scripted", "--script", str(script), "-s", B, "-p", "1",
                 "-o", str(tmp_path / "out"), "--similarity-budget", "0.5"])
    took = time.perf_counter() - start
    out, err = capsys.readouterr()
    assert code == 0 and took < 30, (took, err)
    reason = over_budget(0.5)
    assert f"ToolSandbox similarity unknown ({reason})" in out and "(1 unknown, left out)" in out
    assert err.strip().splitlines()[-1] == (f"dynsteer: ToolSandbox's similarity of 1 scenario(s) is unknown (e.g. {B}): {reason}; "
                                             "their dynsteer reports and results are complete")
    [run] = [p for p in (tmp_path / "out").iterdir() if p.is_dir()]
    [result] = json.loads((run / "result_summary.json").read_text())["per_scenario_results"]
    assert result["similarity"] is None and result["milestone_similarity"] is None and result["similarity_unknown"] == reason
    assert result["turn_count"] >= 100 and result["exception_type"] is None
    means = json.loads((run / "result_summary.json").read_text())["category_aggregated_results"]
    assert all(m["similarity"] is None for m in means.values()), means
    [entry] = json.loads((run / "dynsteer_summary.json").read_text())["per_scenario"]
    assert entry["similarity"] is None and entry["similarity_unknown"] == reason
    page = (run / "index.html").read_text()
    assert '"simwhy":' in page and reason.replace("(", "").split(" --")[0] in page
    report = json.loads((run / "trajectories" / B / "dynsteer_report.json").read_text())
    assert report["native"]["unknown"] == reason and report["native"]["similarity"] is None
    assert f"unknown ({reason})" in (run / "trajectories" / B / "dynsteer_report.md").read_text().replace("\\", "")
    assert not (run / "trajectories" / B / "conversation.json").exists()
    assert main(["replay", str(run), "-o", str(tmp_path / "replayed")]) == 0
    assert f"{B}:" in capsys.readouterr().out


def test_category_means_leave_unknown_similarities_out() -> None:
    """A category's mean similarity is over the known ones; a category with none known has no mean (null), never 0."""
    results = [{"name": "a", "categories": ["NO_DISTRACTION_TOOLS"], "similarity": 1.0, "turn_count": 4},
               {"name": "b", "categories": ["NO_DISTRACTION_TOOLS"], "similarity": None, "turn_count": 8,
                "similarity_unknown": "why"},
               {"name": "c", "categories": ["STATE_DEPENDENCY"], "similarity": None, "turn_count": None, "similarity_unknown": "why"}]
    means = category_summary(results)
    assert means["NO_DISTRACTION_TOOLS"] == {"similarity": 1.0, "turn_count": 6.0}
    assert means["STATE_DEPENDENCY"] == {"similarity": None, "turn_count": None}


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "1e400"])
def test_a_similarity_budget_that_is_no_positive_number_of_seconds_is_one_sentence(value: str, tmp_path: Path,
                                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """--similarity-budget 0, negative, NaN or infinite: exit 2, one sentence, nothing played or written."""
    code = main(["run", "--agent", "Scripted", "--user", "Scripted", "--script", str(SCRIPTS / "clean_solver.json"), "-s", D,
                 "-o", str(tmp_path / "out"), "--similarity-budget", value])
    err = capsys.readouterr().err
    assert code == EXIT_USAGE and err.count("\n") == 1 and "--similarity-budget" in err and "positive number of seconds" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_ctrl_c_while_toolsandbox_evaluates_cuts_only_the_similarity(tmp_path: Path) -> None:
    """A real SIGINT once dynsteer's report is written and ToolSandbox's search runs (a turn of 100 parallel calls:
    minutes): the search stops at once, the scenario is finished with its report and its similarity unknown
    (interrupted), the summaries and the page are written, exit 130 with one line on stderr."""
    script = tmp_path / "wide.json"
    script.write_text(json.dumps({B: {"agent": [{"tool_calls": [STATUS] * 100}], "user": []}}))
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, "-m", "dynsteer_hook.cli", "run", "--agent", "Scripted", "--user", "Scripted",
                             "--script", str(script), "-s", B, "-p", "1", "-o", str(tmp_path / "out")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 300
        while not list((tmp_path / "out").glob(f"*/trajectories/{B}/dynsteer_report.json")):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.1)
        time.sleep(1.0)  # well inside the search
        start = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        stopped_in = time.monotonic() - start
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130 and "Traceback" not in err, err
    assert stopped_in < 15, stopped_in
    lines = [x for x in err.splitlines() if x.strip() and not x.startswith("[")]
    assert len(lines) == 1 and lines[0].startswith("dynsteer: interrupted: every scenario finished; ToolSandbox's similarity of 1"), err
    [run] = [p for p in (tmp_path / "out").iterdir() if p.is_dir()]
    [result] = json.loads((run / "result_summary.json").read_text())["per_scenario_results"]
    assert result["similarity"] is None and result["similarity_unknown"] == INTERRUPTED
    report = json.loads((run / "trajectories" / B / "dynsteer_report.json").read_text())
    assert report["native"]["unknown"] == INTERRUPTED and report["outcome"] != "interrupted"
    assert (run / "index.html").is_file() and (run / "dynsteer_summary.json").is_file()
    assert f"{B}: " in out and "ToolSandbox similarity unknown" in out
