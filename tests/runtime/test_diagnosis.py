"""Diagnosis: a fault record on every faulty step, the first error whether or not its stage passed, repeated
failing calls stopped as a loop, questions to the user as progress, judged tails, and stop decisions that do not
depend on the order of parallel calls."""

from __future__ import annotations

from typing import Any

from builders import AgentMessage, UserMessage, act, blueprint, call, family, milestone, result, run, settle_events, stages, tool
from hypothesis import given, settings
from hypothesis import strategies as st

from dynsteer_hook.judges.base import DimensionScore, JudgeRequest, Verdict
from dynsteer_hook.model.config import EvaluatorConfig
from dynsteer_hook.model.events import StateChange
from dynsteer_hook.model.records import Report
from dynsteer_hook.report.markdown import render_markdown
from dynsteer_hook.runtime.evaluator import Evaluator
from dynsteer_hook.runtime.faults import asks_user

CHAIN = family("chain").blueprint()
PARALLEL = family("parallel").blueprint()
WITH_READ = blueprint(["a", "b"], [("a", "b")], extra_tools=[tool("op_read", x="string"), tool("op_other", x="string")])


# ---- fault records and the first error ----------------------------------------------------------------------


def test_a_malformed_call_then_the_right_one_is_the_first_error_of_a_passing_stage() -> None:
    """The stage recovers and passes, yet its malformed call is the first error, recorded as recovered."""
    events = [UserMessage("go"), *act("1", "op_a", {"x": 5}, exception="TypeError: x must be a string"), *settle_events(["a", "b"])[1:]]
    r = run(WITH_READ, events)
    assert r.halt is None and r.report.outcome == "completed"
    assert stages(r)["a"].composite >= 0.7  # the stage passed
    fe = r.report.first_error
    assert fe is not None and (fe.k, fe.t, fe.stage, fe.dimension, fe.cause, fe.recovered) == (2, 1, "a", "tool_compliance", "malformed", True)
    assert r.report.stage_error is None  # no stage failed and nothing stopped the run


def test_a_call_that_raises_at_run_time_is_a_tool_error() -> None:
    events = [UserMessage("go"), *act("1", "op_a", {"x": "nope"}, exception="ValueError: no such row"), *settle_events(["a"])[1:]]
    fe = run(WITH_READ, events).report.first_error
    assert fe is not None and (fe.t, fe.cause, fe.dimension) == (1, "tool_error", "tool_compliance")


def test_a_tool_no_milestone_uses_is_an_off_task_call() -> None:
    """A wrong tool that runs fine, then the right call: the wrong tool is the first error."""
    events = [UserMessage("go"), *act("1", "op_other", {"x": "home"}), *settle_events(["a", "b"])[1:]]
    r = run(WITH_READ, events)
    fe = r.report.first_error
    assert fe is not None and (fe.k, fe.t, fe.cause, fe.stage) == (2, 1, "off_task", "a")


def test_a_read_repeated_with_the_world_unchanged_is_redundant_but_not_after_a_change() -> None:
    """The same read again is a repeat only while no call changed the database in between."""
    read = [*act("r1", "op_read", {"x": "q"}), *act("r2", "op_read", {"x": "q"})]
    changed = StateChange(namespace="CONTACT", added=({"x": "a"},))
    a = act("c1", "op_a", {"x": "a"}, changes=[changed])
    b = act("c2", "op_b", {"x": "b"})
    r = run(WITH_READ, [UserMessage("go"), *read, *a, *b])
    assert [(f.t, f.cause) for f in r.report.faults] == [(1, "off_task"), (2, "repeat")]
    r = run(WITH_READ, [UserMessage("go"), *read[:2], *a, *act("r3", "op_read", {"x": "q"}), *b])
    assert [(f.t, f.cause) for f in r.report.faults] == [(1, "off_task"), (3, "off_task")]


