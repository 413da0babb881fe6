"""Hostile inputs aimed at time and memory: every case finishes and gives the right answer.

Each table is one kind of input; add a row to add a case. The work of every row runs in a
worker process with a generous time limit, so a regression (a backtracking regex engine, a
quadratic structure) fails the row instead of hanging the suite.

* ``CATASTROPHIC``: a generated family of regexes with nested quantifiers and overlapping
  alternations over ``a``, each matching exactly a+ or a*, searched in long runs of ``a``
  with and without a final ``!`` (the classic ``(a+)+$`` against 34 ``a`` and ``!`` is one);
* ``WORDY``: the same hazard with word and space classes, answers derived by hand;
* ``REJECTED``: patterns RE2 cannot run; validation names the milestone or minefield in one
  sentence, and ``dynsteer evaluate`` exits 2 with it;
* ``HUGE_VALUES``: megabyte arguments and results through every predicate operator;
* ``LONG_RUNS``: blueprints and traces of tens of thousands of elements through the evaluator;
* ``LONG_REQUESTS``: requests of a hundred thousand characters shaped against the generator's
  own readers (runs of spaces, of hyphenated capitals, of digits), read with the right answer.
"""

from __future__ import annotations

import json
import multiprocessing
from collections.abc import Callable, Iterator
from multiprocessing.pool import Pool
from pathlib import Path
from typing import Any

import pytest

from dynsteer_hook.cli import main
from dynsteer_hook.compile.generator.instruction import read_instruction
from dynsteer_hook.model.blueprint import Blueprint, Edge, Milestone, Minefield, StatePredicate, ToolSpec
from dynsteer_hook.model.config import EvaluatorConfig
from dynsteer_hook.model.contract import validate_blueprint
from dynsteer_hook.model.errors import BlueprintError, Halt
from dynsteer_hook.model.events import AgentMessage, Event, ToolCall, ToolResult, UserMessage
from dynsteer_hook.model.predicates import ArgPredicate, predicate_holds
from dynsteer_hook.runtime.evaluator import Evaluator
from dynsteer_hook.runtime.grounding import TextGrounding

LIMIT = 120.0  # seconds per row: generous, the rows take well under a second to a few seconds


# -- the guard ---------------------------------------------------------------------------


class Guard:
    """Runs a module-level function of this file in a worker process, within a time limit."""

    def __init__(self) -> None:
        self._pool: Pool | None = None

    def __call__(self, fn: Callable[..., Any], *args: Any) -> Any:
        if self._pool is None:
            self._pool = multiprocessing.get_context("spawn").Pool(1)
        pending = self._pool.apply_async(fn, args)
        try:
            return pending.get(LIMIT)
        except multiprocessing.TimeoutError:
            self.close()  # the worker is stuck: kill it, the next row gets a fresh one
            pytest.fail(f"{fn.__name__}{args!r:.120} did not finish within {LIMIT:g} s")

    def close(self) -> None:
        if self._pool is not None:
            self._pool.terminate()
            self._pool.join()
            self._pool = None


@pytest.fixture(scope="module")
def guard() -> Iterator[Guard]:
    g = Guard()
    try:
        yield g
    finally:
        g.close()


# -- catastrophic regexes: a generated family -------------------------------------------

# (pattern over "a", language): every inner form and wrapper matches exactly a+ ("plus") or a* ("star").
INNER = [
    ("a+", "plus"), ("a*", "star"), ("(?:a|a)+", "plus"), ("(?:a|aa)+", "plus"), ("(?:aa|a)+", "plus"),
    ("(?:a?)+", "star"), ("(?:a*)*", "star"), ("(?:a+)*", "star"), ("[a-z]+", "plus"), ("\\w+", "plus"),
]
WRAPS = [("({})+", None), ("({})*", "star"), ("(?:{}){{1,25}}", None), ("(?:{}|a)+", None)]  # 25 x 25 stays within RE2's 1000 repeats


def _wrap(inner: tuple[str, str], wrap: tuple[str, str | None]) -> tuple[str, str]:
    return wrap[0].format(inner[0]), wrap[1] or inner[1]


def _family() -> list[tuple[str, str]]:
    once = [_wrap(i, w) for i in INNER for w in WRAPS]
    twice = [_wrap(_wrap(i, w1), w2) for i in INNER[:4] for w1 in WRAPS for w2 in WRAPS]
    return once + twice


