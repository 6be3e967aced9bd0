"""Readable builders for Lookout tests: jobs and runs straight into the database."""

from __future__ import annotations

from typing import Any

from armada.models import Job, Run
from tests.conftest import T0, at


def make_job(job_id: str, queue: str = "demo", **fields: Any) -> Job:
    values: dict[str, Any] = {
        "job_set": "set-1",
        "owner": "olive",
        "priority_class": "armada-default",
        "pod_spec": {"containers": [{"name": "main", "image": "busybox"}]},
        "requests": {"cpu": 1000, "memory": 1024 * 1024 * 1024 * 1000},
        "submitted_at": T0,
        "last_transition_at": T0,
    }
    values.update(fields)
    return Job.objects.create(id=job_id, queue_id=queue, **values)


def make_run(run_id: str, job_id: str, **fields: Any) -> Run:
    values: dict[str, Any] = {
        "executor": "cluster-a",
        "node": "node-1",
        "pool": "default",
        "state": "running",
        "leased_at": at(1),
    }
    values.update(fields)
    return Run.objects.create(id=run_id, job_id=job_id, **values)
