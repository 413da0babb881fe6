"""Values the user's words fix: moments resolved on the rollout's clock, dictated words, the year of a holiday, searches
for what is upcoming; each judged right, wrong (with what was expected) or not verified."""

from __future__ import annotations

import datetime as dt

import pytest
from builders import act, blueprint, run, tool
from hypothesis import given
from hypothesis import strategies as st

from dynsteer_hook.model.blueprint import Milestone, Minefield, ValuePin
from dynsteer_hook.model.events import AgentMessage, Event, StateChange, UserMessage
from dynsteer_hook.model.when import describe, find_moment, resolve
from dynsteer_hook.runtime.values import ValueChecks, clock_reading

UTC = dt.timezone.utc
WED = dt.datetime(2026, 8, 5, 4, 48, 20, tzinfo=UTC).timestamp()  # a Wednesday
FRI = dt.datetime(2026, 8, 7, 4, 48, 20, tzinfo=UTC).timestamp()


def at(y: int, m: int, d: int, h: int = 17, minute: int = 0, offset: float = 0.0) -> float:
    return dt.datetime(y, m, d, h, minute, tzinfo=dt.timezone(dt.timedelta(seconds=offset))).timestamp()


@pytest.mark.parametrize(("text", "now", "expected"), [
    ("Remind me to buy chocolate milk tomorrow 5PM", WED, at(2026, 8, 6)),
    ("Remind me to buy chocolate milk next Friday 5PM", WED, at(2026, 8, 7)),
    ("next Friday 5PM", FRI, at(2026, 8, 7)),  # on a Friday, ToolSandbox's next Friday is today
    ("this friday at 5 pm", WED, at(2026, 8, 7)),
    ("Remind me to buy chocolate milk 3/22/2024 5PM", WED, at(2024, 3, 22)),
    ("on March 22 at 17:30", WED, at(2026, 3, 22, 17, 30)),
    ("in two weeks at noon", WED, at(2026, 8, 19, 12)),
    ("the day after tomorrow at 9:15am", WED, at(2026, 8, 7, 9, 15)),
    ("Tomorrow 5PM.", WED, at(2026, 8, 6)),
])
def test_stated_moments_resolve_on_the_clock(text: str, now: float, expected: float) -> None:
    moment = find_moment(text)
    assert moment is not None
    assert resolve(moment, now) == expected


def test_a_moment_resolves_in_the_clock_s_own_time_zone() -> None:
    moment = find_moment("tomorrow 5PM")
    assert moment is not None
    # 23:30 UTC on Wednesday is already Thursday 07:30 in UTC+8: tomorrow is Friday there.
    now = dt.datetime(2026, 8, 5, 23, 30, tzinfo=UTC).timestamp()
    assert resolve(moment, now, 8 * 3600) == at(2026, 8, 7, offset=8 * 3600)


def test_no_day_or_no_time_is_no_moment() -> None:
    assert find_moment("Remind me to buy chocolate milk") is None
    moment = find_moment("Remind me tomorrow")
    assert moment is not None and moment.hour is None and resolve(moment, WED) is None
    assert find_moment("at 13/45/2024 5PM") is None or find_moment("at 13/45/2024 5PM").day[0] != "date"  # type: ignore[union-attr]


@given(st.text(max_size=200))
def test_any_text_reads_without_raising(text: str) -> None:
    moment = find_moment(text)
    if moment is not None:
        resolve(moment, WED)


def test_clock_readings_are_argument_free_timestamps() -> None:
    assert clock_reading({}, WED) == WED
    assert clock_reading({"timestamp": WED}, WED) is None
    assert clock_reading({}, 17) is None and clock_reading({}, True) is None and clock_reading({}, float("nan")) is None


def checks(now: float | None = WED, *users: str) -> ValueChecks:
    c = ValueChecks()
    if now is not None:
        c.wall_clock(now)
    for u in users:
        c.user(u)
    return c


def test_a_week_late_reminder_is_wrong_and_says_what_was_meant() -> None:
    pin = ValuePin(arg="reminder_timestamp", kind="moment", words="next Friday 5PM")
    [right] = checks().verdicts((pin,), {"reminder_timestamp": at(2026, 8, 7)})
    [late] = checks().verdicts((pin,), {"reminder_timestamp": at(2026, 8, 14)})
    assert right.ok is True
    assert late.ok is False and describe(at(2026, 8, 7)) in late.detail and "a week late" in late.detail


def test_the_agent_s_own_clock_reading_wins_over_the_start() -> None:
    c = checks(WED)
    c.reading(FRI)
    [v] = c.verdicts((ValuePin(arg="t", kind="moment", words="tomorrow 5PM"),), {"t": at(2026, 8, 8)})
    assert v.ok is True and "first clock reading" in v.detail


