"""Scripts of known quality: the steps of a Scripted agent, the user's turns, and the recorded fault."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# The kinds of injected fault, from the mildest to the worst (benchmarks compare quality in this order).
FAULT_KINDS = ("repeat", "malformed", "wrong_tool", "loop", "minefield")


@dataclass(frozen=True, slots=True)
class Call:
    """One tool call: the name the agent uses (scrambled where the scenario scrambles) and the tool it reaches."""

    name: str
    tool: str
    arguments: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The call in the Scripted role's format."""
        return {"name": self.name, "arguments": dict(self.arguments)}


@dataclass(frozen=True, slots=True)
class Step:
    """One agent step: a message to the user, or tool calls (several are parallel calls)."""

    say: str | None = None
    calls: tuple[Call, ...] = ()

    def __post_init__(self) -> None:
        if (self.say is None) == (not self.calls):
            raise ValueError("a step is either a message or tool calls")

    def to_json(self) -> dict[str, Any]:
        """The step in the Scripted role's format."""
        if self.say is not None:
            return {"say": self.say}
        return {"tool_calls": [c.to_json() for c in self.calls]}


def say(text: str) -> Step:
    """A message step."""
    return Step(say=text)


def calling(*calls: Call) -> Step:
    """A tool-call step."""
    return Step(calls=tuple(calls))


@dataclass(frozen=True, slots=True)
class KnownScript:
    """A Scripted agent and user for one scenario.

    Attributes:
        scenario: The scenario name.
        steps: The agent's steps.
        user: The user's utterances, one per agent message before the last.
        clock: Wall-clock values the script predicts (a ``get_current_timestamp`` result it
            passes on); empty when the script does not depend on when it is played.
    """

    scenario: str
    steps: tuple[Step, ...]
    user: tuple[str, ...] = ()
    clock: tuple[float, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The scenario's entry of a script file."""
        return {"agent": [s.to_json() for s in self.steps], "user": list(self.user)}

    def calls(self) -> list[tuple[int, int, Call]]:
        """(step, position, call) of every tool call, in order."""
        return [(i, j, c) for i, s in enumerate(self.steps) for j, c in enumerate(s.calls)]


@dataclass(frozen=True, slots=True)
class Skip:
    """A scenario with no generated script, and why."""

    scenario: str
    reason: str


@dataclass(frozen=True, slots=True)
class Fault:
    """The ground truth of an injected fault.

    Attributes:
        kind: One of ``FAULT_KINDS``.
        step: Index of the first faulty agent step in the variant's steps.
        call: Position of the faulty call within that step.
        detail: What is wrong with it, in one sentence.
    """

    kind: str
    step: int
    call: int
    detail: str


@dataclass(frozen=True, slots=True)
class Variant:
    """A clean script with one fault injected.

    The variant's steps are ``clean.steps[:fault.step] + injected + clean.steps[resume:]``:
    the clean prefix, the injected steps (the faulty one first), and where the clean script
    picks up again (``len(clean.steps)`` when the agent gives up instead).
    """

    kind: str
    clean: KnownScript
    script: KnownScript
    fault: Fault
    injected: tuple[Step, ...]
    resume: int

    def __post_init__(self) -> None:
        expected = self.clean.steps[: self.fault.step] + self.injected + self.clean.steps[self.resume :]
        if self.script.steps != expected:
            raise ValueError(f"the {self.kind} variant of {self.clean.scenario} is not its clean script plus the injected steps")
