"""Blueprints for framework agents: from a file, or compiled from the agent's tools and first message; a mismatch is one sentence."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_session import address_book

from dynsteer_hook.files.blueprints import save_blueprint
from dynsteer_hook.model.blueprint import ToolSpec
from dynsteer_hook.model.errors import BlueprintError
from dynsteer_hook.session import UnknownToolError, agent_view, blueprint_file, check_tools, compile_agent_view


def _tool(name: str, description: str, *args: str) -> ToolSpec:
    return ToolSpec(name=name, description=description,
                    parameters={"type": "object", "properties": {a: {"type": "string"} for a in args}, "required": list(args)})


MESSAGING = [
    _tool("send_message_with_phone_number", "Send a message to a recipient's phone number.", "phone_number", "content"),
    _tool("search_contacts", "Search for a contact by name. Returns the contact's phone number.", "name"),
]


def test_the_view_holds_the_system_prompt_the_first_message_and_the_tools_sorted() -> None:
    """The public view is what the agent is shown before it acts, tools sorted by name."""
    view = agent_view("text_alice", MESSAGING, "Text Alice that the meeting moved.", system="Be brief.")
    assert [(m.role, m.content) for m in view.messages] == [("system", "Be brief."), ("user", "Text Alice that the meeting moved.")]
    assert [t.name for t in view.tools] == ["search_contacts", "send_message_with_phone_number"]
    assert view.databases == {}


def test_tools_on_named_tables_compile_to_a_plan_with_the_generator() -> None:
    """With the tables the tools work on, the generator plans the lookup before the message."""
    view = agent_view("text_alice", MESSAGING, "Send a message to Alice saying the meeting moved to 3pm.",
                      databases={"CONTACT": {"person_id": "str", "name": "str", "phone_number": "str"}})
    bp = compile_agent_view(view)
    assert [m.tool for m in bp.milestones][:2] == ["search_contacts", "send_message_with_phone_number"]
    assert bp.task == "text_alice" and {t.name for t in bp.catalog} == {t.name for t in MESSAGING}


def test_an_agent_without_tools_is_one_sentence() -> None:
    """No tools, nothing to compile: said in one sentence."""
    with pytest.raises(BlueprintError, match="has no tools"):
        compile_agent_view(agent_view("empty", [], "hello"))


@pytest.mark.parametrize("content, message", [
    (None, "does not exist"),
    ("{not json", "blueprint file"),
    ('{"schema_version": 1, "task": "t", "milestones": []}', "is not valid"),
])
def test_a_missing_or_invalid_blueprint_file_is_one_sentence(tmp_path: Path, content: str | None, message: str) -> None:
    """A blueprint file that is missing, malformed or invalid is a ``BlueprintError`` naming the file."""
    path = tmp_path / "bp.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(BlueprintError, match=message) as caught:
        blueprint_file(path)
    assert str(path) in str(caught.value) and "\n" not in str(caught.value)


def test_a_blueprint_file_reads_back(tmp_path: Path) -> None:
    """A saved blueprint loads as it was."""
    save_blueprint(address_book(), tmp_path / "bp.json")
    assert blueprint_file(tmp_path / "bp.json") == address_book()


def test_a_tool_the_blueprint_does_not_know_is_one_sentence() -> None:
    """An agent tool missing from the blueprint's catalog names the tool and the fix."""
    with pytest.raises(UnknownToolError, match=r"blueprint file x.json does not know the agent's tool 'wire_money'.*compile a blueprint"):
        check_tools(address_book(), ["find_contact", "send_email", "delete_contact", "wire_money"], source="blueprint file x.json")


def test_a_milestone_tool_the_agent_lacks_is_one_sentence() -> None:
    """A blueprint needing a tool the agent is not given names the tool and its milestone."""
    with pytest.raises(UnknownToolError, match=r"needs the tool 'send_email' for milestone 'email_alice'"):
        check_tools(address_book(), ["find_contact", "delete_contact"], source="the blueprint")


def test_the_agents_own_tools_pass() -> None:
    """The tools the blueprint was made for pass, with or without the minefield's tool."""
    check_tools(address_book(), ["find_contact", "send_email", "delete_contact"], source="the blueprint")
    check_tools(address_book(), ["find_contact", "send_email"], source="the blueprint")
