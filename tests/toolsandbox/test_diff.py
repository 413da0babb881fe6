"""``dynsteer diff`` on small run and replay folders the tests write: pairing by name, the worst regression first, the
totals and their Wilcoxon test, the scenarios one side holds, links that resolve from the output folder, damaged entries
skipped with their reason, bad folders refused in one sentence with nothing written, and the gates' exit statuses.
(The page in a browser: test_diff_page.py.)"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
from run_folders import first_error, replay_entry, run_entry, stop, write_replay, write_run
from test_hostile_files import snapshot

from dynsteer_hook.cli import main
from dynsteer_hook.toolsandbox.offline.diff import diff_document, pair_runs
from dynsteer_hook.toolsandbox.offline.metaeval import wilcoxon_p
from dynsteer_hook.toolsandbox.offline.run_records import read_run

HOSTILE = '<img src=x onerror=alert(1)>|a_b*`x`'


def _runs(tmp_path: Path) -> tuple[Path, Path]:
    """Before: five scenarios; after: one halts, one improves, one crashes at the same score, one stays, one disappears,
    one appears, and a hostile name stays the same."""
    a = write_run(tmp_path / "before", [
        run_entry("drops", 1.0), run_entry("improves", 0.5), run_entry("crashes", 0.0), run_entry("steady", 0.8),
        run_entry("gone", 1.0), run_entry(HOSTILE, 0.6), run_entry("slips", 0.9),
    ])
    b = write_run(tmp_path / "after", [
        run_entry("drops", 0.0, "halted", halted=True, stop_=stop(), fe=first_error()), run_entry("improves", 0.75),
        run_entry("crashes", 0.0, "crashed", crash="ConnectionError: agent unreachable"), run_entry("steady", 0.8),
        run_entry("new", 0.3), run_entry(HOSTILE, 0.6), run_entry("slips", 0.85),
    ])
    return a, b


def _diff(a: Path, b: Path, out: Path, *flags: str) -> int:
    return main(["diff", str(a), str(b), "-o", str(out), *flags])


def test_shared_scenarios_are_paired_by_name_worst_regression_first(tmp_path: Path) -> None:
    """The largest drop first, then smaller drops, then scores that stayed (an outcome that got worse first), then gains."""
    a, b = _runs(tmp_path)
    diff = pair_runs(read_run(a, "RUN_A"), read_run(b, "RUN_B"))
    assert [(p.name, p.change) for p in diff.paired] == [
        ("drops", "worse"), ("slips", "worse"), ("crashes", "same"), (HOSTILE, "same"), ("steady", "same"), ("improves", "better")]
    assert [p.name for p in diff.worse] == ["drops", "slips"]
    assert diff.paired[0].delta == -1.0 and diff.paired[0].after.stop == "fatal_minefield"


def test_the_totals_count_each_change_and_carry_the_paired_wilcoxon_test(tmp_path: Path) -> None:
    """Worse, better and the same are counted over the shared scenarios; the p-value is scipy's test on the same pairs."""
    a, b = _runs(tmp_path)
    doc = diff_document(pair_runs(read_run(a, "RUN_A"), read_run(b, "RUN_B")), tmp_path / "out")
    t = doc["totals"]
    assert (t["shared"], t["worse"], t["better"], t["same"], t["unscored"]) == (6, 2, 1, 3, 0)
    before = [p["before"]["score"] for p in doc["per_scenario"]]
    after = [p["after"]["score"] for p in doc["per_scenario"]]
    assert t["wilcoxon"] == {"pairs": 6, "p_value": pytest.approx(wilcoxon_p(before, after), rel=1e-12)}
    assert t["mean_before"] == pytest.approx(sum(before) / 6) and t["mean_after"] == pytest.approx(sum(after) / 6)
    assert t["outcome_changed"] == 2
    assert (doc["a"]["scenarios"], doc["b"]["halted"], doc["b"]["halt_rate"]) == (7, 1, pytest.approx(1 / 7))
    assert doc["b"]["mean_score"] == pytest.approx((0.0 + 0.75 + 0.8 + 0.3 + 0.6 + 0.85) / 6)  # the crash is not judged


