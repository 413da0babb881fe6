"""scripts/clean_run_check.py: a clean solver's live run passes under fitting blueprints and fails under a blueprint
that requires an operation the clean solution never needs; every split part is reported; bad arguments are one sentence."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import clean_run_check as crc
import pytest

from dynsteer_hook.files.blueprints import load_blueprint, save_blueprint
from dynsteer_hook.model.blueprint import Edge, Milestone
from dynsteer_hook.toolsandbox.live.preflight import default_blueprint_dir

pytestmark = pytest.mark.toolsandbox

LATEST = "search_message_with_recency_latest"  # dev part
HELD = "cellular_off"  # held-out part


@pytest.mark.slow  # the script builds ToolSandbox's scenarios
def test_clean_runs_pass_under_the_shipped_blueprints(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "check.json"
    assert crc.main(["-s", LATEST, HELD, "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["summary"]["dev"] == {"played": 1, "eligible": 1, "passed": 1, "share": 1.0}
    assert data["summary"]["held-out"] == {"played": 1, "eligible": 1, "passed": 1, "share": 1.0}
    assert all(r["score"] >= 0.9 and not r["unsettled"] for r in data["rows"])
    printed = capsys.readouterr().out
    assert "dev" in printed and "held-out" in printed and "100.0%" in printed


@pytest.mark.slow  # the script builds ToolSandbox's scenarios
def test_a_needless_requirement_fails_the_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The clock required before the answer of a 'latest message' search never settles: the clean run fails."""
    folder = tmp_path / "bps"
    folder.mkdir()
    shutil.copy(default_blueprint_dir() / f"{LATEST}.json", folder)
    bp = load_blueprint(folder / f"{LATEST}.json")
    assert "get_current_timestamp" not in {m.tool for m in bp.milestones}
    message = next(m for m in bp.milestones if m.tool == "@agent_message")
    bad = bp.model_copy(update={"milestones": (Milestone(id="clock", tool="get_current_timestamp"), *bp.milestones),
                                "edges": (*bp.edges, Edge(source="clock", target=message.id))})
    save_blueprint(bad, folder / f"{LATEST}.json")
    out = tmp_path / "check.json"
    assert crc.main(["-s", LATEST, "--blueprints", str(folder), "--json", str(out)]) == 0
    [row] = json.loads(out.read_text())["rows"]
    assert row["eligible"] and not row["passed"] and "clock" in row["unsettled"]
    assert f"{LATEST} (dev): " in capsys.readouterr().out


@pytest.mark.parametrize(("argv", "words"), [
    (["--stride", "0"], "--stride and --limit must be at least 1"),
    (["--blueprints", "nowhere"], "is not a directory"),
    pytest.param(["-s", "no_such_scenario"], "unknown scenario name(s) ['no_such_scenario']",
                 marks=pytest.mark.slow),  # names are checked against ToolSandbox's scenarios, built for it
])
def test_bad_arguments_are_one_sentence(capsys: pytest.CaptureFixture[str], argv: list[str], words: str) -> None:
    assert crc.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert words in err and len(err.splitlines()) == 1
