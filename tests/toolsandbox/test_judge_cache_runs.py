"""The judge cache on `dynsteer replay` (two worker processes sharing the folder) and `dynsteer run`: the same
command again asks the judge nothing and reaches the same decisions. The judge is the rules-based stand-in
server on 127.0.0.1 (scripts/rules_judge.py), which answers from the stage evidence."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rules_judge import RulesJudgeServer
from shipped_runs import ShippedRuns
from ts_support import SCRIPTS, A

from dynsteer_hook.cli import main

pytestmark = [pytest.mark.toolsandbox, pytest.mark.slow]


@pytest.fixture
def judge() -> Iterator[RulesJudgeServer]:
    server = RulesJudgeServer().start()
    try:
        yield server
    finally:
        server.stop()


def _flags(server: RulesJudgeServer, cache: Path) -> list[str]:
    # --min-tier 3: every settled stage asks the judge (its four dimensions in parallel threads)
    return ["--judge-model", "openai/rules-judge", "--judge-api-base", server.url, "--judge-max-retries", "0", "--judge-cache", str(cache),
            "--min-tier", "3"]


def _stages(folder: Path, depth: int = 4) -> dict[str, Any]:
    """Per report (the last ``depth`` parts of its path): the stages' tiers, scores and rationales, and the stop."""
    out = {}
    for p in sorted(folder.rglob("dynsteer_report.json")):
        r = json.loads(p.read_text())
        out["/".join(p.relative_to(folder).parts[-depth:])] = ([(s["milestone"], s["t"], s["tiers"], s["scores"], s["rationale"]) for s in r["stages"]],
                                                         r["stop"])
    return out


def test_a_replay_run_again_with_its_cache_asks_no_judge(shipped_runs: ShippedRuns, judge: RulesJudgeServer, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    runs = tmp_path / "runs"
    for script in ("clean_solver", "malformed_arguments"):
        shutil.copytree(shipped_runs(script, "native").folder, runs / script)
    cache = tmp_path / "cache"
    assert main(["replay", str(runs), "-o", str(tmp_path / "one"), "--no-progress", "-p", "2", *_flags(judge, cache)]) == 0
    asked = judge.requests
    first = capsys.readouterr().out
    assert asked > 0 and f" answers reused, {asked} asked and stored" in first  # stages alike in two runs share an answer
    served = json.loads((tmp_path / "one" / "replay_summary.json").read_text())["judge_cache"]
    # Again in this process: the answers two worker processes stored serve a later run of any engine.
    assert main(["replay", str(runs), "-o", str(tmp_path / "two"), "--no-progress", "-p", "1", *_flags(judge, cache)]) == 0
    assert judge.requests == asked
    assert f"{served['hits'] + asked} answers reused, 0 asked and stored" in capsys.readouterr().out
    one, two = _stages(tmp_path / "one"), _stages(tmp_path / "two")
    assert one == two
    summary = json.loads((tmp_path / "two" / "replay_summary.json").read_text())
    assert summary["judge_cache"] == {"hits": served["hits"] + asked, "misses": 0, "corrupt": 0, "unwritable": 0}


def test_dynsteer_run_again_with_its_cache_asks_no_judge(judge: RulesJudgeServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cache = tmp_path / "cache"
    argv = ["run", "--agent", "Scripted", "--user", "Scripted", "--script", str(SCRIPTS / "clean_solver.json"), "-s", A, "-p", "1"]
    assert main([*argv, "-o", str(tmp_path / "one"), *_flags(judge, cache)]) == 0
    asked = judge.requests
    assert asked > 0
    assert main([*argv, "-o", str(tmp_path / "two"), *_flags(judge, cache)]) == 0
    assert judge.requests == asked
    assert "answers reused, 0 asked and stored" in capsys.readouterr().out
    assert _stages(tmp_path / "one", 3) == _stages(tmp_path / "two", 3)  # without the run's timestamped folder
    (summary,) = (tmp_path / "two").glob("*/dynsteer_summary.json")
    assert json.loads(summary.read_text())["judge_cache"]["misses"] == 0
