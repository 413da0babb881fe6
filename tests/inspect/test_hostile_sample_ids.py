"""Inspect sample ids never become paths: samples with ids such as ``../../x``, an absolute path, a newline or markup have
their reports written inside the output folder only, live (``DynSteer(report_dir=...)``) and in ``dynsteer replay`` of their
``.eval`` log, each in a folder of its own safe name (``files/names.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from inspect_ai import Task
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.solver import generate, use_tools
from test_hostile_files import snapshot

from dynsteer_hook.cli import main
from dynsteer_hook.files.names import is_safe_name
from dynsteer_hook.inspect import DynSteer
from dynsteer_hook.inspect import example as ex


def hostile_ids(tmp_path: Path) -> list[str]:
    return ["../../x", str(tmp_path / "absolute_target"), "line\nbreak", "<img src=x onerror=alert(1)>", "CLEAN", "clean"]


def _record(tmp_path: Path, ids: list[str], report_dir: Path) -> Path:
    steer = DynSteer(ex.blueprint(), report_dir=report_dir)
    samples = [Sample(id=i, input=ex.INSTRUCTION, target="alice@example.com", metadata={"script": ex.SCRIPTS["clean"]}) for i in ids]
    task = Task(dataset=samples, solver=[use_tools(ex.tools()), generate()], scorer=[ex.emailed_alice(), steer.scorer()],
                approval=steer.approval(), review=steer.review(), name="address_book")
    [log] = inspect_eval(task, model=ex.scripted_model(), display="none", log_level="error", log_dir=str(tmp_path / "logs"))
    assert log.status == "success", log.error
    [path] = (tmp_path / "logs").glob("*.eval")
    return path


def _outside(before: dict[str, Any], after: dict[str, Any], *inside: str) -> list[str]:
    changed = (set(before) ^ set(after)) | {k for k in set(before) & set(after) if before[k] != after[k]}
    return sorted(k for k in changed if not k.startswith(inside))


def test_hostile_sample_ids_write_only_inside_report_dir_and_replay_output(tmp_path: Path) -> None:
    """Live: each sample's reports are in a folder of its own under report_dir. Replayed: each sample of the log is replayed
    into a folder of its own under -o, named in the summary by its real id. Nothing else under the test's folder changes
    but Inspect's own log and data folders."""
    ids = hostile_ids(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    before = snapshot(tmp_path)
    log = _record(tmp_path, ids, work / "live")
    assert _outside(before, snapshot(tmp_path), "work/live", "logs", "xdg") == []
    live = sorted(p.name for p in (work / "live").iterdir())
    assert len(live) == len(ids) and all(is_safe_name(n) for n in live)
    assert all((work / "live" / n / "dynsteer_report.json").is_file() for n in live)

    before = snapshot(tmp_path)
    assert main(["replay", str(log), "-o", str(work / "out"), "--no-progress"]) == 0
    assert _outside(before, snapshot(tmp_path), "work/out", "xdg") == [] and not Path(ids[1]).exists()
    summary = json.loads((work / "out" / "replay_summary.json").read_text())
    assert {r["scenario"] for r in summary["per_scenario"]} == {f"{i}_1" for i in ids} and summary["skipped"] == 0
    folders = [r["folder"] for r in summary["per_scenario"]]
    assert len(set(folders)) == len(ids) and all(is_safe_name(part) for f in folders for part in Path(f).parts)
    assert all((work / "out" / f / "dynsteer_report.json").is_file() for f in folders)


def test_a_hostile_id_never_reads_a_blueprint_outside_the_folder(tmp_path: Path) -> None:
    """A sample id such as ``../secret`` is no file name of --blueprints: the blueprint outside the folder is not read."""
    from dynsteer_hook.inspect.replay import blueprint_files

    (tmp_path / "bp").mkdir()
    assert blueprint_files(tmp_path / "bp", "task", "../secret") == []
    assert blueprint_files(tmp_path / "bp", "..", "s") == [tmp_path / "bp" / "s.json"]
    assert blueprint_files(tmp_path / "bp", "task", "s") == [tmp_path / "bp" / "task" / "s.json", tmp_path / "bp" / "s.json"]
