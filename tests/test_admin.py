"""The admin lists every model with its columns, filters and search working."""

from __future__ import annotations

import pytest

from armada.services.submit import job_submit
from tests.conftest import T0, job_file

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "model", ["queue", "retrypolicy", "job", "run", "event", "executor", "node"]
)
def test_changelists_load_with_search_and_filters(client, admin_user, queue, owner, model):
    job_submit(actor=owner, data=job_file(), now=T0)
    client.force_login(admin_user)
    response = client.get(f"/admin/armada/{model}/", {"q": "demo"})
    assert response.status_code == 200


def test_job_list_shows_the_job_and_filters_by_state(client, admin_user, queue, owner):
    [job_id] = job_submit(actor=owner, data=job_file(), now=T0)
    client.force_login(admin_user)
    assert job_id in client.get("/admin/armada/job/", {"state": "queued"}).content.decode()
    assert job_id not in client.get("/admin/armada/job/", {"state": "failed"}).content.decode()
    detail = client.get(f"/admin/armada/job/{job_id}/change/")
    assert detail.status_code == 200


def test_jobs_cannot_be_added_or_edited_in_the_admin(client, admin_user, queue, owner):
    [job_id] = job_submit(actor=owner, data=job_file(), now=T0)
    client.force_login(admin_user)
    assert client.get("/admin/armada/job/add/").status_code == 403
    response = client.post(f"/admin/armada/job/{job_id}/change/", {"state": "succeeded"})
    assert response.status_code == 403
