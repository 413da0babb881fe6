"""dynsteer-hook: stage-wise, execution-time evaluation and early termination of tool-use agents (DynSTEER).

The public API of the pure core, plus file helpers. ToolSandbox integration lives in
``dynsteer_hook.toolsandbox``; language-model calls in ``dynsteer_hook.llm``.

Names are imported when first used (PEP 562), so ``import dynsteer_hook`` and the command line
start without loading the parts a command does not need.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from dynsteer_hook import _moved

_moved.install()  # the previous layout's module paths keep working for one release, with a DeprecationWarning

if TYPE_CHECKING:
    from dynsteer_hook.compile.compiler import compile_blueprint
    from dynsteer_hook.compile.consensus import Candidate, ConsensusResult, build_consensus
    from dynsteer_hook.files.blueprints import load_blueprint, save_blueprint
    from dynsteer_hook.files.events import read_events
    from dynsteer_hook.files.outputs import JsonlSink
    from dynsteer_hook.judges.base import DimensionScore, Judge, JudgeRequest, Verdict
    from dynsteer_hook.judges.tier1 import Tier1Judge
    from dynsteer_hook.model.blueprint import (
        AGENT_MESSAGE_TOOL,
        Binding,
        Blueprint,
        Edge,
        Milestone,
        MilestoneEvidence,
        Minefield,
        StatePredicate,
        ToolSpec,
        parse_blueprint,
    )
    from dynsteer_hook.model.catalog import ToolCatalog
    from dynsteer_hook.model.config import DIMENSIONS, EvaluatorConfig
    from dynsteer_hook.model.contract import ContractViolation, validate_blueprint
    from dynsteer_hook.model.errors import BlueprintError, ConsensusError, DynsteerError, EventFileError, Halt
    from dynsteer_hook.model.events import AgentMessage, Event, StateChange, SystemMessage, ToolCall, ToolResult, UserMessage
    from dynsteer_hook.model.predicates import ArgPredicate
    from dynsteer_hook.model.records import AuditSink, ListSink, Report, StageRecord, StopRecord
    from dynsteer_hook.model.spending import Spend
    from dynsteer_hook.model.task_view import TaskView
    from dynsteer_hook.report.markdown import render_markdown
    from dynsteer_hook.report.scenario_page import write_html_report
    from dynsteer_hook.report.writer import write_report
    from dynsteer_hook.runtime.budget import Budget
    from dynsteer_hook.runtime.clock import ClosedAction, DualClock
    from dynsteer_hook.runtime.evaluator import Evaluator
    from dynsteer_hook.runtime.stop_rules import DEFAULT_STOP_RULES, ActionFacts, StopContext, StopDecision, StopRule, default_stop_rules

__version__ = "0.1.0"

# Each public name and the module that defines it.
_HOMES: dict[str, str] = {
    "AGENT_MESSAGE_TOOL": "dynsteer_hook.model.blueprint",
    "ActionFacts": "dynsteer_hook.runtime.stop_rules",
    "AgentMessage": "dynsteer_hook.model.events",
    "ArgPredicate": "dynsteer_hook.model.predicates",
    "AuditSink": "dynsteer_hook.model.records",
    "Binding": "dynsteer_hook.model.blueprint",
    "Blueprint": "dynsteer_hook.model.blueprint",
    "Budget": "dynsteer_hook.runtime.budget",
    "BlueprintError": "dynsteer_hook.model.errors",
    "Candidate": "dynsteer_hook.compile.consensus",
    "ClosedAction": "dynsteer_hook.runtime.clock",
    "ConsensusError": "dynsteer_hook.model.errors",
    "ConsensusResult": "dynsteer_hook.compile.consensus",
    "ContractViolation": "dynsteer_hook.model.contract",
    "DEFAULT_STOP_RULES": "dynsteer_hook.runtime.stop_rules",
    "DIMENSIONS": "dynsteer_hook.model.config",
    "DimensionScore": "dynsteer_hook.judges.base",
    "DualClock": "dynsteer_hook.runtime.clock",
    "DynsteerError": "dynsteer_hook.model.errors",
    "Edge": "dynsteer_hook.model.blueprint",
    "Evaluator": "dynsteer_hook.runtime.evaluator",
    "EvaluatorConfig": "dynsteer_hook.model.config",
    "Event": "dynsteer_hook.model.events",
    "EventFileError": "dynsteer_hook.model.errors",
    "Halt": "dynsteer_hook.model.errors",
    "JsonlSink": "dynsteer_hook.files.outputs",
    "Judge": "dynsteer_hook.judges.base",
    "JudgeRequest": "dynsteer_hook.judges.base",
    "ListSink": "dynsteer_hook.model.records",
    "Milestone": "dynsteer_hook.model.blueprint",
    "MilestoneEvidence": "dynsteer_hook.model.blueprint",
    "Minefield": "dynsteer_hook.model.blueprint",
    "Report": "dynsteer_hook.model.records",
    "StageRecord": "dynsteer_hook.model.records",
    "StateChange": "dynsteer_hook.model.events",
    "StatePredicate": "dynsteer_hook.model.blueprint",
    "Spend": "dynsteer_hook.model.spending",
    "StopContext": "dynsteer_hook.runtime.stop_rules",
    "StopDecision": "dynsteer_hook.runtime.stop_rules",
    "StopRecord": "dynsteer_hook.model.records",
    "StopRule": "dynsteer_hook.runtime.stop_rules",
    "SystemMessage": "dynsteer_hook.model.events",
    "TaskView": "dynsteer_hook.model.task_view",
    "Tier1Judge": "dynsteer_hook.judges.tier1",
    "ToolCall": "dynsteer_hook.model.events",
    "ToolCatalog": "dynsteer_hook.model.catalog",
    "ToolResult": "dynsteer_hook.model.events",
    "ToolSpec": "dynsteer_hook.model.blueprint",
    "UserMessage": "dynsteer_hook.model.events",
    "Verdict": "dynsteer_hook.judges.base",
    "build_consensus": "dynsteer_hook.compile.consensus",
    "compile_blueprint": "dynsteer_hook.compile.compiler",
    "load_blueprint": "dynsteer_hook.files.blueprints",
    "parse_blueprint": "dynsteer_hook.model.blueprint",
    "read_events": "dynsteer_hook.files.events",
    "default_stop_rules": "dynsteer_hook.runtime.stop_rules",
    "render_markdown": "dynsteer_hook.report.markdown",
    "save_blueprint": "dynsteer_hook.files.blueprints",
    "validate_blueprint": "dynsteer_hook.model.contract",
    "write_html_report": "dynsteer_hook.report.scenario_page",
    "write_report": "dynsteer_hook.report.writer",
}

__all__ = [
    "AGENT_MESSAGE_TOOL",
    "DEFAULT_STOP_RULES",
    "DIMENSIONS",
    "ActionFacts",
    "AgentMessage",
    "ArgPredicate",
    "AuditSink",
    "Binding",
    "Blueprint",
    "BlueprintError",
    "Budget",
    "Candidate",
    "ClosedAction",
    "ConsensusError",
    "ConsensusResult",
    "ContractViolation",
    "DimensionScore",
    "DualClock",
    "DynsteerError",
    "Edge",
    "Evaluator",
    "EvaluatorConfig",
    "Event",
    "EventFileError",
    "Halt",
    "JsonlSink",
    "Judge",
    "JudgeRequest",
    "ListSink",
    "Milestone",
    "MilestoneEvidence",
    "Minefield",
    "Report",
    "Spend",
    "StageRecord",
    "StateChange",
    "StatePredicate",
    "StopContext",
    "StopDecision",
    "StopRecord",
    "StopRule",
    "SystemMessage",
    "TaskView",
    "Tier1Judge",
    "ToolCall",
    "ToolCatalog",
    "ToolResult",
    "ToolSpec",
    "UserMessage",
    "Verdict",
    "build_consensus",
    "compile_blueprint",
    "default_stop_rules",
    "load_blueprint",
    "parse_blueprint",
    "read_events",
    "render_markdown",
    "save_blueprint",
    "validate_blueprint",
    "write_html_report",
    "write_report",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'dynsteer_hook' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES))
