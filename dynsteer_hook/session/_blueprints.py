"""Blueprints for agents built in a framework: from a blueprint file, or from the agent's tools and first message.

An agent built with LangChain or the OpenAI Agents SDK has no ToolSandbox scenario to compile,
but it has what a blueprint compiler may see (the public view, paper eq. 1): the messages
addressed to the agent before it first acts and the tools as it receives them. Each adapter turns
its framework's tool objects into ``ToolSpec``s; ``agent_view`` builds the view from them and
``compile_agent_view`` compiles it with the deterministic generator (no model, no key). The same
view written to a file compiles with ``dynsteer compile --view FILE`` (and with a model there).

The generator reads what a tool does from its name, description and arguments, and which
records it touches from the view's database headers: an agent whose tools work on tables gets a
fuller plan when ``databases`` names their columns. Whatever the blueprint's source, ``check_tools``
refuses one that does not know the agent's tools, before the first event, in one sentence.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from dynsteer_hook.compile.compiler import DEFAULT_CANDIDATES, compile_generator_only
from dynsteer_hook.files.blueprints import load_valid_blueprint
from dynsteer_hook.model.blueprint import AGENT_MESSAGE_TOOL, Blueprint, ToolSpec
from dynsteer_hook.model.errors import BlueprintError, ConsensusError
from dynsteer_hook.model.task_view import PublicMessage, TaskView
from dynsteer_hook.model.untrusted import clip

NAME_CHARS = 80
"""Characters of a tool's name quoted in a message (the agent's tools are the user's, but their names may be long)."""


class UnknownToolError(BlueprintError):
    """The blueprint does not know a tool the agent is given, or needs one the agent lacks."""


def _name(text: str) -> str:
    return repr(clip(text, NAME_CHARS))


def blueprint_file(path: str | Path) -> Blueprint:
    """The blueprint in a file (``dynsteer compile --view`` writes them), checked as the evaluator will check it.

    Raises:
        BlueprintError: The file is missing, unreadable, malformed or not valid (one sentence naming it and the fix).
    """
    return load_valid_blueprint(path)


def agent_view(task: str, tools: Iterable[ToolSpec], first_message: str, *, system: str | None = None,
               databases: Mapping[str, Mapping[str, str]] | None = None) -> TaskView:
    """The public view of an agent's task: its system prompt and first user message, its tools sorted by name.

    Args:
        task: The task's name (it names the blueprint; the compiler's prompt leaves it out).
        tools: The tools as the agent receives them.
        first_message: The user's first message.
        system: The agent's system prompt, when it has one.
        databases: The tables the tools work on, as table -> column -> type, when there are any.
    """
    messages = ((PublicMessage(role="system", content=system),) if system else ()) + (PublicMessage(role="user", content=first_message),)
    specs = tuple(sorted(tools, key=lambda s: s.name))
    return TaskView(task=task, messages=messages, tools=specs, databases={t: dict(c) for t, c in (databases or {}).items()})


def compile_agent_view(view: TaskView, candidates: int = DEFAULT_CANDIDATES) -> Blueprint:
    """The blueprint of an agent's view from the deterministic generator (no language model, no API key).

    Raises:
        BlueprintError: No candidate graph passed validation (one sentence with the fix).
    """
    if not view.tools:
        raise BlueprintError(f"the agent of {view.task!r} has no tools, so there is nothing to compile a blueprint from; give the agent its tools")
    try:
        return compile_generator_only(view, candidates)
    except ConsensusError as exc:
        raise BlueprintError(f"no blueprint could be compiled from the tools and first message of {view.task!r} ({exc}); write the view "
                             "to a file and compile it with dynsteer compile --view (with a model), or pass a blueprint file") from None


def check_tools(blueprint: Blueprint, offered: Iterable[str], *, source: str) -> None:
    """Refuse a blueprint made for other tools: one the agent is given that it does not know, or one it needs that the agent lacks.

    A blueprint without a catalog knows no tools, so only its milestones are checked.

    Args:
        blueprint: The blueprint.
        offered: The names of the tools the agent is given.
        source: Where the blueprint came from, for the message (``blueprint file X``).

    Raises:
        UnknownToolError: One sentence naming the tool, the blueprint and the fix.
    """
    names = set(offered)
    known = {t.name for t in blueprint.catalog}
    fix = "compile a blueprint from this agent's tools (dynsteer compile --view, or no blueprint for the adapter to compile one)"
    if known:
        unknown = sorted(names - known)
        if unknown:
            raise UnknownToolError(f"{source} does not know the agent's tool {_name(unknown[0])} (it knows "
                                   f"{', '.join(sorted(known))[:400]}); {fix}")
    for m in blueprint.milestones:
        if m.tool != AGENT_MESSAGE_TOOL and m.tool not in names:
            raise UnknownToolError(f"{source} needs the tool {_name(m.tool)} for milestone {_name(m.id)}, which the agent is not given "
                                   f"(it has {', '.join(sorted(names))[:400] or 'no tools'}); {fix}")