def test_a_helper_whose_result_is_used_later_is_not_off_task() -> None:
    """A conversion or clock read whose result a later call or the final message uses is part of the work."""
    events = [UserMessage("go"), *act("h", "op_read", {"x": "now"}, value={"timestamp": 1733000000.0}),
              *act("1", "op_a", {"x": "a", "q": "1733000000"}), *act("h2", "op_other", {"x": "d"}, value=23),
              *act("2", "op_b", {"x": "b"}), AgentMessage("It is 23 days until then.")]
    r = run(WITH_READ, events)
    assert r.report.outcome == "completed" and r.report.faults == []


def test_a_change_no_milestone_names_is_a_side_effect_not_an_off_task_call() -> None:
    """Turning a service on that the blueprint does not name may be a prerequisite: no off-task fault, and the safety
    judge weighs it as a side effect of the stage whose window holds it."""
    change = [StateChange(namespace="SETTING", updated=(({"cellular": False}, {"cellular": True}),))]
    events = [UserMessage("go"), *act("m", "op_other", {"x": "on"}, value=None, changes=change), *settle_events(["a", "b"])[1:]]
    r = run(WITH_READ, events)
    assert r.report.faults == [] and stages(r)["a"].scores["safety"] < 1.0


CLOCK = act("h", "op_clock", {}, value=1733000000.5)
DATED = blueprint(["a"], extra_tools=[tool("op_clock"), tool("op_search", since="number", year="integer", q="string")],
                  milestones=[milestone("a", x="a")])


def _faults(r: Any) -> list[tuple[int, int, str]]:
    return [(f.k, f.t, f.cause) for f in r.report.faults]


def test_an_unused_clock_reading_is_off_task_even_where_the_task_takes_numbers() -> None:
    """Reading the clock and never using the reading (a search by recency that takes no bound) is the first error,
    blamed once the finished run shows nothing used it, whether or not the task's tools could take a number."""
    r = run(DATED, [UserMessage("what is my latest message?"), *CLOCK, *act("s", "op_search", {}, value=["msg-7"]),
                    *act("1", "op_a", {"x": "a"}), AgentMessage("msg-7 is the latest")])
    fe = r.report.first_error
    assert r.report.outcome == "completed" and fe is not None and (fe.k, fe.t, fe.cause, fe.dimension) == (2, 1, "off_task", "efficiency")
    assert [(f.tool, f.cause) for f in r.report.faults] == [("op_clock", "off_task")]  # the search's result was used
    texts = blueprint(["a"], extra_tools=[tool("op_clock")], milestones=[milestone("a", tool_name="op_text", x="a")])
    texts = texts.model_copy(update={"catalog": (tool("op_text", x="string"), tool("op_clock"))})
    assert _faults(run(texts, [UserMessage("go"), *CLOCK, *act("1", "op_text", {"x": "a"})])) == [(2, 1, "off_task")]


def test_a_clock_reading_a_later_call_or_message_uses_is_not_off_task() -> None:
    """The reading passed on as it is, a value computed from it (a bound a week earlier), or quoted to the user."""
    week_ago = 1733000000.5 - 7 * 86400
    for used in ([*act("s", "op_search", {"since": 1733000000.5}, value=["msg-7"]), AgentMessage("msg-7 is the latest")],
                 [*act("s", "op_search", {"since": week_ago}, value=["msg-7"]), AgentMessage("msg-7 is the latest")],
                 [AgentMessage("The clock reads 1733000000.5.")]):
        assert run(DATED, [UserMessage("go"), *CLOCK, *used, *act("1", "op_a", {"x": "a"})]).report.faults == []


def test_a_clock_reading_only_a_malformed_call_went_on_with_is_off_task() -> None:
    """The wrong tool, then a malformed call, then the right call: the refused call's number is no evidence that the
    reading was used, so the reading is the first error and the malformed call the next."""
    events = [UserMessage("go"), *CLOCK, *act("m", "op_a", {"x": 12345}, exception="TypeError: x must be a string"),
              *act("1", "op_a", {"x": "a"})]
    r = run(DATED, events)
    assert _faults(r) == [(2, 1, "off_task"), (4, 2, "malformed")]
    assert r.report.first_error is not None and (r.report.first_error.k, r.report.first_error.t) == (2, 1)


