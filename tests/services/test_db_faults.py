"""A database connection that breaks under a request: reads run again, a submit says
truthfully whether its jobs were stored, nothing answers 500. PostgreSQL only: the
connection is really terminated by the server."""

from __future__ import annotations

import psycopg
import pytest
from django.db import connection
from django.db.utils import OperationalError

from armada.api import queue_views
from armada.models import Event, Job
from armada.services import submit as submit_module
from armada.services.errors import Unavailable
from armada.services.submit import job_submit
from tests.conftest import T0, job_file

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _postgresql_only():
    if connection.vendor != "postgresql":
        pytest.skip("terminates a PostgreSQL backend")


def _terminate_own_connection() -> None:
    """Have the server kill this thread's connection, from another connection."""
    pid = connection.connection.info.backend_pid
    settings = connection.settings_dict
    with psycopg.connect(
        dbname=settings["NAME"],
        user=settings["USER"] or "postgres",
        host=settings["HOST"] or "127.0.0.1",
        port=settings["PORT"] or 5432,
        password=settings["PASSWORD"] or None,
        autocommit=True,
    ) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])


def test_a_read_whose_connection_dies_is_read_again(api, queue, monkeypatch):
    real = queue_views.queue_services.queue_list
    calls = []

    def dies_once():
        calls.append(1)
        if len(calls) == 1:
            connection.ensure_connection()
            _terminate_own_connection()
        return real()

    monkeypatch.setattr(queue_views.queue_services, "queue_list", dies_once)
    response = api.get("/api/v1/queues")
    assert response.status_code == 200, response.content
    assert [q["name"] for q in response.json()] == ["demo"]
    assert len(calls) == 2


def test_a_submit_whose_connection_dies_says_nothing_was_stored(api, queue, monkeypatch):
    real = submit_module.events_append

    def dies(**kwargs):
        _terminate_own_connection()
        return real(**kwargs)

    monkeypatch.setattr(submit_module, "events_append", dies)
    response = api.post("/api/v1/jobs", job_file(), format="json")
    assert response.status_code == 503, response.content
    assert "none of the 1 job(s) was stored" in response.json()["message"]
    assert response["Retry-After"] == "1"
    assert Job.objects.count() == 0
    assert Event.objects.count() == 0


def test_a_submit_whose_connection_dies_in_its_copy_says_nothing_was_stored(
    api, queue, monkeypatch
):
    real = submit_module.insert_rows

    def dies(*args, **kwargs):
        _terminate_own_connection()
        return real(*args, **kwargs)

    monkeypatch.setattr(submit_module, "insert_rows", dies)
    response = api.post("/api/v1/jobs", job_file(), format="json")
    assert response.status_code == 503, response.content
    assert "none of the 1 job(s) was stored" in response.json()["message"]
    assert Job.objects.count() == 0


def test_a_submit_whose_connection_dies_during_commit_reports_the_stored_jobs(
    queue, owner, monkeypatch
):
    connection.ensure_connection()
    real_commit = connection._commit

    def commit_then_die():
        real_commit()  # the jobs are stored ...
        _terminate_own_connection()  # ... and the connection dies before the answer arrives
        with connection.wrap_database_errors:
            connection.connection.execute("SELECT 1")

    monkeypatch.setattr(connection, "_commit", commit_then_die)
    ids = job_submit(actor=owner, data=job_file(), now=T0)
    monkeypatch.undo()
    assert list(Job.objects.filter(id__in=ids).values_list("id", flat=True)) == ids


def test_a_submit_that_cannot_tell_names_the_job_to_look_for(queue, owner, monkeypatch):
    real = submit_module.events_append

    def dies(**kwargs):
        _terminate_own_connection()
        return real(**kwargs)

    def unreachable(*args, **kwargs):
        raise OperationalError("connection refused")

    monkeypatch.setattr(submit_module, "events_append", dies)
    monkeypatch.setattr(submit_module.Job.objects, "filter", unreachable)
    with pytest.raises(Unavailable, match="look up job "):
        job_submit(actor=owner, data=job_file(), now=T0)


def test_a_submit_whose_connection_dies_during_its_checks_reads_them_again(api, queue, monkeypatch):
    real = submit_module.require_queue_verb
    calls = []

    def dies_once(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            _terminate_own_connection()
        real(*args, **kwargs)
        submit_module.Queue.objects.exists()  # a check's query (an admin's needs none)

    monkeypatch.setattr(submit_module, "require_queue_verb", dies_once)
    response = api.post("/api/v1/jobs", job_file(), format="json")
    assert response.status_code == 201, response.content
    assert len(calls) == 2
    assert Job.objects.count() == 1


def test_the_body_guard_reads_credentials_again_after_a_lost_connection(owner):
    from armada.api.bodyguard import _identify
    from armada.services.tokens import token_create

    key = token_create(user=owner, name="blip", expires_at=None, now=T0).key
    scope = {"headers": [(b"authorization", f"Bearer {key}".encode())], "client": ("1.2.3.4", 1)}
    connection.ensure_connection()
    _terminate_own_connection()
    assert _identify(scope, api=True) is True
