"""``--otel FILE`` is never an input under another name: a hard link to the event file, or a file a link inside
--blueprints reaches, is the same file by device and inode, refused in one sentence before anything is written."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from builders import family, settle_events

from dynsteer_hook.cli import EXIT_USAGE, main
from dynsteer_hook.files.blueprints import save_blueprint
from dynsteer_hook.model.events import event_to_record

CHAIN = family("chain").blueprint()


def _inputs(tmp_path: Path) -> None:
    save_blueprint(CHAIN, tmp_path / "bp.json")
    (tmp_path / "trace.jsonl").write_text("".join(json.dumps(event_to_record(e)) + "\n" for e in settle_events(["a"])), encoding="utf-8")


@pytest.mark.usefixtures("core_cli")
@pytest.mark.parametrize("target", ["trace.jsonl", "bp.json"])
def test_a_hard_link_to_an_input_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], target: str) -> None:
    """--otel naming a hard link to the event file or the blueprint: one sentence naming the input, the input unchanged."""
    _inputs(tmp_path)
    os.link(tmp_path / target, tmp_path / "otel.jsonl")
    before = (tmp_path / target).read_bytes()
    assert main(["evaluate", "--blueprint", str(tmp_path / "bp.json"), "--events", str(tmp_path / "trace.jsonl"),
                 "--report", str(tmp_path / "out"), "--otel", str(tmp_path / "otel.jsonl")]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert f"is the input file {tmp_path / target}" in err and err.count("\n") == 1 and "Traceback" not in err
    assert (tmp_path / target).read_bytes() == before and not (tmp_path / "out").exists()


@pytest.mark.toolsandbox
def test_a_file_reached_through_a_link_in_the_blueprints_folder_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A blueprint folder whose <scenario>.json is a link to a file elsewhere: --otel naming that file is refused for
    replay (whose --blueprints is an input like the recordings), and the file keeps its bytes."""
    _inputs(tmp_path)
    (tmp_path / "blueprints").mkdir()
    (tmp_path / "blueprints" / "cellular_off.json").symlink_to(tmp_path / "bp.json")
    (tmp_path / "run" / "trajectories").mkdir(parents=True)
    before = (tmp_path / "bp.json").read_bytes()
    assert main(["replay", str(tmp_path / "run"), "-o", str(tmp_path / "out"), "--blueprints", str(tmp_path / "blueprints"),
                 "--otel", str(tmp_path / "bp.json"), "--no-progress"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "--otel" in err and "is the input file" in err and err.count("\n") == 1
    assert (tmp_path / "bp.json").read_bytes() == before and not (tmp_path / "out").exists()


@pytest.mark.usefixtures("core_cli")
def test_a_new_file_or_another_file_is_taken(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A file that is no input (a copy of one, not a link) receives the telemetry."""
    _inputs(tmp_path)
    (tmp_path / "copy.jsonl").write_bytes((tmp_path / "trace.jsonl").read_bytes())
    assert main(["evaluate", "--blueprint", str(tmp_path / "bp.json"), "--events", str(tmp_path / "trace.jsonl"),
                 "--report", str(tmp_path / "out"), "--otel", str(tmp_path / "copy.jsonl")]) == 0
    assert len((tmp_path / "copy.jsonl").read_text().splitlines()) > len((tmp_path / "trace.jsonl").read_text().splitlines())
    capsys.readouterr()
