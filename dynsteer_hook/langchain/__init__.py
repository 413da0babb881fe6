"""DynSTEER inside LangChain agents (the ``langchain`` extra): an agent middleware around one session per run.

``DynSteerMiddleware`` feeds every model turn, tool call and tool result of a ``create_agent`` run to a
``dynsteer_hook.session.Session``: a fatal call is answered with a refusal ``ToolMessage`` and never runs,
a halt ends the run (a jump to its end) with the stop record in the run's state (``dynsteer_stop``), and
the report is finished when the run ends (docs/langchain.md). This folder alone imports LangChain.
"""

from __future__ import annotations

from dynsteer_hook.langchain._convert import tool_spec, tool_specs
from dynsteer_hook.langchain._middleware import STOP_KEY, DynSteerMiddleware, DynSteerState, compiled_blueprint, refusal, task_view_json

__all__ = ["STOP_KEY", "DynSteerMiddleware", "DynSteerState", "compiled_blueprint", "refusal", "task_view_json", "tool_spec", "tool_specs"]
