"""Values a person reads on a job's page are written for people: an event's flag says
``yes``/``no`` as the Runs tab does, and "Why pending" leaves out a round no longer kept
instead of printing ``None``."""

from __future__ import annotations

import pytest

from armada.models import Event, SchedulingReason
from armada.services.submit import job_submit
from tests.conftest import T0, at, job_file

pytestmark = pytest.mark.django_db


def test_an_events_flag_reads_yes_or_no(client, admin_user, queue, owner):
    [job_id] = job_submit(actor=owner, data=job_file(), now=T0)
    Event.objects.create(
        queue="demo",
        job_set="set-1",
        job_id=job_id,
        type="failed",
        created=at(5),
        payload={"reason": "exit 3", "retryable": True},
    )
    client.force_login(admin_user)
    html = client.get(f"/jobs/{job_id}/panel", {"tab": "events"}).content.decode()
    assert "retryable" in html
    assert "True" not in html and "False" not in html
    assert "yes" in html.split("retryable", 1)[1][:80]


def test_why_pending_without_its_round_prints_no_none(client, admin_user, queue, owner):
    [job_id] = job_submit(actor=owner, data=job_file(), now=T0)
    SchedulingReason.objects.create(
        job_id=job_id, reason="no node has enough free resources", round=None, updated_at=at(1)
    )
    client.force_login(admin_user)
    html = client.get(f"/jobs/{job_id}").content.decode()
    assert "no node has enough free resources" in html
    assert "round None" not in html and "None" not in html.split("why-pending", 1)[1][:300]
