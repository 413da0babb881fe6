"""Values the user's words fix, checked on the call that settles a milestone (``ValuePin``).

Real agents rarely fail by calling the wrong tool; they pass a plausible wrong value: a reminder a week
late ("next Friday" read as the Friday after next), "tomorrow 5PM" set to this time tomorrow, a holiday
looked up in last year, a search for upcoming reminders that ends now, a reminder whose text is the
request itself. ``ValueChecks`` keeps what such checks need, as the rollout goes:

* the rollout's clock: the first clock reading the agent got (a call without arguments answered with a
  timestamp), else the clock the driver gave when the rollout started (``wall_clock``), with its offset
  from UTC (ToolSandbox reads local time);
* the moments and words the user stated, turn by turn, so a value a later user turn gives is checked too.

``verdicts`` judges a call's pinned values: right, wrong (with the expected value in words), or not
verified (the clock or the user's words are not known): a value that cannot be checked is never taken
for a right one.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from dynsteer_hook.judges.steps import ValueVerdict
from dynsteer_hook.model.blueprint import ValuePin
from dynsteer_hook.model.when import Moment, describe, find_moment, local_year, resolve

__all__ = ["MOMENT_SLACK", "ValueChecks", "ValueVerdict", "clock_reading"]

MOMENT_SLACK = 90.0
"""Seconds a timestamp may be off the stated moment and still be it (agents add seconds from their clock)."""
NOW_SLACK = 300.0
"""Seconds a bound "from now" may lie before the clock (the agent's reading is a little older than the check)."""
_EPOCH = (946_684_800.0, 4_102_444_800.0)  # 2000 to 2100
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_SCAFFOLD = frozenset(
    ["a", "an", "the", "to", "me", "my", "i", "please", "add", "create", "set", "make", "new", "remind", "reminder", "reminders", "todo", "to-do", "do", "task", "note", "notes", "item", "at", "on", "for", "in", "by", "of", "and", "with", "about", "that", "this", "next", "coming", "today", "tonight", "tomorrow", "yesterday", "day", "week", "weeks", "pm", "am", "noon", "midnight", "morning", "afternoon", "evening", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"]
)


def clock_reading(arguments: Mapping[str, Any] | None, result: Any) -> float | None:
    """The timestamp a call returned when it reads the clock: a call without arguments answered with a number that
    is a plausible moment (seconds since the epoch, 2000 to 2100), else ``None``."""
    if arguments or isinstance(result, bool) or not isinstance(result, (int, float)):
        return None
    value = float(result)
    return value if math.isfinite(value) and _EPOCH[0] <= value <= _EPOCH[1] else None


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


def _words(text: str) -> list[str]:
    return [w.casefold() for w in _WORD.findall(text)]


def _content_words(text: str) -> set[str]:
    """The words of a text that say what it is about: not the scaffolding of a request, not times or numbers."""
    return {w for w in _words(text) if w not in _SCAFFOLD and not any(ch.isdigit() for ch in w) and len(w) > 1}


class ValueChecks:
    """The rollout's clock and what the user stated so far, for checking pinned values."""

    __slots__ = ("_moments", "_said", "now", "offset", "source")

    def __init__(self) -> None:
        self.now: float | None = None
        self.offset = 0.0
        self.source = ""
        self._moments: list[Moment] = []
        self._said: set[str] = set()

    def wall_clock(self, epoch: float, utc_offset: float = 0.0) -> None:
        """The clock when the rollout started (a clock reading of the agent's, once there is one, wins)."""
        if math.isfinite(epoch) and math.isfinite(utc_offset) and abs(utc_offset) <= 18 * 3600:
            self.offset = utc_offset
            if self.source != "reading" and _EPOCH[0] <= epoch <= _EPOCH[1]:
                self.now, self.source = epoch, "the rollout's start"

    def reading(self, value: float) -> None:
        """A clock reading the agent got (the first one is the rollout's clock)."""
        if self.source != "reading":
            self.now, self.source = value, "the agent's first clock reading"

    def user(self, text: str) -> None:
        """A user turn: the moment it states, if any, and its words."""
        moment = find_moment(text)
        if moment is not None:
            self._moments.append(moment)
        self._said |= set(_words(text))

    def verdicts(self, pins: tuple[ValuePin, ...], arguments: Mapping[str, Any] | None) -> tuple[ValueVerdict, ...]:
        """The verdict on each pinned value of a call's arguments."""
        args = arguments or {}
        return tuple(getattr(self, f"_{pin.kind}")(pin, args.get(pin.arg), pin.arg in args) for pin in pins)

    # -- one method per kind -----------------------------------------------------------

    def _stated(self, pin: ValuePin) -> Moment | None:
        if pin.words:
            return find_moment(pin.words)
        timed = [m for m in self._moments if m.hour is not None]
        return timed[-1] if timed else None

    def _moment(self, pin: ValuePin, value: Any, given: bool) -> ValueVerdict:
        moment = self._stated(pin)
        if moment is None:
            why = "the user's words for it are not ones the rules read" if pin.words else "no user turn stated the day and time"
            return ValueVerdict(pin.arg, pin.kind, None, f"{pin.arg} not verified: {why}")
        if self.now is None:
            return ValueVerdict(pin.arg, pin.kind, None, f"{pin.arg} not verified: the rollout's clock is unknown")
        expected = resolve(moment, self.now, self.offset)
        actual = _number(value)
        if expected is None or actual is None:
            why = "no time of day was stated" if expected is None else ("it was not passed" if not given else "it is not a number")
            return ValueVerdict(pin.arg, pin.kind, None, f"{pin.arg} not verified: {why}")
        want = f"'{moment.words}' is {describe(expected, self.offset)} by {self.source}"
        if abs(actual - expected) <= MOMENT_SLACK:
            return ValueVerdict(pin.arg, pin.kind, True, f"{pin.arg} is {describe(actual, self.offset)}: {want}")
        off = actual - expected
        note = ""
        if moment.day[0] == "weekday" and abs(off - 7 * 86400) <= MOMENT_SLACK:
            note = " (a week late: a weekday, 'next' or not, is the first such day from today on)"
        elif moment.day[0] == "offset" and abs(off % 86400) > MOMENT_SLACK and abs(off) < 86400:
            note = " (the right day at another hour)"
        return ValueVerdict(pin.arg, pin.kind, False, f"{pin.arg} is {describe(actual, self.offset)}, but {want}{note}")

    def _words(self, pin: ValuePin, value: Any, given: bool) -> ValueVerdict:
        text = value if isinstance(value, str) else ""
        have = set(_words(text))
        if pin.words:
            wanted = _content_words(pin.words) or set(_words(pin.words))
            stems = {h.rstrip("s") for h in have}
            missing = sorted(w for w in wanted if w not in have and w.rstrip("s") not in stems)
            key = max(sorted(wanted), key=len)  # the most distinctive word must be there, and most of the others
            if key in missing or 2 * len(missing) > len(wanted):
                return ValueVerdict(pin.arg, pin.kind, False, f"{pin.arg} {text[:80]!r} lacks the user's words {', '.join(missing)} "
                                    f"(from '{pin.words}')")
            return ValueVerdict(pin.arg, pin.kind, True, f"{pin.arg} holds the user's words '{pin.words}'")
        content = _content_words(text)
        if not content:
            return ValueVerdict(pin.arg, pin.kind, False, f"{pin.arg} {text[:80]!r} says nothing the user asked for: only the "
                                "request's own words and times")
        if content <= self._said:
            return ValueVerdict(pin.arg, pin.kind, True, f"{pin.arg} is in the user's words")
        return ValueVerdict(pin.arg, pin.kind, None, f"{pin.arg} not verified: {', '.join(sorted(content - self._said)[:5])} "
                            "are not the user's words, which a later turn may have paraphrased")

    def _year(self, pin: ValuePin, value: Any, given: bool) -> ValueVerdict:
        if not given or value is None:
            return ValueVerdict(pin.arg, pin.kind, True, f"{pin.arg} left to the tool (the current year)")
        if self.now is None:
            return ValueVerdict(pin.arg, pin.kind, None, f"{pin.arg} not verified: the rollout's clock is unknown")
        year = local_year(self.now, self.offset)
        actual = _number(value)
        if actual is not None and int(actual) == year:
            return ValueVerdict(pin.arg, pin.kind, True, f"{pin.arg} {value} is the current year")
        return ValueVerdict(pin.arg, pin.kind, False, f"{pin.arg} is {value!r}, but the user named no year: the current one "
                            f"is {year} by {self.source}")

    def _bound(self, pin: ValuePin, value: Any, given: bool, after: bool) -> ValueVerdict:
        actual = _number(value)
        if not given or actual is None:
            return ValueVerdict(pin.arg, pin.kind, True, f"{pin.arg} not bounded")
        if self.now is None:
            return ValueVerdict(pin.arg, pin.kind, None, f"{pin.arg} not verified: the rollout's clock is unknown")
        late_enough = actual > self.now + NOW_SLACK if after else actual >= self.now - NOW_SLACK
        if late_enough:
            return ValueVerdict(pin.arg, pin.kind, True, f"{pin.arg} {describe(actual, self.offset)} looks ahead of now")
        return ValueVerdict(pin.arg, pin.kind, False, f"{pin.arg} is {describe(actual, self.offset)}, not after now "
                            f"({describe(self.now, self.offset)} by {self.source}): the search looks at the past, the user "
                            "asked for what is upcoming")

    def _from_now(self, pin: ValuePin, value: Any, given: bool) -> ValueVerdict:
        return self._bound(pin, value, given, after=False)

    def _beyond_now(self, pin: ValuePin, value: Any, given: bool) -> ValueVerdict:
        return self._bound(pin, value, given, after=True)
