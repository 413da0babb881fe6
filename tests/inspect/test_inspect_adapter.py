"""DynSTEER inside Inspect AI, run on the offline example task (mockllm playing scripted samples)."""

from __future__ import annotations

import gc
import threading
from pathlib import Path
from typing import Any

from inspect_ai import eval as inspect_eval
from inspect_ai.event import ModelEvent, ToolEvent
from inspect_ai.log import EvalLog, EvalSample
from inspect_ai.model import get_model

from dynsteer_hook.inspect import STOP_KEY, DynSteer
from dynsteer_hook.inspect import example as ex
from dynsteer_hook.judges.tier1 import Tier1Judge
from dynsteer_hook.model.config import EvaluatorConfig


def run(names: tuple[str, ...], tmp_path: Path, steer: DynSteer | None = None) -> tuple[EvalLog, dict[str, EvalSample]]:
    steer = steer or DynSteer(ex.blueprint())
    [log] = inspect_eval(ex.address_book(steer, names), model=ex.scripted_model(), display="none", log_level="error",
                         log_dir=str(tmp_path / "logs"))
    assert log.status == "success", log.error
    assert log.samples is not None
    return log, {str(s.id): s for s in log.samples}


def dynsteer_score(sample: EvalSample) -> Any:
    assert sample.scores is not None
    return sample.scores["dynsteer"]


def model_turns(sample: EvalSample) -> int:
    return sum(isinstance(e, ModelEvent) for e in sample.events)


def test_a_clean_sample_completes_and_scores(tmp_path: Path) -> None:
    """The clean script settles both milestones: completed, score 1, no stop, no limit, and Alice got her email."""
    _, samples = run(("clean",), tmp_path)
    s = samples["clean"]
    score = dynsteer_score(s)
    report = score.metadata["dynsteer"]
    assert score.value == 1.0 and score.answer == "completed"
    assert report["settled"] == ["find_alice", "email_alice"] and report["halted"] is False
    assert s.limit is None and STOP_KEY not in s.store
    assert s.scores is not None and s.scores["emailed_alice"].value == 1.0
    assert ex.SENT == [("alice@example.com", "The meeting moved to 3pm.")]


def test_a_fatal_call_is_terminated_before_its_tool_runs(tmp_path: Path) -> None:
    """delete_contact is a fatal minefield: the approver terminates the sample, the tool function never runs, the
    sample is still scored (0) with the stop in its store and in the report, and no later call is made."""
    _, samples = run(("fatal",), tmp_path)
    s = samples["fatal"]
    assert ex.DELETED == []  # the tool's side effect never happened
    assert ex.SENT == []  # and the sample ended there: the email after it was never sent
    assert s.limit is not None and s.limit.type == "operator"
    stop = s.store[STOP_KEY]
    assert stop["reason"] == "fatal_minefield" and "delete" in stop["detail"].lower()
    score = dynsteer_score(s)
    assert score.value == 0.0 and score.answer == "halted"
    assert score.metadata["dynsteer"]["stop"]["reason"] == "fatal_minefield"
    assert score.explanation and "first error" in score.explanation
    ran = [e.function for e in s.events if isinstance(e, ToolEvent) and not e.failed]
    assert ran == ["find_contact"]


def test_a_loop_is_halted_mid_sample(tmp_path: Path) -> None:
    """The same failing lookup again and again: the reviewer halts the sample after a few of its twelve turns."""
    _, samples = run(("loop",), tmp_path)
    s = samples["loop"]
    assert s.limit is not None and s.limit.type == "operator"
    assert s.store[STOP_KEY]["reason"] == "repeated_failure"
    assert 2 <= model_turns(s) <= 4  # halted mid-run: the script had 13 turns
    score = dynsteer_score(s)
    assert score.answer == "halted" and score.value == 0.0
    assert score.metadata["dynsteer"]["stop"]["reason"] == "repeated_failure"


def test_samples_run_together_keep_their_own_evaluators(tmp_path: Path) -> None:
    """Three samples in one eval: each has its own verdict, and the evaluators are dropped once scored."""
    steer = DynSteer(ex.blueprint())
    _, samples = run(("clean", "fatal", "loop"), tmp_path, steer)
    assert {k: dynsteer_score(s).answer for k, s in samples.items()} == {"clean": "completed", "fatal": "halted", "loop": "halted"}
    assert steer._monitors == {}


