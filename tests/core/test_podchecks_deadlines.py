"""armada.core.podchecks: the deadlines of a Pending pod (node assignment, status updates
from the kubelet, init containers), and which pods are checked at all."""

from __future__ import annotations

from typing import Any

import pytest

from armada.core.podchecks import (
    FAIL,
    NO_NODE_ASSIGNED,
    NO_STATUS_UPDATES,
    POD_STARTUP_ISSUE,
    RETRY,
    WAIT,
    PodCheckResult,
)
from tests.core.podcheck_pods import (
    BACKOFF,
    INIT_SPEC,
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
    terminated,
    ts,
    waiting,
)

# --- deadlines ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("case", "p", "events", "expected"),
    [
        ("unbound within the deadline", pod(10, node=None, containers=[]), [], PodCheckResult()),
        (
            "unbound past the deadline is retried",
            pod(2 * MIN, node=None, containers=[]),
            [event(SCHEDULER, reason="FailedScheduling")],
            PodCheckResult(
                RETRY,
                NO_NODE_ASSIGNED,
                "the pod was not bound to a node within 1m; returning the lease",
            ),
        ),
        (
            "bound, the kubelet silent past the deadline: retried",
            pod(10 * MIN, containers=[]),
            [],
            PodCheckResult(
                RETRY,
                NO_STATUS_UPDATES,
                "the node's kubelet wrote no status or event for the pod within 1m; "
                "the node is likely broken, returning the lease",
            ),
        ),
        (
            "the scheduler's Scheduled event is not the kubelet's",
            pod(10 * MIN, containers=[]),
            [event("Successfully assigned default/p to node-1", "Normal", "Scheduled")],
            RETRY,
        ),
        (
            "nor is its FailedScheduling",
            pod(10 * MIN, containers=[]),
            [event("Failed to schedule onto node", reason="FailedScheduling")],
            RETRY,
        ),
        (
            "silent but within the deadline: wait",
            pod(10, containers=[]),
            [],
            PodCheckResult(
                WAIT,
                NO_STATUS_UPDATES,
                "no status or event from the node's kubelet yet; waiting up to 1m",
            ),
        ),
        (
            "an event of the kubelet's: not silent",
            pod(10 * MIN, containers=[]),
            [event('Pulling image "busybox"', "Normal", "Pulling")],
            PodCheckResult(),
        ),
        ("a container status: not silent", pod(10 * MIN), [], PodCheckResult()),
    ],
)
def test_deadlines(
    case: str, p: dict[str, Any], events: list[dict[str, Any]], expected: Any
) -> None:
    result = run(checks(), p, events)
    if isinstance(expected, str):
        assert result.action == expected, case
    else:
        assert result == expected, case


def test_time_in_state_runs_from_the_last_status_change() -> None:
    cfg = checks(containers=[cs_check("ImagePullBackOff", "Fail", "5m")])
    old = pod(60 * MIN, containers=[BACKOFF])
    assert run(cfg, old).action == FAIL
    recent = {
        **old,
        "status": {
            **old["status"],
            "conditions": [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": ts(2 * MIN)}
            ],
        },
    }
    assert run(cfg, recent).action == WAIT
    restarted = pod(60 * MIN, containers=[BACKOFF], init=[terminated("init", 10 * MIN, 3 * MIN, 0)])
    assert run(cfg, restarted).action == WAIT


def test_a_pod_without_any_time_waits() -> None:
    p = pod(10 * MIN, node=None, containers=[])
    del p["metadata"]["creationTimestamp"]
    assert run(checks([ev_check(".*", "Fail")]), p, [event(PVC)]) == PodCheckResult()


@pytest.mark.parametrize("phase", ["Running", "Succeeded", "Failed", "Unknown"])
def test_only_pending_pods_are_checked(phase: str) -> None:
    cfg = checks([ev_check(".*", "Fail")], [cs_check(".*", "Fail", "0s")])
    assert (
        run(cfg, pod(10 * MIN, node=None, containers=[BACKOFF], phase=phase), [event(PVC)])
        == PodCheckResult()
    )


def test_a_pod_without_a_phase_yet_is_pending() -> None:
    assert run(checks(), pod(2 * MIN, node=None, containers=[], phase=None)).action == RETRY


# --- init containers ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("case", "init", "init_spec", "deadline", "action", "says"),
    [
        (
            "running past the deadline fails",
            [running("init", 2 * MIN)],
            INIT_SPEC,
            "1m",
            FAIL,
            [
                "the init containers did not complete within 1m",
                "init container init has been running for 2m",
            ],
        ),
        ("within the deadline", [running("init", 30)], INIT_SPEC, "1m", WAIT, []),
        ("not started yet", [waiting("init", "")], INIT_SPEC, "1m", WAIT, []),
        ("completed", [terminated("init", 5 * MIN, 3 * MIN, 0)], INIT_SPEC, "1m", WAIT, []),
        ("the deadline is off (0)", [running("init", 60 * MIN)], INIT_SPEC, "0s", WAIT, []),
        (
            "the deadline runs from the first init container's start",
            [terminated("first-init", 5 * MIN, 4 * MIN, 0), running("second-init", 30)],
            [{"name": "first-init"}, {"name": "second-init"}],
            "1m",
            FAIL,
            ["init container second-init has been running for 30s"],
        ),
        (
            "a failed init container is named",
            [terminated("init", 5 * MIN, 4 * MIN, 1)],
            INIT_SPEC,
            "1m",
            FAIL,
            ["init container init exited with code 1"],
        ),
        (
            "sidecars are not waited for",
            [terminated("init", 5 * MIN, 4 * MIN, 0), running("proxy", 5 * MIN)],
            [{"name": "proxy", "restartPolicy": "Always"}, *INIT_SPEC],
            "1m",
            WAIT,
            [],
        ),
    ],
)
def test_init_container_deadline(
    case: str,
    init: list[dict[str, Any]],
    init_spec: list[dict[str, Any]],
    deadline: str,
    action: str,
    says: list[str],
) -> None:
    p = pod(
        10 * MIN, containers=[waiting("main", "PodInitializing")], init=init, init_spec=init_spec
    )
    result = run(checks(deadlineForInitContainers=deadline), p)
    assert result.action == action, case
    for text in says:
        assert text in result.message
    if action == FAIL:
        assert result.cause == POD_STARTUP_ISSUE