def test_scenarios_one_side_holds_are_listed_apart(tmp_path: Path) -> None:
    """A scenario only before and one only after are listed apart, by name, with their own page."""
    a, b = _runs(tmp_path)
    out = tmp_path / "out"
    doc = diff_document(pair_runs(read_run(a, "RUN_A"), read_run(b, "RUN_B")), out)
    assert [r["name"] for r in doc["only_in_a"]] == ["gone"] and [r["name"] for r in doc["only_in_b"]] == ["new"]
    assert (out / unquote(doc["only_in_b"][0]["href"])).resolve() == (b / "trajectories" / "new" / "dynsteer_report.html").resolve()


def test_no_shared_scenario_is_a_diff_of_one_sided_lists(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two runs of different scenarios: nothing paired, no test, both lists written, exit 0."""
    a = write_run(tmp_path / "a", [run_entry("x", 1.0)])
    b = write_run(tmp_path / "b", [run_entry("y", 0.0)])
    assert _diff(a, b, tmp_path / "out", "--fail-on-regression") == 0
    doc = json.loads((tmp_path / "out" / "diff.json").read_text())
    assert doc["totals"]["shared"] == 0 and doc["totals"]["wilcoxon"]["p_value"] is None
    assert "None: the two runs share no scenario." in (tmp_path / "out" / "diff.md").read_text()


def test_the_command_writes_three_files_whose_links_resolve_from_the_output_folder(tmp_path: Path,
                                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """diff.html, diff.md and diff.json are written; every link (both runs' scenario pages, their run pages) is a relative
    path from the output folder to a file that exists; the console names the regressions; exit 0 without gates."""
    a, b = _runs(tmp_path)
    out = tmp_path / "deep" / "out"
    assert _diff(a, b, out) == 0
    assert sorted(p.name for p in out.iterdir()) == ["diff.html", "diff.json", "diff.md"]
    doc = json.loads((out / "diff.json").read_text())
    hrefs = [doc["a"]["index_href"], doc["b"]["index_href"]]
    hrefs += [p[side]["href"] for p in doc["per_scenario"] for side in ("before", "after") if p[side]["href"]]
    assert len(hrefs) == 2 + 2 * 6 - 1  # the crash wrote no page
    for href in hrefs:
        assert not href.startswith("/") and ":" not in href.split("/")[0] and (out / unquote(href)).is_file(), href
    text = capsys.readouterr().out
    assert "shared 6: 2 worse, 1 better, 3 the same" in text and "worse: drops: 1.000 -> 0.000, completed -> halted" in text


def test_an_interrupted_run_says_how_many_scenarios_did_not_finish(tmp_path: Path) -> None:
    """A run stopped by Ctrl-C lists its finished scenarios; the ones it kept from finishing are counted on its side, and
    the scenarios the other run finished are listed as only there."""
    a = write_run(tmp_path / "a", [run_entry("s1", 1.0), run_entry("s2", 1.0), run_entry("s3", 1.0)])
    b = write_run(tmp_path / "b", [run_entry("s1", 1.0)], extra={"interrupted": {"finished": 1, "in_flight": ["s2"], "not_started": ["s3"]}})
    assert _diff(a, b, tmp_path / "out") == 0
    doc = json.loads((tmp_path / "out" / "diff.json").read_text())
    assert doc["b"]["not_finished"] == 2 and [r["name"] for r in doc["only_in_a"]] == ["s2", "s3"]
    assert "| not finished (interrupted) | 0 | 2 |" in (tmp_path / "out" / "diff.md").read_text()
    assert "2 not finished: interrupted" in (tmp_path / "out" / "diff.html").read_text()


def test_diff_json_holds_one_scenario_per_line(tmp_path: Path) -> None:
    """diff.json is JSON whose per-scenario lists hold one scenario per line (easy to grep, fast to write)."""
    a, b = _runs(tmp_path)
    assert _diff(a, b, tmp_path / "out") == 0
    text = (tmp_path / "out" / "diff.json").read_text()
    doc = json.loads(text)
    lines = text.splitlines()
    for p in doc["per_scenario"]:
        assert sum(1 for line in lines if line.strip().startswith(json.dumps({"name": p["name"]}, ensure_ascii=False)[:-1])) == 1


def test_replays_pair_with_runs_and_link_to_their_reports(tmp_path: Path) -> None:
    """A replay (reports one run folder down) diffs against a run; so does one run's folder inside a replay, whose
    recorded folders start from the replay's own folder."""
    run = write_run(tmp_path / "run", [run_entry("s1", 1.0), run_entry("s2", 0.4)])
    replay = write_replay(tmp_path / "replay", [replay_entry("s1", 0.2, "halted", stop_=stop("low_score")), replay_entry("s2", 0.4)])
    for side in (replay, replay / "agent_x"):
        out = tmp_path / f"out_{side.name}"
        assert _diff(run, side, out) == 0
        doc = json.loads((out / "diff.json").read_text())
        assert doc["b"]["kind"] == "replay" and [p["change"] for p in doc["per_scenario"]] == ["worse", "same"]
        target = (out / unquote(doc["per_scenario"][0]["after"]["href"])).resolve()
        assert target == (replay / "agent_x" / "trajectories" / "s1" / "dynsteer_report.html").resolve()
        assert doc["per_scenario"][0]["after"]["stop"] == "low_score" and doc["b"]["halted"] == 1


def test_names_and_folders_that_are_paths_get_no_link(tmp_path: Path) -> None:
    """A run's scenario named ../x and a replay's folder that climbs out (../../etc) are paired but never linked."""
    a = write_run(tmp_path / "a", [run_entry("../x", 1.0), run_entry("ok", 1.0)])
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "dynsteer_report.html").write_text("not the run's")
    b = write_replay(tmp_path / "b", [replay_entry("ok", 1.0)])
    summary = json.loads((b / "replay_summary.json").read_text())
    summary["per_scenario"].append(replay_entry("../x", 1.0, folder="../../x"))
    (b / "replay_summary.json").write_text(json.dumps(summary))
    doc = diff_document(pair_runs(read_run(a, "RUN_A"), read_run(b, "RUN_B")), tmp_path / "out")
    bad = next(p for p in doc["per_scenario"] if p["name"] == "../x")
    assert bad["before"]["href"] is None and bad["after"]["href"] is None


def test_hostile_names_are_escaped_text_in_the_markdown(tmp_path: Path) -> None:
    """A name with markup, a pipe and Markdown punctuation is one escaped cell of diff.md, and the page carries it only in
    its JSON block, with < and > escaped."""
    a, b = _runs(tmp_path)
    assert _diff(a, b, tmp_path / "out") == 0
    md = (tmp_path / "out" / "diff.md").read_text()
    [line] = [line for line in md.splitlines() if "onerror" in line]
    name = line.split(" | ")[0].removeprefix("| ")
    assert name == "\\<img src=x onerror=alert(1)\\>\\|a_b\\*\\`x\\`" and re.search(r"(?<!\\)[<>|`*]", name) is None
    html = (tmp_path / "out" / "diff.html").read_text()
    assert "<img" not in html and html.count("<script") == 2


@pytest.mark.parametrize(("raw", "reason"), [
    ({"name": "s", "dynsteer": {"outcome": "completed", "score": "abc"}}, "dynsteer.score"),
    ({"name": "s", "categories": 5, "dynsteer": {"outcome": "completed", "score": 1.0}}, "categories"),
    ({"name": "s", "similarity": "abc", "dynsteer": {"outcome": "completed", "score": 1.0}}, "similarity"),
    ({"name": "s", "dynsteer": {"outcome": "completed", "score": 1e400}}, "beyond the range of a float"),
    ({"name": 5, "dynsteer": {"outcome": "completed", "score": 1.0}}, "name"),
    ("not an object", "not an object"),
])
def test_a_damaged_entry_is_skipped_with_its_reason(tmp_path: Path, raw: Any, reason: str) -> None:
    """One damaged entry is listed with its reason (naming the field); the other scenarios are diffed; exit 0."""
    a = write_run(tmp_path / "a", [run_entry("ok", 1.0), run_entry("s", 1.0)])
    b = write_run(tmp_path / "b", [run_entry("ok", 1.0)])
    text = (b / "result_summary.json").read_text().replace('"per_scenario_results": [', '"per_scenario_results": [' + (
        json.dumps(raw).replace("Infinity", "1e400") + ", "), 1)
    (b / "result_summary.json").write_text(text)
    assert _diff(a, b, tmp_path / "out") == 0
    doc = json.loads((tmp_path / "out" / "diff.json").read_text())
    [skipped] = doc["skipped_entries"]
    assert skipped["side"] == "b" and skipped["entry"] == 0 and reason in skipped["reason"]
    assert [p["name"] for p in doc["per_scenario"]] == ["ok"] and [r["name"] for r in doc["only_in_a"]] == ["s"]
    assert "Entries that could not be read (1)" in (tmp_path / "out" / "diff.md").read_text()


def _native(folder: Path) -> Path:
    write_run(folder, [run_entry("s", 1.0)])
    entry = run_entry("s", 1.0)
    entry.pop("dynsteer")
    (folder / "result_summary.json").write_text(json.dumps({"per_scenario_results": [entry]}))
    return folder


def _both(folder: Path) -> Path:
    write_run(folder, [run_entry("s", 1.0)])
    (folder / "replay_summary.json").write_text("{}")
    return folder


def _twice(folder: Path) -> Path:
    return write_run(folder, [run_entry("s", 1.0), run_entry("s", 0.0)])


def _replay_of_two_runs(folder: Path) -> Path:
    return write_replay(folder, [replay_entry("s", 1.0, run="r1"), replay_entry("s", 0.5, run="r2")])


def _summary(text: str) -> Any:
    def make(folder: Path) -> Path:
        write_run(folder, [run_entry("s", 1.0)])
        (folder / "result_summary.json").write_text(text)
        return folder
    return make


def _holder(folder: Path) -> Path:
    write_run(folder / "agent_x", [run_entry("s", 1.0)])
    return folder


def _nowhere(folder: Path) -> Path:
    return folder / "missing"


def _a_file(folder: Path) -> Path:
    folder.mkdir()
    (folder / "f").write_text("x")
    return folder / "f"


BAD_FOLDERS = [
    ("missing", _nowhere, "does not exist"),
    ("a_file", _a_file, "is not a folder"),
    ("no_summary", lambda f: f.mkdir() or f, "holds neither result_summary.json (a run) nor replay_summary.json"),
    ("a_folder_of_runs", _holder, "pass one of them, e.g."),
    ("not_json", _summary("{not json"), "is not valid JSON"),
    ("empty", _summary(""), "is empty"),
    ("no_list", _summary('{"per_scenario_results": 5}'), "has no list per_scenario_results"),
    ("too_deep", _summary("[" * 200 + "]" * 200), "deeper than 100 levels"),
    ("native_run", _native, "was run without dynsteer"),
    ("both_summaries", _both, "holds both"),
    ("listed_twice", _twice, "lists scenario 's' twice"),
    ("replay_of_two_runs", _replay_of_two_runs, "from more than one recorded run"),
]


@pytest.mark.parametrize(("kind", "make", "needle"), BAD_FOLDERS, ids=[b[0] for b in BAD_FOLDERS])
@pytest.mark.parametrize("side", ["RUN_A", "RUN_B"])
def test_a_bad_folder_is_one_sentence_and_nothing_is_written(tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str,
                                                             make: Any, needle: str, side: str) -> None:
    """Either side bad: exit 2, one sentence naming the side and the folder, no traceback, nothing written or changed."""
    good = write_run(tmp_path / "good", [run_entry("s", 1.0)])
    bad = make(tmp_path / "bad")
    before = snapshot(tmp_path)
    a, b = (bad, good) if side == "RUN_A" else (good, bad)
    assert _diff(a, b, tmp_path / "out") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"dynsteer: error: {side} ") and "Traceback" not in err, err
    assert needle in err and str(bad) in err, err
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(("argv", "needle"), [
    (["diff", "-o", "{out}"], "diff needs two folders"),
    (["diff", "{a}", "-o", "{out}"], "1 given"),
    (["diff", "{a}", "{b}", "{a}", "-o", "{out}"], "3 given"),
    (["diff", "{a}", "{b}", "-o", "{a}"], "is the input"),
    (["diff", "{a}", "{b}", "-o", "{a}/sub"], "lies inside the input"),
    (["diff", "{a}", "{b}", "-o", "{file}"], "is a file, not a directory"),
    (["diff", "{a}", "{b}", "-o", "{out}", "--fail-under", "1.5"], "--fail-under 1.5 must be a number from 0 to 1"),
    (["diff", "{a}", "{b}", "-o", "{out}", "--max-halt-rate", "nan"], "--max-halt-rate nan must be a number from 0 to 1"),
])
def test_bad_arguments_are_one_sentence_and_nothing_is_written(tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
                                                               needle: str) -> None:
    """A wrong number of folders, an output folder that is an input, inside one or a file, a gate out of range: exit 2."""
    a, b = _runs(tmp_path)
    (tmp_path / "file").write_text("x")
    before = snapshot(tmp_path)
    words = [w.format(a=a, b=b, out=tmp_path / "out", file=tmp_path / "file") for w in argv]
    assert main(words) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err and "Traceback" not in err, err
    assert snapshot(tmp_path) == before