def test_a_parallel_call_cannot_use_the_reading_of_its_sibling() -> None:
    """A search issued together with the clock read never saw the reading; the same search one action later did."""
    search = ("s", "op_search", {"since": 1733000000.5 - 86400})
    together = [UserMessage("go"), call("h", "op_clock", {}), call(*search), result("h", 1733000000.5), result("s", ["msg-7"]),
                *act("1", "op_a", {"x": "a"}), AgentMessage("msg-7")]
    assert _faults(run(DATED, together)) == [(2, 1, "off_task")]
    after = [UserMessage("go"), *CLOCK, *act(*search, value=["msg-7"]), *act("1", "op_a", {"x": "a"}), AgentMessage("msg-7")]
    assert run(DATED, after).report.faults == []


def test_an_unused_clock_reading_is_not_blamed_in_a_run_cut_short() -> None:
    """A run that did not settle every milestone cannot tell a reading never used from one not used yet."""
    r = run(DATED, [UserMessage("go"), *CLOCK, *act("s", "op_search", {}, value=["m"])])
    assert r.report.outcome == "incomplete" and r.report.faults == []


def test_any_later_numeric_work_counts_as_using_a_clock_reading() -> None:
    """What an agent computes from the clock cannot be traced back to it: a later call passing a number (a bound a day
    before now, a fixed date, a year) counts as use; one passing only text does not."""
    def events(args: dict[str, Any]) -> list[Any]:
        return [UserMessage("go"), *CLOCK, *act("s", "op_search", args, value=["msg-0042"]), *act("1", "op_a", {"x": "a"}),
                AgentMessage("msg-0042 is the one")]

    for args in ({"since": 1733000000.5 - 86400}, {"since": 631152000.0}, {"year": 2024}):
        assert run(DATED, events(args)).report.faults == []
    assert _faults(run(DATED, events({"q": "dinner"}))) == [(2, 1, "off_task")]


def test_reading_the_state_a_milestone_writes_is_a_check_but_an_unrelated_status_is_off_task() -> None:
    """get_wifi_status before set_wifi_status checks what the task changes; get_cellular_status does not."""
    bp = blueprint(["w"], milestones=[milestone("w", tool_name="set_wifi_status", x="on")],
                   extra_tools=[tool("get_wifi_status"), tool("get_cellular_status")])
    done = act("1", "set_wifi_status", {"x": "on"})
    assert run(bp, [UserMessage("wifi on"), *act("s", "get_wifi_status", {}, value=False), *done]).report.faults == []
    r = run(bp, [UserMessage("wifi on"), *act("s", "get_cellular_status", {}, value=True), *done])
    assert [(f.t, f.cause) for f in r.report.faults] == [(1, "off_task")]


SWITCHED_ON = [StateChange(namespace="SETTING", updated=(({"wifi": False}, {"wifi": True}),))]
WIFI_OFF = blueprint(["a"], milestones=[milestone("a", x="a")], extra_tools=[
    tool("get_wifi_status"), tool("set_wifi_status", on="boolean"), tool("get_cellular_status"),
    tool("setting_4"), tool("setting_7", on="boolean")])  # the two wifi tools under scrambled names


def test_a_status_read_whose_state_a_write_after_a_later_user_turn_changes_is_a_check() -> None:
    """A multi-turn run: the agent reads a status no milestone writes, asks the user, and only after the user's answer
    switches it on and does the task. The write acted on the reading, so the run has no fault, as when the write comes
    at once; a failed or parallel write, or one of another state, does not use the reading."""
    def events(read: list[Any], write: list[Any]) -> list[Any]:
        return [UserMessage("Send a message"), *read, AgentMessage("Wi-Fi is off. May I switch it on?"),
                UserMessage("Yes, please, and the message says hi."), *write, *act("1", "op_a", {"x": "a"}), AgentMessage("Done.")]

    wifi, on = act("s", "get_wifi_status", {}, value=False), act("w", "set_wifi_status", {"on": True}, value=None, changes=SWITCHED_ON)
    r = run(WIFI_OFF, events(wifi, on))
    assert r.report.outcome == "completed" and r.report.faults == [] and r.report.first_error is None
    assert run(WIFI_OFF, [UserMessage("go"), *wifi, *on, *act("1", "op_a", {"x": "a"})]).report.faults == []
    scrambled = [call("s", "setting_4", {}, canonical_tool="get_wifi_status"), result("s", False)]
    scrambled_on = [call("w", "setting_7", {"on": True}, canonical_tool="set_wifi_status"), result("w", None, changes=SWITCHED_ON)]
    assert run(WIFI_OFF, events(scrambled, scrambled_on)).report.faults == []
    failed = act("w", "set_wifi_status", {"on": True}, exception="ValueError: no permission")
    parallel = [call("s", "get_wifi_status", {}), call("w", "set_wifi_status", {"on": True}), result("s", False),
                result("w", None, changes=SWITCHED_ON)]
    cellular = act("s", "get_cellular_status", {}, value=True)
    for read, write in ((wifi, failed), (parallel, []), (cellular, on)):
        assert [(f.tool, f.cause) for f in run(WIFI_OFF, events(read, write)).report.faults][:1] == [(read[0].tool, "off_task")]


