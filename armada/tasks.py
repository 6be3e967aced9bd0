"""Celery tasks: thin, named, each handling a batch (a cycle, a tick), never one job."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings
from django.db import connection
from django.utils import timezone

from armada.services.event_purge import events_purge
from armada.services.metric_history import metrics_sample
from armada.services.scheduler import scheduler_cycle


@shared_task(name="armada.scheduler.cycle", ignore_result=True)
def scheduler_cycle_task() -> dict:
    write_behind = settings.ARMADA.scheduling.write_behind and connection.vendor == "postgresql"
    report = scheduler_cycle(now=timezone.now(), write_behind=write_behind)
    return {
        "ran": report.ran,
        "considered": report.considered,
        "leased": report.leased,
        "expired": report.expired,
    }


@shared_task(name="armada.metrics.sample", ignore_result=True)
def metrics_sample_task() -> dict:
    """Copy the changed counters into their history and prune it (Lookout's charts)."""
    report = metrics_sample(now=timezone.now())
    return {"written": report.written, "pruned": report.pruned}


@shared_task(name="armada.events.purge", ignore_result=True)
def events_purge_task() -> dict:
    """Delete deleted queues' events in short batches (``services.event_purge``), for at
    most half a second a minute: it shares the scheduler's worker with the cycles."""
    return {"deleted": events_purge(budget_seconds=0.5)}
