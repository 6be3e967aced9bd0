"""The queue admin edits a queue's resource limits by priority class as JSON text, checked
by the same validation as the API (configured classes and pools), saved in the stored
shape, with errors shown on the field."""

from __future__ import annotations

import json

import pytest

from armada.admin import QueueForm
from armada.models import Queue
from tests.queue_limits import EXAMPLE, LIMITS, PC, two_pools

pytestmark = pytest.mark.django_db

FIELD = "resource_limits_by_priority_class_name"


@pytest.fixture(autouse=True)
def _pools(settings):
    two_pools(settings)


def form_data(limits: object = "{}", **fields: object) -> dict:
    data = {
        "name": "q",
        "priority_factor": "1",
        "owners": '["olive"]',
        "group_owners": "[]",
        "permissions": "[]",
        "labels": "{}",
        "retry_policies": "[]",
        FIELD: limits if isinstance(limits, str) else json.dumps(limits),
    }
    return data | fields


def test_add_a_queue_with_limits_in_the_admin(client, admin_user):
    client.force_login(admin_user)
    response = client.post("/admin/armada/queue/add/", form_data(EXAMPLE))
    assert response.status_code == 302, response.content.decode()[:2000]
    assert Queue.objects.get(name="q").resource_limits_by_priority_class_name == EXAMPLE


def test_the_change_page_shows_them_and_saves_them_normalised(client, admin_user):
    client.force_login(admin_user)
    client.post("/admin/armada/queue/add/", form_data())
    queue = Queue.objects.get(name="q")
    page = client.get(f"/admin/armada/queue/{queue.pk}/change/").content.decode()
    assert "Resource limits by priority class" in page and "maximumResourceFraction" in page
    response = client.post(
        f"/admin/armada/queue/{queue.pk}/change/",
        form_data({PC: {"maximumResourceFraction": {"cpu": 1}}}),
    )
    assert response.status_code == 302
    assert Queue.objects.get(name="q").resource_limits_by_priority_class_name == {
        PC: {"maximumResourceFraction": {"cpu": 1.0}, "maximumResourceFractionByPool": {}}
    }


BAD = [
    (
        "over-one",
        {PC: {"maximumResourceFraction": {"cpu": 2}}},
        f"{LIMITS}.{PC}.maximumResourceFraction.cpu: must be a number from 0 to 1",
    ),
    (
        "unknown-class",
        {"armada-urgent": {}},
        f"{LIMITS}.armada-urgent: unknown priority class; configured: armada-default, armada-preemptible",
    ),
    (
        "unknown-pool",
        {PC: {"maximumResourceFractionByPool": {"x": {}}}},
        f"{LIMITS}.{PC}.maximumResourceFractionByPool.x: unknown pool; configured: default, gpu-pool",
    ),
    ("not-a-mapping", [1], f"{LIMITS}: must be a mapping of priority class names to limits"),
]


@pytest.mark.parametrize(("limits", "error"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_a_bad_value_is_an_error_on_the_field(limits, error):
    form = QueueForm(data=form_data(limits))
    assert not form.is_valid()
    assert form.errors[FIELD] == [error]
    assert set(form.errors) == {FIELD}


def test_text_that_is_not_json_is_an_error_on_the_field(client, admin_user):
    client.force_login(admin_user)
    response = client.post("/admin/armada/queue/add/", form_data("armada-preemptible: {}"))
    assert response.status_code == 200  # the form again, with the error
    assert FIELD in response.context["adminform"].form.errors
    assert not Queue.objects.exists()


def test_a_refused_change_changes_nothing(client, admin_user):
    client.force_login(admin_user)
    client.post("/admin/armada/queue/add/", form_data(EXAMPLE))
    queue = Queue.objects.get(name="q")
    response = client.post(
        f"/admin/armada/queue/{queue.pk}/change/", form_data({"nope": {}}, priority_factor="3")
    )
    assert response.status_code == 200
    assert "unknown priority class" in response.content.decode()
    queue.refresh_from_db()
    assert (queue.priority_factor, queue.resource_limits_by_priority_class_name) == (1.0, EXAMPLE)
