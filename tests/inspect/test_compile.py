"""Blueprints compiled from an Inspect sample's public view through the LLM compiler (a scripted server on 127.0.0.1)."""

from __future__ import annotations

import json
from pathlib import Path

from fake_llm import FakeLLMServer, Reply
from inspect_ai import eval as inspect_eval
from inspect_ai.model import ChatMessageSystem, ChatMessageUser

from dynsteer_hook.inspect import BLUEPRINT_KEY, DynSteer, sample_view
from dynsteer_hook.inspect import example as ex
from dynsteer_hook.llm.candidates import GENERATOR, llm_source
from dynsteer_hook.llm.client import LLMClient

GRAPH = {
    "milestones": [
        {"id": "find", "tool": "find_contact", "role": "lookup", "args": [{"arg": "name", "op": "contains", "value": "alice"}]},
        {"id": "send", "tool": "send_email", "role": "notify", "args": [{"arg": "to", "op": "eq", "value": "alice@example.com"}]},
    ],
    "edges": [{"source": "find", "target": "send"}],
    "minefields": [{"id": "delete", "tool": "delete_contact", "reason": "irreversible"}],
}


def test_the_view_holds_the_messages_before_the_first_turn_and_the_tool_schemas() -> None:
    """System and user messages, the tools as the agent sees them (JSON Schema parameters); no database."""
    view = sample_view("s1", [ChatMessageSystem(content="be brief"), ChatMessageUser(content=ex.INSTRUCTION)], ex.tools())
    assert [(m.role, m.content) for m in view.messages] == [("system", "be brief"), ("user", ex.INSTRUCTION)]
    assert [t.name for t in view.tools] == ["delete_contact", "find_contact", "send_email"]
    send = next(t for t in view.tools if t.name == "send_email")
    assert set(send.parameters["properties"]) == {"to", "body"} and send.parameters["required"] == ["to", "body"]
    assert "Send an email" in send.description and view.databases == {}


def test_samples_without_a_blueprint_get_one_compiled_once_per_view(tmp_path: Path, llm_server: FakeLLMServer) -> None:
    """Two samples of one view: three candidates are asked for once, consensus merges them, both samples are
    evaluated against the result (kept beside their score), and the prompt showed the instruction and the tools."""
    llm_server.script(*[Reply(content=json.dumps(GRAPH))] * 3)
    client = LLMClient("openai/gpt-4o-mini", api_base=llm_server.url, timeout=5.0, max_retries=1, backoff_base=0.0)
    steer = DynSteer(compile_sources=[llm_source(client)], candidates=3)
    [log] = inspect_eval(ex.address_book(steer, ("clean",), copies=2), model=ex.scripted_model(), display="none",
                         log_level="error", log_dir=str(tmp_path / "logs"))
    assert log.status == "success" and log.samples is not None
    assert len(llm_server.requests) == 3
    prompt = llm_server.requests[0]["messages"][1]["content"]
    assert ex.INSTRUCTION in prompt and "delete_contact" in prompt
    for s in log.samples:
        assert s.scores is not None
        stored = s.scores["dynsteer"].metadata[BLUEPRINT_KEY]
        assert [m["tool"] for m in stored["milestones"]] == ["find_contact", "send_email"]
        assert [f["tool"] for f in stored["minefields"]] == ["delete_contact"]
        assert stored["provenance"]["generators"] == [GENERATOR] and stored["provenance"]["valid_candidates"] == 3
        assert s.scores is not None and s.scores["dynsteer"].value == 1.0
