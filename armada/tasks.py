"""Celery tasks: thin, named, each handling a batch (a cycle, a tick), never one job."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from armada.executor.agent import ExecutorAgent
from armada.services.metric_history import metrics_sample
from armada.services.scheduler import scheduler_cycle

# One agent per executor per worker process: it keeps its backend (the pods) between ticks.
# Executor workers run with the solo pool, so this process is the one that runs every tick.
_agents: dict[str, ExecutorAgent] = {}


@shared_task(name="armada.scheduler.cycle", ignore_result=True)
def scheduler_cycle_task() -> dict:
    report = scheduler_cycle(now=timezone.now())
    return {
        "ran": report.ran,
        "considered": report.considered,
        "leased": report.leased,
        "expired": report.expired,
    }


@shared_task(name="armada.executor.tick", ignore_result=True)
def executor_tick_task(executor_id: str) -> dict:
    agent = _agents.get(executor_id)
    if agent is None:
        agent = _agents[executor_id] = ExecutorAgent(settings.ARMADA.executor(executor_id))
    report = agent.tick(timezone.now())
    return {"created": report.created, "reported": report.reported}


@shared_task(name="armada.metrics.sample", ignore_result=True)
def metrics_sample_task() -> dict:
    """Copy the changed counters into their history and prune it (Lookout's charts)."""
    report = metrics_sample(now=timezone.now())
    return {"written": report.written, "pruned": report.pruned}
