"""dynsteer-hook: stage-wise, execution-time evaluation and early termination of tool-use agents (DynSTEER).

The public API of the pure core, plus file helpers. ToolSandbox integration lives in
``dynsteer_hook.toolsandbox``; language-model calls in ``dynsteer_hook.llm``.
"""

from dynsteer_hook.blueprint import (
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
from dynsteer_hook.catalog import ToolCatalog
from dynsteer_hook.compile.compiler import compile_blueprint
from dynsteer_hook.compile.consensus import Candidate, ConsensusResult, build_consensus
from dynsteer_hook.compile.validation import ContractViolation, validate_blueprint
from dynsteer_hook.config import DIMENSIONS, EvaluatorConfig
from dynsteer_hook.errors import BlueprintError, ConsensusError, DynsteerError, EventFileError, Halt
from dynsteer_hook.events import AgentMessage, Event, StateChange, SystemMessage, ToolCall, ToolResult, UserMessage
from dynsteer_hook.judges.base import DimensionScore, Judge, JudgeRequest, Verdict
from dynsteer_hook.judges.tier1 import Tier1Judge
from dynsteer_hook.predicates import ArgPredicate
from dynsteer_hook.report import AuditSink, ListSink, Report, StageRecord, StopRecord, render_markdown
from dynsteer_hook.runtime.clock import ClosedAction, DualClock
from dynsteer_hook.runtime.evaluator import Evaluator
from dynsteer_hook.runtime.stop_rules import DEFAULT_STOP_RULES, StopContext, StopDecision, StopRule
from dynsteer_hook.storage import JsonlSink, load_blueprint, read_events, save_blueprint, write_report
from dynsteer_hook.task_view import TaskView

__version__ = "0.1.0"

__all__ = [
    "AGENT_MESSAGE_TOOL",
    "DEFAULT_STOP_RULES",
    "DIMENSIONS",
    "AgentMessage",
    "ArgPredicate",
    "AuditSink",
    "Binding",
    "Blueprint",
    "BlueprintError",
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
    "load_blueprint",
    "parse_blueprint",
    "read_events",
    "render_markdown",
    "save_blueprint",
    "validate_blueprint",
    "write_report",
]
