"""armada.core.duration: Go-style durations as seconds."""

from __future__ import annotations

import pytest

from armada.core.duration import format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("0", 0.0),
        ("0s", 0.0),
        ("500ms", 0.5),
        ("1ms", 0.001),
        ("1s", 1.0),
        ("30s", 30.0),
        ("1.5s", 1.5),
        ("10m", 600.0),
        ("1h", 3600.0),
        ("12h", 43200.0),
        ("1.5h", 5400.0),
        ("1h30m", 5400.0),
        ("1m30s", 90.0),
        ("2h45m30s500ms", 2 * 3600 + 45 * 60 + 30.5),
        ("1d", 86400.0),
        ("  5m ", 300.0),
    ],
    ids=lambda v: repr(v) if isinstance(v, str) else None,
)
def test_parse_duration_strings(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    ("value", "seconds"),
    [(0, 0.0), (5, 5.0), (2.5, 2.5), (0.0, 0.0)],
    ids=["int-0", "int-5", "float-2.5", "float-0"],
)
def test_parse_duration_bare_numbers_are_seconds(value, seconds):
    result = parse_duration(value)
    assert result == seconds
    assert isinstance(result, float)


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("", "is not a duration"),
        ("abc", "is not a duration"),
        ("5", "is not a duration"),  # a string needs a unit (as in Go); only "0" does not
        ("-1s", "is not a duration"),
        ("1h 30m", "is not a duration"),
        ("1H", "is not a duration"),
        ("1.s", "is not a duration"),
        ("1s garbage", "is not a duration"),
        ("x1s", "is not a duration"),
        ("1us", "is not a duration"),
        (-1, "cannot be negative"),
        (-0.5, "cannot be negative"),
        (float("nan"), "is not a duration"),
        (float("inf"), "is not a duration"),
        (True, "expected a duration"),
        (None, "is not a duration"),
    ],
    ids=repr,
)
def test_parse_duration_rejects(value, fragment):
    with pytest.raises(ValueError) as info:
        parse_duration(value)
    assert fragment in str(info.value)


def test_parse_duration_error_shows_the_format():
    with pytest.raises(ValueError) as info:
        parse_duration("soon")
    assert "'soon'" in str(info.value)
    assert "'30s'" in str(info.value)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (0.0, "0s"),
        (0.5, "500ms"),
        (0.001, "1ms"),
        (0.25, "250ms"),
        (1, "1s"),
        (1.5, "1.5s"),
        (30, "30s"),
        (60, "1m"),
        (90, "90s"),
        (600, "10m"),
        (3600, "1h"),
        (5400, "90m"),
        (43200, "12h"),
        (86400, "24h"),
        (1_000_001, "1000001s"),
        (1.2345678, "1.2345678s"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_format_duration(seconds, text):
    assert format_duration(seconds) == text


@pytest.mark.parametrize(
    "seconds", [0, 0.5, 0.125, 1, 1.5, 59, 61, 90, 3599, 3601, 5400, 43200, 1_000_001, 1234567.5]
)
def test_format_duration_round_trips(seconds):
    assert parse_duration(format_duration(seconds)) == pytest.approx(seconds)


@pytest.mark.parametrize(
    "value",
    ["876001h", "9" * 400 + "s", 10**400, 3.2e9],
    ids=["876001h", "400-digit-seconds", "int-beyond-any-float", "float-3.2e9"],
)
def test_parse_duration_rejects_beyond_100_years(value):
    with pytest.raises(ValueError) as info:
        parse_duration(value)
    assert "at most 100 years" in str(info.value)


def test_parse_duration_accepts_100_years():
    assert parse_duration("876000h") == 100 * 365 * 86400.0