def test_an_unused_helper_is_not_blamed_in_a_run_cut_short() -> None:
    """Whether a result would have been used is unknown when the run stopped first: the later loop is the first error."""
    events = [UserMessage("go"), *act("h", "op_read", {"x": "now"}, value=1733000000), *_failing(4)]
    r = run(WITH_READ, events)
    fe = r.report.first_error
    assert r.report.halted and fe is not None and (fe.t, fe.cause) == (2, "tool_error")


# A blueprint naming a step the task does not need (c): a run that does the task leaves it unsettled.
WITH_EXTRA = blueprint(["a", "b", "c"], [("a", "b")], extra_tools=[tool("op_read", x="string"), tool("op_other", x="string")])
WRONG_THEN_MALFORMED = [UserMessage("go"), *act("w", "op_other", {"x": "home"}, value=0.0),
                        *act("m", "op_a", {"x": 5}, exception="TypeError: x must be a string"), *settle_events(["a", "b"])[1:]]


def test_an_unused_reading_is_blamed_in_a_run_the_agent_ended_without_settling_every_milestone() -> None:
    """A wrong read, a malformed call, then the work done and the agent's closing message: the blueprint's extra step
    leaves the run incomplete, yet nothing can use the read's result any more, so the read is the first error."""
    r = run(WITH_EXTRA, [*WRONG_THEN_MALFORMED, AgentMessage("Done: the message is sent.")])
    assert r.report.outcome == "incomplete" and not r.report.halted
    assert _faults(r) == [(2, 1, "off_task"), (4, 2, "malformed")]
    fe = r.report.first_error
    assert fe is not None and (fe.k, fe.t, fe.cause, fe.recovered) == (2, 1, "off_task", True)


def test_an_unused_reading_stays_undecided_where_the_agent_did_not_end_its_work() -> None:
    """Not decided when the run ends on a call (cut short, say by a message limit), on a question to the user, after a
    stop, a crash or an interruption, nor for a reading the agent followed only by giving up: its result may have been
    meant for the work left undone."""
    ended = [*WRONG_THEN_MALFORMED, AgentMessage("Done: the message is sent.")]
    for events in (WRONG_THEN_MALFORMED, [*WRONG_THEN_MALFORMED, AgentMessage("Which contact do you mean?")],
                   [*WRONG_THEN_MALFORMED, AgentMessage("Done."), *act("x", "op_read", {"x": "q"}, value="zz-1234")]):
        assert _faults(run(WITH_EXTRA, events))[:1] == [(4, 2, "malformed")]
    for how in ({"crash": "the agent raised"}, {"interrupted": True}):
        ev = Evaluator(WITH_EXTRA)
        for e in ended:
            ev.observe(e)
        assert [f.cause for f in ev.finish(**how).faults] == ["malformed"]
    gave_up = [UserMessage("go"), *act("w", "op_other", {"x": "home"}, value=0.0), AgentMessage("I cannot do this, sorry.")]
    assert run(WITH_EXTRA, gave_up).report.faults == []


def test_a_clean_run_has_no_fault() -> None:
    r = run(CHAIN, settle_events(["a", "b", "c"]))
    assert (r.report.first_error, r.report.faults, r.report.fault_count, r.report.tail) == (None, [], 0, None)


