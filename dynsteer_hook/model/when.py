"""Moments the user states in words ("tomorrow 5PM", "next Friday at 5 pm", "3/22/2024 5PM"), read and resolved
against a rollout's own clock.

``find_moment`` reads the first stated moment of a text: a day (today, tonight, tomorrow, the day after
tomorrow, yesterday, in N days or weeks, next week, a weekday with or without "this"/"next"/"coming", a
date as month/day/year or "March 22[, 2024]") with a time of day (5PM, 5:30 pm, 17:00, noon, midnight).
``resolve`` turns it into seconds since the epoch, given the clock and the clock's offset from UTC.

The conventions are ToolSandbox's, stated here because English leaves them open: a weekday, with or
without "next" or "this", is the first such day from today on (on a Friday, "next Friday" is today), as
its ``get_next_iso_weekday_datetime`` computes it; "tomorrow" is today's date plus one; a time of day
without minutes is on the hour. Pure: no clock is read here.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

__all__ = ["Moment", "describe", "find_moment", "local_year", "resolve"]

_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november",
           "december")
_NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
            "a": 1, "an": 1}

_DAY_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("date", re.compile(r"\b(\d{1,2})/(\d{1,2})/(\d{4})\b")),
    ("month", re.compile(r"\b(" + "|".join(_MONTHS) + r")\.? (\d{1,2})(?:st|nd|rd|th)?(?:,? (\d{4}))?\b", re.IGNORECASE)),
    ("after_tomorrow", re.compile(r"\bday after tomorrow\b", re.IGNORECASE)),
    ("tomorrow", re.compile(r"\btomorrow\b", re.IGNORECASE)),
    ("yesterday", re.compile(r"\byesterday\b", re.IGNORECASE)),
    ("today", re.compile(r"\b(?:today|tonight|this (?:morning|afternoon|evening))\b", re.IGNORECASE)),
    ("in", re.compile(r"\bin (\d+|" + "|".join(_NUMBERS) + r") (day|week)s?\b", re.IGNORECASE)),
    ("next_week", re.compile(r"\bnext week\b", re.IGNORECASE)),
    ("weekday", re.compile(r"\b(?:(next|this|coming|on) )?(" + "|".join(_WEEKDAYS) + r")\b", re.IGNORECASE)),
)
_TIME_12 = re.compile(r"\b(\d{1,2})(?::([0-5]\d))?\s*([ap])\.?\s?m\b\.?", re.IGNORECASE)
_TIME_24 = re.compile(r"\b([01]?\d|2[0-3]):([0-5]\d)\b")
_NOON = re.compile(r"\b(noon|midday|midnight)\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Moment:
    """A moment as the user stated it.

    Attributes:
        words: The user's words (the day and the time of day as written).
        day: How the day is given: ``("offset", days)`` from today, ``("weekday", iso)`` (1 = Monday), or
            ``("date", year, month, day)``.
        hour: The hour of day (24-hour clock), or ``None`` when no time of day was stated.
        minute: The minute.
    """

    words: str
    day: tuple[str, int] | tuple[str, int, int, int]
    hour: int | None = None
    minute: int = 0


def _time_of_day(text: str) -> tuple[int, int, str] | None:
    found = _TIME_12.search(text)
    if found:
        hour = int(found.group(1))
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if found.group(3).lower() == "p" else 0)
        return hour, int(found.group(2) or 0), found.group(0).strip()
    found = _TIME_24.search(text)
    if found:
        return int(found.group(1)), int(found.group(2)), found.group(0)
    found = _NOON.search(text)
    if found:
        return (0 if found.group(1).lower() == "midnight" else 12), 0, found.group(0)
    return None


def _day(kind: str, found: re.Match[str]) -> tuple[str, int] | tuple[str, int, int, int] | None:
    if kind == "date":
        month, day, year = int(found.group(1)), int(found.group(2)), int(found.group(3))
        return ("date", year, month, day) if _valid(year, month, day) else None
    if kind == "month":
        month, day = _MONTHS.index(found.group(1).lower()) + 1, int(found.group(2))
        year = int(found.group(3)) if found.group(3) else 0  # 0: the clock's year
        return ("date", year, month, day) if _valid(year or 2000, month, day) else None
    if kind == "in":
        raw = found.group(1).lower()
        count = int(raw) if raw.isdigit() else _NUMBERS[raw]
        return ("offset", count * (7 if found.group(2).lower() == "week" else 1))
    if kind == "weekday":
        return ("weekday", _WEEKDAYS.index(found.group(2).lower()) + 1)
    return ("offset", {"today": 0, "tomorrow": 1, "after_tomorrow": 2, "yesterday": -1, "next_week": 7}[kind])


def _valid(year: int, month: int, day: int) -> bool:
    try:
        dt.date(year, month, day)
    except ValueError:
        return False
    return True


def find_moment(text: str) -> Moment | None:
    """The first day the text states, with the time of day it states (``None``: no day is stated)."""
    if not text or len(text) > 20_000:
        return None
    best: tuple[int, str, re.Match[str]] | None = None
    for kind, pattern in _DAY_PATTERNS:
        found = pattern.search(text)
        if found and (best is None or found.start() < best[0]):
            best = (found.start(), kind, found)
    if best is None:
        return None
    _, kind, found = best
    day = _day(kind, found)
    if day is None:
        return None
    clock = _time_of_day(text)
    words = found.group(0).strip() + (f" {clock[2].rstrip('.')}" if clock else "")
    return Moment(words=words, day=day, hour=clock[0] if clock else None, minute=clock[1] if clock else 0)


def _local_day(moment: Moment, today: dt.date) -> dt.date:
    kind = moment.day[0]
    if kind == "offset":
        return today + dt.timedelta(days=moment.day[1])
    if kind == "weekday":
        return today + dt.timedelta(days=(moment.day[1] - today.isoweekday()) % 7)
    _, year, month, day = moment.day  # type: ignore[misc]
    return dt.date(year or today.year, month, day)


def resolve(moment: Moment, now: float, utc_offset: float = 0.0) -> float | None:
    """The moment in seconds since the epoch, for a clock reading ``now`` whose local time is ``utc_offset`` seconds
    ahead of UTC (``None``: the user stated no time of day, so no single moment is meant)."""
    if moment.hour is None:
        return None
    zone = dt.timezone(dt.timedelta(seconds=utc_offset))
    today = dt.datetime.fromtimestamp(now, zone).date()
    try:
        day = _local_day(moment, today)
    except ValueError:
        return None
    return dt.datetime(day.year, day.month, day.day, moment.hour, moment.minute, tzinfo=zone).timestamp()


def describe(epoch: float, utc_offset: float = 0.0) -> str:
    """A moment in words for a report: ``Fri 2026-08-07 17:00``."""
    try:
        moment = dt.datetime.fromtimestamp(epoch, dt.timezone(dt.timedelta(seconds=utc_offset)))
    except (OverflowError, OSError, ValueError):
        return repr(epoch)
    return moment.strftime("%a %Y-%m-%d %H:%M")


def local_year(epoch: float, utc_offset: float = 0.0) -> int:
    """The year of a moment on a clock ``utc_offset`` seconds ahead of UTC."""
    return dt.datetime.fromtimestamp(epoch, dt.timezone(dt.timedelta(seconds=utc_offset))).year
