"""armada.core.podchecks: the default checks (``PodChecks()``), and the module's helpers
(``check_pod``, ``parse_time``, ``last_status_change``)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from armada.core.config_podchecks import PodChecks
from armada.core.podchecks import (
    FAIL,
    POD_STARTUP_ISSUE,
    RETRY,
    WAIT,
    PodCheckRunner,
    check_pod,
    last_status_change,
    parse_time,
)
from tests.core.podcheck_pods import (
    BACKOFF,
    BAD_NAME,
    INIT_SPEC,
    MIN,
    NOW,
    PVC,
    SCHEDULER,
    event,
    pod,
    running,
    terminated,
    ts,
    waiting,
)

# --- the default checks -------------------------------------------------------------------

DEFAULTS = PodChecks()


@pytest.mark.parametrize(
    ("case", "p", "events", "action"),
    [
        ("an image pull backing off for 4m waits", pod(4 * MIN, containers=[BACKOFF]), [], WAIT),
        ("an image pull backing off for 6m fails", pod(6 * MIN, containers=[BACKOFF]), [], FAIL),
        (
            "ErrImagePull for 6m fails",
            pod(6 * MIN, containers=[waiting("main", "ErrImagePull")]),
            [],
            FAIL,
        ),
        ("a malformed image name fails at once", pod(0, containers=[BAD_NAME]), [], FAIL),
        (
            "a missing secret fails after 3m",
            pod(
                4 * MIN,
                containers=[waiting("main", "CreateContainerConfigError", 'secret "db" not found')],
            ),
            [],
            FAIL,
        ),
        (
            "a missing secret within 3m waits",
            pod(2 * MIN, containers=[waiting("main", "CreateContainerConfigError")]),
            [],
            WAIT,
        ),
        (
            "a volume that does not mount is retried after 5m",
            pod(6 * MIN),
            [
                event(
                    'MountVolume.SetUp failed for volume "data" : configmap "data" not found',
                    reason="FailedMount",
                )
            ],
            RETRY,
        ),
        (
            "an image that does not exist fails after 2m",
            pod(3 * MIN),
            [
                event(
                    'Failed to pull image "nope:1": rpc error: code = NotFound desc = manifest unknown'
                )
            ],
            FAIL,
        ),
        (
            "a pod the scheduler cannot place is retried after 3m",
            pod(4 * MIN, node=None, containers=[]),
            [event(SCHEDULER, reason="FailedScheduling")],
            RETRY,
        ),
        ("ContainerCreating for 11m is retried", pod(11 * MIN), [], RETRY),
        (
            "main containers wait on long init containers",
            pod(
                30 * MIN,
                containers=[waiting("main", "PodInitializing")],
                init=[running("init", 30 * MIN)],
                init_spec=INIT_SPEC,
            ),
            [],
            WAIT,
        ),
    ],
)
def test_default_checks(
    case: str, p: dict[str, Any], events: list[dict[str, Any]], action: str
) -> None:
    assert check_pod(p, events, NOW, DEFAULTS).action == action, case


def test_the_default_scheduling_check_quotes_the_scheduler() -> None:
    result = check_pod(
        pod(4 * MIN, node=None, containers=[]),
        [event(SCHEDULER, reason="FailedScheduling")],
        NOW,
        DEFAULTS,
    )
    assert result.cause == POD_STARTUP_ISSUE
    assert SCHEDULER in result.message


# --- helpers ------------------------------------------------------------------------------


def test_check_pod_is_the_runner() -> None:
    p, events = pod(2 * MIN, containers=[BAD_NAME]), [event(PVC)]
    assert check_pod(p, events, NOW, DEFAULTS) == PodCheckRunner(DEFAULTS).check(p, events, NOW)


def test_a_naive_now_is_utc() -> None:
    p = pod(6 * MIN, containers=[BACKOFF])
    assert PodCheckRunner(DEFAULTS).check(p, [], NOW.replace(tzinfo=None)).action == FAIL


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-12-05T10:00:00Z", NOW),
        ("2026-12-05T10:00:00.250000Z", NOW + timedelta(milliseconds=250)),
        ("2026-12-05T11:00:00+01:00", NOW),
        ("", None),
        (None, None),
        ("yesterday", None),
    ],
)
def test_parse_time(text: Any, expected: datetime | None) -> None:
    assert parse_time(text) == expected


def test_last_status_change_is_the_latest_of_creation_conditions_and_containers() -> None:
    p = pod(
        60 * MIN,
        containers=[running("main", 5 * MIN)],
        init=[terminated("init", 20 * MIN, 7 * MIN, 0)],
        conditions=[{"type": "Ready", "status": "True", "lastTransitionTime": ts(9 * MIN)}],
    )
    assert last_status_change(p) == NOW - timedelta(minutes=5)
