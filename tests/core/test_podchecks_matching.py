"""armada.core.podchecks: the configured event and container-status checks of a Pending
pod, and how their actions combine (the strongest wins)."""

from __future__ import annotations

from typing import Any

import pytest

from armada.core.podchecks import (
    FAIL,
    POD_STARTUP_ISSUE,
    RETRY,
    WAIT,
    PodCheckResult,
    strongest,
)
from tests.core.podcheck_pods import (
    BACKOFF,
    BAD_NAME,
    MIN,
    PVC,
    SCHEDULER,
    checks,
    cs_check,
    ev_check,
    event,
    pod,
    run,
    running,
    waiting,
)

# --- event checks -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("case", "event_checks", "events", "in_state", "action"),
    [
        ("no events and no checks", [], [], 2 * MIN, WAIT),
        (
            "a matching check past its grace acts",
            [ev_check("pvc", "Fail")],
            [event(PVC)],
            2 * MIN,
            FAIL,
        ),
        ("a Retry check retries", [ev_check("pvc", "Retry")], [event(PVC)], 2 * MIN, RETRY),
        (
            "the regexp does not match",
            [ev_check("something else", "Fail")],
            [event(PVC)],
            2 * MIN,
            WAIT,
        ),
        (
            "the type does not match",
            [ev_check("pvc", "Fail")],
            [event(PVC, "Normal")],
            2 * MIN,
            WAIT,
        ),
        ("within the grace period", [ev_check("pvc", "Fail")], [event(PVC)], MIN / 2, WAIT),
        ("exactly at the grace period", [ev_check("pvc", "Fail")], [event(PVC)], MIN, WAIT),
        ("the regexp matches anywhere", [ev_check("mount", "Fail")], [event(PVC)], 2 * MIN, FAIL),
        (
            "two events, two checks: the strongest wins",
            [ev_check("image", "Retry"), ev_check("pvc", "Fail")],
            [event(PVC), event("Failed to pull image!")],
            2 * MIN,
            FAIL,
        ),
        (
            "the first matching check decides even within its grace period",
            [ev_check("image", "Retry", "2m"), ev_check(".*", "Fail", "1s")],
            [event("Failed to pull image")],
            MIN,
            WAIT,
        ),
        (
            "a check whose regexp does not match leaves the event to the next",
            [ev_check("image", "Retry"), ev_check(".*", "Fail")],
            [event("Secret missing")],
            2 * MIN,
            FAIL,
        ),
        (
            "inverse: a message that matches is left alone",
            [ev_check("nodes are available", "Retry", inverse=True)],
            [event(SCHEDULER, reason="FailedScheduling")],
            2 * MIN,
            WAIT,
        ),
        (
            "inverse: a message that does not match acts",
            [ev_check("nodes are available", "Retry", inverse=True)],
            [event("Some other error message")],
            2 * MIN,
            RETRY,
        ),
        (
            "Normal checks look at Normal events only",
            [{"regexp": "Pulling", "type": "Normal", "gracePeriod": "1m", "action": "Retry"}],
            [event('Pulling image "busybox"', "Normal", "Pulling")],
            2 * MIN,
            RETRY,
        ),
    ],
)
def test_event_checks(
    case: str,
    event_checks: list[dict[str, Any]],
    events: list[dict[str, Any]],
    in_state: float,
    action: str,
) -> None:
    result = run(checks(event_checks), pod(in_state), events)
    assert result.action == action, case
    assert result.cause == (POD_STARTUP_ISSUE if action != WAIT else "")
    assert bool(result.message) == (action != WAIT)


def test_an_event_message_names_the_check_and_quotes_the_event() -> None:
    cfg = checks([ev_check("pvc", "Fail", name="pvc-check")])
    result = run(cfg, pod(2 * MIN), [event(PVC, reason="FailedMount")])
    assert result == PodCheckResult(
        FAIL, POD_STARTUP_ISSUE, f'check "pvc-check" matched FailedMount: {PVC}'
    )


def test_only_the_events_that_matched_are_in_the_message() -> None:
    matched = 'Failed to pull image "amd64/busybox:latest": no match for platform in manifest'
    result = run(
        checks([ev_check("Failed to pull image", "Fail")]),
        pod(2 * MIN),
        [
            event("Successfully assigned default/my-pod to node-1", "Normal", "Scheduled"),
            event('Pulling image "amd64/busybox:latest"', "Normal", "Pulling"),
            event(matched),
            event("Back-off pulling image", "Normal", "BackOff"),
        ],
    )
    assert result.action == FAIL
    assert result.message == f'check "events[0]" matched Failed: {matched}'


