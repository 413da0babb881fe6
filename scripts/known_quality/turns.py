"""Clean agents whose user gives information over several turns: a look-up whose result is used only
after a later user turn.

The clean solver looks things up and uses the results within one turn of the user. Two clean variants
put a user turn between a look-up and its use (``TURN_KINDS``); nothing is wrong with either, so an
evaluator must give them no first error, as it gives the clean solver none:

* ``later_turn``: right after the first look-up whose result a later step passes on (in a call's
  arguments, or quoted in a message), the agent asks for anything more (``ASK``) and the user answers
  with the details of the request again (``ANSWER``); then the agent goes on. In a multi-turn task
  whose opening words already name what the first look-ups need, the agent instead makes those
  look-ups before its opening question, and the user's request answers that question;
* ``status_turn``: before the first change of a setting, the agent reads that setting's status
  (``get_X`` for ``set_X``), asks whether to change it (``CONFIRM``), and changes it once the user
  answers (``AGREE``): the status read is used by a change made only after a later user turn.

Like the fault variants, each is generated when it is played (``fresh_turn_variant``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dynsteer_hook.toolsandbox import _quiet  # noqa: F401 - must precede the tool_sandbox imports

from tool_sandbox.common.scenario import Scenario

from .dialogue import CLARIFY, user_messages
from .faults import _single_calls, _world_at
from .model import Call, KnownScript, Skip, Step, calling, say
from .solver import PER_STEP, clean_solver
from .world import CLOCK_TOOLS, agent_catalog

TURN_KINDS = ("later_turn", "status_turn")
ASK = "Before I go on: is there anything more I should know about what you want?"
ANSWER = "Yes, to be precise: {request}"
CONFIRM = "I have checked that setting. Shall I change it as your request needs?"
AGREE = "Yes, please go ahead."
_TRIVIAL = frozenset({0, 1, -1})


@dataclass(frozen=True, slots=True)
class TurnVariant:
    """A clean script with a user turn between a look-up and the first use of its result.

    Attributes:
        kind: One of ``TURN_KINDS``.
        clean: The clean solver it was made from.
        script: The script played.
        lookup: The step (of ``script``) of the look-up.
        use: The first step (of ``script``) that uses its result, after the user's turn.
    """

    kind: str
    clean: KnownScript
    script: KnownScript
    lookup: int
    use: int


def _values(value: Any, out: set[str]) -> set[str]:
    """The values a later step could pass on: texts of four characters or more, numbers other than 0, 1, -1."""
    if isinstance(value, dict):
        for v in value.values():
            _values(v, out)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _values(v, out)
    elif isinstance(value, str) and len(value.strip()) >= 4:
        out.add(value.strip())
    elif isinstance(value, (int, float)) and not isinstance(value, bool) and value not in _TRIVIAL:
        out.add(repr(float(value)))
    return out


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _quoted(value: str, text: str) -> bool:
    """Whether a message quotes a value: as text, or a number as one of its words."""
    n = _number(value)
    return value in text or (n is not None and any(_number(w.strip(".,;:!?()")) == n for w in text.split()))


def _first_use(clean: KnownScript, step: int, made: set[str]) -> int | None:
    """The first step after ``step`` that passes on one of ``made``: in a call's arguments, or quoted in a message."""
    for j in range(step + 1, len(clean.steps)):
        said = clean.steps[j].say
        if said is not None and any(_quoted(v, said) for v in made):
            return j
        if any(made & _values(c.arguments, set()) for c in clean.steps[j].calls):
            return j
    return None


def _grounded(step: Step, text: str) -> bool:
    """Whether every text argument of a step's calls is in ``text`` (the agent could make them from those words alone)."""
    return bool(step.calls) and all(v.casefold() in text.casefold() for c in step.calls for v in c.arguments.values() if isinstance(v, str))


def _with_turn(clean: KnownScript, at: int, inserted: tuple[Step, ...], answer: str) -> KnownScript:
    """The clean script with ``inserted`` (ending with a question) before step ``at`` and the user's answer to it."""
    asked = sum(1 for s in clean.steps[:at] if s.say is not None)  # agent messages the user answered before it
    steps = (*clean.steps[:at], *inserted, *clean.steps[at:])
    return KnownScript(clean.scenario, steps, (*clean.user[:asked], answer, *clean.user[asked:]), clean.clock)


def later_turn(clean: KnownScript, scenario: Scenario) -> TurnVariant | str:
    """The clean script with the user's turn between its first used look-up and that use."""
    for i, call in _single_calls(clean):
        outcome = _world_at(clean, scenario, i).probe(call.tool, call.arguments)
        if not outcome.ok or outcome.changed or call.tool in CLOCK_TOOLS:  # the clock's value is predicted, not tried
            continue
        use = _first_use(clean, i, _values(outcome.result, set()))
        if use is None:
            continue
        opening = " ".join(user_messages(scenario))
        if clean.steps[0].say == CLARIFY and all(_grounded(s, opening) for s in clean.steps[1 : i + 1]):
            steps = (*clean.steps[1 : i + 1], clean.steps[0], *clean.steps[i + 1 :])
            return TurnVariant("later_turn", clean, KnownScript(clean.scenario, steps, clean.user, clean.clock), i - 1, use)
        script = _with_turn(clean, i + 1, (say(ASK),), ANSWER.format(request=(clean.user[0] if clean.user else opening).strip()))
        return TurnVariant("later_turn", clean, script, i, use + 1)
    return "the clean script makes no look-up whose result a later step uses"


def status_turn(clean: KnownScript, scenario: Scenario) -> TurnVariant | str:
    """The clean script reading a setting's status, asking the user and changing the setting once they answer."""
    catalog = agent_catalog(scenario)
    for i, call in _single_calls(clean):
        getter = "get_" + call.tool.removeprefix("set_")
        if not call.tool.startswith("set_") or getter not in catalog:
            continue
        outcome = _world_at(clean, scenario, i).probe(getter, {})
        if outcome.ok and not outcome.changed:
            script = _with_turn(clean, i, (calling(Call(catalog[getter], getter, {})), say(CONFIRM)), AGREE)
            return TurnVariant("status_turn", clean, script, i, i + 2)
    return "the clean script changes no setting whose status the agent can read"


BUILDERS = {"later_turn": later_turn, "status_turn": status_turn}


def fresh_turn_variant(kind: str, name: str, scenario: Scenario, now: float) -> TurnVariant | Skip:
    """The ``kind`` variant of the clean solver generated at ``now``, to be played at once (clock calls after the
    inserted steps are predicted that many steps later)."""
    made = _variant(kind, clean_solver(name, scenario, now), scenario)
    if isinstance(made, Skip):
        return made
    clocks = [i for i, _, c in made.clean.calls() if c.tool in CLOCK_TOOLS]
    delay = len(made.script.steps) - len(made.clean.steps)
    if not clocks or min(clocks) <= made.lookup or not delay:
        return made
    return _variant(kind, clean_solver(name, scenario, now + PER_STEP * delay), scenario)


def _variant(kind: str, clean: KnownScript | Skip, scenario: Scenario) -> TurnVariant | Skip:
    if isinstance(clean, Skip):
        return clean
    made = BUILDERS[kind](clean, scenario)
    return Skip(clean.scenario, f"no {kind} variant: {made}") if isinstance(made, str) else made
