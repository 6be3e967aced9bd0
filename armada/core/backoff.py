"""A Retry rule's retry delay (``backoff``): our extension of the RetryPolicy file.

Not part of the specification (see ``docs/retry-backoff.md``): a Retry rule may carry
``backoff: {initial, factor, max}``, and a job retried by that rule is not leased again before
its delay has passed. The delay before a retry is ``initial * factor ** retries_used``,
capped at ``max``, where ``retries_used`` is the number of retries the job had before this
one (so its first retry waits ``initial``, the second ``initial * factor``, and so on).

- ``initial`` is required: a duration (``"30s"``, ``"5m"``, ``"1h30m"``, or a number of
  seconds; ``core.duration``) of at least 1ms. Durations are kept to the millisecond, so
  that the written form reads back as the same number.
- ``factor`` is a finite number of 1 or more; left out, it is 1 (the same delay every time).
- ``max`` is a duration of at least ``initial``; required when ``factor`` is above 1 (a delay
  that grows needs a ceiling), optional otherwise.
- Unknown keys are errors, like everywhere in a policy.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from armada.core.duration import format_duration, parse_duration
from armada.core.errors import FieldError

INITIAL = "initial"
FACTOR = "factor"
MAX = "max"
BACKOFF_KEYS = (INITIAL, FACTOR, MAX)


@dataclass(frozen=True)
class Backoff:
    """How long a job retried by a rule waits before it may be leased again (seconds).

    ``max_seconds`` is None only when ``factor`` is 1 (the delay never grows)."""

    initial_seconds: float
    factor: float = 1.0
    max_seconds: float | None = None

    def delay(self, retries_used: int) -> float:
        """The delay before the retry of a job that had ``retries_used`` retries before it:
        ``initial * factor ** retries_used``, at most ``max``. Never overflows."""
        cap = self.max_seconds if self.max_seconds is not None else math.inf
        if self.factor == 1.0 or retries_used <= 0:
            return min(self.initial_seconds, cap)
        try:
            grown = self.initial_seconds * self.factor**retries_used
        except OverflowError:
            return cap
        return min(grown, cap)


def _factor(value: Any) -> float | None:
    """``value`` as a finite float of 1 or more; None for anything else (bools included)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer beyond any float
        return None
    return number if math.isfinite(number) and number >= 1.0 else None


def _duration(value: Any, where: str, errors: list[FieldError]) -> float | None:
    """A duration of at least 1ms, kept to the millisecond (so that its written form reads
    back as the same number)."""
    try:
        seconds = parse_duration(value)
    except (ValueError, TypeError) as exc:
        errors.append(FieldError(where, str(exc)))
        return None
    seconds = round(seconds * 1000) / 1000
    if seconds <= 0:
        errors.append(
            FieldError(where, "must be at least 1ms; leave backoff out for no delay at all")
        )
        return None
    return seconds


def parse_backoff(value: Any, where: str, errors: list[FieldError]) -> Backoff | None:
    """The ``backoff`` block at path ``where`` (``rules[0].backoff``); its problems are added
    to ``errors``, each naming its field. None when it has any."""
    if not isinstance(value, Mapping):
        errors.append(FieldError(where, "must be a mapping"))
        return None
    backoff = value
    start = len(errors)
    for key in sorted((k for k in backoff if k not in BACKOFF_KEYS), key=str):
        errors.append(
            FieldError(f"{where}.{key}", f"unknown field; allowed: {', '.join(BACKOFF_KEYS)}")
        )
    initial = None
    if backoff.get(INITIAL) is None:
        errors.append(FieldError(f"{where}.{INITIAL}", "is required: the first delay, such as 30s"))
    else:
        initial = _duration(backoff[INITIAL], f"{where}.{INITIAL}", errors)
    factor = 1.0
    if backoff.get(FACTOR) is not None:
        fw = f"{where}.{FACTOR}"
        number = _factor(backoff[FACTOR])
        if number is None:
            errors.append(FieldError(fw, "must be a finite number of 1 or more, such as 2"))
        else:
            factor = number
    cap = None
    mw = f"{where}.{MAX}"
    if backoff.get(MAX) is not None:
        cap = _duration(backoff[MAX], mw, errors)
        if cap is not None and initial is not None and cap < initial:
            errors.append(FieldError(mw, f"must be at least initial ({format_duration(initial)})"))
    elif factor > 1.0:
        errors.append(
            FieldError(mw, "is required when factor is above 1, so that the delay stops growing")
        )
    if len(errors) > start or initial is None:
        return None
    return Backoff(initial_seconds=initial, factor=factor, max_seconds=cap)


def backoff_document(backoff: Backoff) -> dict[str, Any]:
    """The file form of ``backoff``: durations written the Go way, ``factor`` and ``max``
    only when they say something (a factor of 1 is the default)."""
    out: dict[str, Any] = {INITIAL: format_duration(backoff.initial_seconds)}
    if backoff.factor != 1.0:
        out[FACTOR] = int(backoff.factor) if backoff.factor.is_integer() else backoff.factor
    if backoff.max_seconds is not None:
        out[MAX] = format_duration(backoff.max_seconds)
    return out


RETRY_DELAY_REASON = "waiting for its retry delay"


def reason_time(at: datetime) -> str:
    """A time as the retry-delay reason writes it: ISO 8601 in UTC, to the second."""
    return at.astimezone(UTC).isoformat(timespec="seconds")


def reason_retry_delay(until: datetime) -> str:
    """Why a queued job is not leased while its retry delay runs: the scheduler records it,
    why-pending shows it."""
    return f"{RETRY_DELAY_REASON} until {reason_time(until)}"


def describe_backoff(backoff: Backoff) -> str:
    """A rule's backoff in a few words, for people: ``retry delay 30s, × 2 per retry, at
    most 10m``."""
    words = f"retry delay {format_duration(backoff.initial_seconds)}"
    if backoff.factor != 1.0:
        words += f", × {backoff.factor:g} per retry"
    if backoff.max_seconds is not None and (
        backoff.factor != 1.0 or backoff.max_seconds != backoff.initial_seconds
    ):
        words += f", at most {format_duration(backoff.max_seconds)}"
    return words
