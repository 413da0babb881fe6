"""Event files given to ``call_clock`` (scripts/known_agents.py): where a step's call sits on the dual clock, and one
clear error for a file that is broken or ends too early. Each case is one row: a reader adds a row to add a case.
"""

from __future__ import annotations

import json
from pathlib import Path

import known_agents as ka
import pytest

from dynsteer_hook.model.errors import DynsteerError, EventFileError

pytestmark = pytest.mark.toolsandbox

META = {"kind": "meta", "format": "dynsteer-events", "version": 1, "task": "t"}
SYS = {"kind": "system_message", "content": "be careful"}
USER = {"kind": "user_message", "content": "do it"}


def say(text: str) -> dict[str, object]:
    return {"kind": "agent_message", "content": text}


def call(cid: str, tool: str = "get_wifi_status") -> dict[str, object]:
    return {"kind": "tool_call", "call_id": cid, "tool": tool, "arguments": {}}


def result(cid: str) -> dict[str, object]:
    return {"kind": "tool_result", "call_id": cid, "result": True}


END = [{"kind": "tool_call", "call_id": "user:1", "tool": "end_conversation", "arguments": {}, "actor": "user"}, result("user:1")]

# (case, event lines, step, call, expected (k, t, call id))
FOUND = [
    ("first call", [META, SYS, USER, call("c1"), result("c1"), say("done"), *END], 0, 0, (3, 1, "c1")),
    ("after a message step", [META, SYS, USER, say("which one?"), USER, call("c2"), result("c2"), say("ok")], 1, 0, (5, 2, "c2")),
    ("second of two parallel calls", [META, SYS, USER, call("a"), call("b"), result("a"), result("b"), say("ok")], 0, 1, (4, 1, "b")),
    ("third step after two single calls", [META, USER, call("x"), result("x"), call("y"), result("y"), call("z"), result("z")], 2, 0, (6, 3, "z")),
    ("halted before the call ran", [META, SYS, USER, call("c1"), result("c1"), call("mine")], 1, 0, (5, 2, "mine")),
    ("a user call's result is not an agent step", [META, USER, *END, call("c1"), result("c1")], 0, 0, (4, 1, "c1")),
]


@pytest.mark.parametrize(("case", "lines", "step", "position", "expected"), FOUND, ids=[r[0] for r in FOUND])
def test_call_clock_places_the_call(tmp_path: Path, case: str, lines: list[dict[str, object]], step: int, position: int,
                                    expected: tuple[int, int, str]) -> None:
    """The call's raw-event index k, its closed-action index t, and its id, for each shape of run."""
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    found = ka.call_clock(path, step, position)
    assert (found.k, found.t, found.call_id) == expected


# (case, file text or None for no file, step, call, error type, words the one-sentence message contains)
BROKEN = [
    ("missing file", None, 0, 0, EventFileError, "does not exist"),
    ("line that is not JSON", json.dumps(META) + "\n{not json\n", 0, 0, EventFileError, "line 2 is not valid JSON"),
    ("unknown event kind", json.dumps({"kind": "telepathy"}) + "\n", 0, 0, EventFileError, "line 1"),
    ("run ends before the step", "".join(json.dumps(x) + "\n" for x in [META, USER, call("c1"), result("c1")]), 3, 0, ka.CallNotPlayedError, "ends after agent step 0"),
    ("step has fewer calls", "".join(json.dumps(x) + "\n" for x in [META, USER, call("c1"), result("c1")]), 0, 1, ka.CallNotPlayedError, "before call 1 of step 0"),
    ("negative step", json.dumps(META) + "\n", -1, 0, ka.CallNotPlayedError, "count from 0"),
    ("empty file", "", 0, 0, ka.CallNotPlayedError, "before call 0 of step 0"),
]


@pytest.mark.parametrize(("case", "text", "step", "position", "error", "words"), BROKEN, ids=[r[0] for r in BROKEN])
def test_broken_or_short_event_file_gets_one_sentence(tmp_path: Path, case: str, text: str | None, step: int, position: int,
                                                      error: type[DynsteerError], words: str) -> None:
    """A broken or too-short events file raises the package's error type with one sentence naming what is wrong."""
    path = tmp_path / "events.jsonl"
    if text is not None:
        path.write_text(text)
    with pytest.raises(error) as info:
        ka.call_clock(path, step, position)
    message = str(info.value)
    assert words in message and "\n" not in message and isinstance(info.value, DynsteerError)
