"""The world of the start-up tests (test_executor_startup, test_executor_startup_race):
executors on the fake backend whose nodes carry a label naming their executor, jobs pinned
to one executor's nodes, and readers of runs and their events."""

from __future__ import annotations

from armada.core.config import parse_config
from armada.executor.agent import ExecutorAgent
from armada.executor.backends.fake import FakeBackend
from armada.models import Event, Run
from armada.services.submit import job_submit
from tests.conftest import at, container, job_file

FAKE = "fake.armadaproject.io/"
HOSTNAME = "kubernetes.io/hostname"
CLUSTER = "example.com/cluster"  # a node label naming the node's executor


def executor_config(executor_id: str, nodes: int = 1) -> dict:
    return {
        "id": executor_id,
        "trackedNodeLabels": [HOSTNAME, CLUSTER],
        "nodes": [
            {
                "name": f"{executor_id}-n",
                "count": nodes,
                "labels": {CLUSTER: executor_id},
                "allocatable": {"cpu": "8", "memory": "32Gi"},
            }
        ],
    }


def configure(settings, *ids: str, nodes: int = 1) -> dict[str, ExecutorAgent]:
    """The configuration names the executors ``ids``; returns an agent for each."""
    settings.ARMADA = parse_config({"executors": [executor_config(i, nodes) for i in ids]})
    return {e.id: ExecutorAgent(e, FakeBackend()) for e in settings.ARMADA.executors}


def submit(owner, *, on: str | None = None, duration: str = "1h", count: int = 1) -> list[str]:
    """Jobs that run ``duration``; ``on`` pins them to that executor's nodes."""
    spec: dict = {
        "annotations": {FAKE + "duration": duration},
        "podSpec": {"containers": [container("100m", "64Mi")]},
    }
    if on is not None:
        spec["podSpec"]["nodeSelector"] = {CLUSTER: on}
    return job_submit(actor=owner, data=job_file(jobs=[spec] * count), now=at(0))


def run_of(job_id: str) -> Run:
    return Run.objects.get(job_id=job_id)


def expired_events(job_id: str) -> list[dict]:
    return [
        e.payload for e in Event.objects.filter(job_id=job_id, type="lease_expired").order_by("id")
    ]
