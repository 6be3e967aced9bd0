"""armada.services.retry_cost_reads: amounts of resource-hours read as people read them, in
the unit that fits their size, never in exponent form."""

from __future__ import annotations

import pytest

from armada.services.retry_cost_reads import hours_text

HOURS = [
    (0.0, "0 core-hours"),
    (7e-05, "0.3 core-seconds"),
    (0.0001, "0.4 core-seconds"),
    (1e-06, "under 0.01 core-seconds"),
    (3e-06, "0.01 core-seconds"),
    (0.002, "0.1 core-minutes"),
    (0.05, "3 core-minutes"),
    (0.2, "0.2 core-hours"),
    (3.456, "3.5 core-hours"),
    (12345.6, "12,346 core-hours"),
]


@pytest.mark.parametrize("value,text", HOURS)
def test_hours_text(value: float, text: str) -> None:
    assert hours_text(value, "core") == text
    assert "e-" not in hours_text(value, "GiB")
