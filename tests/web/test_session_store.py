"""Where sessions are read from: with Redis (``REDIS_URL``) every request reads its session
from the shared cache, not the database; a logout ends it in both."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.db import connection
from django.test.utils import CaptureQueriesContext

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(
        settings.SESSION_ENGINE != "django.contrib.sessions.backends.cached_db",
        reason="sessions are cached only when REDIS_URL is set",
    ),
]


def session_reads(client, path: str) -> list[str]:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(path)
    assert response.status_code in (200, 302), response.status_code
    return [q["sql"] for q in queries if "django_session" in q["sql"]]


def test_a_logged_in_request_reads_its_session_from_the_cache(client, admin_user):
    client.force_login(admin_user)
    assert session_reads(client, "/queues/") == []
    client.logout()
    response = client.get("/queues/")
    assert response.status_code == 302 and "/login" in response["Location"]
