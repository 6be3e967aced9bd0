"""What Lookout shows a viewer is what the permission funnel lets them see: the main menu
offers exactly the pages that open for them (each page's one check, ``lookout.access``);
a viewer who may watch no queue is told so (not that no job matches); and counts are of
the queues they may watch, the cluster-wide counters (no queue label) left out unless they
may watch every queue (``watch_all_events``)."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission
from django.utils import timezone

from armada.services.counters import counters_add, tally
from armada.services.metric_history import metrics_sample
from armada.services.queues import queue_create
from armada.services.submit import job_submit
from lookout.access import MENU
from tests.conftest import T0, job_file

pytestmark = pytest.mark.django_db
DECISIONS = "armada_scheduler_retry_policy_decisions_total"
CATEGORIES = "armada_executor_job_failure_category_total"
NO_QUEUE = "No queue is visible to you"


@pytest.fixture
def world(admin_user, django_user_model):
    """Queues ``demo`` (``wanda`` may watch it, and nothing else) and ``secret``, a job in
    each, and decisions and failures counted for both."""
    wanda = django_user_model.objects.create_user("wanda", password="wanda-password")
    grant = [{"subjects": [{"kind": "User", "name": "wanda"}], "verbs": ["watch"]}]
    for name, permissions in (("demo", grant), ("secret", [])):
        queue_create(actor=admin_user, data={"name": name, "permissions": permissions}, now=T0)
        job_submit(actor=admin_user, data=job_file(queue=name), now=T0)

    def count(amounts: tuple[int, int, int]) -> None:
        for queue, amount in zip(("demo", "secret"), amounts[:2], strict=True):
            labels = {"queue": queue, "pool": "default", "policy": "p", "decision": "retry"}
            counters_add(name=DECISIONS, increments={k: amount for k in tally(labels)})
        oom = {"failure_category": "oom", "failure_subcategory": ""}
        counters_add(name=CATEGORIES, increments={k: amounts[2] for k in tally(oom)})

    count((1, 1, 1))
    metrics_sample(now=timezone.now() - timedelta(minutes=30))  # the baseline
    count((2, 5, 7))
    metrics_sample(now=timezone.now() - timedelta(minutes=5))
    return wanda


def menu_links(client) -> dict[str, str]:
    html = client.get("/tokens/").content.decode()
    nav = re.search(r'<nav aria-label="Main">(.*?)</nav>', html, re.S).group(1)
    return dict(re.findall(r'<a href="([^"]+)"[^>]*>([^<]+)</a>', nav))


@pytest.mark.parametrize("who", ["admin", "wanda", "nobody"])
def test_the_menu_offers_exactly_the_pages_that_open(client, world, admin_user, outsider, who):
    user = {"admin": admin_user, "wanda": world, "nobody": outsider}[who]
    client.force_login(user)
    shown = menu_links(client)
    for page in MENU:
        status = client.get(page.href).status_code
        assert (page.href in shown) == (status == 200), (who, page.label, status)
        assert status in (200, 302, 403), (page.href, status)
    expected = {
        "admin": {"Jobs", "Queues", "Retry policies", "Decision metrics", "Retry cost"}
        | {"Tokens", "API", "Admin"},
        "wanda": {"Jobs", "Queues", "Decision metrics", "Retry cost", "Tokens", "API"},
    }
    assert set(shown.values()) == expected.get(who, expected["wanda"])
    assert client.get("/policies/").status_code == (200 if who == "admin" else 403)


def test_logged_out_the_menu_offers_only_what_opens_without_a_login(client):
    html = client.get("/login").content.decode()
    nav = re.search(r'<nav aria-label="Main">(.*?)</nav>', html, re.S).group(1)
    assert re.findall(r">([^<]+)</a>", nav) == ["API"]


@pytest.mark.parametrize(
    "url", ["/", "/?group=state", "/queues/", "/metrics/decisions", "/metrics/cost"]
)
def test_a_viewer_of_no_queue_is_told_so_and_whom_to_ask(client, world, outsider, url):
    client.force_login(outsider)
    html = re.sub(r"\s+", " ", client.get(url).content.decode())
    assert NO_QUEUE in html and "watch_all_events" in html and "owners" in html
    assert "No jobs match" not in html


def test_no_match_is_not_no_queue(client, world):
    client.force_login(world)
    html = client.get("/", {"state": "running"}).content.decode()
    assert "No jobs match the filters." in html and NO_QUEUE not in html
    html = client.get("/?group=state&state=running").content.decode()
    assert "No jobs match." in html and NO_QUEUE not in html


def test_decision_metrics_count_only_the_watched_queues(client, world, admin_user):
    client.force_login(world)
    response = client.get("/metrics/decisions", {"period": "1h"})
    assert [c.title for c in response.context["queue_charts"]] == ["Queue demo: decisions"]
    [policy] = response.context["policy_charts"]
    assert {line.label: line.total for line in policy.lines} == {"retry": 2}  # not 7
    html = response.content.decode()
    # The failure categories count every queue: not shown, and the page says why.
    assert response.context["categories"] is None and response.context["gang"] is None
    assert 'id="categories-hidden"' in html and CATEGORIES in html
    shown = [c["name"] for c in response.context["counters"]]
    assert shown == [DECISIONS]
    assert [row for c in response.context["counters"] for row in c["rows"]] == [
        (["demo", "default", "p", "retry"], 3)
    ]
    assert "secret" not in html
    # Those who may watch every queue see every count.
    for viewer in (admin_user, _watcher_of_all(world)):
        client.force_login(viewer)
        response = client.get("/metrics/decisions", {"period": "1h"})
        assert {line.label: line.total for line in response.context["categories"].lines} == {
            "oom": 7
        }
        assert not response.context["hidden_counters"]


def _watcher_of_all(user):
    user.user_permissions.add(Permission.objects.get(codename="watch_all_events"))
    return type(user).objects.get(pk=user.pk)
