"""``armadactl`` and a Retry rule's ``backoff`` (our extension), against the real API: a bad
one is refused naming its field (exit code 1, nothing stored), a good one is saved and shown
back, and ``get job-report`` says a job waits for its retry delay."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from armada.core.backoff import reason_retry_delay
from armada.models import RetryPolicy
from armada.services.records import records_write
from armada.services.submit import job_submit
from tests.cli.conftest import live_armadactl
from tests.conftest import at, job_file

pytestmark = pytest.mark.django_db(transaction=True)

POLICY = """\
apiVersion: armadaproject.io/v1beta1
kind: RetryPolicy
name: paced
retryLimit: 3
defaultAction: Fail
rules:
  - action: Retry
    onCategory: gpu
    backoff: {initial: 30s, factor: 2, max: %s}
"""


@pytest.fixture
def ctl(live_server, admin_user, capsys):
    return live_armadactl(live_server.url, capsys, ("root", "root-password"))


def test_a_bad_backoff_is_refused_naming_its_field(ctl, tmp_path: Path):
    path = tmp_path / "policy.yaml"
    path.write_text(POLICY % "10s")
    code, _, err = ctl("create", "retry-policy", "-f", str(path))
    assert code == 1
    assert "rules[0].backoff.max" in err and "at least initial (30s)" in err
    assert not RetryPolicy.objects.exists()


def test_a_backoff_is_saved_and_shown_back(ctl, tmp_path: Path):
    path = tmp_path / "policy.yaml"
    path.write_text(POLICY % "10m")
    code, out, err = ctl("create", "retry-policy", "-f", str(path))
    assert code == 0, err
    code, out, err = ctl("get", "retry-policy", "paced", "-o", "yaml")
    assert code == 0, err
    shown = yaml.safe_load(out)
    assert shown["rules"][0]["backoff"] == {"initial": "30s", "factor": 2, "max": "10m"}


def test_the_job_report_says_the_job_waits_for_its_retry_delay(ctl, queue, owner):
    [job_id] = job_submit(actor=owner, data=job_file(), now=at(0))
    reason = reason_retry_delay(at(90))
    records_write(
        started_at=at(1),
        duration_ms=3,
        considered=0,
        leased_ids=[],
        expired=0,
        decided=1,
        unschedulable={job_id: reason},
    )
    code, out, err = ctl("get", "job-report", job_id)
    assert code == 0, err
    assert f"Unschedulable: {reason}" in out
    assert "waiting for its retry delay until 2026-" in out
