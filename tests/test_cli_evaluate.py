"""`dynsteer evaluate` (and its siblings) in-process: results, and one-sentence errors with exit status 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from builders import call, family, settle_events

from dynsteer_hook.cli import EXIT_USAGE, main
from dynsteer_hook.files.blueprints import save_blueprint
from dynsteer_hook.model.events import event_to_record
from dynsteer_hook.model.records import Report
from dynsteer_hook.report.writer import AUDIT_LOG, REPORT_JSON, REPORT_MD

pytestmark = pytest.mark.usefixtures("core_cli")

CHAIN = family("chain").blueprint()
MINES = family("minefield_off_path").blueprint()


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    """A valid blueprint, a trace that completes it, and a report directory path."""
    bp = tmp_path / "bp.json"
    save_blueprint(CHAIN, bp)
    events = tmp_path / "trace.jsonl"
    events.write_text("".join(json.dumps(event_to_record(e)) + "\n" for e in settle_events(["a", "b", "c"])), encoding="utf-8")
    return {"bp": bp, "events": events, "report": tmp_path / "out"}


def evaluate(files: dict[str, Path], *extra: str) -> int:
    return main(["evaluate", "--blueprint", str(files["bp"]), "--events", str(files["events"]), "--report", str(files["report"]), *extra])


def one_sentence_error(err: str) -> str:
    """The single stderr line of a usage error, checked for shape."""
    assert "Traceback" not in err
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert err.startswith("dynsteer: error: ")
    return err[len("dynsteer: error: ") :].strip()


# ---- results -----------------------------------------------------------------------------------------


def test_evaluate_completed_run(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """A completing trace exits 0, prints a one-line summary, and writes the audit log and both reports."""
    assert evaluate(files) == 0
    out, err = capsys.readouterr()
    assert out.startswith("chain: completed; score 1.000; settled 3/3; report ") and err == ""
    report = Report.model_validate_json((files["report"] / REPORT_JSON).read_text(encoding="utf-8"))
    assert report.outcome == "completed" and report.settled == ["a", "b", "c"]
    assert (files["report"] / REPORT_MD).exists()
    audit = [json.loads(line) for line in (files["report"] / AUDIT_LOG).read_text(encoding="utf-8").splitlines()]
    assert audit[0]["type"] == "start" and audit[-1]["type"] == "end"


def test_evaluate_halted_run_is_a_result(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """A halted run exits 0 (the halt is a result) and the summary names the stop."""
    save_blueprint(MINES, files["bp"])
    files["events"].write_text(json.dumps(event_to_record(call("1", "delete_all"))) + "\n", encoding="utf-8")
    assert evaluate(files) == 0
    out = capsys.readouterr().out
    assert "halted (fatal_minefield at k=1, t=1)" in out
    report = Report.model_validate_json((files["report"] / REPORT_JSON).read_text(encoding="utf-8"))
    assert report.stop is not None and report.stop.minefield == "mf:delete_all"


def test_threshold_flags_reach_the_evaluator(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """--n-stag and --set are applied: two idle actions then halt for stagnation."""
    idle = [call(f"i{i}", "op_a", {"x": "wrong"}) for i in range(3)]
    lines = []
    for c in idle:
        lines += [event_to_record(c), {"kind": "tool_result", "call_id": c.call_id, "result": "none"}]
    files["events"].write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    assert evaluate(files, "--n-stag", "2", "--set", "efficiency_step_penalty=0.1") == 0
    report = json.loads((files["report"] / REPORT_JSON).read_text(encoding="utf-8"))
    assert report["stop"]["reason"] == "frontier_stagnation" and report["stop"]["t"] == 2
    assert report["config"]["n_stag"] == 2 and report["config"]["efficiency_step_penalty"] == 0.1
    capsys.readouterr()


# ---- user mistakes: exit 2, one sentence, no traceback ------------------------------------------------------------


def test_missing_blueprint_file(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """A missing blueprint file exits 2 with one sentence naming it."""
    files["bp"].unlink()
    assert evaluate(files) == EXIT_USAGE
    msg = one_sentence_error(capsys.readouterr().err)
    assert msg == f"blueprint file {files['bp']} does not exist; pass the path of a blueprint JSON file"


def test_blueprint_not_json(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """A blueprint that is not JSON exits 2 with one sentence naming the file."""
    files["bp"].write_text("milestones: [a, b]\n", encoding="utf-8")
    assert evaluate(files) == EXIT_USAGE
    msg = one_sentence_error(capsys.readouterr().err)
    assert msg.startswith(f"blueprint file {files['bp']} is not valid JSON") and msg.endswith("fix the file or regenerate it")


def test_blueprint_edge_to_unknown_milestone(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """A blueprint with an edge to an unknown milestone exits 2 naming the edge and the milestone."""
    doc = json.loads(files["bp"].read_text(encoding="utf-8"))
    doc["edges"].append({"source": "c", "target": "ghost"})
    files["bp"].write_text(json.dumps(doc), encoding="utf-8")
    assert evaluate(files) == EXIT_USAGE
    msg = one_sentence_error(capsys.readouterr().err)
    assert "(edge-reference): edge c->ghost names unknown milestone 'ghost'" in msg and str(files["bp"]) in msg


def test_blueprint_breaking_a_contract(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """A well-formed blueprint with a precedence cycle exits 2 naming the rule."""
    doc = json.loads(files["bp"].read_text(encoding="utf-8"))
    doc["edges"].append({"source": "c", "target": "a"})
    files["bp"].write_text(json.dumps(doc), encoding="utf-8")
    assert evaluate(files) == EXIT_USAGE
    assert "is not valid (acyclic at " in one_sentence_error(capsys.readouterr().err)


def test_event_file_with_malformed_line(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """An event file with a malformed line exits 2 with one sentence naming the file and the line number."""
    lines = files["events"].read_text(encoding="utf-8").splitlines()
    lines.insert(2, '{"kind": "tool_call", "call_id": "z"}')
    files["events"].write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert evaluate(files) == EXIT_USAGE
    msg = one_sentence_error(capsys.readouterr().err)
    assert msg.startswith(f"event file {files['events']} line 3 ('tool_call') is malformed at tool")


def test_event_file_with_invalid_json_line(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """A line that is not JSON at all is reported with its line number too."""
    with files["events"].open("a", encoding="utf-8") as f:
        f.write("{oops\n")
    assert evaluate(files) == EXIT_USAGE
    assert f"event file {files['events']} line 8 is not valid JSON" in one_sentence_error(capsys.readouterr().err)


def test_missing_event_file(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """A missing event file exits 2 with one sentence naming it."""
    files["events"].unlink()
    assert evaluate(files) == EXIT_USAGE
    assert one_sentence_error(capsys.readouterr().err).startswith(f"event file {files['events']} does not exist")


def test_report_path_is_a_file(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """A --report path that is an existing file exits 2, and the file is left alone."""
    files["report"].write_text("keep me", encoding="utf-8")
    assert evaluate(files) == EXIT_USAGE
    msg = one_sentence_error(capsys.readouterr().err)
    assert msg == f"--report {files['report']} is a file, not a directory; pass a writable directory path with --report"
    assert files["report"].read_text(encoding="utf-8") == "keep me"


def test_report_path_under_a_file(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """A --report directory that cannot be created (its parent is a file) exits 2 with one sentence, not a traceback."""
    files["report"].write_text("keep me", encoding="utf-8")
    files["report"] = files["report"] / "sub"
    assert evaluate(files) == EXIT_USAGE
    msg = one_sentence_error(capsys.readouterr().err)
    assert msg.startswith(f"--report {files['report']} cannot be created") and msg.endswith("with --report")


@pytest.mark.parametrize(
    ("flags", "fragment"),
    [
        (["--theta-fail", "2"], "config value theta_fail=2.0 is not accepted (input should be less than or equal to 1); its default is 0.3"),
        (["--set", "theta_fail"], "--set 'theta_fail' is not KEY=VALUE"),
        (["--set", "no_such_field=1"], "unknown config field(s) ['no_such_field']"),
        (["--theta-fail", "0.9"], "theta_fail=0.9 is above theta_warn=0.6"),
        (["--set", "n_stag=abc"], "config value n_stag='abc' is not accepted (input should be a valid integer)"),
        (["--set", "theta_pass=high"], "config value theta_pass='high' is not accepted (input should be a valid number)"),
        (["--set", "n_stag=2.5"], "config value n_stag=2.5 is not accepted (input should be a valid integer)"),
        (["--set", 'initial_weights={"safety": "a"}'], "config value initial_weights={'safety': 'a'} is not accepted"),
        (["--set", "theta_pass=true"], "config value theta_pass=True is not accepted (input should be a valid number)"),
    ],
)
def test_bad_threshold_flags(files: dict[str, Path], capsys: pytest.CaptureFixture[str], flags: list[str], fragment: str) -> None:
    """Out-of-range or unknown thresholds exit 2 with one sentence naming the value."""
    assert evaluate(files, *flags) == EXIT_USAGE
    assert fragment in one_sentence_error(capsys.readouterr().err)


def test_missing_required_flag_is_an_argparse_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    """Leaving out --events is argparse's usage error with status 2."""
    with pytest.raises(SystemExit) as exc:
        main(["evaluate", "--blueprint", "x.json", "--report", "out"])
    assert exc.value.code == 2
    assert "--events" in capsys.readouterr().err


