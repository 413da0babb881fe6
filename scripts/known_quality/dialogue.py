"""What the scripted user says, derived from the scenario's user-simulator instruction.

ToolSandbox tells its user simulator what to ask for in a SYSTEM -> USER message (after a
shared preamble and few-shot examples). A multi-turn task opens with a vague request; the
clean agent asks what is needed and the user answers with the instruction's request, in the
user's own voice. "After User B did so, ..." starts a later request, said after the agent's
next message. Sentences the simulator must keep to itself ("It should be ...", a fact
followed by "Do not leak this information") and notes about what it does not know are left
out. Each rule below is one row: a reader adds a row to add a case.
"""

from __future__ import annotations

import re

from dynsteer_hook.toolsandbox import _quiet  # noqa: F401 - must precede the tool_sandbox imports

from tool_sandbox.common.execution_context import DatabaseNamespace, RoleType
from tool_sandbox.common.scenario import Scenario
from tool_sandbox.scenarios.user_simulator_few_shot_examples import USER_INSTRUCTION

CLARIFY = "Sure. Could you tell me exactly what you would like me to do, with the details I need?"
DECLINE = "I cannot complete this request: a tool or a piece of information it needs is not available to me. Could you provide it, or do it another way?"
CLOSING = "Done: the task is complete."
GIVE_UP = "I am sorry, I could not complete this: the {tool} call keeps failing."

# A later request starts here (said after the agent's next message).
LATER_REQUEST = re.compile(r"\s*After User B did so,\s*", re.IGNORECASE)

# Sentences about what the simulator knows or must hide, not requests.
PRIVATE_SENTENCES = (
    re.compile(r"^You (do |don't |don )?(not )?(have|know|any)\b", re.IGNORECASE),
    re.compile(r"^You only know\b", re.IGNORECASE),
    re.compile(r"^It should (be|say)\b", re.IGNORECASE),
    re.compile(r"^Do not leak\b", re.IGNORECASE),
)
# A sentence right before "Do not leak this information." is the hidden fact itself.
HIDE_PREVIOUS = re.compile(r"^Do not leak\b", re.IGNORECASE)

# From the simulator's second person to the user's first person.
VOICE = (
    (re.compile(r"^(ask|tell) User B (to )?", re.IGNORECASE), ""),
    (re.compile(r"\byou \(User A\) are\b", re.IGNORECASE), "I am"),
    (re.compile(r"\basked you \(User A\)", re.IGNORECASE), "asked me"),
    (re.compile(r"\byour \(User A's\)", re.IGNORECASE), "my"),
    (re.compile(r"\(User A's\)", re.IGNORECASE), "my"),
    (re.compile(r"\byou \(User A\)", re.IGNORECASE), "I"),
    (re.compile(r"\bUser A's\b", re.IGNORECASE), "my"),
    (re.compile(r"\byour\b", re.IGNORECASE), "my"),
    (re.compile(r"\byou are\b", re.IGNORECASE), "I am"),
    (re.compile(r"\byou\b", re.IGNORECASE), "I"),
)

_SENTENCE = re.compile(r"(?<=[.!?])\s*(?=[A-Z])")


def instruction(scenario: Scenario) -> str:
    """The scenario's own part of the user-simulator instruction ("" when it has none)."""
    rows = scenario.starting_context.get_database(DatabaseNamespace.SANDBOX, get_all_history_snapshots=True).to_dicts()
    texts = [str(r["content"]) for r in rows if r["sender"] == RoleType.SYSTEM and r["recipient"] == RoleType.USER]
    return texts[-1].replace(USER_INSTRUCTION, "").strip() if texts else ""


def user_messages(scenario: Scenario) -> list[str]:
    """What the user already told the agent when the scenario starts."""
    rows = scenario.starting_context.get_database(DatabaseNamespace.SANDBOX, get_all_history_snapshots=True).to_dicts()
    return [str(r["content"]) for r in rows
            if r["sender"] == RoleType.USER and r["recipient"] == RoleType.AGENT and not r["visible_to"]]


def _in_user_voice(sentence: str) -> str:
    for pattern, replacement in VOICE:
        sentence = pattern.sub(replacement, sentence)
    sentence = re.sub(r"\s+", " ", sentence).strip()
    return sentence[:1].upper() + sentence[1:]


def _request(part: str) -> str:
    sentences = [s.strip() for s in _SENTENCE.split(part.strip()) if s.strip()]
    kept: list[str] = []
    for n, s in enumerate(sentences):
        if any(p.search(s) for p in PRIVATE_SENTENCES):
            continue
        if n + 1 < len(sentences) and HIDE_PREVIOUS.search(sentences[n + 1]) and n > 0:
            continue
        kept.append(_in_user_voice(s))
    return " ".join(kept)


def user_requests(text: str) -> list[str]:
    """The requests an instruction makes, in order, each in the user's voice."""
    return [r for r in (_request(p) for p in LATER_REQUEST.split(text)) if r]
