"""One exception tree for the package, plus the halt signal.

User mistakes (a bad blueprint file, a bad flag, an unreadable event file) are
``DynsteerError`` leaves whose message is one sentence naming the input and the fix.
The halt signal is not an error: it derives from ``BaseException`` so that an agent
loop's ``except Exception`` cannot swallow it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError

    from dynsteer_hook.model.records import StopRecord


class DynsteerError(Exception):
    """Root of every error this package raises on purpose."""


class BlueprintError(DynsteerError):
    """A blueprint file or object is malformed or violates its contract."""


class EventFileError(DynsteerError):
    """An event file (JSONL trace) cannot be read or has a malformed record."""


class ConsensusError(DynsteerError):
    """Consensus could not produce a blueprint (for example, no valid candidate)."""


class ConfigError(DynsteerError):
    """A configuration value is out of range or inconsistent."""


class OutputError(DynsteerError):
    """An output file or folder cannot be written (a file in the way, no permission, a full disk)."""


class ScenarioError(DynsteerError):
    """A scenario, script or runner input is unknown or malformed."""


class LLMError(DynsteerError):
    """A language-model call failed in a way its caller must handle."""


class LLMUsageError(LLMError):
    """The call is misconfigured: an unknown model string, a missing or rejected API key, a rejected request.

    Retrying cannot help; the user must change a flag or an environment variable.
    """


class LLMUnavailableError(LLMError):
    """The provider kept failing (timeouts, 429, 5xx, refused connections) through every bounded retry.

    Attributes:
        attempts: How many calls were made before giving up.
        kind: What the last failure was: ``timeout``, ``connection``, ``rate-limit`` or ``server``
            (empty when not known).
    """

    def __init__(self, message: str, *, attempts: int, kind: str = "") -> None:
        super().__init__(message)
        self.attempts = attempts
        self.kind = kind


class LLMOutputError(LLMError):
    """The model answered, but not with what was asked (empty, not JSON, wrong shape).

    Attributes:
        raw: The model's answer text, kept for the audit.
        rule: Short name of what was wrong: ``empty``, ``json`` or ``shape``.
    """

    def __init__(self, message: str, *, raw: str, rule: str) -> None:
        super().__init__(message)
        self.raw = raw
        self.rule = rule


class Halt(BaseException):
    """Raised inside a live rollout when the evaluator decides to stop it.

    Attributes:
        stop: The stop record: reason, clock values, anchor and causal dimension.
    """

    def __init__(self, stop: StopRecord) -> None:
        super().__init__(f"dynsteer halt: {stop.reason} at k={stop.k}, t={stop.t}: {stop.detail}")
        self.stop = stop


def validation_problem(error: ValidationError, *, skip: int = 0, top: str = "top level") -> str:
    """The first problem pydantic found, as ``where: what`` for a one-sentence error message.

    Args:
        error: The validation error.
        skip: Leading parts of the location to leave out (a tagged union's tag, say).
        top: What to call the place when the location is empty (the whole object).
    """
    loc, what = first_validation_error(error)
    where = ".".join(str(part) for part in loc[skip:]) or top
    return f"{where}: {what}"


def first_validation_error(error: ValidationError) -> tuple[tuple[int | str, ...], str]:
    """Where the first problem pydantic found is (its location) and what it is, in the validator's own words."""
    first = error.errors()[0]
    what = str(first.get("msg", "invalid value"))
    # A validator's own sentence arrives as "Value error, <sentence>": the prefix says nothing to a user.
    return tuple(first.get("loc", ())), what.removeprefix("Value error, ")
