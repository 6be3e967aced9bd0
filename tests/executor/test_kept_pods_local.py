"""Kept pods on the local backend: a real process's failed pod (user-error, Retain) stays on
disk for ``keptPodRetention`` after it ended, and is deleted then, also by an executor
restarted meanwhile (the pod's end is kept on disk). The ticks after the failure are given
a clock of their own, a day on."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest

from armada.models import MetricCounter, Run
from tests.executor.test_local_agent import agent, make_agent, run_until, submit  # noqa: F401

pytestmark = pytest.mark.django_db
COUNTER = "armada_executor_kept_pods_deleted_total"


def test_a_kept_local_pod_is_deleted_after_its_retention_even_after_a_restart(
    agent,  # noqa: F811
    owner,
    tmp_path,
):
    job_id = submit(owner, ["sh", "-c", "echo bad arguments; exit 1"])
    run_until(agent, job_id, {"failed"})
    run = Run.objects.get(job_id=job_id)
    assert run.failure_category == "user-error"
    assert run.pod_kept_until == run.finished_at + timedelta(days=1)
    pod = run.pod_name
    assert pod in {s.name for s in agent.backend.poll(run.finished_at)}

    restarted = make_agent(tmp_path / "executor")  # a new worker process: same state dir
    before = run.pod_kept_until - timedelta(seconds=1)
    restarted.tick(before)
    assert pod in {s.name for s in restarted.backend.poll(before)}
    assert not MetricCounter.objects.filter(name=COUNTER).exists()

    due = run.pod_kept_until
    restarted.tick(due)
    deadline = time.monotonic() + 30.0  # the pod's directory goes once its shim has exited
    while pod in {s.name for s in restarted.backend.poll(due)}:
        assert time.monotonic() < deadline, "the kept pod was not deleted"
        time.sleep(0.1)
    assert not (tmp_path / "executor" / "pods" / pod).exists()
    counter = MetricCounter.objects.get(name=COUNTER)
    assert (counter.labels, counter.value) == ({"cluster": "this-machine"}, 1)
