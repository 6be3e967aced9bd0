"""The world of the agent-on-Kubernetes tests: an emulated API server with two nodes, an
executor agent with the kubernetes backend (through a kubeconfig, over HTTP, the official
client), the executor API on the loopback channel, the retry engine on, and helpers to
submit jobs and drive cycles and ticks on the wall clock (the emulated kubelet keeps real
time, so the tests do too)."""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

from django.utils import timezone

from armada.core.config import parse_config
from armada.executor.backends.kubernetes import KubernetesBackend
from armada.models import Event, Job, Run
from armada.services.policies import policy_create
from armada.services.queues import queue_update
from armada.services.scheduler import scheduler_cycle
from armada.services.submit import job_submit
from tests.conftest import job_file
from tests.executor_api import ApiAgent, api_agent
from tests.kube_emulator import KubeEmulator

FAKE = "fake.armadaproject.io/"
MEMORY_NEEDED = "emulator.armadaproject.io/memoryNeeded"
TOKEN = "agent-token"
CATEGORIES = {
    "enabled": True,
    "categories": [
        {"name": "oom", "action": "Delete", "rules": [{"onConditions": ["OOMKilled"]}]},
        {
            "name": "image",
            "action": "Delete",
            "rules": [{"onPodError": {"pattern": "(?i)pull"}}],
        },
        {
            "name": "user-error",
            "action": "Retain",
            "rules": [{"onExitCodes": {"operator": "In", "values": [1]}}],
        },
    ],
}
POLICY = {
    "apiVersion": "armadaproject.io/v1beta1",
    "kind": "RetryPolicy",
    "name": "training",
    "retryLimit": 3,
    "defaultAction": "Fail",
    "rules": [
        {"action": "Fail", "onCategory": "user-error"},
        {
            "action": "Retry",
            "onCategory": "internal",
            "onSubcategory": "pod-missing",
            "mutate": {"affinity": {"avoidSameNode": True}},
        },
        {
            "action": "Retry",
            "onCategory": "oom",
            "mutate": {"resources": {"memory": {"factor": 1.5}}},
        },
    ],
}


def now() -> datetime:
    return timezone.now()


def executor(kubeconfig: str, **extra: Any) -> dict:
    cluster = {"kubeconfig": kubeconfig, "watchTimeout": "30s", **extra.pop("kubernetes", {})}
    return {
        "id": "kube",
        "backend": "kubernetes",
        "tickPeriod": "200ms",
        "trackedNodeLabels": ["kubernetes.io/hostname"],
        "keptPodRetention": "1h",
        "kubernetes": cluster,
        "errorCategories": CATEGORIES,
        **extra,
    }


def configure(settings, kubeconfig: str, **extra: Any):
    settings.ARMADA = parse_config(
        {
            "scheduling": {"retryPolicy": {"enabled": True, "globalMaxRetries": 5}},
            "executors": [executor(kubeconfig, **extra)],
        }
    )
    return settings.ARMADA.executors[0]


def attach_policy(admin_user) -> None:
    policy_create(actor=admin_user, data=POLICY, now=now())
    queue_update(actor=admin_user, name="demo", data={"retryPolicies": ["training"]}, now=now())


def start_emulator() -> KubeEmulator:
    emu = KubeEmulator(token=TOKEN, bookmark_interval=0.5)
    emu.add_node("node-1")
    emu.add_node("node-2")
    emu.start()
    return emu


def kube_agent(config) -> ApiAgent:
    backend = KubernetesBackend(config)
    assert backend.wait_synced(60.0), "the backend's caches were not listed"
    return api_agent(config, backend)


def container(memory: str = "64Mi", **extra: Any) -> dict:
    return {
        "name": "main",
        "image": "busybox:1.36",
        "resources": {
            "requests": {"cpu": "100m", "memory": memory},
            "limits": {"cpu": "100m", "memory": memory},
        },
        **extra,
    }


def submit(owner, annotations: dict | None = None, memory: str = "64Mi", **job: Any) -> str:
    annotations = {(k if "/" in k else FAKE + k): v for k, v in (annotations or {}).items()}
    spec = {
        "annotations": annotations,
        "podSpec": {"containers": [container(memory)], "terminationGracePeriodSeconds": 1},
        **job,
    }
    return job_submit(actor=owner, data=job_file(jobs=[spec]), now=now())[0]


def drive(agent: ApiAgent, until, what: str, timeout: float = 60.0):
    """Scheduler cycles and executor ticks until ``until()`` is truthy; returns its value."""
    deadline = time.monotonic() + timeout
    while True:
        scheduler_cycle(now=now())
        agent.tick(now())
        value = until()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out after {timeout:g}s waiting for {what}"
        time.sleep(0.1)


def job_in(job_id: str, *states: str):
    def check():
        job = Job.objects.get(id=job_id)
        return job if job.state in states else None

    return check


def runs(job_id: str) -> list[Run]:
    return list(Run.objects.filter(job_id=job_id).order_by("leased_at", "id"))


def event_types(job_id: str) -> list[str]:
    return list(Event.objects.filter(job_id=job_id).order_by("id").values_list("type", flat=True))