def test_a_later_user_turn_states_the_moment() -> None:
    pin = ValuePin(arg="t", kind="moment")
    assert checks(WED).verdicts((pin,), {"t": at(2026, 8, 6)})[0].ok is None  # nobody said when yet
    said = checks(WED, "Remind me to buy milk", "Tomorrow 5PM")
    assert said.verdicts((pin,), {"t": at(2026, 8, 6)})[0].ok is True
    # "tomorrow" read as the same time tomorrow, not at 5PM
    wrong = said.verdicts((pin,), {"t": WED + 86400})[0]
    assert wrong.ok is False and "another hour" in wrong.detail


def test_without_a_clock_a_moment_is_not_verified() -> None:
    [v] = checks(None).verdicts((ValuePin(arg="t", kind="moment", words="tomorrow 5PM"),), {"t": at(2026, 8, 6)})
    assert v.ok is None and "clock is unknown" in v.detail


def test_dictated_words_and_scaffolding() -> None:
    pin = ValuePin(arg="content", kind="words", words="buy chocolate milk")
    assert checks().verdicts((pin,), {"content": "Buy chocolate milk"})[0].ok is True
    assert checks().verdicts((pin,), {"content": "Chocolate milk"})[0].ok is True
    assert checks().verdicts((pin,), {"content": "Buy milk"})[0].ok is False
    later = ValuePin(arg="content", kind="words")
    empty = checks(WED, "Add a reminder at 3/22/2024 5PM").verdicts((later,), {"content": "Reminder at 3/22/2024 5PM"})[0]
    assert empty.ok is False and "says nothing" in empty.detail
    dictated = checks(WED, "Add a reminder at 5PM", "It should say water the plants").verdicts((later,), {"content": "Water the plants"})
    assert dictated[0].ok is True
    paraphrase = checks(WED, "Add a reminder at 5PM", "Plants need water").verdicts((later,), {"content": "Irrigate greenery"})
    assert paraphrase[0].ok is None


def test_a_holiday_year_the_user_did_not_name_is_this_year() -> None:
    pin = ValuePin(arg="year", kind="year")
    assert checks().verdicts((pin,), {"holiday_name": "Christmas Day"})[0].ok is True
    assert checks().verdicts((pin,), {"year": 2026})[0].ok is True
    wrong = checks().verdicts((pin,), {"year": 2024})[0]
    assert wrong.ok is False and "2026" in wrong.detail


def test_an_upcoming_search_may_not_end_now_or_start_in_the_past() -> None:
    lower = ValuePin(arg="lo", kind="from_now")
    upper = ValuePin(arg="hi", kind="beyond_now")
    assert checks().verdicts((lower, upper), {"lo": WED})[0].ok is True
    assert checks().verdicts((lower, upper), {"hi": WED})[1].ok is False  # ends now: only the past
    assert checks().verdicts((lower, upper), {"lo": WED - 86400})[0].ok is False
    assert checks().verdicts((lower, upper), {"lo": WED, "hi": WED + 7 * 86400})[1].ok is True


# ---- in the evaluator ---------------------------------------------------------------------------------------------

REMIND = blueprint(["add"], milestones=[Milestone(
    id="add", tool="add_reminder", values=(ValuePin(arg="reminder_timestamp", kind="moment", words="next Friday 5PM"),
                                           ValuePin(arg="content", kind="words", words="buy chocolate milk")))],
    extra_tools=[tool("add_reminder", content="string", reminder_timestamp="number"), tool("get_now")])


def _remind(*stamps: float, clock: bool = True) -> list[Event]:
    events: list[Event] = [UserMessage("Remind me to buy chocolate milk next Friday 5PM")]
    if clock:
        events += act("c", "get_now", {}, value=WED)
    for i, stamp in enumerate(stamps):
        events += act(f"r{i}", "add_reminder", {"content": "Buy chocolate milk", "reminder_timestamp": stamp}, value="id")
    return [*events, AgentMessage("Done.")]


def test_a_wrong_value_does_not_reach_the_milestone_and_is_the_first_error() -> None:
    r = run(REMIND, _remind(at(2026, 8, 14)))
    assert r.report.unsettled == ["add"] and r.report.score == 0.0
    fe = r.report.first_error
    assert fe is not None and fe.cause == "wrong_value" and "2026-08-07" in (fe.detail or "") and fe.dimension == "correctness"


def test_a_corrected_value_settles_later_and_the_wrong_one_stays_the_recovered_first_error() -> None:
    r = run(REMIND, _remind(at(2026, 8, 14), at(2026, 8, 7)))
    assert r.report.settled == ["add"]
    fe = r.report.first_error
    assert fe is not None and fe.cause == "wrong_value" and fe.recovered


def test_a_right_value_settles_with_its_check_in_the_rationale() -> None:
    r = run(REMIND, _remind(at(2026, 8, 7)))
    assert r.report.settled == ["add"] and r.report.first_error is None
    assert "by the agent's first clock reading" in r.report.stages[0].rationale["correctness"]


