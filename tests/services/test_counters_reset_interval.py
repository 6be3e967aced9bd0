"""A changed ``metrics.jobStateMetricsResetInterval`` applies from the next start: the next
reset is reckoned from the last one and the new interval (``counters_reset_if_due``)."""

from __future__ import annotations

import pytest

from armada.models import LeaderLease, MetricCounter
from armada.services.counters import RESET_MARK, counters_add, counters_reset_if_due, next_reset_at
from tests.conftest import at

pytestmark = pytest.mark.django_db

H = 3600.0
NAME = "armada_scheduler_retry_policy_decisions_total"


def count() -> None:
    counters_add(name=NAME, increments={(("queue", "demo"),): 1})


def counted() -> bool:
    return MetricCounter.objects.filter(name=NAME).exists()


def reset(seconds: float, interval: float) -> bool:
    return counters_reset_if_due(names=[NAME], now=at(seconds), interval_seconds=interval)


def mark() -> LeaderLease:
    return LeaderLease.objects.get(name=RESET_MARK)


# The last reset (the mark's start) was at 0 with ``old``; the scheduler restarts at
# ``restart`` with ``new``: does it reset then, and when is the next reset after that?
CASES = [
    pytest.param(12 * H, 1 * H, 2 * H, True, 3 * H, id="shorter-already-due"),
    pytest.param(12 * H, 4 * H, 3 * H, False, 4 * H, id="shorter-not-yet-due"),
    pytest.param(1 * H, 6 * H, 1 * H, False, 6 * H, id="longer"),
    pytest.param(1 * H, 1 * H, 1 * H, True, 2 * H, id="same"),
    pytest.param(1 * H, 1 * H, 0.5 * H, False, 1 * H, id="same-not-yet-due"),
    pytest.param(1 * H, 0.0, 5 * H, False, None, id="off"),
]


@pytest.mark.parametrize(("old", "new", "restart", "resets_at_restart", "next_reset"), CASES)
def test_a_changed_interval_applies_from_the_next_start(
    old, new, restart, resets_at_restart, next_reset
):
    count()
    assert reset(0, old) is False  # the first call starts the clock
    assert mark().expires_at == at(old)
    assert reset(restart, new) is resets_at_restart
    assert counted() is not resets_at_restart
    count()
    if next_reset is None:
        assert reset(restart + 100 * H, new) is False
        assert counted()
        assert mark().expires_at == at(old)  # left as it was
        return
    assert mark().expires_at == at(next_reset)
    assert reset(next_reset - 1, new) is False
    assert reset(next_reset - 1, new) is False  # asked again: the same answer
    assert counted()
    assert reset(next_reset, new) is True
    assert not counted()
    assert mark().expires_at == at(next_reset + new)


def test_turned_off_then_on_again_goes_on_from_the_last_reset():
    count()
    assert reset(0, H) is False
    assert reset(5 * H, 0) is False  # off: nothing happens
    assert counted()
    assert reset(5 * H, H) is True  # on again: the reset due at 1h is overdue
    assert mark().expires_at == at(6 * H)


def test_a_mark_that_does_not_say_its_interval_is_due_within_one_new_interval():
    LeaderLease.objects.create(name=RESET_MARK, expires_at=at(12 * H))  # made before
    count()
    assert reset(0.5 * H, H) is False
    assert mark().expires_at == at(1.5 * H)
    assert reset(1.5 * H, H) is True
    assert mark().expires_at == at(2.5 * H)


@pytest.mark.parametrize(
    ("marked", "made_with", "interval", "now", "expected"),
    [
        pytest.param(12 * H, 12 * H, H, 2 * H, H, id="shorter-in-the-past"),
        pytest.param(12 * H, 12 * H, 4 * H, 2 * H, 4 * H, id="shorter-ahead"),
        pytest.param(H, H, 6 * H, H, 6 * H, id="longer"),
        pytest.param(12 * H, None, H, 0.5 * H, 1.5 * H, id="unknown-capped"),
        pytest.param(H, None, 6 * H, 0.5 * H, H, id="unknown-kept"),
    ],
)
def test_next_reset_at(marked, made_with, interval, now, expected):
    assert next_reset_at(
        marked=at(marked), made_with=made_with, interval_seconds=interval, now=at(now)
    ) == at(expected)