# --- container checks ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("case", "container_checks", "statuses", "in_state", "action"),
    [
        ("no containers and no checks", [], [waiting("main", "ContainerCreating")], 2 * MIN, WAIT),
        (
            "a matching check past its grace acts",
            [cs_check("InvalidImageName", "Fail")],
            [BAD_NAME],
            2 * MIN,
            FAIL,
        ),
        (
            "a Retry check retries",
            [cs_check("InvalidImageName", "Retry")],
            [BAD_NAME],
            2 * MIN,
            RETRY,
        ),
        ("within the grace period", [cs_check("InvalidImageName", "Fail")], [BAD_NAME], 1, WAIT),
        (
            "exactly at the grace period acts",
            [cs_check("InvalidImageName", "Fail")],
            [BAD_NAME],
            MIN,
            FAIL,
        ),
        (
            "a grace period of 0 acts at once",
            [cs_check("InvalidImageName", "Fail", "0s")],
            [BAD_NAME],
            0,
            FAIL,
        ),
        (
            "the reason does not match",
            [cs_check("InvalidImageName", "Fail")],
            [waiting("main", "AnotherReason", "Some other error")],
            2 * MIN,
            WAIT,
        ),
        (
            "a terminated container is not waiting",
            [cs_check("InvalidImageName", "Fail")],
            [
                {
                    "name": "main",
                    "state": {"terminated": {"exitCode": 1, "reason": "InvalidImageName"}},
                }
            ],
            2 * MIN,
            WAIT,
        ),
        (
            "a running container is not waiting",
            [cs_check(".*", "Fail")],
            [running("main", 10)],
            2 * MIN,
            WAIT,
        ),
        (
            "two containers, two checks: the strongest wins",
            [cs_check("InvalidImageName", "Fail"), cs_check("ImagePullBackOff", "Retry")],
            [BACKOFF, {**BAD_NAME, "name": "sidecar"}],
            2 * MIN,
            FAIL,
        ),
        (
            "the first matching check decides even within its grace period",
            [cs_check("ImagePullBackOff", "Fail", "10m"), cs_check(".*", "Retry")],
            [BACKOFF],
            5 * MIN,
            WAIT,
        ),
        (
            "inverse: a matching reason is left alone",
            [cs_check("ImagePullBackOff", "Fail", inverse=True)],
            [BACKOFF],
            5 * MIN,
            WAIT,
        ),
        (
            "inverse: another reason acts",
            [cs_check("ImagePullBackOff", "Fail", inverse=True)],
            [waiting("main", "Some other reason", "Backing off")],
            5 * MIN,
            FAIL,
        ),
    ],
)
def test_container_checks(
    case: str,
    container_checks: list[dict[str, Any]],
    statuses: list[dict[str, Any]],
    in_state: float,
    action: str,
) -> None:
    result = run(checks(containers=container_checks), pod(in_state, containers=statuses))
    assert result.action == action, case
    assert bool(result.message) == (action != WAIT)


def test_a_container_message_names_container_reason_and_check() -> None:
    cfg = checks(containers=[cs_check("InvalidImageName", "Fail", name="invalid-image-name")])
    result = run(cfg, pod(2 * MIN, containers=[BAD_NAME]))
    assert result == PodCheckResult(
        FAIL,
        POD_STARTUP_ISSUE,
        "container main has been waiting with reason InvalidImageName (Image name is wrong) "
        'for 1m or more (check "invalid-image-name")',
    )


def test_an_unnamed_check_is_named_by_its_place() -> None:
    result = run(
        checks(containers=[cs_check("InvalidImageName", "Fail")]),
        pod(2 * MIN, containers=[BAD_NAME]),
    )
    assert '(check "containerStatuses[0]")' in result.message


def test_init_containers_are_checked_too() -> None:
    cfg = checks(containers=[cs_check("ErrImagePull", "Fail")])
    p = pod(
        2 * MIN,
        containers=[waiting("main", "PodInitializing")],
        init=[waiting("fetch", "ErrImagePull")],
    )
    result = run(cfg, p)
    assert result.action == FAIL
    assert result.message.startswith("container fetch has been waiting with reason ErrImagePull")


# --- the strongest action wins ------------------------------------------------------------


@pytest.mark.parametrize("event_action", [WAIT, RETRY, FAIL])
@pytest.mark.parametrize("container_action", [WAIT, RETRY, FAIL])
def test_the_strongest_action_wins(event_action: str, container_action: str) -> None:
    event_checks = [] if event_action == WAIT else [ev_check("pvc", event_action)]
    container_checks = (
        [] if container_action == WAIT else [cs_check("ImagePullBackOff", container_action)]
    )
    result = run(
        checks(event_checks, container_checks), pod(2 * MIN, containers=[BACKOFF]), [event(PVC)]
    )
    order = [WAIT, RETRY, FAIL]
    expected = order[max(order.index(event_action), order.index(container_action))]
    assert result.action == expected == strongest(event_action, container_action)  # type: ignore[arg-type]
    assert result.cause == ("" if expected == WAIT else POD_STARTUP_ISSUE)
    assert len(result.message.splitlines()) == (event_action != WAIT) + (container_action != WAIT)


def test_messages_are_joined_one_a_line_events_first() -> None:
    cfg = checks(
        [ev_check("pvc", "Retry", name="e")], [cs_check("ImagePullBackOff", "Fail", name="c")]
    )
    result = run(cfg, pod(2 * MIN, containers=[BACKOFF]), [event(PVC)])
    first, second = result.message.split("\n")
    assert first == f'check "e" matched Failed: {PVC}'
    assert second.endswith('(check "c")')
