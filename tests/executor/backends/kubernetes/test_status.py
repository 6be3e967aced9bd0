"""armada.executor.backends.kubernetes.status: real pod statuses (JSON files in
``fixtures/``) read as our PodStatus, and categorised as a platform team would configure it."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from armada.core.categorizer import Categorizer
from armada.core.config import parse_config
from armada.core.config_podchecks import PodChecks
from armada.core.podchecks import PodCheckRunner
from armada.executor.backends.base import ContainerResult, PodStatus
from armada.executor.backends.kubernetes.status import pod_status
from armada.executor.run_reports import signals_of

FIXTURES = Path(__file__).parent / "fixtures"
RUNNER = PodCheckRunner(PodChecks())
NOW = datetime(2026, 12, 5, 10, 0, 0, tzinfo=UTC)


def at(hms: str) -> datetime:
    return datetime.fromisoformat(f"2026-12-05T{hms}+00:00")


def load(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{name}.json").read_text())


def status_of(name: str, now: datetime = NOW) -> PodStatus:
    doc = load(name)
    return pod_status(doc["pod"], doc["events"], now, RUNNER)


GPU = (
    "Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. "
    "Requested: 1, Available: 0, which is unexpected"
)
EVICTION = (
    "The node was low on resource: memory. Threshold quantity: 100Mi, available: 61720Ki. "
    "Container main was using 3912464Ki, request is 1Gi, has larger consumption of memory. "
)
DEADLINE = "Pod was active on the node longer than the specified deadline"

# (fixture, now, the PodStatus fields that matter; every other field keeps its default)
CASES: list[tuple[str, datetime, dict[str, Any]]] = [
    (
        "oom_killed",
        NOW,
        {
            "running_at": at("09:00:05"),
            "finished_at": at("09:41:10"),
            "containers": (ContainerResult("main", 137, "OOMKilled"),),
            "conditions": ("OOMKilled",),
            "reason": "OOMKilled",
            "message": "container main exited with code 137",
        },
    ),
    (
        "evicted_node_pressure",
        NOW,
        {
            "running_at": at("09:00:05"),
            "finished_at": at("09:30:31"),
            "containers": (ContainerResult("main", 137, "Error"),),
            "conditions": ("Evicted",),
            "reason": "Evicted",
            "message": EVICTION,
        },
    ),
    (
        "evicted_by_api",
        NOW,
        {
            "running_at": at("09:00:05"),
            "finished_at": at("09:50:02"),
            "containers": (ContainerResult("main", 143, "Error"),),
            "conditions": ("Evicted",),
            "reason": "Error",
            "message": "container main exited with code 143",
            "deleting": True,
        },
    ),
    (
        "deadline_exceeded",
        NOW,
        {
            "running_at": at("09:00:05"),
            "finished_at": at("10:00:34"),
            "containers": (ContainerResult("main", 137, "Error"),),
            "conditions": ("DeadlineExceeded",),
            "reason": "DeadlineExceeded",
            "message": DEADLINE,
        },
    ),
    (
        "deadline_exceeded_never_ran",
        NOW,
        {
            "finished_at": at("09:10:01"),
            "conditions": ("DeadlineExceeded",),
            "reason": "DeadlineExceeded",
            "message": DEADLINE,
            # The pod's message, then the latest Warning event: its container never ran.
            "pod_error": f"{DEADLINE}\nError: ImagePullBackOff",
        },
    ),
    ("image_pull_backoff", at("09:01:30"), {}),  # within every grace period: wait
    ("create_container_config_error", at("09:02:00"), {}),
    ("failed_mount", at("09:03:00"), {}),
    ("pending_unbound", at("09:02:00"), {"node": ""}),
    (
        "unexpected_admission_error",
        NOW,
        {
            "finished_at": NOW,  # nothing in the pod says when
            "reason": "UnexpectedAdmissionError",
            "message": GPU,
            "pod_error": GPU,  # the event says the same: said once
        },
    ),
    (
        # Refused for room by the kubelet before anything ran: the lease goes back (the
        # room may be free on another attempt), not a failure.
        "out_of_cpu",
        NOW,
        {
            "reason": "OutOfcpu",
            "message": "Pod was rejected: Node didn't have enough resource: cpu, requested: "
            "2000, used: 7500, capacity: 8000",
            "return_lease": "Pod was rejected: Node didn't have enough resource: cpu, "
            "requested: 2000, used: 7500, capacity: 8000",
        },
    ),
    (
        "node_lost",
        NOW,
        {
            "running_at": at("09:00:05"),
            "finished_at": at("09:40:00"),
            "reason": "DeletionByPodGC",
            "message": "PodGC: node no longer exists",
            "pod_error": "PodGC: node no longer exists",
            "deleting": True,
        },
    ),
    (
        "init_container_failed",
        NOW,
        {
            "finished_at": at("09:00:08"),
            "containers": (ContainerResult("fetch", 2, "Error", "download failed: 404 Not Found"),),
            "reason": "Error",
            "message": "download failed: 404 Not Found",
        },
    ),
    (
        "succeeded_multi_container",
        NOW,
        {
            "running_at": at("09:00:11"),
            "finished_at": at("09:19:30"),  # the sidecar, stopped after, does not count
            "succeeded": True,
            "containers": (
                ContainerResult("main", 0, "Completed"),
                ContainerResult("uploader", 0, "Completed"),
            ),
        },
    ),
    ("graceful_deletion", NOW, {"running_at": at("09:00:05"), "deleting": True}),
    ("running", NOW, {"running_at": at("09:00:07")}),  # the restarted container's first start
    (
        "terminated_phase_running",
        NOW,
        {"running_at": at("09:00:05"), "containers": (ContainerResult("main", 0, "Completed"),)},
    ),
]


@pytest.mark.parametrize(
    ("name", "now", "fields"), CASES, ids=[f"{c[0]}@{c[1]:%H:%M}" for c in CASES]
)
def test_pod_status(name: str, now: datetime, fields: dict[str, Any]) -> None:
    doc = load(name)
    meta = doc["pod"]["metadata"]
    expected = PodStatus(
        name=meta["name"],
        run_id=meta["labels"]["armada_job_run_id"],
        pending_at=at("09:00:00"),
        uid=meta["uid"],  # the pod's UID, reported on every event about it
        **{"node": "worker-gpu-3", **fields},
    )
    assert status_of(name, now) == expected


# Pods the default checks act on: (fixture, now, action, texts the message holds)
STUCK = [
    (
        "image_pull_backoff",
        NOW,
        "Fail",
        [
            'check "image-does-not-exist" matched Failed: Failed to pull image',
            "container main has been waiting with reason ImagePullBackOff",
        ],
    ),
    ("err_image_pull", NOW, "Fail", ["reason ErrImagePull", "pull access denied"]),
    (
        "create_container_config_error",
        NOW,
        "Fail",
        ['reason CreateContainerConfigError (secret "db-password" not found)'],
    ),
    (
        "failed_mount",
        NOW,
        "Retry",
        [
            'check "volume-not-mounted" matched FailedMount: MountVolume.SetUp failed',
            "reason ContainerCreating",
        ],
    ),
    ("pending_unbound", at("09:04:00"), "Retry", ["0/12 nodes are available"]),
    ("pending_unbound", NOW, "Retry", ["not bound to a node within 5m"]),
]


@pytest.mark.parametrize(
    ("name", "now", "action", "says"), STUCK, ids=[f"{s[0]}@{s[1]:%H:%M}" for s in STUCK]
)
def test_stuck_pods(name: str, now: datetime, action: str, says: list[str]) -> None:
    status = status_of(name, now)
    if action == "Fail":
        assert status.finished_at == now and not status.succeeded
        assert status.reason == "PodStartupIssue"
        assert status.message == status.pod_error
        assert status.return_lease == ""
        text = status.pod_error
    else:
        assert status.finished_at is None and status.pod_error == ""
        text = status.return_lease
    for part in says:
        assert part in text
    assert status.containers == () and status.running_at is None


def test_no_checks_on_a_pending_pod_being_deleted() -> None:
    doc = load("image_pull_backoff")
    doc["pod"]["metadata"]["deletionTimestamp"] = "2026-12-05T09:59:00Z"
    status = pod_status(doc["pod"], doc["events"], NOW, RUNNER)
    assert status.deleting and status.finished_at is None and status.return_lease == ""


def test_no_checks_configured_means_no_action() -> None:
    quiet = PodCheckRunner(PodChecks.model_validate({"events": [], "containerStatuses": []}))
    doc = load("image_pull_backoff")
    status = pod_status(doc["pod"], doc["events"], NOW, quiet)
    assert status.finished_at is None and status.return_lease == "" and status.pod_error == ""


def test_a_pod_without_status_is_pending() -> None:
    pod = {"metadata": {"name": "p", "creationTimestamp": "2026-12-05T09:59:00Z"}, "spec": {}}
    assert pod_status(pod, [], NOW, RUNNER) == PodStatus(
        name="p", run_id="", pending_at=at("09:59:00")
    )


# --- categorised as a platform team would configure it ------------------------------------

ERROR_CATEGORIES = {
    "enabled": True,
    "defaultCategory": "unknown",
    "categories": [
        {"name": "oom", "action": "Delete", "rules": [{"onConditions": ["OOMKilled"]}]},
        {"name": "evicted", "rules": [{"onConditions": ["Evicted"]}]},
        {"name": "deadline", "rules": [{"onConditions": ["DeadlineExceeded"]}]},
        {
            "name": "image",
            "rules": [
                {"onPodError": {"pattern": "ImagePullBackOff|ErrImagePull|InvalidImageName"}}
            ],
        },
        {"name": "config", "rules": [{"onPodError": {"pattern": "CreateContainerConfigError"}}]},
        {
            "name": "internal",
            "action": "Delete",
            "rules": [
                {
                    "onPodError": {
                        "pattern": "node no longer exists|Allocate failed|Node didn't have enough"
                    },
                    "subcategory": "node-failure",
                }
            ],
        },
        {"name": "user-error", "rules": [{"onExitCodes": {"operator": "In", "values": [1, 2]}}]},
    ],
}
CATEGORIZER = Categorizer(
    parse_config({"executors": [{"id": "k", "errorCategories": ERROR_CATEGORIES}]})
    .executors[0]
    .error_categories
)

CATEGORISED = [
    ("oom_killed", "oom", ""),
    ("evicted_node_pressure", "evicted", ""),
    ("evicted_by_api", "evicted", ""),
    ("deadline_exceeded", "deadline", ""),
    ("deadline_exceeded_never_ran", "deadline", ""),
    ("image_pull_backoff", "image", ""),
    ("err_image_pull", "image", ""),
    ("create_container_config_error", "config", ""),
    ("unexpected_admission_error", "internal", "node-failure"),
    ("node_lost", "internal", "node-failure"),
    ("init_container_failed", "user-error", ""),
]


@pytest.mark.parametrize(("name", "category", "subcategory"), CATEGORISED)
def test_categorised(name: str, category: str, subcategory: str) -> None:
    status = status_of(name)
    assert status.finished_at is not None and not status.succeeded
    result = CATEGORIZER.categorize(signals_of(status))
    assert (result.category, result.subcategory) == (category, subcategory)


def test_every_fixture_is_used() -> None:
    used = {c[0] for c in CASES} | {s[0] for s in STUCK} | {c[0] for c in CATEGORISED}
    assert used == {p.stem for p in FIXTURES.glob("*.json")}


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.json")), ids=lambda p: p.stem)
def test_fixtures_are_pods_with_their_events(path: Path) -> None:
    doc = json.loads(path.read_text())
    assert doc["description"] and doc["pod"]["kind"] == "Pod"
    name = doc["pod"]["metadata"]["name"]
    assert all(e["involvedObject"]["name"] == name for e in doc["events"])
