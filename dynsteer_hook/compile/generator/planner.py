"""A necessity plan for a task, from its public view alone (no LLM).

``plan_task`` reads the user's intents (``instruction``) and what each tool does
(``tool_semantics``), then chains backwards (``goals``): each intent needs a goal tool;
each required argument of a goal tool is filled from the user's words or from another
tool's result (a contact look-up yields a ``person_id``, the clock yields *now*, a place
search yields coordinates). Device-state prerequisites (``prerequisites``) and the final
report to the user complete it. Every operation, order, binding and minefield carries an
*evidence* in [0, 1]: how sure the public view makes us that every valid completion needs
it. The candidate generator thresholds one plan into several candidate graphs.

Three rules keep the plan safe for a correct agent at run time:

* order edges only where data must flow (a required argument comes from the producer),
  so alternative paths stay open;
* speculative prerequisites (turning a service on in case the device state, which the
  public view cannot show, blocks the task) never gate other milestones;
* when a required value can come neither from the user's words nor from any tool, the
  task is *insufficient*: the plan drops every tool operation, puts a fatal minefield on
  the goal tool (the call that could only run on fabricated inputs) and asks for one
  thing instead: a message to the user that asks for what is missing or declines
  (``ASK_OR_DECLINE``). The same message is all a task needs when no tool can do it.
"""

from __future__ import annotations

import re

from dynsteer_hook.compile.generator.goals import offered_update, plan_intent
from dynsteer_hook.compile.generator.instruction import read_instruction
from dynsteer_hook.compile.generator.necessity_plan import NEEDED, STOPWORDS, Plan, PlanBuilder, PlanMine
from dynsteer_hook.compile.generator.prerequisites import add_prerequisites
from dynsteer_hook.compile.generator.tool_semantics import profile_tools, words
from dynsteer_hook.model.blueprint import AGENT_MESSAGE_TOOL
from dynsteer_hook.model.predicates import ArgPredicate
from dynsteer_hook.model.task_view import TaskView

_QUESTION = re.compile(r"\?\s*$|^\s*(what|who|which|when|where|how|is|are|do|does|find)\b", re.IGNORECASE)

_NOT = "(?:n'?t|n\u2019t| not)"  # the escape keeps the typographic apostrophe visible
_ASKED_FOR = r"(?:the|his|her|their|your|its|a|an|some|more|any|which|what|who|whom|where|when|how)"
_INFO_NOUN = r"(?:number|phone|address|name|location|city|place|date|day|time|id|identifier|email|contact|person|recipient|detail|details|information|info|coordinates)"
ASK_OR_DECLINE = "".join([
    r"(?is)",
    # Declining: the agent says it cannot do it, or what it lacks.
    r"\b(?:can ?not|can'?t|can" "\u2019" r"t|unable|not able|impossible|not possible|insufficient)\b",
    rf"|\b(?:do|does|did){_NOT} (?:have|know|see|find|contain)\b",
    rf"|\b(?:could|was|were|am|is|are){_NOT} (?:able|find|get|determine|locate|access|identify|obtain|retrieve|know)\b",
    r"|\bno (?:way|access|tools?|means|information|info|details|record)\b",
    r"|\b(?:lack|lacks|lacking|missing) (?:the|any|a|an|some|enough|information|info|details)\b",
    # Asking: a request for information addressed to the user, or a question about a missing value.
    rf"|\b(?:could|can|would|will) you (?:please )?(?:provide|give|tell|share|send|confirm|specify|clarify|supply)(?: me| us)? {_ASKED_FOR}\b",
    rf"|\bplease (?:provide|give|tell|share|send|confirm|specify|clarify|supply)(?: me| us)? {_ASKED_FOR}\b",
    rf"|\blet me know {_ASKED_FOR}\b",
    rf"|\b(?:what|which|who|where|when|whose)\b[^?.!]{{0,120}}\b{_INFO_NOUN}\b[^?.!]{{0,120}}\?",
    r"|\bdo you (?:know|have)\b[^?.!]{0,160}\?",
])
"""What an agent's message must match when the task cannot be carried out: a request for the
missing information, or a refusal that says what is lacking. Plain completion claims ("done",
"I have completed the task", "message sent") and small talk do not match. The pattern avoids
look-arounds and back-references, so linear-time regex engines accept it too."""


