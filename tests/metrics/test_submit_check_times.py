"""``armada_scheduler_submit_check_times{queue}``: one observation per submit that stored jobs,
the milliseconds its job file's check took, in Armada's buckets; refused submits and submits
whose jobs all existed already are not counted. Every web process serves the same (rows)."""

from __future__ import annotations

import pytest

from armada.core.errors import ValidationFailed
from armada.services.metric_buckets import bucket_label
from armada.services.queues import queue_create
from armada.services.submit import job_submit
from armada.services.submit_metrics import SUBMIT_CHECK_BUCKETS
from tests.conftest import T0, job, job_file
from tests.metrics.scrape import scrape, series

pytestmark = pytest.mark.django_db

NAME = "armada_scheduler_submit_check_times"


def histogram(client, queue: str) -> tuple[float, float, dict[str, float]]:
    """(count, sum in ms, cumulative buckets by ``le``) of ``queue``'s series."""
    values, types = scrape(client)
    assert types[NAME] == "histogram"
    buckets = {
        dict(labels)["le"]: v
        for labels, v in series(values, f"{NAME}_bucket").items()
        if dict(labels)["queue"] == queue
    }
    count = series(values, f"{NAME}_count").get((("queue", queue),), 0.0)
    total = series(values, f"{NAME}_sum").get((("queue", queue),), 0.0)
    return count, total, buckets


def test_each_submit_that_stores_jobs_is_one_observation_of_its_check(
    client, queue, owner, admin_user
):
    job_submit(actor=owner, data=job_file(jobs=[job(), job(clientId="a")]), now=T0)
    count, total, buckets = histogram(client, "demo")
    assert count == 1
    assert 0 < total < 10_000  # milliseconds
    # Armada's 25 bounds 0.5 * 1.5**i (and +Inf), cumulative around the one observation.
    assert len(buckets) == len(SUBMIT_CHECK_BUCKETS) + 1 and buckets["+Inf"] == 1
    for bound in SUBMIT_CHECK_BUCKETS:
        if abs(bound - total) > 0.001:  # the sum is kept to the microsecond
            assert buckets[bucket_label(bound)] == (1 if bound >= total else 0), (bound, total)

    # Refused by the check, or nothing new to store: not counted.
    with pytest.raises(ValidationFailed):
        job_submit(actor=owner, data=job_file(jobs=[job(cpu="lots")]), now=T0)
    job_submit(actor=owner, data=job_file(jobs=[job(clientId="a")]), now=T0)
    assert histogram(client, "demo")[0] == 1

    job_submit(actor=owner, data=job_file(jobs=[job(clientId="b")]), now=T0)
    count, total_after, _ = histogram(client, "demo")
    assert count == 2 and total_after > total

    queue_create(actor=admin_user, data={"name": "other"}, now=T0)
    job_submit(actor=admin_user, data=job_file(queue="other"), now=T0)
    assert histogram(client, "other")[0] == 1
    assert histogram(client, "demo")[0] == 2
