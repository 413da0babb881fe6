"""Names that come from inputs never become paths: every writer of replay and compare, given scenario, run and agent names
such as ``../../x``, an absolute path, a newline or markup, writes only inside its output folder, each name in a folder of
its own safe name, with the real name kept in the files' contents (``files/names.py``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
from shipped_runs import ShippedRuns
from test_hostile_files import snapshot
from ts_support import BLUEPRINTS, B, script_names

from dynsteer_hook.cli import main
from dynsteer_hook.files.names import is_safe_name
from dynsteer_hook.llm.settings import ModelSettings
from dynsteer_hook.toolsandbox.live.runner import RunOptions, output_directory_for
from dynsteer_hook.toolsandbox.roles.named import LITELLM

pytestmark = pytest.mark.toolsandbox

# Names a recorded scenario can have as a folder of trajectories/ (each is replayed into a folder of its safe name) ...
FOLDER_NAMES = ["line\nbreak", "<img src=x onerror=alert(1)>", "CON", ".hidden", "trailing.", "é ü", "SEND_MESSAGE_WITH_CONTACT_CONTENT_CELLULAR_OFF"]
# ... and names only a summary can hold (never read, never written: skipped with the reason).
PATH_NAMES = ["../../x", "..", "a/b"]


def _hostile_run(source: Path, base: Path, absolute: Path) -> tuple[Path, Path]:
    """A copy of ``source`` in a run folder whose own name is hostile, with hostile scenarios beside the real ones, and a
    blueprint folder holding a blueprint for each scenario that has a trajectory."""
    run = base / "runs" / "run\n<b>x</b>"
    shutil.copytree(source, run)
    blueprints = base / "bp"
    blueprints.mkdir()
    for name in script_names("clean_solver"):
        shutil.copy(BLUEPRINTS / f"{name}.json", blueprints)
    summary = json.loads((run / "result_summary.json").read_text())
    entry = next(r for r in summary["per_scenario_results"] if r["name"] == B)
    for name in FOLDER_NAMES:
        shutil.copytree(run / "trajectories" / B, run / "trajectories" / name)
        (blueprints / f"{name}.json").write_text(json.dumps({**json.loads((BLUEPRINTS / f"{B}.json").read_text()), "task": name}))
        summary["per_scenario_results"].append({**entry, "name": name})
    for name in [*PATH_NAMES, str(absolute)]:
        summary["per_scenario_results"].append({**entry, "name": name})
    (run / "result_summary.json").write_text(json.dumps(summary))
    return run, blueprints


def _outside(before: dict[str, Any], after: dict[str, Any], out: str) -> list[str]:
    return sorted(k for k in set(before) ^ set(after) if not k.startswith(out)) + sorted(
        k for k in set(before) & set(after) if before[k] != after[k] and not k.startswith(out))


def test_replay_writes_hostile_scenario_and_run_names_only_inside_its_output(shipped_runs: ShippedRuns, tmp_path: Path) -> None:
    """Each hostile scenario with a trajectory is replayed into a folder of its safe name, whose page the run page links; a
    name that is a path is skipped with the reason; the run's hostile name is a safe folder too; nothing outside -o changes."""
    absolute = tmp_path / "absolute_target"
    run, blueprints = _hostile_run(shipped_runs("clean_solver", "native").folder, tmp_path, absolute)
    before = snapshot(tmp_path)
    assert main(["replay", str(run), "-o", str(tmp_path / "out"), "--blueprints", str(blueprints), "--no-progress"]) == 0
    assert _outside(before, snapshot(tmp_path), "out") == [] and not absolute.exists()
    summary = json.loads((tmp_path / "out" / "replay_summary.json").read_text())
    done = {r["scenario"]: r for r in summary["per_scenario"]}
    assert set(FOLDER_NAMES) <= set(done) and len(done) == len(script_names("clean_solver")) + len(FOLDER_NAMES)
    assert {s["scenario"] for s in summary["skipped_scenarios"]} == {*PATH_NAMES, str(absolute)}
    folders = [Path(r["folder"]) for r in done.values()]
    assert len(set(folders)) == len(folders) and all(is_safe_name(part) for f in folders for part in f.parts)
    for r in done.values():
        report = json.loads((tmp_path / "out" / r["folder"] / "dynsteer_report.json").read_text())
        assert report["task"] == r["scenario"]  # the real name, in the contents
    [run_dir] = [p for p in (tmp_path / "out").iterdir() if p.is_dir()]
    for page in (tmp_path / "out" / "index.html", run_dir / "index.html"):
        rows = json.loads(page.read_text().split('id="run-data">')[1].split("</script>")[0].replace("\\u003c", "<").replace("\\u003e", ">"))["rows"]
        assert len(rows) == len(done) and all((page.parent / unquote(r["href"])).is_file() for r in rows)


def test_compare_writes_hostile_agent_names_only_inside_its_output(shipped_runs: ShippedRuns, tmp_path: Path) -> None:
    """Agents named ``../../x``, by an absolute path and with a newline and markup each get a folder of their own under
    replays/; every report link of compare.json resolves; nothing outside -o changes."""
    absolute = tmp_path / "absolute_agent"
    runs = tmp_path / "runs"
    for i in range(3):
        shutil.copytree(shipped_runs("clean_solver", "native").folder, runs / f"r{i}")
    names = ["../../x", str(absolute), "a\n<b>gent</b>"]
    before = snapshot(tmp_path)
    argv = ["compare", *(f"{n}={runs / f'r{i}'}" for i, n in enumerate(names)), "-o", str(tmp_path / "out"), "--no-progress",
            "--blueprints", str(BLUEPRINTS)]
    assert main(argv) == 0
    assert _outside(before, snapshot(tmp_path), "out") == [] and not absolute.exists()
    result = json.loads((tmp_path / "out" / "compare.json").read_text())
    assert set(result["agents"]) == set(names)
    assert len({a["folder"] for a in result["agents"].values()}) == 3 and all(is_safe_name(a["folder"]) for a in result["agents"].values())
    hrefs = [t["href"] for r in result["per_scenario"] for a in r["agents"].values() for t in a["trajectories"]]
    assert hrefs and all((tmp_path / "out" / unquote(h)).is_file() for h in hrefs)


@pytest.mark.parametrize("model", ["../../x", "/etc/x", "a\nb", "<b>x</b>", "ollama/llama3:8b", "m" * 300])
def test_a_run_folder_named_after_a_model_is_one_safe_folder_name(model: str, tmp_path: Path) -> None:
    """``dynsteer run``'s folder ``agent_<model>_user_<model>_<timestamp>`` is one safe name below -o, whatever the model string."""
    options = RunOptions(agent=LITELLM, user=LITELLM, agent_model=ModelSettings(model=model), user_model=ModelSettings(model=model))
    folder = output_directory_for(tmp_path, options)
    assert folder.parent == tmp_path and is_safe_name(folder.name) and folder.name.startswith("agent_")


@pytest.mark.parametrize("task", ["../../x", "..", ".hidden", "CON", "a\nb", "a/b"])
def test_a_view_whose_task_cannot_name_a_blueprint_file_is_one_sentence(tmp_path: Path, task: str, capsys: pytest.CaptureFixture[str]) -> None:
    """``compile --view`` writes ``<task>.json``: a task that is no safe name is refused before anything is written."""
    from llm_graphs import VIEW

    (tmp_path / "view.json").write_text(VIEW.model_copy(update={"task": task}).model_dump_json())
    assert main(["compile", "--view", str(tmp_path / "view.json"), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "cannot name a blueprint file" in err and err.count("\n") == 1 and not (tmp_path / "out").exists()