# (prefix, suffix, tail of the text, answer for a+, answer for a*)
ANCHORS = [
    ("", "$", "!", False, True),  # nothing of a+ ends the text; a* matches empty at the end
    ("^", "$", "!", False, False),
    ("", "!", "!", True, True),
    ("^", "$", "", True, True),
    ("", "b", "!", False, False),
]
LENGTHS = [34, 100_000]
CATASTROPHIC = _family()


def regex_answers(pattern: str) -> list[bool]:
    """Search ``prefix + pattern + suffix`` in ``'a' * n + tail`` for every anchor row and length."""
    return [
        predicate_holds(ArgPredicate(arg="x", op="regex", value=pre + pattern + suf), {"x": "a" * n + tail})
        for pre, suf, tail, _, _ in ANCHORS
        for n in LENGTHS
    ]


@pytest.mark.parametrize(("pattern", "language"), CATASTROPHIC, ids=[p for p, _ in CATASTROPHIC])
def test_catastrophic_regex_family_is_linear_and_right(guard: Guard, pattern: str, language: str) -> None:
    """Nested quantifiers and overlapping alternations finish at once on long inputs, with the right answer."""
    expected = [(plus if language == "plus" else star) for _, _, _, plus, star in ANCHORS for _ in LENGTHS]
    assert guard(regex_answers, pattern) == expected


# (pattern, text, answer): hazards beyond a single letter, answers derived by hand
WORDY = [
    ("(\\w+\\s?)+$", "word " * 5_000 + "!", False),
    ("(\\w+\\s?)+$", "word " * 5_000 + "end", True),
    ("^(\\d+)+$", "1" * 100_000 + "x", False),
    ("(x+x+)+y", "x" * 100_000, False),
    ("(.*a){20}", "a" * 19 + "b" * 100_000, False),
    ("(.*a){20}", "a" * 20 + "b" * 100_000, True),
    ("^(([a-z])+.)+[A-Z]([a-z])+$", "a" * 100_000 + "!", False),
    ("(a|b|ab)*c", "ab" * 100_000, False),
    ("(a|b|ab)*c", "ab" * 100_000 + "c", True),
]


def regex_answer(pattern: str, text: str) -> bool:
    """One search with a blueprint pattern."""
    return predicate_holds(ArgPredicate(arg="x", op="regex", value=pattern), {"x": text})


@pytest.mark.parametrize(("pattern", "text", "answer"), WORDY, ids=[p for p, _, _ in WORDY])
def test_word_and_class_hazards_are_linear_and_right(guard: Guard, pattern: str, text: str, answer: bool) -> None:
    """Classic catastrophic shapes over words, digits and wildcards give the right answer on 100k-character inputs."""
    assert guard(regex_answer, pattern, text) is answer


# -- patterns RE2 rejects ----------------------------------------------------------------

# (operand, what RE2 or the rule says)
REJECTED: list[tuple[Any, str]] = [
    ("(a)\\1", "invalid escape sequence"),
    ("(?P<n>a)(?P=n)", "invalid perl operator"),
    ("(?=a)a", "invalid perl operator"),
    ("(?!a)a", "invalid perl operator"),
    ("(?<=a)b", "invalid perl operator"),
    ("(?<!a)b", "invalid perl operator"),
    ("(?>a+)", "invalid perl operator"),
    ("a++", "bad repetition operator"),
    ("(?(1)a|b)", "invalid perl operator"),
    ("(?R)", "invalid perl operator"),
    ("a{1001}", "invalid repetition size"),
    ("\\pL{1000}", "pattern too large"),
    ("a" * 1_000_000, "pattern too large"),
    ("[a", "missing ]"),
    ("\\Z", "invalid escape sequence"),
    ("\ud800", "not valid Unicode"),
    (123, "must be a string"),
]
PLACES = ["milestone", "state", "minefield"]

_CATALOG = (
    ToolSpec(name="send", description="send", parameters={"type": "object", "properties": {"to": {"type": "string"}}}),
)


