"""Go's duration text (``"1h2m3.5s"``), the JSON of Kubernetes' ``meta.v1.Duration``, to and
from nanoseconds."""

from __future__ import annotations

import re

_GO_UNITS = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,
    "μs": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_GO_PART = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h)")


def parse_go_duration(text: str) -> int | None:
    """Nanoseconds in a Go duration (``"1h2m3.5s"``, ``"-30s"``, ``"0"``), or None."""
    sign = -1 if text.startswith("-") else 1
    body = text.lstrip("+-")
    if body == "0":
        return 0
    if not body:
        return None
    total, pos = 0, 0
    while pos < len(body):
        m = _GO_PART.match(body, pos)
        if m is None:
            return None
        number, unit = m.group(1), m.group(2)
        whole, _, frac = number.partition(".")
        scale = _GO_UNITS[unit]
        total += int(whole or "0") * scale
        if frac:
            total += int(frac) * scale // 10 ** len(frac)
        pos = m.end()
    total *= sign
    return total if -(2**63) <= total < 2**63 else None


def format_go_duration(nanos: int) -> str:
    """Go's ``Duration.String()``: ``"1h2m3.5s"``, ``"1.5ms"``, ``"0s"``."""
    if nanos == 0:
        return "0s"
    sign = "-" if nanos < 0 else ""
    n = abs(nanos)
    if n < 1_000_000_000:
        for unit, scale in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if n >= scale:
                return sign + _decimal(n, scale) + unit
    hours, rest = divmod(n, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    text = _decimal(rest, 1_000_000_000) + "s"
    if hours:
        return f"{sign}{hours}h{minutes}m{text}"
    if minutes:
        return f"{sign}{minutes}m{text}"
    return sign + text


def _decimal(n: int, scale: int) -> str:
    whole, frac = divmod(n, scale)
    if not frac:
        return str(whole)
    digits = str(frac).rjust(len(str(scale)) - 1, "0").rstrip("0")
    return f"{whole}.{digits}"
