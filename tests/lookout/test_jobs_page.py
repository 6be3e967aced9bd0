from __future__ import annotations

import pytest

from armada.services.submit import job_submit
from lookout.queries import PAGE_SIZE
from tests.conftest import T0, job, job_file

pytestmark = pytest.mark.django_db


def test_jobs_page_needs_a_login(client):
    response = client.get("/")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_jobs_page_lists_newest_first_and_filters(client, admin_user, queue, owner):
    first = job_submit(actor=owner, data=job_file(job_set="a"), now=T0)[0]
    second = job_submit(actor=owner, data=job_file(job_set="b"), now=T0)[0]
    client.force_login(admin_user)
    page = client.get("/").content.decode()
    assert page.index(second) < page.index(first)
    filtered = client.get("/", {"job_set": "a"}).content.decode()
    assert first in filtered and second not in filtered
    assert second not in client.get("/", {"state": "running"}).content.decode()


def test_keyset_pagination_walks_every_job_once(client, admin_user, queue, owner):
    ids = job_submit(actor=owner, data=job_file(jobs=[job() for _ in range(PAGE_SIZE + 7)]), now=T0)
    client.force_login(admin_user)
    first = client.get("/")
    seen = first.context["jobs"]
    assert len(seen) == PAGE_SIZE
    second = client.get("/", {"before": first.context["next_cursor"]})
    assert second.context["next_cursor"] == ""
    all_seen = [j.id for j in seen] + [j.id for j in second.context["jobs"]]
    assert all_seen == sorted(ids, reverse=True)