# ---- validate ----------------------------------------------------------------------------------------------------


def test_validate_accepts_a_valid_blueprint(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """`dynsteer validate` exits 0 and counts milestones, edges and minefields."""
    assert main(["validate", str(files["bp"])]) == 0
    assert capsys.readouterr().out == f"{files['bp']}: valid (3 milestones, 2 edges, 0 minefields)\n"


def test_validate_lists_violations(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """`dynsteer validate` exits 1 and prints one line per violation."""
    doc = json.loads(files["bp"].read_text(encoding="utf-8"))
    doc["milestones"][0]["tool"] = "teleport"
    files["bp"].write_text(json.dumps(doc), encoding="utf-8")
    assert main(["validate", str(files["bp"])]) == 1
    assert capsys.readouterr().out == f"candidate '{files['bp']}', node 'a', rule schema: tool 'teleport' is not in the tool catalog\n"


def test_validate_refuses_a_blueprint_without_milestones(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`dynsteer validate` on '{}' exits 1 and says the blueprint asks nothing of the agent and what to add."""
    empty = tmp_path / "empty.json"
    empty.write_text("{}", encoding="utf-8")
    assert main(["validate", str(empty)]) == 1
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out.startswith(f"candidate '{empty}', graph, rule non-empty: the blueprint has no milestones")


def test_evaluate_refuses_a_blueprint_without_milestones(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """`dynsteer evaluate` with '{}' as blueprint is a usage error (exit 2, one sentence), not a completed run."""
    files["bp"].write_text("{}", encoding="utf-8")
    assert evaluate(files) == EXIT_USAGE
    message = one_sentence_error(capsys.readouterr().err)
    assert "is not valid (non-empty: the blueprint has no milestones, so any run would count as complete" in message
    assert not (files["report"] / REPORT_JSON).exists()


def test_evaluate_without_the_toolsandbox_subpackage(files: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """The core CLI works when the ToolSandbox subcommands cannot be imported (they are simply absent)."""
    assert evaluate(files) == 0
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    assert "invalid choice: 'run'" in capsys.readouterr().err


@pytest.mark.parametrize("flag", [["--alpha", "1e308"], ["--beta", "inf"], ["--set", 'initial_weights={"safety": 1e300}']])
def test_a_rate_or_weight_too_large_for_the_weight_update_is_one_sentence(files: dict[str, Path], flag: list[str],
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """A value that would overflow the weight update (eq. 7) at the first imperfect stage is refused before any event is read,
    with the field, the bound and the default; nothing is written."""
    idle = [call(f"i{i}", "op_a", {"x": "wrong"}) for i in range(3)]
    lines = [r for c in idle for r in (event_to_record(c), {"kind": "tool_result", "call_id": c.call_id, "result": "none"})]
    files["events"].write_text("".join(json.dumps(r) + "\n" for r in [*lines, *map(event_to_record, settle_events(["a", "b", "c"]))]),
                               encoding="utf-8")
    assert evaluate(files, *flag) == EXIT_USAGE
    assert "is not accepted" in one_sentence_error(capsys.readouterr().err)
    assert not files["report"].exists()
