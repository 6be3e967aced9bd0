"""Readable builders for Lookout tests: jobs and runs straight into the database."""

from __future__ import annotations

import re
from typing import Any

from armada.models import Executor, Job, Node, Run
from armada.services import latest_run
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
    run = Run.objects.create(id=run_id, job_id=job_id, **values)
    job = Job.objects.get(id=job_id)  # its copy of its latest run, as services keep it
    latest_run.copy_to_job(run, job)
    job.save(update_fields=latest_run.FIELDS)
    return run


def make_live_executor(name: str = "cluster-a", *, nodes: int = 4, now: Any) -> Executor:
    """A registered executor that heartbeat at ``now``, with ``nodes`` nodes of 16 cpu and
    64Gi each (quantities in milli-units)."""
    executor = Executor.objects.create(
        id=name, pool="default", backend="fake", registered_at=T0, last_heartbeat=now
    )
    for i in range(nodes):
        Node.objects.create(
            executor=executor,
            name=f"node-{i}",
            pool="default",
            last_seen=now,
            allocatable={"cpu": 16000, "memory": 64 * 1024**3 * 1000},
        )
    return executor


def run_fact(html: str, run_id: str, label: str, css: str) -> str:
    """The text of one fact (``<dt>label</dt><dd class="css">``) of a run's section on the
    job page or the panel's Runs tab, tags stripped; "" when the run has no such fact."""
    section = html.split(f'id="run-{run_id}"', 1)[1].split("</section>", 1)[0]
    match = re.search(rf'<dt>{re.escape(label)}</dt><dd class="{css}">(.*?)</dd>', section, re.S)
    return re.sub(r"<[^>]+>", "", match.group(1)) if match else ""
