"""docs/ci.md's GitHub Actions job stays true: it is one workflow YAML can read, its dynsteer commands parse with the
command's own parser and gate on the result, and (slow) its sweep, played as written, passes its gates."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from dynsteer_hook.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "ci.md"


def _workflow() -> dict[Any, Any]:
    text = PAGE.read_text(encoding="utf-8")
    [block] = [part.split("\n```", 1)[0] for part in text.split("```yaml\n")[1:]]
    data = yaml.safe_load(block)
    assert isinstance(data, dict)
    return data


def _commands() -> list[list[str]]:
    """Every dynsteer command the job's steps run, as words."""
    found = []
    for job in _workflow()["jobs"].values():
        for step in job["steps"]:
            for part in str(step.get("run", "")).split("&&"):
                words = shlex.split(part)
                if words and words[0] == "dynsteer":
                    found.append(words)
    return found


def test_the_page_holds_one_workflow_of_about_ten_lines() -> None:
    """One ``yaml`` block: a workflow run on pull requests (YAML 1.1 reads the key ``on`` as true) with one job that checks
    the code out, sets dynsteer up and runs it, in about ten lines."""
    text = PAGE.read_text(encoding="utf-8")
    assert text.count("```yaml\n") == 1
    data = _workflow()
    assert data.get("on", data.get(True)) == ["pull_request"]
    [job] = data["jobs"].values()
    assert job["runs-on"] == "ubuntu-latest"
    uses = [s.get("uses", "") for s in job["steps"]]
    assert uses[0].startswith("actions/checkout@") and any(u.startswith("actions/upload-artifact@") for u in uses)
    block = text.split("```yaml\n")[1].split("\n```")[0]
    assert 8 <= len(block.splitlines()) <= 15


def test_the_sweep_is_scripted_and_gated_and_parses_with_dynsteers_own_parser() -> None:
    """The job runs a scripted sweep (no API key) with both gates; every dynsteer command in it parses as written."""
    commands = _commands()
    assert commands, "the job runs no dynsteer command"
    for words in commands:
        sub = next(w for w in words[1:] if not w.startswith("-"))
        try:
            args = build_parser(sub).parse_args(words[1:])
        except SystemExit as exc:
            pytest.fail(f"docs/ci.md: {shlex.join(words)!r} does not parse (exit {exc.code})")
        if sub == "run":
            assert (args.agent, args.user, str(args.script)) == ("Scripted", "Scripted", "clean_solver")
            assert args.scenarios and args.fail_under is not None and args.max_halt_rate is not None
    assert any(w[1] == "run" for w in commands)


@pytest.mark.toolsandbox
def test_the_sweep_of_the_job_passes_its_gates(tmp_path: Path) -> None:
    """The job's sweep, played as written from another directory (its -o there), meets its gates: exit 0, both verdicts
    passed, the run page written."""
    [words] = [w for w in _commands() if w[1] == "run"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "dynsteer_hook.cli", *words[1:]], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "gates: passed: the mean dynsteer score" in done.stdout and "; passed: the halt rate 0.000" in done.stdout
    out = words[words.index("-o") + 1]
    [run] = list((tmp_path / out).iterdir())
    assert (run / "index.html").is_file() and (run / "result_summary.json").is_file()
