"""A recorded run whose weak first stage escalates the next one to the LLM tiers, and judge answers for it."""

from __future__ import annotations

import json
from pathlib import Path

from builders import family
from fake_llm import Reply

from dynsteer_hook.model.events import ToolCall, ToolResult, UserMessage, event_to_record


def chain_files(tmp_path: Path) -> tuple[Path, Path]:
    """A chain blueprint and an event file whose first stage fails three times, then every milestone settles."""
    bp = tmp_path / "bp.json"
    bp.write_text(family("chain").blueprint().to_json())
    events = [UserMessage("go")]
    for i, bad in enumerate(("zzz", "yyy", "www"), start=1):  # a weak first stage escalates the next (eq. 9)
        events += [ToolCall(f"f{i}", "op_a", {"x": bad}), ToolResult(f"f{i}", None, "ValueError: no")]
    for i, node in enumerate("abc", start=1):
        events += [ToolCall(f"c{i}", f"op_{node}", {"x": node}), ToolResult(f"c{i}", "ok")]
    trace = tmp_path / "trace.jsonl"
    trace.write_text("".join(json.dumps(event_to_record(e)) + "\n" for e in events))
    return bp, trace


def standard_reply(score: float) -> Reply:
    """A Tier 2 answer giving every dimension ``score``."""
    dims = {d: {"score": score, "confidence": 0.9, "rationale": "t=4", "cited_steps": [4]}
            for d in ("correctness", "efficiency", "safety", "tool_compliance")}
    return Reply(content=json.dumps({"stage_satisfied": True, "dimensions": dims}))
