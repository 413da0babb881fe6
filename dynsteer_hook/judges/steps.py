"""Annotated steps: what the evaluator knows about each closed action, once, for every judge."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dynsteer_hook.model.catalog import ArgIssue
from dynsteer_hook.model.events import StateChange

_STRUCTURAL_EXCEPTION = re.compile(
    r"TypeError|SyntaxError|NameError|IndentationError|JSONDecodeError|ValidationError|"
    r"unexpected keyword argument|missing \d+ required|code was incomplete|not a known allowed tool"
)


def is_structural_exception(text: str | None) -> bool:
    """Whether a tool exception says the call itself was malformed (not a runtime failure)."""
    return bool(text) and _STRUCTURAL_EXCEPTION.search(text or "") is not None


@dataclass(frozen=True, slots=True)
class ValueVerdict:
    """One value of a settling call that the user's words fix (a ``ValuePin``), judged.

    Attributes:
        arg: The argument.
        kind: The pin's kind.
        ok: Right (True), wrong (False) or not verified (None: the clock or the user's words are unknown).
        detail: What was found and expected, in words.
    """

    arg: str
    kind: str
    ok: bool | None
    detail: str


@dataclass(frozen=True, slots=True)
class CallFacts:
    """One agent tool call with everything the rules need to know about it."""

    k_call: int
    k_result: int | None
    tool: str
    canonical_tool: str | None
    arguments: Mapping[str, Any] | None
    raw_arguments: str | None
    result: Any
    exception: str | None
    issues: tuple[ArgIssue, ...]
    fatal_near: tuple[str, ...]
    warnings: tuple[str, ...]
    repeated_of: int | None
    state_changes: tuple[StateChange, ...]
    settled: str | None
    out_of_order: tuple[str, ...]
    grounding_upto: int = 0
    ungrounded: tuple[str, ...] = ()  # identifier-like values (arg=value) nobody showed the agent before the call
    requested: bool = False  # a change whose new words (every non-identifier text value) the user had said before the call
    values: tuple[ValueVerdict, ...] = ()  # verdicts of the milestone's pinned values, for the call that settled it
    destroyed: tuple[str, ...] = ()  # fields a successful change emptied that the user did not ask to clear

    @property
    def wrong_values(self) -> tuple[ValueVerdict, ...]:
        """The pinned values the call got wrong."""
        return tuple(v for v in self.values if v.ok is False)

    @property
    def unverified(self) -> tuple[ValueVerdict, ...]:
        """The pinned values that could not be checked."""
        return tuple(v for v in self.values if v.ok is None)

    @property
    def structural(self) -> bool:
        """Malformed call: unparseable, unknown tool, schema violation or argument type error."""
        return bool(self.issues) or is_structural_exception(self.exception)

    @property
    def ok(self) -> bool:
        """Answered without an exception."""
        return self.k_result is not None and self.exception is None

    @property
    def mutated(self) -> bool:
        """Whether the call changed any database."""
        return any(not c.empty for c in self.state_changes)


@dataclass(frozen=True, slots=True)
class Step:
    """A closed action a_t as judges see it."""

    t: int
    k_start: int
    k_end: int
    kind: str
    calls: tuple[CallFacts, ...]
    message: str | None
    settled: tuple[str, ...]
    anchor: bool = False

    def as_anchor(self) -> Step:
        """The same step marked as the window's dominator anchor (context only)."""
        return Step(self.t, self.k_start, self.k_end, self.kind, self.calls, self.message, self.settled, True)
