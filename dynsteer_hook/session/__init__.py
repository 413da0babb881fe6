"""One evaluated rollout behind one object, for every agent loop: ``Session``.

A loop (an agent framework's hooks, a replay, an event file) feeds a ``Session`` the rollout's raw
events and gets a ``Verdict`` for each: continue, or the halt with its stop record, for a fatal call
before it runs. ``finish`` returns the report and writes its files. Observers (``RolloutHook``
subclasses) see every lifecycle point, each isolated: one that raises is dropped and named in the
report's notes. Blueprints for framework agents come from a file (``blueprint_file``) or from the
agent's tools and first message (``agent_view``, ``compile_agent_view``). No agent framework is
imported here; the adapters (``dynsteer_hook.langchain``, ``dynsteer_hook.openai_agents``) build on it.
"""

from __future__ import annotations

from dynsteer_hook.session._blueprints import UnknownToolError, agent_view, blueprint_file, check_tools, compile_agent_view
from dynsteer_hook.session._lifecycle import ActionClosed, EventSeen, Halted, RolloutEnd, RolloutHook, RolloutStart, TurnEnded
from dynsteer_hook.session._observers import Observer, ObserverGroup
from dynsteer_hook.session._session import CONTINUE, EVENTS_FILE, Session, Verdict

__all__ = [
    "CONTINUE",
    "EVENTS_FILE",
    "ActionClosed",
    "EventSeen",
    "Halted",
    "Observer",
    "ObserverGroup",
    "RolloutEnd",
    "RolloutHook",
    "RolloutStart",
    "Session",
    "TurnEnded",
    "UnknownToolError",
    "Verdict",
    "agent_view",
    "blueprint_file",
    "check_tools",
    "compile_agent_view",
]
