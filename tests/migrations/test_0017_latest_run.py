"""Migration 0017 copies each job's latest run (its run with the greatest id) onto the job:
where it ran, its exit code, verdict and decision label; a job without runs keeps the empty
values; the result is what ``services.latest_run`` keeps from then on."""

from __future__ import annotations

import pytest

from armada.services import latest_run
from tests.conftest import T0
from tests.migrations.migrating import historic_job, migrate, migrate_to_latest

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("armada", "0016_job_lookout_submitted_idx")]
AFTER = [("armada", "0017_job_latest_run")]
COPIED = latest_run.FIELDS


def test_the_latest_run_is_copied_onto_its_job():
    apps = migrate(BEFORE)
    Run = apps.get_model("armada", "Run")
    runs = {
        # job id: [(run id, node, exit code, retryable, decision)], in any order
        "j-retried": [
            ("01B", "n2", None, None, {}),
            ("01A", "n1", 137, True, {"decision": "retry", "reason": "oom"}),
        ],
        "j-failed": [("01C", "n3", 1, False, {"decision": "fail_rule"})],
        "j-queued": [],
    }
    for job_id, job_runs in runs.items():
        historic_job(apps, job_id, run_count=len(job_runs))
        for run_id, node, exit_code, retryable, decision in job_runs:
            Run.objects.create(
                id=run_id,
                job_id=job_id,
                executor=f"e-{node}",
                node=node,
                pool="p",
                leased_at=T0,
                exit_code=exit_code,
                retryable=retryable,
                decision=decision,
            )
    try:
        apps = migrate(AFTER)
        rows = apps.get_model("armada", "Job").objects.values_list("id", *COPIED)
        assert {row[0]: row[1:] for row in rows} == {
            "j-retried": ("01B", "e-n2", "n2", "p", None, None, ""),
            "j-failed": ("01C", "e-n3", "n3", "p", 1, False, "fail_rule"),
            "j-queued": ("", "", "", "", None, None, ""),
        }
    finally:
        migrate_to_latest()
    assert latest_run.drifted() == []
