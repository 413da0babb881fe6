"""The command line of scripts/known_agents.py: the coverage table and the files it writes, and one sentence with
exit status 2 for bad arguments, with nothing already written lost. Each bad input is one row.
"""

from __future__ import annotations

import json
from pathlib import Path

import known_agents as ka
import pytest

from dynsteer_hook.toolsandbox.roles.scripted import load_script

pytestmark = pytest.mark.toolsandbox

OLD = '{"earlier": "run"}'

# (case, arguments with {out} for the output path, whether {out} is an existing file (else a folder holding clean.json), words)
BAD = [
    ("unknown scenario", ["-s", "no_such_scenario", "--out", "{out}"], False, "unknown scenario name(s) ['no_such_scenario']"),
    ("output path is a file", ["-s", "wifi_off", "--out", "{out}"], True, "is a file; pass a directory"),
    ("one unknown among known", ["-s", "wifi_off", "nope", "--out", "{out}"], False, "unknown scenario name(s) ['nope']"),
]
# Names are checked against ToolSandbox's scenarios, which the script builds for it (seconds): those cases are slow.
CASES = [pytest.param(*r, id=r[0], marks=[pytest.mark.slow] if "unknown" in r[0] else []) for r in BAD]


@pytest.mark.parametrize(("case", "argv", "out_is_file", "words"), CASES)
def test_bad_arguments_get_one_sentence_and_status_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str,
                                                     argv: list[str], out_is_file: bool, words: str) -> None:
    """Bad arguments exit with status 2 and one sentence on stderr, and earlier output is left as it was."""
    out = tmp_path / "out"
    kept = out if out_is_file else out / "clean.json"
    kept.parent.mkdir(parents=True, exist_ok=True)
    kept.write_text(OLD)
    assert ka.main([a.replace("{out}", str(out)) for a in argv]) == 2
    err = capsys.readouterr().err.strip()
    assert words in err and len(err.splitlines()) == 1 and "Traceback" not in err
    assert kept.read_text() == OLD


def test_cli_prints_coverage_and_writes_playable_scripts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The table counts verified solvers per category; the files hold Scripted-role scripts and each variant's recorded fault."""
    names = ["wifi_off", "find_days_till_holiday_wifi_off_3_distraction_tools_tool_name_scrambled"]
    assert ka.main(["-s", *names, "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert any(line.split() == ["ALL", "2", "2", "100.0%"] for line in printed.splitlines())
    assert set(load_script(tmp_path / "clean.json")) == set(names)
    clean = json.loads((tmp_path / "clean.json").read_text())
    assert clean["_clock_sensitive"] == [names[1]]
    faults = json.loads((tmp_path / "faults.json").read_text())
    assert set(faults) == set(ka.FAULT_KINDS)
    for kind in ka.FAULT_KINDS:
        written = load_script(tmp_path / f"{kind}.json") if any("step" in f for f in faults[kind].values()) else {}
        for name in names:
            record = faults[kind][name]
            assert ("step" in record) == (name in written), (kind, name, record)
            if "step" in record:
                step = written[name].agent[record["step"]]
                assert step.tool_calls is not None and len(step.tool_calls) > record["call"]
            else:
                assert record["skipped"].startswith(f"no {kind} variant: ")
