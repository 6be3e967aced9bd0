"""Saving column choices from parallel clients on PostgreSQL: the same user from several
browsers at once and different users at once. No save fails (no IntegrityError on the
unique user, no 500), each user ends with one row holding one of their own saves, and the
last save wins."""

from __future__ import annotations

import json
import threading

import pytest
from django.db import connection
from django.test import Client

from lookout.grid.prefs import saved_columns
from lookout.models import GridPreference
from tests.racing import Race

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="a PostgreSQL race"),
]
CHOICES = [["id", "state"], ["state", "id", "queue"], ["id", "retries", "decision"]]


def test_parallel_saves_for_the_same_and_different_users(admin_user, owner, member):
    users = {"admin": admin_user, "owner": owner, "member": member}
    answers: list[int] = []
    lock = threading.Lock()

    def saver(user, offset: int):
        client = Client()
        client.force_login(user)

        def step(n: int) -> None:
            visible = CHOICES[(n + offset) % len(CHOICES)]
            body = {"visible": visible, "widths": {visible[0]: 100 + 10 * (n % 20)}}
            response = client.post(
                "/grid/columns", json.dumps(body), content_type="application/json"
            )
            with lock:
                answers.append(response.status_code)

        return step

    race = Race()
    steps = {
        f"{name}-{i}": saver(user, i) for name, user in users.items() for i in range(3)
    }  # three browsers per user
    race.run(steps, seconds=4.0)
    assert race.errors == []
    assert answers and set(answers) == {200}
    assert sum(race.counts.values()) >= len(steps)
    for user in users.values():
        assert GridPreference.objects.filter(user=user).count() == 1
        visible, widths = saved_columns(user)
        assert list(visible) in CHOICES

    # The last save wins: one more save, after the race, is what is kept.
    client = Client()
    client.force_login(owner)
    last = {"visible": ["owner", "id"], "widths": {"owner": 220}}
    assert (
        client.post("/grid/columns", json.dumps(last), content_type="application/json").status_code
        == 200
    )
    assert saved_columns(owner) == (("owner", "id"), {"owner": 220})
    assert saved_columns(admin_user)[0] != ("owner", "id")