def _with_pattern(operand: Any, place: str) -> Blueprint:
    pred = ArgPredicate(arg="to", op="regex", value=operand)
    m = Milestone(id="m1", tool="send", args=(pred,) if place == "milestone" else ())
    if place == "state":
        m = Milestone(id="m1", tool="send", state=StatePredicate(namespace="MESSAGING", where=(ArgPredicate(arg="to", op="regex", value=operand),)))
    mines = (Minefield(id="f1", tool="send", args=(pred,)),) if place == "minefield" else ()
    return Blueprint(task="t", milestones=(m,), minefields=mines, catalog=_CATALOG)


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize(("operand", "why"), REJECTED, ids=[repr(o)[:30] for o, _ in REJECTED])
def test_patterns_re2_cannot_run_are_contract_violations(operand: Any, why: str, place: str) -> None:
    """Validation reports one violation naming the node and RE2's reason; the evaluator refuses the blueprint."""
    bp = _with_pattern(operand, place)
    violations = validate_blueprint(bp)
    assert [(v.rule, v.node) for v in violations] == [("regex", "f1" if place == "minefield" else "m1")]
    text = str(violations[0])
    assert why in text and "\n" not in text and len(text) < 400
    with pytest.raises(BlueprintError, match="rule regex"):
        Evaluator(bp)


