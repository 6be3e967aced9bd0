"""Armada's ``/health``: 204 with no body while the database answers, 503 with the reason as
plain text when it does not; public; ``/healthz`` and ``/readyz`` unchanged beside it."""

from __future__ import annotations

import threading

import pytest
from django.db import OperationalError
from django.test import Client

from armada.web import health

# The database check runs in a thread of its own, with its own connection.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _fresh_checks():
    health._pending.clear()
    yield
    health._pending.clear()


def test_healthy_is_204_with_no_body_for_anyone():
    anonymous = Client()
    for method in ("get", "head", "post"):  # Armada's answers any method
        response = getattr(anonymous, method)("/health")
        assert response.status_code == 204, (method, response.content)
        assert response.content == b""
        assert "no-cache" in response["Cache-Control"]


def test_a_database_that_does_not_answer_is_503_saying_so(monkeypatch):
    def refuse() -> str:
        raise OperationalError("connection to server at 10.0.0.9 failed: refused")

    monkeypatch.setitem(health.PROBES, "database", refuse)
    response = Client().get("/health")
    assert response.status_code == 503
    assert response["Content-Type"].startswith("text/plain")
    assert response.content.decode() == "database: unreachable (OperationalError)"
    assert "10.0.0.9" not in response.content.decode()


def test_a_hanging_database_is_bounded(monkeypatch):
    monkeypatch.setattr(health, "CHECK_SECONDS", 0.3)
    release = threading.Event()

    def hang() -> str:
        release.wait(60)
        return "ok"

    monkeypatch.setitem(health.PROBES, "database", hang)
    try:
        first = Client().get("/health")
        second = Client().get("/health")  # the first check still hangs: not started again
    finally:
        release.set()
    assert first.status_code == 503 and b"no answer within 0.3 s" in first.content
    assert second.status_code == 503 and b"an earlier check has waited" in second.content


def test_the_other_health_endpoints_are_unchanged():
    client = Client()
    assert client.get("/healthz").status_code == 200
    ready = client.get("/readyz")
    assert ready.status_code == 200 and ready.json()["status"] == "ready"
