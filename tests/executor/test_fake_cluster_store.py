"""The simulated cluster outlives its executor process, as a real one does: its pods are
kept in the executor's state directory, so a backend made anew there (the process killed
and started again) finds every pod with its creation time, deletion time and UID, and an
agent started on it adopts them and reports nothing missing."""

from __future__ import annotations

import pytest

from armada.core.states import RunState
from armada.executor.backends.base import PodRequest
from armada.executor.backends.fake import FakeBackend
from armada.executor.backends.fake_store import FILE_NAME
from armada.models import Run
from armada.services.scheduler import scheduler_cycle
from tests.conftest import at
from tests.executor.test_agent_api import FAKE, executor_config, run_of, submit, types_for
from tests.executor_api import api_agent


def request(name: str, **annotations: str) -> PodRequest:
    spec = {"containers": [{"name": "main", "image": "busybox"}]}
    ann = {FAKE + k: v for k, v in annotations.items()}
    return PodRequest(name, f"run-{name}", "j", "n", spec, ann, queue="q", job_set="s")


def test_a_backend_made_again_in_the_same_directory_finds_every_pod_as_it_was(tmp_path):
    first = FakeBackend(state_dir=tmp_path)
    first.create_pod(request("p-long", duration="1h"), at(0))
    first.create_pod(request("p-short", duration="10s"), at(0))
    first.create_pod(request("p-slow-to-go", duration="1h", deletionDuration="30s"), at(0))
    first.create_pod(request("p-gone", duration="1h"), at(0))
    first.delete_pod("p-slow-to-go", at(5))
    first.force_delete_pod("p-gone", at(5))
    before = {s.name: s for s in first.poll(at(20))}
    first.close()

    again = FakeBackend(state_dir=tmp_path)
    after = {s.name: s for s in again.poll(at(20))}
    assert after == before
    assert set(after) == {"p-long", "p-short", "p-slow-to-go"}
    assert after["p-short"].succeeded and after["p-long"].running_at == at(0)
    assert after["p-slow-to-go"].deleting
    # Its deletion goes on where it left off: gone at 35 s.
    assert "p-slow-to-go" not in {s.name for s in again.poll(at(36))}
    assert "p-slow-to-go" not in {s.name for s in FakeBackend(state_dir=tmp_path).poll(at(36))}
    assert (tmp_path / FILE_NAME).exists()


def test_without_a_state_directory_the_pods_live_in_memory_only(tmp_path):
    FakeBackend().create_pod(request("p"), at(0))
    assert FakeBackend().poll(at(1)) == []
    assert list(tmp_path.iterdir()) == []


@pytest.mark.django_db
def test_an_executor_started_again_adopts_its_fake_pods_and_no_run_is_lost(queue, owner, tmp_path):
    config = executor_config()
    first = api_agent(config, FakeBackend(state_dir=tmp_path), instance="first")
    first.tick(at(0))
    long_jobs = submit(owner, 3, duration="1h")
    [short_job] = submit(owner, 1, duration="10s")
    scheduler_cycle(now=at(1))
    first.tick(at(2))
    first.backend.close()  # the process dies (kill -9 leaves the file as it is)

    second = api_agent(config, FakeBackend(state_dir=tmp_path), instance="second")
    second.tick(at(20))
    second.tick(at(21))
    for job_id in long_jobs:
        assert run_of(job_id).state == RunState.RUNNING
        assert "failed" not in types_for(job_id)
    assert run_of(short_job).state == RunState.SUCCEEDED
    assert not Run.objects.filter(state=RunState.FAILED).exists()
