"""``executors[].keptPodRetention``: how long a Retain category's failed pod is kept; a
Duration like the executor's other times, a day by default, and an error naming the key."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from armada.core.config import parse_config
from armada.core.errors import ValidationFailed

KEY = "executors[0].keptPodRetention"


def retention(value: object) -> float:
    return (
        parse_config({"executors": [{"id": "a", "keptPodRetention": value}]})
        .executors[0]
        .kept_pod_retention
    )


def test_the_default_is_a_day() -> None:
    assert parse_config({"executors": [{"id": "a"}]}).executors[0].kept_pod_retention == 86400.0


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("24h", 86400.0),
        ("1d", 86400.0),
        ("90m", 5400.0),
        ("1h30m", 5400.0),
        ("30s", 30.0),
        ("500ms", 0.5),
        (600, 600.0),  # a bare number is seconds
        (2.5, 2.5),
    ],
)
def test_valid_retentions(value: object, seconds: float) -> None:
    assert retention(value) == seconds


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("0", "greater than 0"),
        (0, "greater than 0"),
        (-5, "cannot be negative"),
        ("soon", "is not a duration"),
        ("-1h", "is not a duration"),
        ("1 day", "is not a duration"),
        (True, "expected a duration"),
        (None, "is not a duration"),
        ("200000d", "at most 100 years"),
    ],
)
def test_invalid_retentions_name_the_key(value: object, message: str) -> None:
    with pytest.raises(ValidationFailed) as info:
        retention(value)
    [(field, text)] = [(e.field, e.message) for e in info.value.errors]
    assert field == KEY
    assert message in text


def test_the_second_executor_is_named_by_its_index() -> None:
    with pytest.raises(ValidationFailed) as info:
        parse_config({"executors": [{"id": "a"}, {"id": "b", "keptPodRetention": "forever"}]})
    assert [e.field for e in info.value.errors] == ["executors[1].keptPodRetention"]


def test_the_shipped_configuration_sets_a_day() -> None:
    root = Path(__file__).resolve().parents[2]
    data = yaml.safe_load((root / "config" / "armada.yaml").read_text())
    assert data["executors"][0]["keptPodRetention"] == "24h"
    assert parse_config(data).executors[0].kept_pod_retention == 86400.0