def _fallback(b: PlanBuilder) -> None:
    """No intent recognised: the tool whose words overlap the request most, if clearly."""
    asked = {w for w in words(b.reading.text) if w not in STOPWORDS and len(w) > 2}
    scored = sorted(((len(asked & p.words), p.name) for p in b.profiles.values()), reverse=True)
    if scored and scored[0][0] >= 2 and (len(scored) == 1 or scored[0][0] > scored[1][0]):
        b.rule = "fallback"
        b.add(scored[0][1], 0.6, "the tool the request names", why=(
            ("instruction", f"words shared with the tool: {', '.join(sorted(asked & b.profiles[scored[0][1]].words)[:8])}"),))
        b.rule = ""
        b.goal_tools.append(scored[0][1])


def _report(b: PlanBuilder) -> None:
    """The agent's final message to the user, after every goal operation."""
    question = _QUESTION.search(b.reading.text)
    b.rule = "report"
    b.add(AGENT_MESSAGE_TOOL, 0.8 if question else 0.7, "tell the user the outcome",
          why=(("instruction", f"a question to answer ('{question.group(0).strip()}')" if question else "a request whose outcome the user is told"),))
    b.rule = ""
    core = {n for n, o in b.ops.items() if o.core and n != AGENT_MESSAGE_TOOL}
    sources = {e.source for e in b.edges.values() if e.target in core}
    for n in sorted(core - sources):
        b.edge(n, AGENT_MESSAGE_TOOL, NEEDED)


def _guard_reads(b: PlanBuilder) -> list[PlanMine]:
    """Liberal focus: when the user only asks questions, deleting their data is never needed."""
    if not b.goal_tools or any(b.profiles[g].mutates for g in b.goal_tools if g in b.profiles):
        return []
    return [PlanMine(p.name, 0.4, "the request only asks for information; deleting data is never part of answering it")
            for p in sorted(b.profiles.values(), key=lambda p: p.name) if p.action == "delete" and p.name not in b.ops]


def _ask_or_decline(b: PlanBuilder, evidence: float, why: str) -> None:
    """The one milestone of a task that cannot be carried out: ask the user, or decline and say why."""
    b.ops.clear()
    b.edges.clear()
    b.bindings.clear()
    b.rule = "ask or decline"
    b.add(AGENT_MESSAGE_TOOL, evidence, f"ask the user for what is missing or decline, without acting on guesses ({why})",
          (ArgPredicate(arg="content", op="regex", value=ASK_OR_DECLINE),), why=(("data_flow", why),))
    b.rule = ""


def _finish(b: PlanBuilder) -> Plan:
    mines: list[PlanMine] = []
    if b.missing:
        for goal, why in b.missing:
            if goal in b.profiles and not any(m.tool == goal for m in mines):
                mines.append(PlanMine(goal, NEEDED, f"insufficient information: {why}; calling {goal} would need fabricated inputs",
                                      read_only=not b.profiles[goal].mutates, any_args=b.unknowable.get(goal, ())))
        b.notes += [f"insufficient: {why}" for _, why in b.missing]
        # Every candidate keeps the message: a majority of candidates without milestones would leave
        # a blueprint that any run completes.
        _ask_or_decline(b, NEEDED, "; ".join(why for _, why in b.missing))
    elif not b.goal_tools and b.absent:
        b.notes += [f"no tool can {i.action} {i.subject}; the agent can only tell the user" for i in b.absent]
        _ask_or_decline(b, 0.6, "; ".join(f"no tool can {i.action} {i.subject}" for i in b.absent))
    elif not b.goal_tools:
        b.ops.clear()
        b.edges.clear()
        b.rule = "no intent"
        b.add(AGENT_MESSAGE_TOOL, 0.5, "tell the user what can or cannot be done",
              why=(("instruction", "no request the rules recognise and no tool the request names"),))
        b.rule = ""
    else:
        mines += _guard_reads(b)
        add_prerequisites(b)
        _report(b)
    ids = set(b.ops)
    return Plan(
        ops=tuple(sorted(b.ops.values(), key=lambda o: o.tool)),
        edges=tuple(sorted((e for e in b.edges.values() if e.source in ids and e.target in ids), key=lambda e: (e.source, e.target))),
        bindings=tuple(x for x in b.bindings if x.producer in ids and x.consumer in ids),
        minefields=tuple(mines),
        reading=b.reading,
        notes=tuple(b.notes),
        pins=tuple((tool, tuple(pins)) for tool, pins in sorted(b.pins.items()) if tool in ids),
    )


def plan_task(view: TaskView) -> Plan:
    """The necessity plan of a task's public view."""
    reading = read_instruction([(m.role, m.content) for m in view.messages])
    b = PlanBuilder(reading, profile_tools(view.tools, view.databases), {k: dict(v) for k, v in view.databases.items()})
    for intent in reading.intents:
        plan_intent(b, intent)
    offered_update(b)
    if not reading.intents:
        _fallback(b)
    return _finish(b)
