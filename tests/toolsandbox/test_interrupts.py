"""How one process takes Ctrl-C during a run: only an armed rollout outside a held section is cut, once."""

from __future__ import annotations

import multiprocessing
import signal

import pytest

from dynsteer_hook import stop_signals
from dynsteer_hook.toolsandbox.live.interrupts import InterruptControl, ignoring_interrupts, installed


def test_ctrl_c_outside_a_rollout_is_only_noted() -> None:
    """An idle process (no rollout armed) notes Ctrl-C and raises nothing, so no idle worker prints a traceback."""
    control = InterruptControl()
    control.handle(signal.SIGINT, None)
    assert control.requested and control.stopping()


def test_ctrl_c_in_an_armed_rollout_raises_once() -> None:
    """In an armed rollout Ctrl-C raises at once, and a second one while the rollout unwinds is only noted."""
    control = InterruptControl()
    with pytest.raises(KeyboardInterrupt), control.armed():
        try:
            control.handle(signal.SIGINT, None)
        finally:
            control.handle(signal.SIGINT, None)  # the unwinding is not cut again
    assert control.requested


def test_ctrl_c_in_a_held_section_waits_for_its_end() -> None:
    """Ctrl-C inside a held section (an evaluator step) is raised when the section ends, not inside it."""
    control = InterruptControl()
    steps: list[str] = []
    with pytest.raises(KeyboardInterrupt), control.armed():
        with control.held():
            control.handle(signal.SIGINT, None)
            steps.append("the step finished")
        steps.append("never reached")
    assert steps == ["the step finished"]


def test_a_section_left_by_an_exception_does_not_add_ctrl_c_to_it() -> None:
    """A held section that ends with its own exception (a halt) lets that exception through."""
    control = InterruptControl()
    with pytest.raises(ValueError), control.armed(), control.held():
        control.handle(signal.SIGINT, None)
        raise ValueError("the step's own error")


def test_a_stopped_process_arms_no_new_rollout() -> None:
    """After Ctrl-C, arming the next rollout raises at once (the scenario is not started)."""
    control = InterruptControl()
    control.handle(signal.SIGINT, None)
    with pytest.raises(KeyboardInterrupt), control.armed():
        pytest.fail("a rollout started after Ctrl-C")


def test_a_worker_sees_the_parents_stop_event() -> None:
    """A worker that missed the signal (it was still starting) stops before its next scenario once the parent's event is set."""
    event = multiprocessing.get_context("spawn").Event()
    control = InterruptControl(event)
    assert not control.stopping()
    event.set()
    assert control.stopping()


def test_installed_control_takes_the_signal_and_gives_it_back() -> None:
    """While installed, a real SIGINT goes to the run's control; afterwards the previous handler is back."""
    previous = signal.getsignal(signal.SIGINT)
    with installed() as control:
        signal.raise_signal(signal.SIGINT)
        assert control.requested
    assert signal.getsignal(signal.SIGINT) is previous


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_are_taken_as_ctrl_c_and_noted(sig: signal.Signals) -> None:
    """While a control is installed, SIGTERM and SIGHUP reach it as Ctrl-C does (the process is not killed), the signal
    is kept for the exit status (128 + its number), and afterwards the previous handler is back."""
    stop_signals.forget()
    previous = signal.getsignal(sig)
    try:
        with installed() as control:
            signal.raise_signal(sig)
            assert control.requested
        assert signal.getsignal(sig) is previous
        assert stop_signals.received() == sig and stop_signals.exit_status() == 128 + sig
    finally:
        stop_signals.forget()


def test_a_signal_ignored_at_the_start_stays_ignored() -> None:
    """Under nohup (SIGHUP ignored) a run does not take SIGHUP, and workers spawned meanwhile are told not to either."""
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with installed():
            assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
        with ignoring_interrupts() as taken:
            assert signal.SIGHUP not in taken and signal.SIGTERM in taken
    finally:
        signal.signal(signal.SIGHUP, previous)
