"""The milestone blueprint G = (M, E, K, M_fatal) and its parsing.

Pydantic models, because blueprints cross trust boundaries: they come from files, from
LLM output and from other tools. Parsing checks shape and referential integrity; the
contract rules of eq. 2 (tool schemas, acyclicity, binding ancestry) live in
``contract``. File reading and writing live in ``dynsteer_hook.files.blueprints``.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from dynsteer_hook.model.errors import BlueprintError, validation_problem
from dynsteer_hook.model.json_text import JsonTextError, loads
from dynsteer_hook.model.predicates import ArgPredicate

AGENT_MESSAGE_TOOL = "@agent_message"
"""Reserved operation: the agent's message to the user (predicates may test ``content``)."""

SCHEMA_VERSION = 1

_ID_PATTERN = r"^[A-Za-z0-9_.:#@\[\]\-+]{1,200}$"


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class StatePredicate(_Frozen):
    """A condition on the database change a closed action caused."""

    namespace: str = Field(min_length=1, description="Database or table name, e.g. CONTACT.")
    change: Literal["added", "removed", "updated", "any"] = Field(
        default="any", description="Kind of row change required in that namespace."
    )
    where: tuple[ArgPredicate, ...] = Field(
        default=(), description="Column predicates one changed row must satisfy (arg = column name)."
    )


class MilestoneEvidence(_Frozen):
    """Why a compiler included a milestone: one piece of the public view or one rule behind it."""

    kind: Literal["instruction", "schema", "data_flow", "rule", "consensus"] = Field(
        description="instruction: the user's words; schema: what a tool's schema says it does; data_flow: a required "
        "argument another operation supplies; rule: the generator rule that added it and its evidence; consensus: the "
        "candidates that proposed it."
    )
    detail: str = Field(min_length=1, max_length=2000, description="The words, field, flow or rule, stated plainly.")


class ValuePin(_Frozen):
    """A value of the settling call that the user's words fix, checked when the milestone settles (Tier 1).

    * ``moment``: the argument is a timestamp the user stated ("tomorrow 5PM", "next Friday 5PM"), resolved
      against the rollout's clock (``model.when``); ``words`` holds the user's words, or is empty when a
      later user turn states it;
    * ``words``: the argument holds what the user dictated (``words``: its distinctive words); with no words
      (a later turn dictates it) it must at least say something besides the request's own scaffolding
      ("Reminder at 5PM" says nothing to be reminded of);
    * ``year``: the user named a day without a year (a holiday): a year, when passed, is the clock's year;
    * ``from_now`` / ``beyond_now``: the argument is the lower / upper bound of a search for what is still to
      come ("upcoming"): it may not lie in the past of the rollout's clock.
    """

    arg: str = Field(min_length=1, description="Argument name as the agent passes it.")
    kind: Literal["moment", "words", "year", "from_now", "beyond_now"]
    words: str = Field(default="", max_length=500, description="The user's words that fix the value ('' = a later user turn).")


class Milestone(_Frozen):
    """A necessary operation: canonical tool operation (tool, role) plus its predicates."""

    id: str = Field(pattern=_ID_PATTERN, description="Unique id within the blueprint.")
    tool: str = Field(
        min_length=1,
        description=f"Tool name as the agent sees it, or {AGENT_MESSAGE_TOOL!r} for a message to the user.",
    )
    role: str = Field(
        default="default",
        min_length=1,
        description="Parameter role binding: what the call is for (e.g. 'by_name'); with the tool it defines node equivalence.",
    )
    args: tuple[ArgPredicate, ...] = Field(default=(), description="Argument predicates a settling call satisfies.")
    state: StatePredicate | None = Field(default=None, description="Optional database-change predicate.")
    values: tuple[ValuePin, ...] = Field(default=(), description="Values of the settling call the user's words fix, "
                                         "checked when it settles (a wrong one is a fault; one that cannot be checked "
                                         "leaves the stage uncertain).")
    description: str = Field(default="", description="The stage goal in words.")
    evidence: tuple[MilestoneEvidence, ...] = Field(
        default=(), description="What made the compiler include this milestone (read by 'dynsteer explain')."
    )

    @property
    def operation(self) -> tuple[str, str]:
        """The canonical tool operation (tool name, role) of eq. 11."""
        return (self.tool, self.role)


