"""Lookout's own login and logout: any active user, not only staff, logs in and then sees
what their permissions allow; failed logins are throttled here and on the admin's login."""

from __future__ import annotations

import pytest
from django.test import Client

from armada.services import login_throttle
from armada.services.queues import queue_create
from tests.conftest import T0
from tests.lookout.builders import make_job

pytestmark = pytest.mark.django_db


@pytest.fixture
def jobs(admin_user, queue):
    """Job ``01a`` in ``demo`` (owned by olive) and ``01s`` in ``secret`` (someone else's)."""
    queue_create(actor=admin_user, data={"name": "secret", "owners": ["someone"]}, now=T0)
    make_job("01a")
    make_job("01s", queue="secret")


@pytest.fixture
def clock(monkeypatch) -> list[float]:
    now = [1_800_000_000.0]
    monkeypatch.setattr(login_throttle, "wall_clock", lambda: now[0])
    return now


def log_in(client: Client, username: str, password: str, next_url: str = ""):
    data = {"username": username, "password": password}
    if next_url:
        data["next"] = next_url
    return client.post("/login", data)


def test_pages_send_anonymous_people_to_lookouts_own_login(client):
    response = client.get("/queues/")
    assert response.status_code == 302 and response["Location"] == "/login?next=/queues/"
    page = client.get(response["Location"])
    assert page.status_code == 200
    html = page.content.decode()
    assert 'name="username"' in html and 'name="password"' in html
    assert 'name="next" value="/queues/"' in html


def test_a_user_who_is_not_staff_logs_in_and_sees_only_the_queues_they_may_watch(
    client, owner, jobs
):
    assert not owner.is_staff
    response = log_in(client, "olive", "olive-password", next_url="/queues/")
    assert response.status_code == 302 and response["Location"] == "/queues/"
    queues = client.get("/queues/")
    assert [s.queue.name for s in queues.context["shares"]] == ["demo"]
    listed = client.get("/").content.decode()
    assert "01a" in listed and "01s" not in listed
    assert client.get("/queues/secret/").status_code == 403
    assert client.get("/jobs/01s").status_code == 403


def test_a_user_with_no_queues_logs_in_and_sees_nothing(client, outsider, jobs):
    assert log_in(client, "otto", "otto-password").status_code == 302
    page = client.get("/")
    assert page.status_code == 200
    assert "01a" not in page.content.decode() and "01s" not in page.content.decode()


def test_the_navigation_shows_tokens_and_log_out_and_admin_only_for_staff(client, owner):
    client.force_login(owner)
    html = client.get("/queues/").content.decode()
    assert 'href="/tokens/"' in html and 'action="/logout"' in html
    assert 'href="/admin/"' not in html
    owner.is_staff = True
    owner.save()
    assert 'href="/admin/"' in client.get("/queues/").content.decode()


@pytest.mark.parametrize(
    ("username", "password"),
    [("olive", "wrong"), ("nobody", "olive-password"), ("olive", "")],
)
def test_a_failed_login_is_400_with_the_form_again(client, owner, username, password):
    response = log_in(client, username, password)
    assert response.status_code == 400
    assert client.get("/").status_code == 302


def test_an_inactive_user_cannot_log_in(client, owner):
    owner.is_active = False
    owner.save()
    assert log_in(client, "olive", "olive-password").status_code == 400


def test_next_cannot_send_the_browser_elsewhere(client, owner):
    response = log_in(client, "olive", "olive-password", next_url="https://evil.example/")
    assert response.status_code == 302 and response["Location"] == "/"


def test_logging_out_takes_a_post_and_ends_the_session(client, owner):
    client.force_login(owner)
    assert client.get("/logout").status_code == 405
    response = client.post("/logout")
    assert response.status_code == 302 and response["Location"] == "/login"
    assert client.get("/").status_code == 302


def test_five_wrong_passwords_then_the_right_one_is_refused_until_the_delay_passes(
    client, owner, outsider, clock
):
    for _ in range(5):
        assert log_in(client, "olive", "wrong").status_code == 400
    refused = log_in(client, "olive", "olive-password")
    assert refused.status_code == 429 and refused["Retry-After"] == "10"
    assert "Too many failed logins for user &#x27;olive&#x27;: try again in 10 seconds." in (
        refused.content.decode()
    )
    assert client.get("/").status_code == 302  # not logged in

    assert log_in(Client(), "otto", "otto-password").status_code == 302  # others unaffected
    clock[0] += 10
    assert log_in(client, "olive", "olive-password").status_code == 302
    assert client.get("/").status_code == 200


def test_failures_on_the_api_and_the_login_page_count_together(client, owner, clock):
    import base64

    header = "Basic " + base64.b64encode(b"olive:wrong").decode()
    for _ in range(5):
        assert Client(HTTP_AUTHORIZATION=header).get("/api/v1/queues").status_code == 401
    assert log_in(client, "olive", "olive-password").status_code == 429


def test_the_admin_login_still_takes_staff_and_refuses_others(client, admin_user, owner):
    page = client.post(
        "/admin/login/?next=/admin/", {"username": "olive", "password": "olive-password"}
    )
    assert page.status_code == 200 and "staff account" in page.content.decode()
    response = client.post(
        "/admin/login/?next=/admin/", {"username": "root", "password": "root-password"}
    )
    assert response.status_code == 302 and response["Location"] == "/admin/"
    assert client.get("/admin/").status_code == 200
    # a right password refused for not being staff is not a failed guess
    assert login_throttle.login_failures(username="olive") == 0


def test_the_admin_login_is_throttled_too(client, admin_user, clock):
    """The same answer as Lookout's login page: 429 with Retry-After and the form saying
    how long to wait; a wrong password is the admin's usual 200 with the form's error."""
    for _ in range(5):
        page = client.post("/admin/login/", {"username": "root", "password": "wrong"})
        assert page.status_code == 200 and "Retry-After" not in page
    page = client.post("/admin/login/", {"username": "root", "password": "root-password"})
    assert page.status_code == 429 and page["Retry-After"] == "10"
    assert "Too many failed logins for user" in page.content.decode()
    assert client.get("/admin/").status_code == 302
    clock[0] += 10
    response = client.post(
        "/admin/login/?next=/admin/", {"username": "root", "password": "root-password"}
    )
    assert response.status_code == 302 and response["Location"] == "/admin/"