def test_markdown_lists_the_faulty_steps_in_order() -> None:
    events = [UserMessage("go"), *act("1", "op_other", {"x": "home"}), *act("2", "op_a", {"x": 5}, exception="TypeError: bad"),
              *settle_events(["a", "b"])[1:]]
    md = render_markdown(run(WITH_READ, events).report)
    assert "## Faulty steps" in md
    section = md.split("## Faulty steps")[1].split("\n## ")[0]
    rows = [line for line in section.splitlines() if line.startswith("| 2 | 1 |") or line.startswith("| 4 | 2 |")]
    assert [row.split(" | ")[4] for row in rows] == ["off_task", "malformed"]
    assert "- First error: k=2, t=1 (stage a, efficiency, off_task)" in md


def test_a_report_written_before_fault_records_still_reads() -> None:
    """Reports without ``faults``, ``stage_error``, ``tail`` and the first error's cause load as they were."""
    data = run(CHAIN, [*settle_events(["a"]), *act("9", "op_b", {"x": "zz"}, exception="ValueError: no")]).report.model_dump(mode="json")
    for key in ("faults", "fault_count", "stage_error", "tail"):
        del data[key]
    for key in ("cause", "recovered"):
        del data["first_error"][key]
    old = Report.model_validate(data)
    assert old.faults == [] and old.first_error is not None and old.first_error.cause is None


# ---- repeated identical failing calls --------------------------------------------------------------------------


def _failing(n: int, args: Any = None) -> list[Any]:
    return [e for i in range(n) for e in act(f"f{i}", "op_a", args(i) if callable(args) else {"x": "zz"}, exception="ValueError: refused")]


def test_identical_failing_calls_stop_as_a_repeated_failure_blaming_the_first() -> None:
    r = run(CHAIN, [UserMessage("go"), *_failing(6)])
    assert r.halt is not None and r.report.stop is not None
    stop = r.report.stop
    assert (stop.reason, stop.t, stop.blamed_k, stop.blamed_t, stop.dimension) == ("repeated_failure", 4, 2, 1, "tool_compliance")
    fe = r.report.first_error
    assert fe is not None and (fe.k, fe.t, fe.cause, fe.recovered) == (2, 1, "tool_error", False)


def test_repeated_failure_patience_is_configurable() -> None:
    assert run(CHAIN, [UserMessage("go"), *_failing(4)], EvaluatorConfig(repeated_failure_patience=5)).halt is None
    r = run(CHAIN, [UserMessage("go"), *_failing(6)], EvaluatorConfig(repeated_failure_patience=5))
    assert r.report.stop is not None and (r.report.stop.reason, r.report.stop.t) == ("repeated_failure", 5)


def test_different_failing_calls_or_progress_in_between_do_not_count_as_one_loop() -> None:
    assert run(CHAIN, [UserMessage("go"), *_failing(4, lambda i: {"x": f"z{i}"})]).halt is None
    events = [UserMessage("go"), *_failing(2), *act("ok", "op_a", {"x": "a"}),
              *[e for i in range(2) for e in act(f"g{i}", "op_b", {"x": "zz"}, exception="ValueError: refused")]]
    assert run(CHAIN, events).halt is None


# ---- questions to the user ------------------------------------------------------------------------------------------


def test_asking_the_user_is_progress_not_stagnation() -> None:
    """Questions while milestones are open never build up a stagnation stop and are never blamed; idle talk does."""
    cfg = EvaluatorConfig(n_stag=2)
    asks = [AgentMessage("Which contact do you mean?"), UserMessage("Alice"),
            AgentMessage("Could you give me her phone number as well?"), UserMessage("555"),
            AgentMessage("Please provide the date."), UserMessage("today")]
    r = run(CHAIN, [UserMessage("go"), *asks, *settle_events(["a", "b", "c"])[1:]], cfg)
    assert r.halt is None and r.report.first_error is None
    idle = [AgentMessage("Working on it."), UserMessage("ok"), AgentMessage("Still working."), UserMessage("ok")]
    r = run(CHAIN, [UserMessage("go"), *idle], cfg)
    assert r.report.stop is not None and r.report.stop.reason == "frontier_stagnation"