def test_earlier_files_in_the_output_folder_are_replaced_whole(tmp_path: Path) -> None:
    """A second diff into the same folder replaces the three files and leaves other files and no temporary file."""
    a, b = _runs(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    assert _diff(a, b, out) == 0
    assert _diff(b, a, out) == 0
    assert sorted(os.listdir(out)) == ["diff.html", "diff.json", "diff.md", "notes.txt"]
    assert json.loads((out / "diff.json").read_text())["a"]["path"] == str(b)


GATES = [
    ([], 0, None),
    (["--fail-on-regression"], 3, "2 of 6 shared scenario(s) score lower in RUN_B than in RUN_A, against --fail-on-regression "
                                  "(the worst, 'drops', by 1.000: 1.000 -> 0.000)"),
    (["--fail-under", "0.5"], 0, None),
    (["--fail-under", "0.6"], 3, "the mean dynsteer score 0.550 is 0.050 under --fail-under 0.6"),
    (["--max-halt-rate", "0.2"], 0, None),
    (["--max-halt-rate", "0.1"], 3, "the halt rate 0.143 (1 of 7 scenario(s) halted) is 0.043 over --max-halt-rate 0.1"),
    (["--fail-under", "0.6", "--max-halt-rate", "0.1"], 3, "2 gates failed: the mean dynsteer score 0.550 is 0.050 under"),
]


@pytest.mark.parametrize(("flags", "code", "sentence"), GATES, ids=[" ".join(g[0]) or "none" for g in GATES])
def test_gates_fail_with_status_3_once_everything_is_written(tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str],
                                                             code: int, sentence: str | None) -> None:
    """A failed gate: the three files are written (their verdicts in diff.json), one sentence on stderr says which gate
    failed and by how much, exit 3; a gate met: exit 0 and nothing on stderr."""
    a, b = _runs(tmp_path)
    assert _diff(a, b, tmp_path / "out", *flags) == code
    captured = capsys.readouterr()
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["diff.html", "diff.json", "diff.md"]
    gates = json.loads((tmp_path / "out" / "diff.json").read_text())["gates"]
    assert [g["flag"] for g in gates] == [f for f in flags if f.startswith("--")]
    if sentence is None:
        assert captured.err == "" and all(g["passed"] for g in gates)
        assert ("gates: passed" in captured.out) == bool(flags)
    else:
        assert captured.err.count("\n") == 1 and sentence in captured.err and captured.err.endswith("; every file was written\n")
        assert "FAILED" in captured.out


PROBE = """
import json, sys
from dynsteer_hook.cli import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "loaded": sorted({m.split(".")[0] for m in sys.modules} & set(sys.argv[0].split(",")))}))
"""
HEAVY = ("tool_sandbox", "litellm", "openai", "ray", "scipy", "numpy", "networkx")


def test_diff_imports_no_toolsandbox_no_llm_client_and_no_scipy(tmp_path: Path) -> None:
    """In a fresh interpreter the command ends as usual with none of ToolSandbox, litellm, Ray, scipy, numpy or networkx
    loaded: importing scipy.stats alone would cost 0.6-1 s of the two seconds a 1,032-scenario diff may take."""
    import subprocess
    import sys

    a, b = _runs(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, "-c", PROBE.replace("sys.argv[0]", repr(",".join(HEAVY))), "diff", str(a), str(b), "-o",
                           str(tmp_path / "out")], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"code": 0, "loaded": []}