class Edge(_Frozen):
    """Precedence: ``source`` must be settled before ``target``."""

    source: str = Field(pattern=_ID_PATTERN)
    target: str = Field(pattern=_ID_PATTERN)


class Binding(_Frozen):
    """A value produced by one milestone's result and consumed as a later call's argument."""

    name: str = Field(min_length=1, description="Binding name, unique within the blueprint.")
    producer: str = Field(pattern=_ID_PATTERN, description="Milestone whose result yields the value.")
    path: str = Field(
        default="",
        description="Dotted path into the producer's result ('' = whole result; list elements are searched).",
    )
    consumer: str = Field(pattern=_ID_PATTERN, description="Milestone whose call consumes the value.")
    arg: str = Field(min_length=1, description="Argument of the consumer's call that carries the value.")


class Minefield(_Frozen):
    """A hazardous operation: a tool call whose arguments satisfy every predicate."""

    id: str = Field(pattern=_ID_PATTERN)
    tool: str = Field(min_length=1, description="Tool name as the agent sees it.")
    args: tuple[ArgPredicate, ...] = Field(default=(), description="Empty: any call of the tool.")
    reason: str = Field(default="", description="Why the operation is hazardous or irreversible.")
    fatal: bool = Field(default=True, description="Fatal minefields halt the run before the call executes.")
    read_only: bool = Field(default=False, description="The tool only reads: a call is hazardous only when it acts on "
                            "inputs the agent could not have had (an argument value it was never shown, or one of "
                            "``any_args``); a call whose arguments it was all shown is never stopped.")
    any_args: tuple[str, ...] = Field(default=(), description="The arguments that carry what the agent cannot know (the "
                                      "current time, when no tool reads it): a call passing any of them steps on the "
                                      "minefield, whatever it was shown, since its value can only be made up.")


class ToolSpec(_Frozen):
    """One tool of the catalog, as the agent sees it (OpenAI function schema)."""

    name: str = Field(min_length=1)
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


class PrunedCandidate(_Frozen):
    """A candidate dropped before consensus, and why."""

    candidate: str
    rule: str
    node: str | None = None
    message: str


class Provenance(_Frozen):
    """Where a blueprint came from."""

    generators: tuple[str, ...] = ()
    models: tuple[str, ...] = ()
    candidates: int = 0
    valid_candidates: int = 0
    support_threshold: int = 0
    pruned: tuple[PrunedCandidate, ...] = ()
    dropped_edges: tuple[str, ...] = ()
    public_view_hash: str | None = None
    scenario: str | None = None
    tokens: int | None = None
    cost_usd: float | None = None


class Blueprint(_Frozen):
    """A milestone DAG G = (M, E, K, M_fatal) with the tool catalog it was compiled against."""

    schema_version: Literal[1] = 1
    task: str = Field(default="", description="Task or scenario name.")
    milestones: tuple[Milestone, ...] = ()
    edges: tuple[Edge, ...] = ()
    bindings: tuple[Binding, ...] = ()
    minefields: tuple[Minefield, ...] = ()
    catalog: tuple[ToolSpec, ...] = Field(default=(), description="Agent-facing tool schemas.")
    provenance: Provenance | None = None

    def milestone(self, milestone_id: str) -> Milestone:
        """The milestone with that id (``KeyError`` if absent)."""
        for m in self.milestones:
            if m.id == milestone_id:
                return m
        raise KeyError(milestone_id)

    def to_json(self) -> str:
        """Canonical JSON text (stable key order, two-space indent, trailing newline)."""
        return self.model_dump_json(indent=2, exclude_none=True) + "\n"


