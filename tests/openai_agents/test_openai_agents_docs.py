"""docs/openai-agents.md's example runs as written and prints what the page says it prints."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest
from needs import need_module

need_module("agents", "the OpenAI Agents SDK (the openai-agents extra) is not installed (pip install -e '.[openai-agents]')")

from dynsteer_hook.openai_agents import example as ex

PAGE = Path(__file__).resolve().parents[2] / "docs" / "openai-agents.md"


def _example() -> tuple[str, list[str]]:
    """The page's first Python block, and the lines its comments say it prints (without their remarks in parentheses)."""
    code = re.search(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)
    assert code is not None
    printed = [re.sub(r"\s*\(.*\)$", "", line[2:]).strip() for line in code.group(1).splitlines() if line.startswith("# ")]
    return code.group(1), printed


def test_the_example_prints_what_the_page_says(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Clean completes, fatal trips the input guardrail before delete_contact runs, loop trips the output guardrail."""
    code, printed = _example()
    assert len([line for line in code.splitlines() if line.strip() and not line.startswith("#")]) <= 10
    monkeypatch.chdir(tmp_path)
    ex.SENT.clear()
    ex.DELETED.clear()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(PAGE), "exec"), {})
    assert out.getvalue().splitlines() == printed
    assert ex.DELETED == []
    assert all((tmp_path / "reports" / name / "dynsteer_report.json").exists() for name in ("clean", "fatal", "loop"))
