"""The agent on the kubernetes backend while the Kubernetes API server misbehaves: watches
cut, its history gone (410), 500s, and the server unreachable for a while (15 s here;
``ARMADA_TEST_OUTAGE_SECONDS`` makes it longer, e.g. 60). Pods start and end meanwhile;
afterwards every job has ended as its pod did and every run's events are there once."""

from __future__ import annotations

import os
import time
from collections import Counter

import pytest

from armada.models import Event, Job
from tests.executor.kubernetes_world import (
    TOKEN,
    configure,
    drive,
    kube_agent,
    runs,
    start_emulator,
    submit,
)

pytestmark = pytest.mark.django_db
OUTAGE = float(os.environ.get("ARMADA_TEST_OUTAGE_SECONDS", "15"))


@pytest.fixture
def emulator():
    emu = start_emulator()
    yield emu
    emu.stop()


@pytest.fixture
def agent(settings, emulator, tmp_path, queue):
    kubeconfig = str(emulator.write_kubeconfig(tmp_path / "kubeconfig", token=TOKEN))
    a = kube_agent(configure(settings, kubeconfig))
    yield a
    a.backend.close()


def all_ended(job_ids):
    def check():
        return all(Job.objects.get(id=j).state in ("succeeded", "failed") for j in job_ids)

    return check


def events_once(job_ids) -> None:
    for job_id in job_ids:
        counts = Counter(
            (e.run_id, e.type) for e in Event.objects.filter(job_id=job_id) if e.run_id
        )
        twice = {k: n for k, n in counts.items() if n > 1}
        assert not twice, f"events reported more than once for {job_id}: {twice}"


def test_nothing_is_lost_or_reported_twice_through_cuts_410s_500s_and_an_outage(
    agent, emulator, owner
):
    early = [submit(owner, {"duration": "2s"}) for _ in range(3)]
    failing = submit(owner, {"duration": "2s", "exitCode": "1"})
    drive(
        agent,
        lambda: all(runs(j) and runs(j)[0].state == "running" for j in [*early, failing]),
        "the first pods to run",
    )
    emulator.cut_watches()
    emulator.compact()  # the watches come back to a history that is gone: 410, new lists
    emulator.fail_requests(seconds=3.0, status=500)
    late = [submit(owner, {"duration": "1s"}) for _ in range(2)]
    drive(agent, all_ended([*early, failing]), "the first jobs to end", timeout=90)

    # The API server goes away while pods run and end on the cluster.
    during = [submit(owner, {"duration": "3s"}) for _ in range(2)]
    drive(
        agent,
        lambda: all(runs(j) and runs(j)[0].state == "running" for j in during),
        "the pods that end during the outage to run",
    )
    emulator.unreachable(OUTAGE)
    deadline = time.monotonic() + OUTAGE
    while time.monotonic() < deadline:  # ticks go on against a server that is not there
        agent.tick(time_now())
        time.sleep(0.2)
    everything = [*early, failing, *late, *during]
    drive(agent, all_ended(everything), "every job to end", timeout=120 + OUTAGE)

    states = {j: Job.objects.get(id=j).state for j in everything}
    assert states == {j: ("failed" if j == failing else "succeeded") for j in everything}
    assert all(len(runs(j)) == 1 for j in everything)  # no run lost and retried
    events_once(everything)
    assert agent.backend.pods.failures >= 1  # it did see the server fail


def time_now():
    from django.utils import timezone

    return timezone.now()