def reference_errors(bp: Blueprint) -> list[tuple[str | None, str, str]]:
    """Referential-integrity problems as (node, rule, message) triples; empty if none."""
    problems: list[tuple[str | None, str, str]] = []
    ids: set[str] = set()
    for m in bp.milestones:
        if m.id in ids:
            problems.append((m.id, "unique-id", f"milestone id {m.id!r} is used twice"))
        ids.add(m.id)
    for e in bp.edges:
        for end in (e.source, e.target):
            if end not in ids:
                problems.append((end, "edge-reference", f"edge {e.source}->{e.target} names unknown milestone {end!r}"))
        if e.source == e.target:
            problems.append((e.source, "acyclic", f"edge {e.source}->{e.target} is a self-loop"))
    names: set[str] = set()
    for b in bp.bindings:
        if b.name in names:
            problems.append((b.consumer, "unique-binding", f"binding name {b.name!r} is used twice"))
        names.add(b.name)
        for end in (b.producer, b.consumer):
            if end not in ids:
                problems.append((end, "binding-reference", f"binding {b.name!r} names unknown milestone {end!r}"))
    mids: set[str] = set()
    for f in bp.minefields:
        if f.id in mids:
            problems.append((f.id, "unique-id", f"minefield id {f.id!r} is used twice"))
        mids.add(f.id)
    return problems


def parse_blueprint(text: str | bytes, *, source: str = "blueprint") -> Blueprint:
    """Parse blueprint JSON text and check referential integrity.

    Raises:
        BlueprintError: One sentence naming ``source``, the first problem and the fix.
    """
    try:
        data = loads(text)
    except JsonTextError as exc:
        raise BlueprintError(f"{source} {exc}; fix the file or regenerate it") from None
    if not isinstance(data, dict):
        raise BlueprintError(f"{source} must hold a JSON object with 'milestones', found {type(data).__name__}")
    try:
        bp = Blueprint.model_validate(data)
    except ValidationError as exc:
        raise BlueprintError(
            f"{source} does not match the blueprint schema at {validation_problem(exc)}; see blueprints/schema.json"
        ) from None
    problems = reference_errors(bp)
    if problems:
        _node, rule, message = problems[0]
        raise BlueprintError(f"{source} is inconsistent ({rule}): {message}; fix that entry")
    return bp


def blueprint_json_schema() -> dict[str, Any]:
    """The JSON Schema of blueprint files."""
    schema = Blueprint.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "DynSTEER milestone blueprint"
    return schema


def explain_blueprint(bp: Blueprint) -> str:
    """A plain-text account of every milestone, its order and the evidence that put it in the blueprint."""
    lines = [f"blueprint {bp.task or '(no task name)'}: {len(bp.milestones)} milestones, {len(bp.edges)} edges, "
             f"{len(bp.bindings)} bindings, {len(bp.minefields)} minefields"]
    p = bp.provenance
    if p is not None:
        lines.append(f"compiled by {', '.join(p.generators) or 'unknown'}; models {', '.join(p.models) or 'none'}; "
                     f"{p.valid_candidates} of {p.candidates} candidates valid, majority {p.support_threshold}")
    preds = {m.id: sorted(e.source for e in bp.edges if e.target == m.id) for m in bp.milestones}
    for i, m in enumerate(bp.milestones, 1):
        lines.append("")
        lines.append(f"{i}. {m.id}  ({m.tool}, role {m.role})")
        if m.description:
            lines.append(f"   goal: {m.description}")
        for a in m.args:
            lines.append(f"   argument: {a.arg} {a.op} {json.dumps(a.value, ensure_ascii=False)}")
        if m.state is not None:
            lines.append(f"   database: {m.state.change} in {m.state.namespace}")
        if preds[m.id]:
            lines.append(f"   after: {', '.join(preds[m.id])}")
        if not m.evidence:
            lines.append("   evidence: none recorded (written by hand or compiled before evidence was kept)")
        for e in m.evidence:
            lines.append(f"   evidence [{e.kind}] {e.detail}")
    for b in bp.bindings:
        lines.append(f"\nbinding {b.name}: {b.consumer}.{b.arg} carries {b.producer}'s result{f' at {b.path}' if b.path else ''}")
    for f in bp.minefields:
        lines.append(f"\nminefield {f.id} ({'fatal' if f.fatal else 'warning'}): {f.tool}"
                     + (f" with {', '.join(f'{a.arg} {a.op} {json.dumps(a.value, ensure_ascii=False)}' for a in f.args)}" if f.args else "")
                     + (f"; {f.reason}" if f.reason else ""))
    return "\n".join(lines)
