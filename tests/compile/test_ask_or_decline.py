"""The ask-or-decline predicate of tasks that cannot be carried out: which messages to the user settle it.

Table-driven: add a row to add a case. Messages are evaluated through the blueprint
predicate itself (``content regex ASK_OR_DECLINE``), as the evaluator evaluates them.
"""

from __future__ import annotations

import pytest
from needs import need_module

from dynsteer_hook.compile.generator.planner import ASK_OR_DECLINE
from dynsteer_hook.model.predicates import ArgPredicate, predicate_holds

PREDICATE = ArgPredicate(arg="content", op="regex", value=ASK_OR_DECLINE)

ASKS_OR_DECLINES = [
    "I cannot send the message: I have no way to find his phone number. Could you give me his number?",
    "I can't find that contact with the tools I have.",
    "I can\u2019t do that, sorry.",
    "Sorry, I'm unable to look up where you are.",
    "I am not able to remove that contact.",
    "That is not possible with the tools available to me.",
    "I don't have access to your location.",
    "I do not know the recipient's number.",
    "I couldn't determine the current date.",
    "There is no way for me to read the temperature forecast.",
    "I have no access to a weather service.",
    "I'm missing the information needed to do this.",
    "Could you please provide the phone number?",
    "Would you tell me which contact you mean?",
    "Please share your current address.",
    "Please let me know the date you have in mind.",
    "What is his phone number?",
    "Which city are you in right now?",
    "Do you have an email address for her?",
    "DONE? No: I CANNOT send it without a number.",
]

DOES_NOT = [
    "",
    "   ",
    "I have completed the task.",
    "Done.",
    "Done!",
    "Message sent!",
    "Your message to Fredrik Thordendal has been sent saying: How's the new album coming along",
    "The contact has been removed.",
    "Hello! How can I help you today?",
    "Sent. Let me know if you need anything else.",
    "Is there anything else I can help with?",
    "What else can I do for you?",
    "It is sunny and 24 degrees in your city.",
    "ok",
    "Task finished successfully; everything went well.",
]


@pytest.mark.parametrize("message", ASKS_OR_DECLINES)
def test_a_clarifying_question_or_a_refusal_settles_it(message: str) -> None:
    """A message that asks the user for what is missing, or declines and says why, satisfies the predicate."""
    assert predicate_holds(PREDICATE, {"content": message})


@pytest.mark.parametrize("message", DOES_NOT)
def test_an_empty_irrelevant_or_done_message_does_not(message: str) -> None:
    """An empty message, small talk or a claim of completion does not satisfy the predicate."""
    assert not predicate_holds(PREDICATE, {"content": message})


def test_the_pattern_uses_no_backtracking_only_syntax() -> None:
    """No look-around or back-reference, so a linear-time engine (RE2) accepts the pattern as well."""
    for construct in ("(?=", "(?!", "(?<=", "(?<!", "\\1", "(?P="):
        assert construct not in ASK_OR_DECLINE
    re2 = need_module("re2", "google-re2 is not installed (a dependency: pip install -e .)")
    assert re2.compile(ASK_OR_DECLINE).search("Could you give me his number?") is not None
