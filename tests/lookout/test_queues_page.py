"""The queues pages: shares, jobs per state and policies of the queues the viewer may watch;
cordon and uncordon through the queue service, for those with the permission only."""

from __future__ import annotations

import pytest

from armada.models import Queue
from armada.services.queues import queue_create
from tests.conftest import T0
from tests.lookout.builders import make_job, make_run
from tests.services.test_queue_shares import GI, executor, node

pytestmark = pytest.mark.django_db


@pytest.fixture
def queues(admin_user, queue):
    from django.utils import timezone

    live = executor("live", timezone.now())
    node(live, "n1", 10, 40)
    queue_create(actor=admin_user, data={"name": "secret", "owners": ["someone"]}, now=T0)
    make_job("01a", state="running")
    make_run("r-a", "01a", requests={"cpu": 5000, "memory": 4 * GI})
    make_job("01b", state="failed")
    make_job("01c", queue="secret", state="queued")
    return admin_user


def test_list_shows_shares_states_and_policies(client, queues, admin_user):
    from armada.models import RetryPolicy

    RetryPolicy.objects.create(name="ml", created_at=T0, updated_at=T0)
    Queue.objects.filter(name="demo").update(retry_policies=["ml"], priority_factor=2)
    client.force_login(admin_user)
    response = client.get("/queues/")
    assert response.status_code == 200
    html = response.content.decode()
    shares = {s.queue.name: s for s in response.context["shares"]}
    assert shares["demo"].current_share == pytest.approx(0.5)
    assert "50.0%" in html  # demo: cpu 5 of 10
    # Both queues are active (demo runs, secret waits): weights 0.5 and 1.
    assert shares["demo"].fair_share == pytest.approx(1 / 3)
    assert "33.3%" in html
    assert 'href="/policies/ml/"' in html
    assert 'href="/?queue=demo&amp;state=failed"' in html
    assert "Cordon" in html


def test_viewers_see_only_their_queues_and_no_cordon_button(client, queues, owner):
    client.force_login(owner)
    response = client.get("/queues/")
    assert [s.queue.name for s in response.context["shares"]] == ["demo"]
    assert "Cordon" not in response.content.decode()
    assert client.get("/queues/demo/").status_code == 200
    assert client.get("/queues/secret/").status_code == 403
    assert client.get("/queues/nope/").status_code == 404


def test_queue_page_shows_details(client, queues, admin_user):
    client.force_login(admin_user)
    html = client.get("/queues/demo/").content.decode()
    assert "Queue demo" in html and "olive" in html and "50.0%" in html
    assert "group=job_set" in html


def test_cordon_and_uncordon(client, queues, admin_user):
    client.force_login(admin_user)
    response = client.post("/queues/demo/cordon", {"cordon": "1", "next": "/queues/"})
    assert response.status_code == 302 and response["Location"] == "/queues/"
    assert Queue.objects.get(name="demo").cordoned
    assert "cordoned" in client.get("/queues/").content.decode()
    response = client.post("/queues/demo/cordon", {"cordon": "0", "next": "/queues/demo/"})
    assert response["Location"] == "/queues/demo/"
    assert not Queue.objects.get(name="demo").cordoned
    # An unknown "next" goes back to the list, never elsewhere.
    response = client.post("/queues/demo/cordon", {"cordon": "1", "next": "https://evil.test/"})
    assert response["Location"] == "/queues/"


def test_cordon_needs_the_permission(client, queues, owner):
    client.force_login(owner)
    response = client.post("/queues/demo/cordon", {"cordon": "1"})
    assert response.status_code == 403 and "cordon_queue" in response.content.decode()
    assert not Queue.objects.get(name="demo").cordoned
    assert client.get("/queues/demo/cordon").status_code == 405


def test_pages_need_a_login(client, queue):
    assert client.get("/queues/").status_code == 302
    assert client.post("/queues/demo/cordon", {"cordon": "1"}).status_code == 302
    assert not Queue.objects.get(name="demo").cordoned
