"""The dual clock: k on every raw event, t on every closed action."""

from __future__ import annotations

from builders import call, result

from dynsteer_hook.model.events import AgentMessage, Event, StateChange, SystemMessage, UserMessage
from dynsteer_hook.runtime.clock import ClosedAction, DualClock


def feed(clock: DualClock, events: list[Event]) -> list[ClosedAction | None]:
    return [clock.tick(e) for e in events]


def test_k_counts_every_event() -> None:
    """k advances on every raw event, messages included."""
    clock = DualClock()
    feed(clock, [SystemMessage("s"), UserMessage("u"), call("1", "t"), result("1")])
    assert clock.k == 4


def test_messages_from_user_and_system_do_not_close_actions() -> None:
    """User and system messages tick k only."""
    clock = DualClock()
    assert feed(clock, [SystemMessage("s"), UserMessage("u")]) == [None, None]
    assert clock.t == 0


def test_call_closes_when_its_result_arrives() -> None:
    """A single call closes action t=1 at its result, spanning k of the call to k of the result."""
    clock = DualClock()
    out = feed(clock, [UserMessage("u"), call("1", "t"), result("1", "r")])
    assert out[:2] == [None, None]
    action = out[2]
    assert action is not None
    assert (action.t, action.k_start, action.k_end, action.kind) == (1, 2, 3, "tool")
    assert action.calls[0].k_call == 2 and action.calls[0].k_result == 3 and not action.calls[0].failed


def test_parallel_calls_close_only_when_all_results_arrive() -> None:
    """With three parallel calls, t advances once, when the last pending call has its result (in any order)."""
    clock = DualClock()
    out = feed(clock, [call("a", "t"), call("b", "t"), call("c", "t"), result("b"), result("c")])
    assert out == [None] * 5 and clock.t == 0
    assert [c.call_id for c in clock.pending_calls] == ["a"]
    action = clock.tick(result("a"))
    assert action is not None and clock.t == 1
    assert [o.call.call_id for o in action.calls] == ["a", "b", "c"]
    assert [o.k_result for o in action.calls] == [6, 4, 5]
    assert (action.k_start, action.k_end) == (1, 6)


def test_repeated_call_ids_are_answered_in_order() -> None:
    """Two pending calls sharing an id are matched to results first-in, first-out."""
    clock = DualClock()
    feed(clock, [call("x", "first"), call("x", "second"), result("x", 1)])
    assert clock.t == 0
    action = clock.tick(result("x", 2))
    assert action is not None
    assert [(o.call.tool, o.result.result if o.result else None) for o in action.calls] == [("first", 1), ("second", 2)]


def test_user_tool_calls_tick_k_only() -> None:
    """A tool call by the user (e.g. ending the conversation) is not an agent action."""
    clock = DualClock()
    out = feed(clock, [call("u1", "end_conversation", actor="user"), result("u1")])
    assert out == [None, None]
    assert clock.t == 0 and clock.k == 2 and clock.pending_calls == ()


def test_user_call_result_is_an_orphan() -> None:
    """The result of a user call matches no agent call and is counted as an orphan."""
    clock = DualClock()
    feed(clock, [call("u1", "end", actor="user"), result("u1")])
    assert clock.orphan_results == 1


def test_orphan_result_does_not_close_a_pending_action() -> None:
    """A result with an unknown id neither closes nor disturbs the open action."""
    clock = DualClock()
    out = feed(clock, [call("1", "t"), result("zzz")])
    assert out == [None, None] and clock.orphan_results == 1 and clock.t == 0
    assert [c.call_id for c in clock.pending_calls] == ["1"]
    assert clock.tick(result("1")) is not None and clock.t == 1


def test_orphan_result_with_nothing_open() -> None:
    """A result arriving when no call is open is an orphan and ticks k only."""
    clock = DualClock()
    assert clock.tick(result("1")) is None
    assert (clock.k, clock.t, clock.orphan_results) == (1, 0, 1)


def test_agent_message_alone_is_a_closed_action() -> None:
    """An agent message with no pending call yields control and closes a message action."""
    clock = DualClock()
    action = clock.tick(AgentMessage("hello"))
    assert action is not None and action.kind == "message" and action.message == AgentMessage("hello")
    assert (action.t, action.k_start, action.k_end) == (1, 1, 1)


