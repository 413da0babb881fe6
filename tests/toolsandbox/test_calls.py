"""The tool-call gate: resolution by exact lookup, arguments as data, and the middleware's check
of source written by any role (ToolSandbox's own agents included)."""

from __future__ import annotations

import ast
import code
import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
from ts_support import BLUEPRINTS, D

from dynsteer_hook.toolsandbox.calls import decode_arguments, gate, inspect_code, render_call, safe_call_id
from dynsteer_hook.toolsandbox.live import playing
from dynsteer_hook.toolsandbox.live.runner import RunOptions, run_scenario

from tool_sandbox.common.execution_context import RoleType, get_current_context
from tool_sandbox.common.message_conversion import Message, openai_tool_call_to_python_code
from tool_sandbox.roles.base_role import BaseRole

pytestmark = pytest.mark.toolsandbox

OFFERED = {"send_message": "send_message", "messaging_1": "send_message_with_phone_number"}

JSON_VALUES: list[Any] = [
    {},
    {"a": 1, "b": -2.5, "c": True, "d": None, "e": "x"},
    {"quote": "it's \"quoted\"", "newline": "a\nb", "unicode": "Ｆｕｌｌ 名前 \u2028 \x00", "backslash": "\\'"},
    {"nested": {"list": [1, [2, [3, {"k": "v"}]]], "empty": []}},
    {"big": 10**30, "small": 1e-300, "neg": -0.0},
    {"code": "__import__('os').system('x')", "close": "'}) ; print(1) #"},
]


@pytest.mark.parametrize("value", JSON_VALUES)
def test_rendered_arguments_read_back_as_the_same_data(value: dict[str, Any]) -> None:
    """The argument line is a Python literal that ast.literal_eval reads back to the same JSON values."""
    source = render_call("call_1", "send_message", value)
    first = source.splitlines()[0]
    assert first.startswith("call_1_parameters = ")
    assert ast.literal_eval(first.removeprefix("call_1_parameters = ")) == value
    assert len(source.splitlines()) == 3


