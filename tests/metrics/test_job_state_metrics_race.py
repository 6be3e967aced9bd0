"""PostgreSQL, real parallel clients: executors' report batches applied at the same time, with
scrapes in between, count every run's state changes (and pod phase changes) exactly once."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone

from armada.core.reports import RunReport
from armada.core.states import RunState
from armada.models import Run
from armada.services.run_reports import runs_apply_report_batch
from armada.services.scheduler import scheduler_cycle
from tests.metrics.scenario import configure, spec, submit
from tests.metrics.scrape import parse, race_with_scrapes, series

THREADS = 4
RUNS = 20


@pytest.mark.django_db(transaction=True)
def test_parallel_report_batches_count_each_change_once(settings, queue, owner):
    if connection.vendor != "postgresql":
        pytest.skip("races need PostgreSQL")
    configure(settings, cpu=str(RUNS))
    submit(owner, *[spec("1")] * RUNS)
    scheduler_cycle(now=timezone.now())
    run_ids = sorted(Run.objects.values_list("id", flat=True))
    assert len(run_ids) == RUNS
    start = timezone.now()

    def executor(k: int) -> None:
        for i, run_id in enumerate(run_ids[k::THREADS]):
            for offset, state in enumerate((RunState.PENDING, RunState.RUNNING)):
                at = start + timedelta(seconds=1 + offset + i)
                report = RunReport(run_id=run_id, state=state, at=at)
                # Each report twice: a replayed batch changes (and counts) nothing.
                for _ in range(2):
                    runs_apply_report_batch(executor_id="test", reports=[report], now=at)
            done = RunReport(
                run_id=run_id,
                state=RunState.SUCCEEDED,
                at=start + timedelta(seconds=9 + i),
                exit_code=0,
            )
            runs_apply_report_batch(executor_id="test", reports=[done], now=done.at)

    errors = race_with_scrapes(executor, THREADS)
    assert errors == []
    values, _ = parse(Client().get("/metrics").content.decode())
    by_queue = series(values, "armada_scheduler_job_state_counter_by_queue")
    per_state: dict[str, float] = {}
    for labels, v in by_queue.items():
        state = dict(labels)["state"]
        per_state[state] = per_state.get(state, 0) + v
    assert per_state == {"leased": RUNS, "pending": RUNS, "running": RUNS, "succeeded": RUNS}
    seconds = series(values, "armada_scheduler_job_state_seconds_by_queue")
    succeeded = sum(v for labels, v in seconds.items() if ("state", "succeeded") in labels)
    # Each run spent 9 + i - (2 + i) = 7 s running before it succeeded.
    assert succeeded == pytest.approx(7.0 * RUNS)
    # The executor's pod phase counter, counted in the same transactions: once per change.
    pods = series(values, "armada_executor_job_pod_total")
    assert pods == {
        (("phase", phase), ("queue", "demo")): RUNS for phase in ("Pending", "Running", "Succeeded")
    }