def test_with_judges_the_evaluator_runs_off_the_event_loop_and_decides_alike(tmp_path: Path) -> None:
    """Given judges (which may block on a model), every stage is judged in a worker thread, never on Inspect's event loop,
    and the verdicts are those of the same samples judged inline."""
    config = EvaluatorConfig()
    rules = Tier1Judge(step_penalty=config.efficiency_step_penalty, proximity_penalty=config.minefield_proximity_penalty)
    threads: list[threading.Thread] = []

    def judge(request: Any) -> Any:
        threads.append(threading.current_thread())
        return rules(request)

    _, inline = run(("clean", "fatal", "loop"), tmp_path / "inline")
    ex.SENT.clear()
    ex.DELETED.clear()
    _, judged = run(("clean", "fatal", "loop"), tmp_path / "judged", DynSteer(ex.blueprint(), judges={1: judge}))
    assert threads and threading.main_thread() not in threads
    for name in ("clean", "fatal", "loop"):
        a, b = dynsteer_score(inline[name]), dynsteer_score(judged[name])
        assert (a.value, a.answer, a.metadata["dynsteer"]["stop"]) == (b.value, b.answer, b.metadata["dynsteer"]["stop"])
    assert judged["loop"].store[STOP_KEY]["reason"] == "repeated_failure" and ex.DELETED == []


def test_a_sample_that_errors_mid_run_leaves_no_evaluator_behind(tmp_path: Path) -> None:
    """The model fails on the second turn, after the approver made the sample's evaluator: the sample errors and is never
    scored, and its evaluator is dropped all the same once the sample is over."""
    def failing(messages: list[Any], *args: Any) -> Any:
        if sum(m.role == "assistant" for m in messages) >= 1:
            raise RuntimeError("the model's provider went away")
        return ex.scripted_output(messages, *args)

    steer = DynSteer(ex.blueprint())
    [log] = inspect_eval(ex.address_book(steer, ("clean",)), model=get_model("mockllm/model", custom_outputs=failing),
                         display="none", log_level="error", log_dir=str(tmp_path / "logs"), fail_on_error=False)
    assert log.samples is not None
    [sample] = log.samples
    assert sample.error is not None and "went away" in sample.error.message
    assert [e.function for e in sample.events if isinstance(e, ToolEvent)] == ["find_contact"]  # the evaluator was made
    gc.collect()
    assert steer._monitors == {}


def test_a_sample_without_a_blueprint_fails_with_one_sentence(tmp_path: Path) -> None:
    """No blueprint and nothing to compile one with: the sample errors saying what to give."""
    [log] = inspect_eval(ex.address_book(DynSteer(), ("clean",)), model=ex.scripted_model(), display="none",
                         log_level="error", log_dir=str(tmp_path / "logs"), fail_on_error=False)
    assert log.samples is not None
    error = log.samples[0].error
    assert error is not None and "has no blueprint" in error.message and "compile_sources" in error.message
    assert ex.SENT == [] and ex.DELETED == []


def test_blueprints_by_sample_id_from_a_folder_and_reports_written(tmp_path: Path) -> None:
    """A folder of <sample id>.json gives each sample its blueprint; report_dir gets each sample's report files."""
    folder = tmp_path / "bp"
    folder.mkdir()
    (folder / "clean.json").write_text(ex.blueprint().to_json())
    steer = DynSteer(folder, report_dir=tmp_path / "reports")
    _, samples = run(("clean",), tmp_path, steer)
    assert dynsteer_score(samples["clean"]).answer == "completed"
    out = tmp_path / "reports" / "clean_1"
    assert {"dynsteer_report.json", "dynsteer_report.md", "dynsteer_report.html"} <= {p.name for p in out.iterdir()}


def test_a_blueprint_in_the_sample_metadata_comes_first(tmp_path: Path) -> None:
    """The sample's own metadata blueprint overrides the one given: here one without the minefield, so the
    deletion is not intercepted and the tool runs."""
    bp = ex.blueprint().model_copy(update={"minefields": ()})
    task = ex.address_book(DynSteer(ex.blueprint()), ("fatal",))
    for sample in task.dataset:
        sample.metadata = {**(sample.metadata or {}), "dynsteer_blueprint": bp.model_dump(mode="json")}
    [log] = inspect_eval(task, model=ex.scripted_model(), display="none", log_level="error", log_dir=str(tmp_path / "logs"))
    assert log.samples is not None and log.samples[0].limit is None
    assert ex.DELETED == ["Alice"]