def test_a_value_that_cannot_be_checked_is_never_a_confident_pass() -> None:
    r = run(REMIND, _remind(at(2026, 8, 7), clock=False))  # no clock reading and no clock from the driver
    stage = r.report.stages[0]
    assert r.report.settled == ["add"] and stage.scores["correctness"] <= 0.85 and stage.uncertainty["correctness"] >= 0.5
    assert "not verified" in stage.rationale["correctness"]
    r = run(REMIND, _remind(at(2026, 8, 7), clock=False), wall_clock=WED)
    assert r.report.stages[0].scores["correctness"] == 1.0


def test_emptying_a_field_the_user_did_not_ask_to_clear_is_destructive() -> None:
    bp = blueprint(["find"], milestones=[Milestone(id="find", tool="search_contacts")],
                   extra_tools=[tool("search_contacts", person="string"), tool("modify_contact", person_id="string", phone_number="string")])
    blank = StateChange("CONTACT", updated=(({"person_id": "p1", "phone_number": "+12453344098"}, {"person_id": "p1", "phone_number": ""}),))
    for said, destructive in (("Delete Fredrik, I don't need him.", True), ("Then just delete the number.", False)):
        events = [UserMessage(said), *act("s", "search_contacts", {"person": "Fredrik"}, value=[{"person_id": "p1"}]),
                  *act("m", "modify_contact", {"person_id": "p1", "phone_number": ""}, value=None, changes=[blank]),
                  AgentMessage("Done.")]
        causes = [f.cause for f in run(bp, events).report.faults]
        assert ("destructive_edit" in causes) is destructive, (said, causes)


def test_a_read_only_minefield_stops_only_calls_on_inputs_the_agent_never_saw() -> None:
    mine = Minefield(id="mf:search", tool="search_reminder", reason="the time cannot be known", read_only=True)
    bp = blueprint(["ask"], milestones=[Milestone(id="ask", tool="@agent_message")], minefields=[mine],
                   extra_tools=[tool("search_reminder", content="string", creation_timestamp_lowerbound="number")])
    said = [UserMessage("What's my todo about tickets yesterday?")]
    assert run(bp, [*said, *act("a", "search_reminder", {}, value="ValueError")]).halt is None
    assert run(bp, [*said, *act("b", "search_reminder", {"content": "tickets"}, value=[])]).halt is None
    r = run(bp, [*said, *act("c", "search_reminder", {"creation_timestamp_lowerbound": 1785760961.78}, value=[])])
    assert r.halt is not None and r.halt.stop.reason == "fatal_minefield"
    strict = bp.model_copy(update={"minefields": (mine.model_copy(update={"read_only": False}),)})
    assert run(strict, [*said, *act("a", "search_reminder", {}, value=[])]).halt is not None


def test_arguments_only_a_made_up_value_fills_are_the_hazard_whatever_was_shown() -> None:
    """Without a clock, a time bound computed from a guessed date was shown to the agent (as a conversion's result),
    yet it is still made up: a minefield naming the time arguments stops any call passing one of them."""
    mine = Minefield(id="mf:search", tool="search_reminder", reason="the current time cannot be read", read_only=True,
                     any_args=("creation_timestamp_lowerbound",))
    bp = blueprint(["ask"], milestones=[Milestone(id="ask", tool="@agent_message")], minefields=[mine],
                   extra_tools=[tool("search_reminder", content="string", creation_timestamp_lowerbound="number"),
                                tool("to_timestamp", year="integer")])
    said = [UserMessage("What did I note yesterday?"), *act("t", "to_timestamp", {"year": 2024}, value=1734566400.0)]
    r = run(bp, [*said, *act("s", "search_reminder", {"creation_timestamp_lowerbound": 1734566400.0}, value=[])])
    assert r.halt is not None and r.halt.stop.reason == "fatal_minefield"
    assert run(bp, [*said, *act("s", "search_reminder", {"content": "tickets"}, value=[])]).halt is None


def test_an_unverified_value_is_judged_again_in_the_same_stage_when_a_judge_is_configured() -> None:
    from dynsteer_hook.judges.base import DimensionScore, JudgeRequest, Verdict
    from dynsteer_hook.model.config import EvaluatorConfig

    asked: list[tuple[str, tuple[str, ...]]] = []

    def tier2(request: JudgeRequest) -> Verdict:
        asked.append((request.goal.milestone, request.dimensions))
        return Verdict(scores={d: DimensionScore(0.3, 0.9, "the reminder is a week late") for d in request.dimensions},
                       judge="fake-llm", tier=2)

    r = run(REMIND, _remind(at(2026, 8, 7), clock=False), EvaluatorConfig(max_tier=2), judges={2: tier2})
    stage = r.report.stages[0]
    assert asked == [("add", ("correctness",))]
    assert stage.scores["correctness"] == 0.3 and stage.tiers["correctness"].used == 2
    r = run(REMIND, _remind(at(2026, 8, 7)), EvaluatorConfig(max_tier=2), judges={2: tier2})
    assert len(asked) == 1  # a value the rules checked needs no second look
