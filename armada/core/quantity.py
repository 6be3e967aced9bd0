"""Kubernetes resource quantities and resource vectors.

A quantity such as ``"512Mi"``, ``"100m"``, ``"2"`` or ``"1.5G"`` is turned into an exact
integer number of *milli-units* (the way Kubernetes compares quantities internally), so that
``"1"`` cpu is 1000 and ``"1Ki"`` memory is 1_024_000. Every resource uses the same scale,
which keeps the arithmetic of the scheduler uniform and exact.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from decimal import ROUND_CEILING, Decimal, InvalidOperation, Overflow

_SUFFIX = {
    "": Decimal(1),
    "m": Decimal(1) / 1000,
    "k": Decimal(10) ** 3,
    "M": Decimal(10) ** 6,
    "G": Decimal(10) ** 9,
    "T": Decimal(10) ** 12,
    "P": Decimal(10) ** 15,
    "E": Decimal(10) ** 18,
    "Ki": Decimal(2) ** 10,
    "Mi": Decimal(2) ** 20,
    "Gi": Decimal(2) ** 30,
    "Ti": Decimal(2) ** 40,
    "Pi": Decimal(2) ** 50,
    "Ei": Decimal(2) ** 60,
}
_QUANTITY = re.compile(
    r"^([+]?[0-9]+(?:\.[0-9]*)?|[+]?\.[0-9]+)(?:([eE][+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E))?$"
)

# Resources the scheduler knows by default; any other extended resource is carried along too.
CPU = "cpu"
MEMORY = "memory"
GPU = "nvidia.com/gpu"
EPHEMERAL_STORAGE = "ephemeral-storage"
STANDARD_RESOURCES = (CPU, MEMORY, GPU, EPHEMERAL_STORAGE)

# Anything above this (in milli-units) is treated as absurd input rather than a real request:
# 2**63 milli-units is about 8 PiB of memory.
MAX_MILLI = 2**63 - 1


def _shown(value: object) -> str:
    """``value`` as the messages quote it: a huge input is cut short, not echoed whole."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:30]}...({len(text)} characters)"


def parse_quantity(value: str | int | float) -> int:
    """Milli-units in ``value``. Raises ValueError naming the problem on bad input."""
    if type(value) is str and len(value) <= 32:
        # A job file repeats a few quantities thousands of times ("100m", "64Mi"): each
        # short text is converted once (a failure is not kept, and raises again).
        return _parse_text(value)
    return _parse(value)


@functools.lru_cache(maxsize=4096)
def _parse_text(value: str) -> int:
    return _parse(value)


def _parse(value: str | int | float) -> int:
    if isinstance(value, bool):
        raise ValueError("expected a quantity such as '1', '500m' or '4Gi'")
    if isinstance(value, int):
        text = str(value)
    elif isinstance(value, float):
        text = repr(value)
    elif isinstance(value, str):
        text = value.strip()
    else:
        raise ValueError(
            f"expected a quantity such as '1', '500m' or '4Gi', got {type(value).__name__}"
        )
    m = _QUANTITY.match(text)
    if not m:
        raise ValueError(
            f"{_shown(value)} is not a quantity; write it like '1', '500m', '512Mi' or '4Gi'"
        )
    number, exponent, suffix = m.group(1), m.group(2), m.group(3) or ""
    try:
        amount = Decimal(number)
        if exponent:
            amount = amount * (Decimal(10) ** int(exponent[1:]))
        amount = amount * _SUFFIX[suffix]
    except (InvalidOperation, Overflow, OverflowError) as exc:
        raise ValueError(f"{_shown(value)} is not a quantity") from exc
    milli = (amount * 1000).to_integral_value(rounding=ROUND_CEILING)
    if milli > MAX_MILLI:
        raise ValueError(f"{_shown(value)} is too large")
    return int(milli)


def format_quantity(milli: int, resource: str = "") -> str:
    """A readable quantity: binary suffixes for memory-like resources, cores for cpu."""
    if milli % 1000:
        return f"{milli}m"
    units = milli // 1000
    if resource in (MEMORY, EPHEMERAL_STORAGE):
        for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
            size = int(_SUFFIX[suffix])
            if units and units % size == 0:
                return f"{units // size}{suffix}"
    return str(units)


class Resources(Mapping[str, int]):
    """An immutable vector of resources in milli-units; missing entries are zero."""

    __slots__ = ("_v",)

    def __init__(self, values: Mapping[str, int] | Iterable[tuple[str, int]] = ()) -> None:
        items = values.items() if isinstance(values, Mapping) else values
        self._v: dict[str, int] = {k: int(v) for k, v in items if v}

    @classmethod
    def parse(cls, values: Mapping[str, str | int | float]) -> Resources:
        return cls({k: parse_quantity(v) for k, v in values.items()})

    def __getitem__(self, key: str) -> int:
        return self._v.get(key, 0)

    def __iter__(self):
        return iter(self._v)

    def __len__(self) -> int:
        return len(self._v)

    def __repr__(self) -> str:
        return f"Resources({self.to_strings()})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Resources):
            return self._v == other._v
        return NotImplemented

    def __hash__(self) -> int:
        return hash(frozenset(self._v.items()))

    def __add__(self, other: Mapping[str, int]) -> Resources:
        out = dict(self._v)
        for k, v in other.items():
            out[k] = out.get(k, 0) + v
        return Resources(out)

    def __sub__(self, other: Mapping[str, int]) -> Resources:
        out = dict(self._v)
        for k, v in other.items():
            out[k] = out.get(k, 0) - v
        return Resources(out)

    def fits_in(self, available: Mapping[str, int]) -> bool:
        """True when every resource asked for is available (absent means zero)."""
        return all(v <= available.get(k, 0) for k, v in self._v.items())

    def maximum(self, other: Mapping[str, int]) -> Resources:
        keys = set(self._v) | set(other)
        return Resources({k: max(self[k], other.get(k, 0)) for k in keys})

    def to_dict(self) -> dict[str, int]:
        return dict(self._v)

    def to_strings(self) -> dict[str, str]:
        return {k: format_quantity(v, k) for k, v in sorted(self._v.items())}
