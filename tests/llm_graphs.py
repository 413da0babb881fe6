"""A small public view and candidate-graph answers (good and faulty) for the LLM tests."""

from __future__ import annotations

import json
from typing import Any

from dynsteer_hook.model.blueprint import ToolSpec
from dynsteer_hook.model.task_view import PublicMessage, TaskView


def _tool(tool_name: str, /, **props: str) -> ToolSpec:
    params: dict[str, Any] = {"type": "object", "properties": {a: {"type": k} for a, k in props.items()}, "required": list(props)}
    return ToolSpec(name=tool_name, description=f"the {tool_name} tool", parameters=params)


VIEW = TaskView(
    task="message_alice",
    messages=(
        PublicMessage(role="system", content="Ask for clarification if a request is ambiguous."),
        PublicMessage(role="user", content="Send 'running late' to Alice."),
    ),
    tools=(
        _tool("search_contacts", name="string"),
        _tool("send_message", phone_number="string", content="string"),
    ),
    databases={"CONTACT": {"name": "String", "phone_number": "String"}},
)

GOOD = {
    "milestones": [
        {"id": "find", "tool": "search_contacts", "role": "by_name", "args": [{"arg": "name", "op": "contains", "value": "Alice"}]},
        {"id": "send", "tool": "send_message", "args": [{"arg": "content", "op": "contains", "value": "running late"}]},
    ],
    "edges": [{"source": "find", "target": "send"}],
    "bindings": [{"name": "phone", "producer": "find", "consumer": "send", "arg": "phone_number", "path": "phone_number"}],
    "minefields": [],
}


def good_graph() -> str:
    """A valid candidate graph for VIEW."""
    return json.dumps(GOOD)


def hallucinated_graph() -> str:
    """A graph naming a tool VIEW does not have."""
    bad = json.loads(good_graph())
    bad["milestones"][1]["tool"] = "delete_all_contacts"
    bad["milestones"][1]["args"] = []
    bad["bindings"] = []
    return json.dumps(bad)


def cyclic_graph() -> str:
    """A graph whose edges form a cycle."""
    bad = json.loads(good_graph())
    bad["edges"].append({"source": "send", "target": "find"})
    bad["bindings"] = []
    return json.dumps(bad)


MALFORMED = '{"milestones": [{"id": "find", "tool": "search_contacts"'
