"""``/readyz``: 200 when the database and the broker answer and every migration is applied;
503 naming what failed otherwise; every check bounded; public and exempt from the HTTPS
redirect, like ``/healthz``."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import OperationalError, connection
from django.db.migrations.recorder import MigrationRecorder

from armada.web import health

# The checks run in threads of their own, each with its own database connection.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _fresh_checks():
    """Each test starts as a new process: no check running, migrations not yet seen."""
    health._migrations_ok_at.clear()
    health._pending.clear()
    yield
    health._migrations_ok_at.clear()
    health._pending.clear()


def test_ready_when_everything_answers(client):
    response = client.get("/readyz")
    assert response.status_code == 200, response.content
    assert response.json() == {
        "status": "ready",
        "checks": {"database": "ok", "migrations": "ok", "broker": "ok"},
    }
    assert "no-cache" in response["Cache-Control"]


def test_public_and_exempt_from_the_https_redirect(client, settings):
    settings.SECURE_SSL_REDIRECT = True
    assert client.get("/readyz").status_code == 200  # anonymous, plain HTTP
    assert client.get("/healthz").status_code == 200
    assert client.get("/api/v1/queues").status_code == 301  # the rest is redirected


def test_an_unapplied_migration_is_not_ready(client):
    recorder = MigrationRecorder(connection)
    app, name = max(m for m in recorder.applied_migrations() if m[0] == "armada")
    recorder.record_unapplied(app, name)
    try:
        response = client.get("/readyz")
    finally:
        recorder.record_applied(app, name)
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "not ready" and body["failed"] == ["migrations"]
    assert body["checks"]["migrations"] == f"1 unapplied (run manage.py migrate): {app}.{name}"
    assert body["checks"]["database"] == "ok" and body["checks"]["broker"] == "ok"
    # Applied again: ready at the next probe.
    assert client.get("/readyz").status_code == 200


def test_a_database_that_does_not_answer_is_named(client, monkeypatch):
    def refuse() -> str:
        raise OperationalError("connection to server at 10.0.0.9 failed: refused")

    monkeypatch.setitem(health.PROBES, "database", refuse)
    monkeypatch.setitem(health.PROBES, "migrations", refuse)
    response = client.get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["failed"] == ["database", "migrations"]
    assert body["checks"]["database"] == "unreachable (OperationalError)"
    assert body["checks"]["migrations"] == "not known: the database does not answer"
    assert "10.0.0.9" not in response.content.decode()  # no addresses in a public answer


def test_an_unreachable_redis_broker_leaves_the_process_ready_but_degraded(client, settings):
    """The web process serves without Redis (tests/web/test_redis_down.py), so it stays in
    the load balancer, saying what is down."""
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens on port 1
    response = client.get("/readyz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "degraded" and body["degraded"] == ["broker"]
    assert "failed" not in body
    assert body["checks"]["broker"].startswith("unreachable (")


def test_a_file_system_broker_without_its_folders_is_degraded(client, settings, tmp_path):
    settings.REDIS_URL = ""
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(tmp_path),
        "data_folder_out": str(tmp_path),
        "processed_folder": str(tmp_path / "gone"),
        "control_folder": str(tmp_path),
    }
    response = client.get("/readyz")
    assert response.status_code == 200 and response.json()["status"] == "degraded"
    assert response.json()["checks"]["broker"] == (
        "the file-system broker's processed_folder is missing or not writable"
    )
    (tmp_path / "gone").mkdir()
    assert client.get("/readyz").json()["status"] == "ready"


def test_a_hanging_check_is_bounded_and_not_piled_up(client, monkeypatch):
    monkeypatch.setattr(health, "CHECK_SECONDS", 0.5)
    release = threading.Event()
    calls: list[int] = []

    def hang() -> str:
        calls.append(1)
        release.wait(60)
        return "ok"

    monkeypatch.setitem(health.PROBES, "database", hang)
    try:
        started = time.monotonic()
        first = client.get("/readyz")
        assert time.monotonic() - started < 10  # the bound, with room for a busy machine
        assert first.status_code == 503
        assert first.json()["checks"]["database"] == "no answer within 0.5 s"
        second = client.get("/readyz")
        assert second.status_code == 503
        assert second.json()["checks"]["database"].startswith("no answer yet (an earlier check")
        assert len(calls) == 1  # the hanging check was not started again
    finally:
        release.set()
    # Once it has answered, the next probe runs it afresh.
    deadline = time.monotonic() + 30
    while not health._pending["database"][0].done() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert client.get("/readyz").status_code == 200
    assert len(calls) == 2
