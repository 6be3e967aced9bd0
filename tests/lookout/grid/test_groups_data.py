"""Six jobs in two queues whose latest runs differ in every grouped column (shared by the
group tests): ``grouped_jobs`` makes them; ``EXPECTED`` is what grouping all six by each
column must count, per state."""

from __future__ import annotations

from armada.services.queues import queue_create
from tests.conftest import T0, at
from tests.lookout.builders import make_job, make_run

# column -> {value: {state: jobs}} over all six jobs ("" is "no value").
EXPECTED: dict[str, dict[str, dict[str, int]]] = {
    "queue": {
        "demo": {"failed": 2, "running": 1, "queued": 1, "succeeded": 1},
        "other": {"succeeded": 1},
    },
    "job_set": {
        "s1": {"failed": 1, "running": 1, "succeeded": 1},
        "s2": {"queued": 1, "failed": 1},
        "s9": {"succeeded": 1},
    },
    "state": {
        "failed": {"failed": 2},
        "succeeded": {"succeeded": 2},
        "running": {"running": 1},
        "queued": {"queued": 1},
    },
    "category": {
        "": {"running": 1, "queued": 1, "succeeded": 2},
        "oom": {"failed": 1},
        "user-error": {"failed": 1},
    },
    "subcategory": {
        "": {"running": 1, "queued": 1, "succeeded": 2},
        "container-oom": {"failed": 1},
        "exit-1": {"failed": 1},
    },
    # 01's earlier run was retried; its latest run failed it.
    "decision": {
        "": {"running": 1, "queued": 1, "failed": 1, "succeeded": 2},
        "fail": {"failed": 1},
    },
    "retryable": {
        "unknown": {"running": 1, "queued": 1, "failed": 1, "succeeded": 1},
        "no": {"failed": 1},
        "yes": {"succeeded": 1},
    },
    "priority_class": {
        "armada-default": {"failed": 2, "queued": 1, "succeeded": 2},
        "armada-preemptible": {"running": 1},
    },
    "owner": {
        "olive": {"failed": 2, "queued": 1, "succeeded": 2},
        "bob": {"running": 1},
    },
    "node": {
        "node-1": {"running": 1, "succeeded": 2},
        "node-2": {"failed": 2},
        "": {"queued": 1},
    },
    "cluster": {
        "cluster-a": {"running": 1, "succeeded": 2},
        "cluster-b": {"failed": 2},
        "": {"queued": 1},
    },
    "pool": {
        "default": {"running": 1, "failed": 1, "succeeded": 2},
        "gpu": {"failed": 1},
        "": {"queued": 1},
    },
    "exit_code": {
        "0": {"succeeded": 2},
        "": {"running": 1, "queued": 1},
        "137": {"failed": 1},
        "1": {"failed": 1},
    },
    # 01 ran twice (retried once); 03 never ran.
    "runs": {
        "1": {"running": 1, "failed": 1, "succeeded": 2},
        "2": {"failed": 1},
        "0": {"queued": 1},
    },
    "retries": {
        "0": {"running": 1, "queued": 1, "failed": 1, "succeeded": 2},
        "1": {"failed": 1},
    },
    "annotation:team": {
        "vision": {"failed": 1, "running": 1},
        "nlp": {"succeeded": 1},
        "": {"queued": 1, "failed": 1, "succeeded": 1},
    },
}


def grouped_jobs(admin_user) -> None:
    """Jobs 01..05 in ``demo`` (the ``queue`` fixture) and 06 in ``other``, which only the
    admin may watch."""
    queue_create(actor=admin_user, data={"name": "other", "owners": ["someone"]}, now=T0)
    make_job(
        "01",
        job_set="s1",
        state="failed",
        failure_category="oom",
        failure_subcategory="container-oom",
        annotations={"team": "vision"},
        run_count=2,
        retry_count=1,
    )
    make_job(
        "02",
        job_set="s1",
        state="running",
        owner="bob",
        priority_class="armada-preemptible",
        annotations={"team": "vision"},
        run_count=1,
    )
    make_job("03", job_set="s2", state="queued")
    make_job(
        "04",
        job_set="s2",
        state="failed",
        failure_category="user-error",
        failure_subcategory="exit-1",
        run_count=1,
    )
    make_job("05", job_set="s1", state="succeeded", run_count=1)
    make_job(
        "06",
        queue="other",
        job_set="s9",
        state="succeeded",
        annotations={"team": "nlp"},
        run_count=1,
    )
    make_run(
        "r01a",
        "01",
        node="node-9",
        executor="cluster-c",
        pool="spot",
        state="failed",
        exit_code=1,
        retryable=True,
        decision={"decision": "retry"},
    )
    make_run(
        "r01b",
        "01",
        node="node-2",
        executor="cluster-b",
        pool="gpu",
        state="failed",
        exit_code=137,
        retryable=False,
        decision={"decision": "fail"},
        leased_at=at(5),
    )
    make_run("r02", "02", running_at=at(2))
    make_run("r04", "04", node="node-2", executor="cluster-b", state="failed", exit_code=1)
    make_run("r05", "05", state="succeeded", exit_code=0, retryable=True)
    make_run("r06", "06", state="succeeded", exit_code=0)
