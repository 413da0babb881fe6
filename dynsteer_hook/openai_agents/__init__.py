"""DynSTEER inside the OpenAI Agents SDK (the ``openai-agents`` extra): tool guardrails and run hooks around one session per run.

``DynSteerAgents.run(agent, input)`` runs an agent with its function tools guarded: a fatal call trips the
tool input guardrail before it runs, a halt on a result trips the tool output guardrail, and either ends the
run with the SDK's tripwire, the stop record in the guardrail's output; the report is finished and written
either way (docs/openai-agents.md). This folder alone imports the Agents SDK.
"""

from __future__ import annotations

from dynsteer_hook.openai_agents._convert import tool_spec, tool_specs
from dynsteer_hook.openai_agents._steer import STOP_KEY, DynSteerAgents, SteeredRun

__all__ = ["STOP_KEY", "DynSteerAgents", "SteeredRun", "tool_spec", "tool_specs"]