@pytest.mark.parametrize(
    ("payload", "error"),
    [
        ('{"a": NaN}', "not valid JSON"),
        ('{"a": Infinity}', "not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        ('"text"', "must be a JSON object"),
        (json.dumps(json.dumps({"a": 1})), "JSON string holding an object"),
        ('{"a": ' + "[" * 50 + "]" * 50 + "}", "nested deeper"),
        ("{" * 100_000, "not valid JSON"),
        ('{"a": ' + "9" * 5000 + "}", "not valid JSON"),
        ("x" * 300_000, "longer than"),
    ],
)
def test_payloads_that_are_not_a_json_object_are_refused_with_the_reason(payload: str, error: str) -> None:
    """Every payload that cannot be passed as keyword arguments is refused, with why."""
    decoded = decode_arguments(payload)
    assert decoded.value is None and decoded.error is not None and error in decoded.error


def test_an_object_sent_as_a_json_string_is_still_screened() -> None:
    """A doubly encoded object is refused but keeps the object for minefield screening."""
    decoded = decode_arguments(json.dumps(json.dumps({"phone_number": "+1"})))
    assert decoded.value is None and decoded.screen == {"phone_number": "+1"}


@pytest.mark.parametrize(
    ("name", "resolved"),
    [("messaging_1", "send_message_with_phone_number"), ("send_message", "send_message"), ("send_message_with_phone_number", None),
     ("Send_Message", None), ("send_message ", None), ("(send_message)", None), ("ｓｅｎｄ_ｍｅｓｓａｇｅ", None), ("", None)],
)
def test_names_resolve_by_exact_lookup_only(name: str, resolved: str | None) -> None:
    """Only an offered agent-facing name resolves; anything else is refused and names its suspects."""
    verdict = gate("c1", name, {}, OFFERED)
    assert verdict.execution_name == resolved
    assert (verdict.rejected is None) is (resolved is not None)
    if resolved is None and name.strip():
        assert verdict.suspects, "a spelling of an offered tool is kept for minefield screening"


@pytest.mark.parametrize("call_id", ["call_1", "x = 1 #", "1abc", "a" * 100, "ｃａｌｌ", ""])
def test_call_ids_become_plain_identifiers(call_id: str) -> None:
    """An id that is not a short ASCII identifier is replaced by the fallback."""
    ident = safe_call_id(call_id, "call_fallback")
    assert ident.isidentifier() and ident.isascii() and len(ident) <= 64
    assert ident == (call_id if call_id in ("call_1",) else "call_fallback")


def _run(source: str) -> tuple[str, str]:
    console = code.InteractiveConsole({"send_message": lambda **kw: f"sent {kw}"})
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        console.runcode(code.compile_command(source, symbol="exec"))
    return out.getvalue(), err.getvalue()


@pytest.mark.parametrize("name", ["nope", "__import__('os').system('true') or send_message", "send_message\nprint('x')"])
def test_a_rejection_only_raises_its_error(name: str) -> None:
    """The source of a refused call, run in a console, prints nothing and raises the error the role sees."""
    verdict = gate("c1", name, {"a": "b"}, OFFERED)
    out, err = _run(verdict.code)
    assert out == "" and err.strip().splitlines()[-1].startswith("LookupError: unknown tool")
    assert "offered: messaging_1, send_message" in err


def test_toolsandbox_agents_own_call_source_passes_the_gate_unchanged() -> None:
    """Source made by ToolSandbox's OpenAI agent for an offered tool is exactly what the gate writes."""
    from openai.types.chat.chat_completion_message_tool_call import ChatCompletionMessageToolCall, Function

    tool_call = ChatCompletionMessageToolCall(
        id="call_abc123", type="function", function=Function(name="messaging_1", arguments=json.dumps({"phone_number": "+1", "content": "hi"}))
    )
    source = openai_tool_call_to_python_code(tool_call, set(OFFERED), execution_facing_tool_name="send_message_with_phone_number")
    verdict = inspect_code(source, "messaging_1", "call_abc123", OFFERED, "call_x")
    assert verdict.rejected is None and verdict.code == source and verdict.arguments.value == {"phone_number": "+1", "content": "hi"}


@pytest.mark.parametrize(
    ("source", "name", "call_id"),
    [
        ("import os; os.system('true')", "send_message", "c1"),
        (render_call("c1", "send_message", {}) + "\nimport os", "send_message", "c1"),
        (render_call("c1", "send_message", {}), "send_message", "c2"),  # the id in the source is not the row's
        (render_call("c1", "send_message_with_phone_number", {}), "send_message", "c1"),  # the name run is not the name shown
        (render_call("c1", "send_message_with_phone_number", {}), None, None),  # a real name in a scrambled scenario
        ("c1_parameters = {'a': __import__('os')}\nc1_response = send_message(**c1_parameters)\nprint(repr(c1_response))", "send_message", "c1"),
        ("c1_parameters = {}\nc1_response = LookupError('x')\nraise c1_response\nimport os", "send_message", "c1"),
    ],
)
def test_source_that_is_not_a_plain_offered_call_is_replaced(source: str, name: str | None, call_id: str | None) -> None:
    """Whatever a role wrote, anything but the exact form of an offered call becomes a rejection."""
    verdict = inspect_code(source, name, call_id, OFFERED, "call_9")
    assert verdict.rejected is not None and verdict.code != source
    out, err = _run(verdict.code)
    assert out == "" and "LookupError" in err


def test_the_gates_own_rejections_are_kept_as_written() -> None:
    """Checking a rejection again keeps its message (the middleware re-checks what the roles wrote)."""
    first = gate("c1", "nope", '{"a": 1', OFFERED)
    again = inspect_code(first.code, "nope", "c1", OFFERED, "call_9")
    assert again.code == first.code and again.rejected == first.rejected and again.arguments.raw == '{"a": 1'


class RawCodeAgent(BaseRole):
    """A role that writes its own console source, as a hostile or careless agent implementation might."""

    role_type: RoleType = RoleType.AGENT

    def __init__(self, source: str) -> None:
        self.source = source
        self.turn = 0

    def respond(self, ending_index: int | None = None) -> None:
        messages = self.filter_messages(self.get_messages(ending_index=ending_index))
        if messages[-1].sender == RoleType.SYSTEM:
            return
        self.turn += 1
        if self.turn == 1:
            self.add_messages([Message(sender=self.role_type, recipient=RoleType.EXECUTION_ENVIRONMENT, content=self.source,
                                       openai_tool_call_id="call_raw", openai_function_name="get_cellular_service_status")])
        else:
            self.add_messages([Message(sender=self.role_type, recipient=RoleType.USER, content="Done.")])
        assert get_current_context() is not None


def test_source_from_any_agent_role_is_checked_before_it_runs(scenarios: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The middleware rewrites source from roles it did not build (ToolSandbox's own, a user's) before the
    execution environment runs it: host code never runs and the agent sees a tool error."""
    marker = tmp_path / "host_code_ran"
    agent = RawCodeAgent(f"__import__('os').system('touch {marker}')")
    real = playing._build_roles

    def build(name: str, options: RunOptions) -> Any:
        roles, _ = real(name, options)
        roles[RoleType.AGENT] = agent
        return roles, None

    monkeypatch.setattr(playing, "_build_roles", build)
    script = tmp_path / "s.json"
    script.write_text(json.dumps({D: {"agent": [], "user": []}}))
    r = run_scenario((D, scenarios[D]), options=RunOptions(agent="Scripted", user="Scripted", script=script, blueprint_dir=BLUEPRINTS),
                     output_directory=tmp_path / "out")
    assert r["exception_type"] is None, r["traceback"]
    assert not marker.exists()
    events = [json.loads(x) for x in (tmp_path / "out" / "trajectories" / D / "dynsteer_events.jsonl").read_text().splitlines()]
    call = next(e for e in events if e.get("kind") == "tool_call")
    result = next(e for e in events if e.get("kind") == "tool_result")
    assert call["rejected"] and "not a plain call" in call["rejected"]
    assert result["exception"].startswith("LookupError")