def test_asking_the_same_question_again_is_not_progress() -> None:
    cfg = EvaluatorConfig(n_stag=2)
    same = [AgentMessage("Which contact?"), UserMessage("?"), AgentMessage("Which contact?"), UserMessage("?"),
            AgentMessage("Which  contact?"), UserMessage("?")]
    r = run(CHAIN, [UserMessage("go"), *same], cfg)
    assert r.report.stop is not None and (r.report.stop.reason, r.report.stop.blamed_t) == ("frontier_stagnation", 2)


def test_what_counts_as_asking() -> None:
    assert asks_user("What is the recipient's number?") and asks_user("Please provide the amount")
    assert not asks_user("Done. I have sent the message.")


# ---- the tail and repeats of settled work ------------------------------------------------------------------------


def test_a_redundant_repeat_of_settled_work_outside_every_window_costs_score_without_halting() -> None:
    """On parallel branches a repeat of x1's call belongs to no later window; the tail judges it."""
    clean = run(PARALLEL, settle_events(["x1", "x2", "y1", "y2"]))
    repeat = [*settle_events(["x1", "x2"]), *act("again", "op_x1", {"x": "x1"}), *settle_events(["y1", "y2"])[1:]]
    r = run(PARALLEL, repeat)
    assert r.halt is None and r.report.outcome == "completed"
    assert r.report.tail is not None and r.report.tail.steps == [3] and r.report.tail.penalty > 0
    assert r.report.score < clean.report.score == 1.0
    fe = r.report.first_error
    assert fe is not None and (fe.t, fe.cause, fe.stage) == (3, "repeat", None)


def test_attempts_at_an_open_milestone_are_not_charged_twice() -> None:
    """An incomplete run's failed attempt at its open milestone is paid for by that stage's 0, not by the tail."""
    r = run(CHAIN, [*settle_events(["a"]), *act("9", "op_b", {"x": "zz"}, exception="ValueError: no")])
    assert r.report.tail is None and r.report.score == round(1 / 3, 6)


# ---- order independence -------------------------------------------------------------------------------------


class _ScoresX1Low:
    """A judge that scores stage x1 0.0 and every other stage 1.0."""

    def __call__(self, request: JudgeRequest) -> Verdict:
        value = 0.0 if request.goal.milestone == "x1" else 1.0
        return Verdict(scores={d: DimensionScore(value, 0.9, f"{request.goal.milestone} scored {value}", (request.settling_t,))
                               for d in request.dimensions}, judge="fixed", tier=1)


def _decisions(report: Report) -> dict[str, Any]:
    stop = report.stop
    return {
        "outcome": report.outcome, "score": report.score, "settled": report.settled,
        "stop": None if stop is None else (stop.reason, stop.k, stop.t, stop.anchor, stop.dimension, stop.blamed_t),
        "stages": [(s.milestone, s.t, s.k, s.composite, s.scores, s.weights, s.next_tiers) for s in report.stages],
        # the raw clock numbers calls in the order they were issued, so only the action of the first error is fixed
        "first_error_t": None if report.first_error is None else report.first_error.t,
        "faults": sorted((f.t, f.tool, f.cause, f.stage) for f in report.faults),
    }


PARALLEL_CALLS = [("cx", "op_x1", {"x": "x1"}, None), ("cy", "op_y1", {"x": "y1"}, None),
                  ("bad", "op_x2", {"x": 7}, "TypeError: x must be a string"), ("idle", "op_zz", {"x": "q"}, None)]


