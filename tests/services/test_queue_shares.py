"""Queue shares: the dominant share of a queue's active runs over the live nodes' capacity,
and its fair share among the active queues by weight."""

from __future__ import annotations

import pytest

from armada.models import Executor, Node, Queue
from armada.services.queue_shares import pool_capacity, queue_shares
from armada.services.queues import queue_create
from tests.conftest import T0, at
from tests.lookout.builders import make_job, make_run

pytestmark = pytest.mark.django_db
GI = 1024**3 * 1000  # a GiB in milli-units


def executor(name: str, heartbeat, pool: str = "default") -> Executor:
    return Executor.objects.create(
        id=name, pool=pool, backend="fake", registered_at=T0, last_heartbeat=heartbeat
    )


def node(ex: Executor, name: str, cpu: int, memory_gi: int, **extra) -> Node:
    return Node.objects.create(
        executor=ex,
        name=name,
        pool=ex.pool,
        last_seen=T0,
        allocatable={"cpu": cpu * 1000, "memory": memory_gi * GI},
        **extra,
    )


@pytest.fixture
def cluster(admin_user, queue):
    """Two live 8-cpu/32Gi nodes, plus a big node of a lost executor and an unschedulable
    one, neither of which counts. ``demo`` (factor 1) runs 4 cpu/8Gi, ``other`` (factor 2)
    1 cpu/32Gi; ``idle`` has only finished jobs."""
    live = executor("live", at(90))
    node(live, "n1", 8, 32)
    node(live, "n2", 8, 32)
    node(live, "cordoned-node", 64, 256, unschedulable=True)
    node(executor("lost", at(0)), "n9", 100, 1000)
    queue_create(actor=admin_user, data={"name": "other", "priorityFactor": 2}, now=T0)
    queue_create(actor=admin_user, data={"name": "idle"}, now=T0)
    make_job("01a", state="running")
    make_run("r-a", "01a", requests={"cpu": 4000, "memory": 8 * GI})
    make_job("01q", state="queued")
    make_job("01b", queue="other", state="running")
    make_run("r-b", "01b", requests={"cpu": 1000, "memory": 32 * GI})
    make_job("01c", queue="idle", state="succeeded")
    make_run("r-c", "01c", state="succeeded", requests={"cpu": 8000, "memory": 8 * GI})
    return admin_user


def test_capacity_counts_only_live_schedulable_nodes(cluster):
    assert pool_capacity(now=at(100)) == {"cpu": 16000, "memory": 64 * GI}
    assert pool_capacity(now=at(100), pool="elsewhere") == {}


def test_current_and_fair_shares(cluster):
    shares = {s.queue.name: s for s in queue_shares(now=at(100))}
    assert shares["demo"].current_share == pytest.approx(0.25)  # cpu 4/16 > memory 8/64
    assert shares["other"].current_share == pytest.approx(0.5)  # memory 32/64
    assert shares["idle"].current_share == 0.0
    assert shares["demo"].fair_share == pytest.approx(2 / 3)  # weights 1 and 0.5
    assert shares["other"].fair_share == pytest.approx(1 / 3)
    assert not shares["idle"].active and shares["idle"].fair_share == 0.0
    assert shares["demo"].jobs_by_state == {"running": 1, "queued": 1}


def test_fair_share_counts_queues_the_viewer_does_not_see(cluster):
    [demo] = queue_shares(now=at(100), queues=list(Queue.objects.filter(name="demo")))
    assert demo.fair_share == pytest.approx(2 / 3)


def test_no_live_nodes_means_no_current_share(cluster):
    shares = {s.queue.name: s for s in queue_shares(now=at(1000))}
    assert shares["demo"].current_share == 0.0
    assert shares["demo"].fair_share == pytest.approx(2 / 3)
