"""The queue page's Permissions section: one row per user or group granted something, and
for holders of ``create_queue`` a plain form (no JavaScript needed, CSRF-protected) that
grants or revokes verbs for a user or group, and a Remove button per row; a refused change
is a 400 page naming the field and changes nothing; others get 403."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from armada.models import Queue

pytestmark = pytest.mark.django_db
PAGE, POST = "/queues/demo/", "/queues/demo/permissions"


def _rows(html: str) -> list[tuple[str, str]]:
    body = html.split('class="narrow permission-rows"', 1)[1].split("</tbody>", 1)[0]
    return re.findall(r'<th scope="row">(.*?)</th><td>(.*?)</td>', body)


def test_an_admin_grants_watch_and_the_user_then_sees_the_queue(
    client, admin_user, queue, outsider
):
    otto = Client()
    otto.force_login(outsider)
    assert otto.get(PAGE).status_code == 403
    client.force_login(admin_user)
    html = client.get(PAGE).content.decode()
    assert _rows(html) == [("group submitters", "submit")]
    assert 'action="/queues/demo/permissions"' in html and 'name="csrfmiddlewaretoken"' in html
    response = client.post(
        POST, {"action": "grant", "kind": "User", "subject": "otto", "verbs": ["watch", "cancel"]}
    )
    assert response.status_code == 302 and response["Location"] == PAGE + "#permissions"
    page = client.get(PAGE).content.decode()
    assert "Granted watch, cancel to user otto on queue demo." in page
    assert _rows(page) == [("user otto", "cancel, watch"), ("group submitters", "submit")]
    assert otto.get(PAGE).status_code == 200

    # Revoke one verb, then Remove (every verb).
    client.post(POST, {"action": "revoke", "kind": "User", "subject": "otto", "verbs": ["cancel"]})
    assert _rows(client.get(PAGE).content.decode())[0] == ("user otto", "watch")
    client.post(POST, {"action": "revoke", "kind": "User", "subject": "otto"})
    assert Queue.objects.get(name="demo").permissions == [
        {"subjects": [{"kind": "Group", "name": "submitters"}], "verbs": ["submit"]}
    ]
    assert otto.get(PAGE).status_code == 403


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"action": "grant", "kind": "User", "subject": "", "verbs": ["watch"]}, "Name"),
        (
            {"action": "grant", "kind": "Team", "subject": "otto", "verbs": ["watch"]},
            "User or group",
        ),
        ({"action": "grant", "kind": "User", "subject": "otto", "verbs": ["peek"]}, "Verbs"),
        ({"action": "grant", "kind": "User", "subject": "otto"}, "Verbs"),
        (
            {"action": "share", "kind": "User", "subject": "otto", "verbs": ["watch"]},
            "Grant or revoke",
        ),
    ],
)
def test_bad_input_is_a_400_naming_the_field(client, admin_user, queue, data, field):
    client.force_login(admin_user)
    before = Queue.objects.get(name="demo").permissions
    response = client.post(POST, data)
    assert response.status_code == 400
    errors = response.content.decode().split('id="permission-errors"', 1)[1].split("</ul>", 1)[0]
    assert f"{field}</a>:" in errors or f"<li>{field}:" in errors
    assert Queue.objects.get(name="demo").permissions == before


def test_only_holders_of_create_queue_get_the_form_or_may_post(client, owner, queue):
    client.force_login(owner)  # owns the queue: may watch it, may not change queues
    html = client.get(PAGE).content.decode()
    assert _rows(html) == [("group submitters", "submit")]
    assert "permissions" in html and 'action="/queues/demo/permissions"' not in html
    data = {"action": "grant", "kind": "User", "subject": "otto", "verbs": ["watch"]}
    response = client.post(POST, data)
    assert response.status_code == 403 and "create_queue" in response.content.decode()
    assert len(Queue.objects.get(name="demo").permissions) == 1


def test_csrf_and_unknown_queue(admin_user, queue, client):
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(admin_user)
    data = {"action": "grant", "kind": "User", "subject": "otto", "verbs": ["watch"]}
    assert strict.post(POST, data).status_code == 403
    client.force_login(admin_user)
    assert client.post("/queues/nowhere/permissions", data).status_code == 404
    assert client.get(POST).status_code == 405
    assert len(Queue.objects.get(name="demo").permissions) == 1
