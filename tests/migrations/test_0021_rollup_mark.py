"""Migration 0021 marks from when the retry-yield rollup is complete: from the start on a
database with no retried failure recorded, from the migration on one that has some (their
rollup rows may be missing: the rollup was only written from 0019 on)."""

from __future__ import annotations

import pytest
from django.utils import timezone

from armada.services.retry_yield_rollup import START, covers_since
from tests.conftest import T0
from tests.migrations.migrating import historic_job, migrate, migrate_to_latest

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("armada", "0020_run_pod_kept")]
AFTER = [("armada", "0021_rollup_mark")]


def _run(apps, run_id: str, *, retryable: bool | None) -> None:
    apps.get_model("armada", "Run").objects.create(
        id=run_id,
        job_id="j-1",
        executor="e",
        node="n",
        pool="p",
        leased_at=T0,
        finished_at=T0,
        state="failed",
        retryable=retryable,
    )


@pytest.mark.parametrize(("retryable", "from_now"), [(None, False), (False, False), (True, True)])
def test_the_mark_is_the_start_unless_retried_failures_are_recorded(retryable, from_now):
    apps = migrate(BEFORE)
    if retryable is not None:
        historic_job(apps, "j-1")
        _run(apps, "01A", retryable=retryable)
    try:
        before = timezone.now()
        migrate(AFTER)
        mark = covers_since()
        if from_now:
            assert before <= mark <= timezone.now()
        else:
            assert mark == START
    finally:
        migrate_to_latest()
