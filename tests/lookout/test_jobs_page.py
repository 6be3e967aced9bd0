from __future__ import annotations

import pytest

from armada.services.submit import job_submit
from lookout.grid.params import PAGE_SIZE
from tests.conftest import T0, job, job_file

pytestmark = pytest.mark.django_db


def test_jobs_page_needs_a_login(client):
    response = client.get("/")
    assert response.status_code == 302 and response["Location"] == "/login?next=/"


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
    seen = first.context["rows"]
    assert len(seen) == PAGE_SIZE
    second = client.get("/", {"after": first.context["page"].next_cursor})
    assert second.context["page"].next_cursor == ""
    all_seen = [r.job.id for r in seen] + [r.job.id for r in second.context["rows"]]
    assert all_seen == sorted(ids, reverse=True)


def test_job_page_shows_runs_with_category_hint_and_log(client, admin_user, queue, owner):
    from armada.models import Run, RunLog
    from tests.conftest import at

    [job_id] = job_submit(actor=owner, data=job_file(), now=T0)
    Run.objects.create(
        id="01run",
        job_id=job_id,
        executor="ex",
        node="n-1",
        pool="default",
        state="failed",
        leased_at=at(1),
        finished_at=at(5),
        exit_code=137,
        reason="OOMKilled",
        failure_category="oom",
        hint="ask for more memory",
        retryable=False,
    )
    RunLog.objects.create(run_id="01run", text="allocating\nKilled\n", updated_at=at(5))
    client.force_login(admin_user)
    page = client.get(f"/jobs/{job_id}")
    assert page.status_code == 200
    html = page.content.decode()
    for text in ("OOMKilled", "oom", "ask for more memory", "allocating\nKilled", "n-1", "137"):
        assert text in html
    assert f'href="/jobs/{job_id}"' in client.get("/").content.decode()


def test_job_page_refuses_people_who_may_not_watch_the_queue(client, outsider, queue, owner):
    [job_id] = job_submit(actor=owner, data=job_file(), now=T0)
    client.force_login(outsider)
    assert client.get(f"/jobs/{job_id}").status_code == 403
    assert client.get("/jobs/nope").status_code == 404


def test_the_job_list_shows_only_queues_the_viewer_may_watch(
    client, owner, outsider, queue, admin_user
):
    from armada.services.queues import queue_create

    queue_create(actor=admin_user, data={"name": "other", "owners": [outsider.username]}, now=T0)
    mine = job_submit(actor=owner, data=job_file(), now=T0)[0]
    theirs = job_submit(actor=outsider, data=job_file(queue="other"), now=T0)[0]
    client.force_login(owner)
    html = client.get("/").content.decode()
    assert mine in html and theirs not in html
