"""PostgreSQL, real parallel clients: utilisation batches for the same runs applied at the same
time keep each run's usage once (its latest), with scrapes in between."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone

from armada.core.reports import RunReport, RunUtilisation
from armada.core.states import RunState
from armada.models import Run, RunUsage
from armada.services.run_reports import runs_apply_report_batch
from armada.services.run_utilisation import runs_record_utilisation
from armada.services.scheduler import scheduler_cycle
from tests.metrics.scenario import configure, spec, submit
from tests.metrics.scrape import parse, race_with_scrapes, value

THREADS = 4
RUNS = 12
PERIODS = 5


@pytest.mark.django_db(transaction=True)
def test_parallel_utilisation_batches_keep_one_usage_per_run(settings, queue, owner):
    if connection.vendor != "postgresql":
        pytest.skip("races need PostgreSQL")
    configure(settings, cpu=str(RUNS))
    submit(owner, *[spec("1")] * RUNS)
    scheduler_cycle(now=timezone.now())
    run_ids = sorted(Run.objects.values_list("id", flat=True))
    start = timezone.now()
    reports = [RunReport(run_id=r, state=RunState.RUNNING, at=start) for r in run_ids]
    runs_apply_report_batch(executor_id="test", reports=reports, now=start)

    def executor(k: int) -> None:
        # Every thread sends every run's periods, in its own order: the same batches, raced.
        for p in range(PERIODS) if k % 2 else reversed(range(PERIODS)):
            batch = [
                RunUtilisation(
                    run_id=r,
                    at=start + timedelta(seconds=10 * (p + 1)),
                    avg_usage={"cpu": 100 * (p + 1)},
                )
                for r in run_ids
            ]
            runs_record_utilisation(executor_id="test", reports=batch, period_seconds=5)

    errors = race_with_scrapes(executor, THREADS)
    assert errors == []
    assert RunUsage.objects.count() == RUNS
    # Each run keeps the usage of the latest period recorded for it.
    latest = {run_id: at for run_id, at in Run.objects.values_list("id", "utilisation_at")}
    for usage in RunUsage.objects.all():
        period = round((latest[usage.run_id] - start).total_seconds() / 10)
        assert usage.value == 100 * period
    values, _ = parse(Client().get("/metrics").content.decode())
    total = value(
        values,
        "armada_queue_resource_used",
        cluster="test",
        pool="default",
        queueName="demo",
        queue="demo",
        resourceType="cpu",
        nodeType="",
        reservation="",
        physical_pool="default",
        scalable_unit="",
    )
    assert total == pytest.approx(sum(u.value for u in RunUsage.objects.all()) / 1000)