def test_agent_message_while_calls_pend_waits_for_results() -> None:
    """A message sent while calls are pending joins their action, which closes at the last result."""
    clock = DualClock()
    out = feed(clock, [call("1", "t"), AgentMessage("working on it"), result("1")])
    assert out[:2] == [None, None]
    action = out[2]
    assert action is not None and clock.t == 1
    assert action.kind == "tool" and action.message == AgentMessage("working on it")


def test_consecutive_actions_number_t() -> None:
    """Each closure advances t by one."""
    clock = DualClock()
    out = feed(clock, [call("1", "t"), result("1"), AgentMessage("m"), call("2", "t"), result("2")])
    assert [a.t for a in out if a is not None] == [1, 2, 3]


def test_failed_call_outcome() -> None:
    """A call whose result carries an exception is failed; a clean one is not."""
    clock = DualClock()
    feed(clock, [call("1", "t"), call("2", "t"), result("1", exception="boom")])
    action = clock.tick(result("2"))
    assert action is not None
    assert [o.failed for o in action.calls] == [True, False]


def test_action_collects_state_changes() -> None:
    """A closed action exposes every database change of its calls."""
    c1, c2 = StateChange("A", ({"x": 1},)), StateChange("B", (), ({"y": 2},))
    clock = DualClock()
    feed(clock, [call("1", "t"), call("2", "t"), result("1", changes=[c1])])
    action = clock.tick(result("2", changes=[c2]))
    assert action is not None and action.state_changes == (c1, c2)


# ---- calls that never get their result --------------------------------------------------------------------------


def test_user_message_closes_an_action_still_waiting() -> None:
    """When the user speaks while a call waits, the action closes at its own last event with the call unanswered."""
    clock = DualClock()
    feed(clock, [call("1", "t"), AgentMessage("working")])
    action = clock.moved_on(UserMessage("and?"))
    assert action is not None and (action.t, action.k_start, action.k_end) == (1, 1, 2)
    assert action.calls[0].result is None and action.message == AgentMessage("working")
    [fault] = clock.pairing.faults
    assert (fault.kind, fault.k, fault.call_id) == ("unanswered_call", 1, "1") and "the user spoke at k=3" in fault.detail
    assert clock.pending_calls == () and clock.k == 2


def test_parallel_calls_still_waiting_are_not_moved_on_by_another_call() -> None:
    """A further call while none of the batch is answered is one more parallel call, not moving on."""
    clock = DualClock()
    feed(clock, [call("1", "t")])
    assert clock.moved_on(call("2", "t")) is None
    assert clock.moved_on(SystemMessage("s")) is None


def test_calling_again_after_some_results_moves_on() -> None:
    """A call after part of the batch was answered means the agent saw those results and acted: the batch closes."""
    clock = DualClock()
    feed(clock, [call("1", "t"), call("2", "t"), result("2")])
    action = clock.moved_on(call("3", "t"))
    assert action is not None and [o.result is None for o in action.calls] == [True, False]
    assert [f.kind for f in clock.pairing.faults] == ["unanswered_call"]


def test_flush_closes_what_is_left_at_the_end() -> None:
    """At the end of a run the waiting action closes, its calls unanswered; with nothing waiting, flush does nothing."""
    clock = DualClock()
    feed(clock, [call("1", "t")])
    action = clock.flush()
    assert action is not None and action.t == 1 and "the run ended" in clock.pairing.faults[0].detail
    assert clock.flush() is None


def test_user_call_result_is_no_pairing_fault() -> None:
    """A user's call and its result pair up: no fault is recorded."""
    clock = DualClock()
    feed(clock, [call("u1", "end", actor="user"), result("u1")])
    assert clock.pairing.count == 0


def test_faults_are_drained_once_and_kept_for_the_report() -> None:
    """drain() hands each fault over once; the first ones stay for the report with the total count."""
    clock = DualClock()
    feed(clock, [result("a"), result("b")])
    assert [f.call_id for f in clock.pairing.drain()] == ["a", "b"] and clock.pairing.drain() == []
    assert [f.call_id for f in clock.pairing.faults] == ["a", "b"] and clock.pairing.count == 2
