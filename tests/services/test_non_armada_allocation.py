"""What pods Armada did not start use on a node (``non_armada_allocated`` of a round) is left
free: the scheduler places jobs only in the rest, and the pool's capacity counts only it."""

from __future__ import annotations

import pytest

from armada.core.config import parse_config
from armada.models import Job, Node
from armada.services.queue_shares import pool_capacity
from armada.services.scheduler import scheduler_cycle
from armada.services.submit import job_submit
from tests.conftest import at, job, job_file
from tests.executor_api import api_agent

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("others", "leased"),
    [({}, True), ({"cpu": "3"}, False), ({"cpu": "2"}, True), ({"memory": "15Gi"}, False)],
)
def test_a_job_fits_only_in_what_other_pods_leave(settings, queue, owner, others, leased):
    settings.ARMADA = parse_config(
        {
            "executors": [
                {"id": "e", "nodes": [{"name": "n", "allocatable": {"cpu": "4", "memory": "16Gi"}}]}
            ]
        }
    )
    agent = api_agent(settings.ARMADA.executors[0])
    for name, quantity in others.items():
        agent.nodes[0].non_armada_allocated[name] = quantity
    agent.tick(at(0))
    [job_id] = job_submit(actor=owner, data=job_file(jobs=[job(cpu="2", memory="2Gi")]), now=at(0))
    scheduler_cycle(now=at(1))
    assert (Job.objects.get(id=job_id).state == "leased") is leased


def test_the_pool_capacity_leaves_out_what_other_pods_use_and_follows_each_round(settings):
    settings.ARMADA = parse_config(
        {
            "executors": [
                {"id": "e", "nodes": [{"name": "n", "allocatable": {"cpu": "4", "memory": "16Gi"}}]}
            ]
        }
    )
    agent = api_agent(settings.ARMADA.executors[0])
    agent.nodes[0].non_armada_allocated["cpu"] = "1500m"
    agent.tick(at(0))
    assert pool_capacity(now=at(1))["cpu"] == 2500
    assert Node.objects.get().non_armada_allocated == {"cpu": 1500}
    agent.nodes[0].non_armada_allocated["cpu"] = "500m"  # the next round says less
    agent.tick(at(2))
    assert pool_capacity(now=at(3))["cpu"] == 3500
