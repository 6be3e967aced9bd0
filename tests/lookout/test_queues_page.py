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


def test_queue_page_shows_what_active_runs_ask_for_as_quantities(client, queues, admin_user):
    client.force_login(admin_user)
    html = client.get("/queues/demo/").content.decode()
    assert "<dt>cpu</dt><dd>5</dd><dt>memory</dt><dd>4Gi</dd>" in html
    assert "milli" not in html and str(4 * GI) not in html


# --- finding a queue, pages of queues ---------------------------------------------------------


def make_queues(count: int) -> list[str]:
    names = [f"team-{n:03d}" for n in range(count)]
    Queue.objects.bulk_create(
        Queue(name=name, owners=["olive"] if n % 3 == 0 else [], created_at=T0, updated_at=T0)
        for n, name in enumerate(names)
    )
    return names


def shown(response) -> list[str]:
    return [s.queue.name for s in response.context["shares"]]


def test_300_queues_come_a_page_at_a_time_at_the_same_cost(client, admin_user):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    names = make_queues(300)
    client.force_login(admin_user)
    with CaptureQueriesContext(connection) as first:
        response = client.get("/queues/")
    assert shown(response) == names[:50] and response.context["page"].total == 300
    assert "300 queues; showing team-000 to team-049" in response.content.decode()
    seen, url = [], "/queues/"
    while url:
        with CaptureQueriesContext(connection) as queries:
            response = client.get(url)
        assert len(queries) <= len(first) + 1
        seen += shown(response)
        url = response.context["page"].next_url and "/queues/" + response.context["page"].next_url
    assert seen == names
    back = client.get("/queues/" + response.context["page"].previous_url)
    assert shown(back) == names[200:250]


def test_find_a_queue_by_name(client, admin_user, owner):
    make_queues(300)
    client.force_login(admin_user)
    response = client.get("/queues/", {"q": "TEAM-29"})
    assert shown(response) == [f"team-29{n}" for n in range(10)]
    assert "10 queues with “TEAM-29” in the name" in response.content.decode()
    assert shown(client.get("/queues/", {"q": "nope"})) == []
    # A viewer finds only among the queues they may watch (olive owns every third).
    client.force_login(owner)
    found = client.get("/queues/", {"q": "team-29"})
    assert shown(found) == ["team-291", "team-294", "team-297"]
    assert found.context["page"].total == 3


def test_the_find_box_keeps_the_pool_and_htmx_gets_the_rows_only(client, admin_user, settings):
    from armada.core.config import parse_config

    settings.ARMADA = parse_config(
        {"scheduling": {"pools": [{"name": "cpu"}, {"name": "gpu"}]}, "executors": []}
    )
    make_queues(60)
    client.force_login(admin_user)
    page = client.get("/queues/", {"pool": "gpu", "q": "team-0"})
    html = page.content.decode()
    assert '<input type="hidden" name="pool" value="gpu">' in html
    assert page.context["page"].next_url == "?pool=gpu&q=team-0&after=team-049"
    rows = client.get("/queues/", {"q": "team-05"}, HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in rows and "team-059" in rows and "team-060" not in rows
    assert 'hx-swap-oob="innerHTML"' in rows
