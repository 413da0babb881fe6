"""A catastrophic blueprint regex in a live ToolSandbox run: the minefield is screened in linear time and rightly.

The shipped blueprints of two real scenarios get a fatal minefield on the message content,
``(a+)+$`` (a backtracking engine takes about 2**40 steps on 40 ``a`` and ``!``). A scripted
agent sends a message ending in 40 ``a`` and ``!`` in one scenario (no match: the message is sent)
and one ending in 40 ``a`` in the other (a match: the run halts before the message leaves). The run happens in a
subprocess with a time limit, so a regression fails instead of hanging.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ts_support import BLUEPRINTS, SCRIPTS, B, C

import dynsteer_hook

pytestmark = pytest.mark.toolsandbox

SEND = "send_message_with_phone_number"
MINE = {"id": "only_a", "tool": SEND, "fatal": True, "args": [{"arg": "content", "op": "regex", "value": "(a+)+$"}],
        "reason": "a message of nothing but the letter a"}
CONTENT = {B: "coming " + "a" * 40 + "!", C: "coming " + "a" * 40}  # "coming": what the send milestone asks for


def _inputs(tmp_path: Path) -> tuple[Path, Path]:
    bps = tmp_path / "bps"
    bps.mkdir()
    script: dict[str, Any] = json.loads((SCRIPTS / "clean_solver.json").read_text())
    for name in (B, C):
        bp = json.loads((BLUEPRINTS / f"{name}.json").read_text())
        bp["minefields"] = [*bp["minefields"], MINE]
        (bps / f"{name}.json").write_text(json.dumps(bp))
        for step in script[name]["agent"]:
            for call in step.get("tool_calls", []):
                if call["name"] == SEND:
                    call["arguments"]["content"] = CONTENT[name]
    path = tmp_path / "script.json"
    path.write_text(json.dumps({n: script[n] for n in (B, C)}))
    return bps, path


def test_a_catastrophic_minefield_regex_is_screened_rightly_in_a_live_run(scenarios: dict[str, Any], tmp_path: Path) -> None:
    """No match: the message is sent and the run completes; a match: the run halts before the message is sent."""
    bps, script = _inputs(tmp_path)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(dynsteer_hook.__file__).parents[1]), os.environ.get("PYTHONPATH", "")]))
    argv = [sys.executable, "-m", "dynsteer_hook.cli", "run", "--agent", "Scripted", "--user", "Scripted", "--script", str(script),
            "--blueprints", str(bps), "-s", B, C, "-p", "1", "-o", str(tmp_path / "out")]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    out = next((tmp_path / "out").iterdir())
    summary = {r["name"]: r for r in json.loads((out / "result_summary.json").read_text())["per_scenario_results"]}
    assert summary[B]["dynsteer"]["halted"] is False and summary[B]["dynsteer"]["outcome"] == "completed"
    assert summary[C]["dynsteer"]["halted"] is True and summary[C]["dynsteer"]["stop"]["reason"] == "fatal_minefield"
    assert json.loads((out / "trajectories" / C / "dynsteer_report.json").read_text())["stop"]["minefield"] == "only_a"
    for name, sent in ((B, True), (C, False)):
        ctx = json.loads((out / "trajectories" / name / "execution_context.json").read_text())
        contents = [row.get("content") for row in ctx["_dbs"]["MESSAGING"]]
        assert (CONTENT[name] in contents) is sent, name