@settings(max_examples=60, deadline=None)
@given(st.permutations(range(4)), st.permutations(range(4)), st.integers(2, 4), st.booleans())
def test_parallel_call_order_never_changes_the_report(calls: list[int], results: list[int], width: int, low_x1: bool) -> None:
    """However the parallel calls and their results are ordered, the stages, stop and first error are the same."""
    chosen = [PARALLEL_CALLS[i] for i in range(width)]
    judges = {1: _ScoresX1Low()} if low_x1 else None

    def events(call_order: list[int], result_order: list[int]) -> list[Any]:
        picked = [chosen[i] for i in call_order if i < width]
        answered = [chosen[i] for i in result_order if i < width]
        return [UserMessage("go"), *(call(c, name, args) for c, name, args, _ in picked),
                *(result(c, exception=exc) for c, _, _, exc in answered), *settle_events(["x2", "y2"])[1:]]

    bp = blueprint(["x1", "x2", "y1", "y2"], [("x1", "x2"), ("y1", "y2")], extra_tools=[tool("op_zz", x="string")])
    reference = run(bp, events(sorted(range(4)), sorted(range(4))), judges=judges)
    permuted = run(bp, events(calls, results), judges=judges)
    assert _decisions(permuted.report) == _decisions(reference.report)
    if low_x1:  # the 0.0 stage reaches the stop rules whatever its position among the action's stages
        assert reference.report.stop is not None and reference.report.stop.reason == "low_score"



# Several actions of parallel calls: settling calls, a malformed one, the clock read together with a search (which
# cannot have used it, so the reading is left unused), an unrelated read whose result a later action uses, the same read
# again with the world unchanged and once more after a change (no repeat then), and another reading quoted to the user.
NOW = 1733000000.5
ACTIONS: tuple[tuple[tuple[str, str, dict[str, Any], Any, str | None], ...], ...] = (
    (("a1x", "op_x1", {"x": "x1"}, "ok", None), ("a1c", "op_clock", {}, NOW, None), ("a1s", "op_search", {"since": NOW - 3600}, ["msg-0001"], None),
     ("a1z", "op_zz", {"x": "q"}, "zz-7781", None), ("a1b", "op_y1", {"x": 7}, None, "TypeError: x must be a string")),
    (("a2y", "op_y1", {"x": "y1"}, "ok", None), ("a2z", "op_zz", {"x": "q"}, "zz-7781", None)),
    (("a3b", "op_battery", {}, 57, None), ("a3z", "op_zz", {"x": "q"}, "zz-7781", None)),
    (("a4x", "op_x2", {"x": "x2"}, "ok", None), ("a4y", "op_y2", {"x": "y2"}, "ok", None), ("a4u", "op_zz", {"x": "zz-7781"}, "zz-done", None)),
)
CHANGES = {"a2y": (StateChange(namespace="SETTING", updated=(({"y": False}, {"y": True}),)),)}


def _several_actions(orders: list[list[int]]) -> list[Any]:
    events: list[Any] = [UserMessage("go")]
    for i, batch in enumerate(ACTIONS):
        calls, results = orders[2 * i], orders[2 * i + 1]
        events += [call(batch[j][0], batch[j][1], batch[j][2]) for j in calls]
        events += [result(batch[j][0], batch[j][3], exception=batch[j][4], changes=CHANGES.get(batch[j][0], ())) for j in results]
    return [*events, AgentMessage("msg-0001 and zz-done; the battery is at 57 percent")]


@settings(max_examples=60, deadline=None)
@given(st.tuples(*(st.permutations(range(len(batch))) for batch in ACTIONS for _ in "cr")), st.booleans())
def test_parallel_call_order_in_every_action_never_changes_the_report(orders: tuple[list[int], ...], low_x1: bool) -> None:
    """Several actions of parallel calls, each issued and answered in any order: the same stages, stop, faulty steps
    and action of the first error, with the unused reads decided by later actions only and the repeat by the state."""
    bp = blueprint(["x1", "x2", "y1", "y2"], [("x1", "x2"), ("y1", "y2")],
                   extra_tools=[tool("op_zz", x="string"), tool("op_clock"), tool("op_battery"), tool("op_search", since="number")])
    judges = {1: _ScoresX1Low()} if low_x1 else None
    reference = run(bp, _several_actions([sorted(range(len(b))) for b in ACTIONS for _ in "cr"]), judges=judges)
    permuted = run(bp, _several_actions(list(orders)), judges=judges)
    assert _decisions(permuted.report) == _decisions(reference.report)
    if not low_x1:  # the run finishes, so every unused reading is decided
        assert [f[1:3] for f in _decisions(reference.report)["faults"]] == [
            ("op_clock", "off_task"), ("op_y1", "malformed"), ("op_zz", "repeat")]