@pytest.mark.usefixtures("core_cli")
@pytest.mark.parametrize(("operand", "why"), REJECTED[:4] + REJECTED[-3:], ids=[repr(o)[:30] for o, _ in REJECTED[:4] + REJECTED[-3:]])
def test_evaluate_refuses_an_unrunnable_pattern_in_one_sentence(
    operand: Any, why: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``dynsteer evaluate`` with such a blueprint: exit 2, one line naming the minefield, no traceback."""
    bp = tmp_path / "bp.json"
    bp.write_text(json.dumps(_with_pattern(operand, "minefield").model_dump(mode="python")))  # json escapes a lone surrogate
    events = tmp_path / "e.jsonl"
    events.write_text(json.dumps({"kind": "user_message", "content": "hi"}) + "\n")
    assert main(["evaluate", "--blueprint", str(bp), "--events", str(events), "--report", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    if isinstance(operand, str) and any("\ud800" <= ch <= "\udfff" for ch in operand):
        why = "lone UTF-16 surrogate"  # refused by the one JSON parser, before any pattern is compiled
        assert len(err.splitlines()) == 1 and why in err and "Traceback" not in err
        return
    assert len(err.splitlines()) == 1 and "'f1'" in err and why in err and "Traceback" not in err


# -- huge values ---------------------------------------------------------------------------

MB = 1_000_000


def huge_value_answer(case: str) -> bool:
    """Build a megabyte-sized input for ``case`` and evaluate its predicate."""
    big = "a" * (10 * MB)
    if case == "regex-long-run":
        return predicate_holds(ArgPredicate(arg="x", op="regex", value="(a+)+$"), {"x": big + "!"})
    if case == "regex-anchored-whole":
        return predicate_holds(ArgPredicate(arg="x", op="regex", value="^a+$"), {"x": big})
    if case == "contains-at-the-end":
        return predicate_holds(ArgPredicate(arg="x", op="contains", value="NEEDLE"), {"x": big + "needle"})
    if case == "eq-huge-versus-short":
        return predicate_holds(ArgPredicate(arg="x", op="eq", value="a"), {"x": big})
    if case == "eq-long-lists":
        items = list(range(200_000))
        return predicate_holds(ArgPredicate(arg="x", op="eq", value=items), {"x": list(items)})
    if case == "one-of-many-options":
        return predicate_holds(ArgPredicate(arg="x", op="one_of", value=[f"v{i}" for i in range(200_000)]), {"x": "V199999"})
    if case == "grounded-in-a-huge-result":
        g = TextGrounding()
        g.add_value({"blob": big, "phone": "+1 (245) 334-4098"})
        return predicate_holds(ArgPredicate(arg="x", op="grounded", value=True), {"x": "+12453344098"}, g)
    if case == "never-seen-in-a-huge-result":
        g = TextGrounding()
        g.add_value({"blob": big})
        return predicate_holds(ArgPredicate(arg="x", op="grounded", value=True), {"x": "a" * 1000 + "b"}, g)
    raise ValueError(case)


HUGE_VALUES = [
    ("regex-long-run", False),
    ("regex-anchored-whole", True),
    ("contains-at-the-end", True),
    ("eq-huge-versus-short", False),
    ("eq-long-lists", True),
    ("one-of-many-options", True),
    ("grounded-in-a-huge-result", True),
    ("never-seen-in-a-huge-result", False),
]


@pytest.mark.parametrize(("case", "answer"), HUGE_VALUES, ids=[c for c, _ in HUGE_VALUES])
def test_huge_values_through_every_operator(guard: Guard, case: str, answer: bool) -> None:
    """Ten-megabyte strings, 200k-element lists and option sets: each predicate answers correctly and in linear time."""
    assert guard(huge_value_answer, case) is answer


# -- long runs -----------------------------------------------------------------------------

PATIENT = EvaluatorConfig(n_stag=10**9, low_score_patience=10**9, structural_patience=10**9)
_OP = ToolSpec(name="op", description="op", parameters={"type": "object", "properties": {"x": {"type": "string"}}})
_LOOKUP = ToolSpec(name="lookup", description="find", parameters={"type": "object", "properties": {"name": {"type": "string"}}})
_SEND = ToolSpec(name="send", description="send", parameters={"type": "object", "properties": {"to": {"type": "string"}}})
_NEVER_SHOWN = Minefield(id="stranger", tool="send", args=(ArgPredicate(arg="to", op="grounded", value=False),), fatal=True)


def _blueprint(n: int, edges: list[tuple[int, int]], minefields: tuple[Minefield, ...] = ()) -> Blueprint:
    ms = tuple(Milestone(id=f"m{i}", tool="op", args=(ArgPredicate(arg="x", op="eq", value=f"v{i}"),)) for i in range(n))
    return Blueprint(task="long", milestones=ms, edges=tuple(Edge(source=f"m{u}", target=f"m{v}") for u, v in edges),
                     minefields=minefields, catalog=(_OP, _LOOKUP, _SEND))


def _settle(i: int) -> list[Event]:
    return [ToolCall(f"c{i}", "op", {"x": f"v{i}"}), ToolResult(f"c{i}", "ok")]


def _noise(i: int) -> list[Event]:
    """Six events: a request naming a person, a lookup returning a number, a send to it reformatted, a reply."""
    phone = f"+1 (415) {i % 1000:03d}-{i % 10000:04d}"
    return [
        UserMessage(f"Text person {i} please"),
        ToolCall(f"l{i}", "lookup", {"name": f"person {i}"}), ToolResult(f"l{i}", [{"name": f"person {i}", "phone": phone}]),
        ToolCall(f"s{i}", "send", {"to": phone.replace(" ", "")}), ToolResult(f"s{i}", {"sent": True}),
        AgentMessage("done"),
    ]


def long_run(case: str) -> dict[str, Any]:
    """Evaluate the run of ``case``; return what the report says."""
    if case == "chain-10000-short-trace":
        bp, events = _blueprint(10_000, [(i, i + 1) for i in range(9_999)]), [UserMessage("go"), *(e for i in range(5) for e in _settle(i))]
    elif case == "chain-3000-settled":
        bp, events = _blueprint(3_000, [(i, i + 1) for i in range(2_999)]), [e for i in range(3_000) for e in _settle(i)]
    elif case == "wide-3000-settled":
        bp, events = _blueprint(3_000, []), [e for i in reversed(range(3_000)) for e in _settle(i)]
    elif case == "diamonds-3001-settled":
        edges = [e for top in range(0, 2_998, 3) for e in ((top, top + 1), (top, top + 2), (top + 1, top + 3), (top + 2, top + 3))]
        bp, events = _blueprint(3_001, edges), [e for i in range(3_001) for e in _settle(i)]
    elif case == "events-60000-grounded-sends":
        bp = _blueprint(20, [(i, i + 1) for i in range(19)], (_NEVER_SHOWN,))
        events = []
        for block in range(10_000):
            events += _noise(block)
            if block % 500 == 499:
                events += _settle(block // 500)
    elif case == "events-20000-sends-to-strangers":  # each send names a number never shown: a warning each, no halt
        bp = _blueprint(1, [], (_NEVER_SHOWN.model_copy(update={"fatal": False}),))
        events = [e for i in range(10_000) for e in (ToolCall(f"s{i}", "send", {"to": f"+1999{i:07d}"}), ToolResult(f"s{i}", "ok"))]
    elif case == "events-60000-strangers-bulky-results":  # as above, with 200-byte results: the corpus grows with the run
        bp = _blueprint(1, [], (_NEVER_SHOWN.model_copy(update={"fatal": False}),))
        pad = "delivery receipt " * 12
        events = [e for i in range(30_000) for e in (ToolCall(f"s{i}", "send", {"to": f"+1999{i:07d}"}), ToolResult(f"s{i}", f"{pad}{i}"))]
    elif case == "events-60000-distinct-failing-calls":  # each lookup fails once: the most-failed call is asked after each action
        bp = _blueprint(1, [])
        events = [e for i in range(30_000) for e in (ToolCall(f"l{i}", "lookup", {"name": f"person {i}"}),
                                                     ToolResult(f"l{i}", None, exception="LookupError: no such person"))]
    else:
        raise ValueError(case)
    ev = Evaluator(bp, PATIENT)
    halted = None
    try:
        for e in events:
            ev.observe(e)
    except Halt as h:
        halted = h.stop.reason
    report = ev.finish()
    return {"outcome": report.outcome, "halted": halted, "settled": len(report.settled), "k": report.k, "t": report.t}


LONG_RUNS = [
    ("chain-10000-short-trace", {"outcome": "incomplete", "halted": None, "settled": 5, "k": 11, "t": 5}),
    ("chain-3000-settled", {"outcome": "completed", "halted": None, "settled": 3_000, "k": 6_000, "t": 3_000}),
    ("wide-3000-settled", {"outcome": "completed", "halted": None, "settled": 3_000, "k": 6_000, "t": 3_000}),
    ("diamonds-3001-settled", {"outcome": "completed", "halted": None, "settled": 3_001, "k": 6_002, "t": 3_001}),
    ("events-60000-grounded-sends", {"outcome": "completed", "halted": None, "settled": 20, "k": 60_040, "t": 30_020}),
    ("events-20000-sends-to-strangers", {"outcome": "incomplete", "halted": None, "settled": 0, "k": 20_000, "t": 10_000}),
    ("events-60000-strangers-bulky-results", {"outcome": "incomplete", "halted": None, "settled": 0, "k": 60_000, "t": 30_000}),
    ("events-60000-distinct-failing-calls", {"outcome": "incomplete", "halted": None, "settled": 0, "k": 60_000, "t": 30_000}),
]


@pytest.mark.parametrize(("case", "expected"), LONG_RUNS, ids=[c for c, _ in LONG_RUNS])
def test_long_runs_finish_with_the_right_report(guard: Guard, case: str, expected: dict[str, Any]) -> None:
    """Large blueprints and long traces are evaluated to the end with the right outcome, settlements and clocks."""
    assert guard(long_run, case) == expected


# -- long requests through the generator's readers -----------------------------------------

N = 100_000
LONG_REQUESTS: list[tuple[str, str, dict[str, Any]]] = [
    # A run of spaces before the reminder's end: the time tail is found once, not once per space.
    ("reminder-spaces", "Remind me to buy milk" + " " * N + "x", {"reminder_text": "buy milk" + " " * N + "x"}),
    ("reminder-spaces-then-time", "Remind me to buy milk" + " " * N + "tomorrow", {"reminder_text": "buy milk"}),
    # Hyphenated capitals never followed by a second word: no capitalised name, no quadratic retries.
    ("hyphenated-capitals", "Ab-" * N, {"place": None}),
    # A digit run with no decimal point: no coordinates, and no retry from every digit.
    ("digit-run", "1" * N + "x", {"coords": ()}),
    ("digit-run-then-decimals", "1" * N + ".5 and 2.25", {"coords": ("1" * N + ".5", "2.25")}),
]


def instruction_answer(text: str, fields: tuple[str, ...]) -> dict[str, Any]:
    reading = read_instruction([("user", text)])
    return {f: getattr(reading, f) for f in fields}


@pytest.mark.parametrize(("case", "text", "expected"), LONG_REQUESTS, ids=[c for c, _, _ in LONG_REQUESTS])
def test_long_requests_are_read_in_linear_time_and_right(guard: Guard, case: str, text: str, expected: dict[str, Any]) -> None:
    """The generator's readers finish on long adversarial requests with the answer a short request gets."""
    assert guard(instruction_answer, text, tuple(expected)) == expected
