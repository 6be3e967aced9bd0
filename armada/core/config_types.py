"""What the configuration's models share: the strict base (documented camelCase keys only,
frozen) and the value types read from text (durations, resource quantities)."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, PlainSerializer

from armada.core.duration import parse_duration
from armada.core.quantity import format_quantity, parse_quantity

RFC1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def compiled_regex(value: str) -> str:
    """``value`` when it compiles as a Python regular expression; the error says why not."""
    try:
        re.compile(value)
    except re.error as exc:
        raise ValueError(f"not a valid regular expression: {exc}") from exc
    return value


def _duration(value: Any) -> float:
    return parse_duration(value)


def _quantities(value: Any) -> dict[str, int]:
    if not isinstance(value, dict):
        raise ValueError("expected a mapping of resource name to quantity")
    out = {}
    for k, v in value.items():
        try:
            out[str(k)] = parse_quantity(v)
        except ValueError as exc:
            raise ValueError(f"{k}: {exc}") from exc
    return out


Duration = Annotated[float, BeforeValidator(_duration)]


def _quantity_texts(value: dict[str, int]) -> dict[str, str]:
    return {k: format_quantity(v, k) for k, v in value.items()}


# Read from text ("32Gi") into milli-units; written back as text when dumped to JSON/YAML.
Quantities = Annotated[
    dict[str, int],
    BeforeValidator(_quantities),
    PlainSerializer(_quantity_texts, when_used="json"),
]


class Strict(BaseModel):
    # Keys are accepted only as documented (camelCase); ``cycle_period`` is an unknown key.
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=False)
