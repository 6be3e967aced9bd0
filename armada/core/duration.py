"""Durations written the Go way (``"500ms"``, ``"1s"``, ``"10m"``, ``"1h30m"``) as seconds."""

from __future__ import annotations

import math
import re

_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
# Longer than anything is ever meant to wait; the bound keeps ``now + duration`` a datetime.
MAX_SECONDS = 100 * 365 * 86400.0


def parse_duration(text: str | int | float) -> float:
    """Seconds in ``text``. A bare number is seconds. Raises ValueError on anything else."""
    if isinstance(text, bool):
        raise ValueError("expected a duration such as '30s' or '5m'")
    if isinstance(text, int | float):
        if isinstance(text, float) and not math.isfinite(text):
            raise ValueError(f"{text!r} is not a duration")
        if text < 0:
            raise ValueError("a duration cannot be negative")
        if text > MAX_SECONDS:
            raise ValueError("a duration must be at most 100 years")
        return float(text)
    s = str(text).strip()
    if s == "0":
        return 0.0
    pos = 0
    total = 0.0
    for m in _PART.finditer(s):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNIT_SECONDS[m.group(2)]
        pos = m.end()
    if pos != len(s) or not s:
        raise ValueError(f"{text!r} is not a duration; write it like '500ms', '30s', '5m' or '1h'")
    if total > MAX_SECONDS:  # also infinity, which a long enough number of digits gives
        raise ValueError("a duration must be at most 100 years")
    return total


def format_duration(seconds: float) -> str:
    """The shortest Go-style spelling of ``seconds`` (used when showing config back)."""
    if seconds and seconds < 1:
        return f"{round(seconds * 1000)}ms"
    if seconds % 3600 == 0 and seconds:
        return f"{int(seconds // 3600)}h"
    if seconds % 60 == 0 and seconds:
        return f"{int(seconds // 60)}m"
    return f"{repr(float(seconds)).removesuffix('.0')}s"
