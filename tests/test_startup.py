"""Commands start fast: what a command does not use it does not import. ``dynsteer --help``, ``validate`` and
``evaluate`` with Tier 1 only load no litellm, no ToolSandbox and no Ray (checked in a fresh interpreter)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from builders import family, settle_events

from dynsteer_hook.files.blueprints import save_blueprint
from dynsteer_hook.files.events import EventLog

HEAVY = ("litellm", "openai", "tool_sandbox", "ray")
PROBE = f"""
import json, sys
from dynsteer_hook.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
print(json.dumps({{"code": code, "loaded": sorted({{m.split(".")[0] for m in sys.modules}} & set({HEAVY!r}))}}))
"""


@pytest.fixture
def inputs(tmp_path: Path) -> dict[str, str]:
    """A valid blueprint and the events of a run that completes it."""
    save_blueprint(family("chain").blueprint(), tmp_path / "bp.json")
    log = EventLog(tmp_path / "events.jsonl")
    for event in settle_events(["a", "b", "c"]):
        log.write(event)
    log.close()
    return {"bp": str(tmp_path / "bp.json"), "events": str(tmp_path / "events.jsonl"), "out": str(tmp_path / "report")}


COMMANDS = {
    "help": ["--help"],
    "validate": ["validate", "{bp}"],
    "evaluate": ["evaluate", "--blueprint", "{bp}", "--events", "{events}", "--report", "{out}"],
    "run help": ["run", "--help"],
}
# networkx costs a third of a second: the commands that must start within 0.5 s do without it.
WITHOUT_NETWORKX = ("help", "validate")


@pytest.mark.parametrize("name", COMMANDS)
def test_a_command_imports_no_llm_client_no_toolsandbox_and_no_ray(name: str, inputs: dict[str, str]) -> None:
    """The command ends as usual (0) with none of litellm, the OpenAI client, ToolSandbox or Ray in sys.modules."""
    argv = [word.format(**inputs) for word in COMMANDS[name]]
    done = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    assert outcome == {"code": 0, "loaded": []}, done.stderr[-2000:]


@pytest.mark.parametrize("name", WITHOUT_NETWORKX)
def test_help_and_validate_import_no_networkx(name: str, inputs: dict[str, str]) -> None:
    """``--help`` and ``validate`` (acyclicity and bindings checked by the pure graph code) end as usual with no networkx."""
    argv = [word.format(**inputs) for word in COMMANDS[name]]
    probe = PROBE.replace(repr(HEAVY), repr(("networkx",)))
    done = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"code": 0, "loaded": []}, done.stderr[-2000:]
