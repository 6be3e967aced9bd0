"""Quantities as people write them, for everything a person reads.

Quantities are kept as exact integers of milli-units (``armada.core.quantity``: 256Mi of
memory is 268_435_456_000). People write ``256Mi``, ``1.5Gi``, ``500m`` of cpu and ``2``
GPUs; :func:`readable_quantity` turns the stored number back into such a string, always one
that parses to the very same number (``parse_quantity(readable_quantity(m, r)) == m``), so a
program reading it loses nothing.

- Memory and ephemeral storage: the shortest exact form among the binary suffixes (``Ki`` to
  ``Ei``, the larger preferred on a tie) and the decimal ones (``k`` to ``E``), with at most
  three decimals: ``256Mi``, ``1.5Gi``, ``2.25Gi``, ``1G``, ``864Mi``; a number of bytes no
  suffix divides exactly is written in bytes (``1000001``).
- Cpu, GPUs and any other resource: whole units as a plain number (``2``), anything else in
  milli-units (``500m``, ``1500m``), as Kubernetes writes them.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

from armada.core.quantity import EPHEMERAL_STORAGE, MEMORY

_BINARY = ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
_DECIMAL = ("k", "M", "G", "T", "P", "E")
_SIZE = {
    **{suffix: 1024 ** (i + 1) for i, suffix in enumerate(_BINARY)},
    **{suffix: 1000 ** (i + 1) for i, suffix in enumerate(_DECIMAL)},
}
BYTE_RESOURCES = (MEMORY, EPHEMERAL_STORAGE)
_MAX_DECIMALS = 3


def _decimal_text(value: Fraction) -> str | None:
    """``value`` written with at most three decimals, or None when that is not exact."""
    for decimals in range(_MAX_DECIMALS + 1):
        scaled = value * 10**decimals
        if scaled.denominator == 1:
            whole, rest = divmod(scaled.numerator, 10**decimals)
            return f"{whole}.{rest:0{decimals}d}" if decimals else str(whole)
    return None


def _bytes_text(count: int) -> str:
    """A whole number of bytes in its shortest exact form: on a tie a binary suffix before a
    decimal one, and the larger binary suffix (``2.25Gi`` rather than ``2304Mi``)."""
    best = str(count)
    for suffix in _BINARY + _DECIMAL:
        size = _SIZE[suffix]
        if count < size:
            continue
        number = _decimal_text(Fraction(count, size))
        if number is None:
            continue
        text = number + suffix
        if len(text) < len(best) or (len(text) == len(best) and suffix in _BINARY):
            best = text
    return best


def readable_quantity(milli: int, resource: str = "") -> str:
    """``milli`` milli-units of ``resource`` as a person writes it (see the module's doc)."""
    milli = int(milli)
    if milli < 0:
        return "-" + readable_quantity(-milli, resource)
    if milli % 1000:
        return f"{milli}m"
    units = milli // 1000
    if resource in BYTE_RESOURCES and units:
        return _bytes_text(units)
    return str(units)


def readable_resources(values: Mapping[str, int]) -> dict[str, str]:
    """A resource vector (milli-units) as readable strings, resources in name order."""
    return {name: readable_quantity(int(values[name]), name) for name in sorted(values)}


def growth(before: int, after: int, kind: str = "") -> str:
    """How a quantity grew, for a person: ``×3.375`` for a factor bump (the ratio itself,
    up to three decimals, else rounded to three significant digits with ``≈``), ``+512Mi``
    for a static one (memory). Empty when ``before`` is 0 and the kind says factor."""
    if kind == "static":
        return "+" + readable_quantity(after - before, MEMORY)
    if before <= 0:
        return ""
    ratio = Fraction(after, before)
    exact = _decimal_text(ratio)
    return f"×{exact}" if exact is not None else f"×≈{float(ratio):.3g}"
