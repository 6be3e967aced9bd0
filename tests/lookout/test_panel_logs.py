"""A run's log for the log viewer: its text with a version (ETag) that a poll names to get
304 while nothing changed, whether the run is still active, the download, and who may read
them (404 for an unknown run, 403 for a queue not watched)."""

from __future__ import annotations

from html import unescape

import pytest

from armada.models import Queue, Run, RunLog
from tests.conftest import at
from tests.lookout.builders import make_job, make_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def running(queue):
    make_job("01l", state="running")
    make_run("r-l", "01l", state="running")
    return RunLog.objects.create(run_id="r-l", text="line 1\n", updated_at=at(10))


def etag(response) -> str:
    return response["ETag"].strip('"')


def test_the_log_text_has_a_version_and_a_poll_gets_304_until_it_changes(
    client, admin_user, running
):
    client.force_login(admin_user)
    first = client.get("/runs/r-l/log")
    assert first.status_code == 200 and first.content == b"line 1\n"
    assert first["X-Run-Active"] == "1" and first["X-Log-Truncated"] == "0"
    version = etag(first)
    unchanged = client.get("/runs/r-l/log", {"after": version})
    assert unchanged.status_code == 304 and unchanged.content == b""
    assert etag(unchanged) == version and unchanged["X-Run-Active"] == "1"
    # If-None-Match works the same.
    assert client.get("/runs/r-l/log", HTTP_IF_NONE_MATCH=f'"{version}"').status_code == 304
    # The executor sends more: the poll gets the new text and a new version.
    running.text = "line 1\nline 2\n"
    running.updated_at = at(11)
    running.save()
    changed = client.get("/runs/r-l/log", {"after": version})
    assert changed.status_code == 200 and changed.content == b"line 1\nline 2\n"
    assert etag(changed) != version
    # The run ends with the same text: the poll learns it, and that it is no longer active.
    Run.objects.filter(id="r-l").update(state="succeeded", finished_at=at(12))
    ended = client.get("/runs/r-l/log", {"after": etag(changed)})
    assert ended.status_code == 200 and ended["X-Run-Active"] == "0"
    assert client.get("/runs/r-l/log", {"after": etag(ended)}).status_code == 304


def test_a_run_without_a_log_answers_empty_text_until_one_arrives(client, admin_user, queue):
    make_job("01w", state="running")
    make_run("r-w", "01w", state="pending")
    client.force_login(admin_user)
    first = client.get("/runs/r-w/log")
    assert first.status_code == 200 and first.content == b""
    assert client.get("/runs/r-w/log", {"after": etag(first)}).status_code == 304
    RunLog.objects.create(run_id="r-w", text="started\n", updated_at=at(3))
    later = client.get("/runs/r-w/log", {"after": etag(first)})
    assert later.status_code == 200 and later.content == b"started\n"


def test_the_download_is_an_attachment_named_after_the_job_and_run(client, admin_user, running):
    client.force_login(admin_user)
    response = client.get("/runs/r-l/log.txt")
    assert response.status_code == 200 and response.content == b"line 1\n"
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="01l-r-l.log"'


def test_the_log_is_read_only_by_those_who_may_watch_the_queue(
    client, django_user_model, outsider, running
):
    client.force_login(outsider)
    for path in ("/runs/r-l/log", "/runs/r-l/log.txt"):
        response = client.get(path)
        assert response.status_code == 403, path
        assert "may not watch on queue 'demo'" in response.content.decode()  # plain text
        assert b"line 1" not in response.content
        assert client.get(path.replace("r-l", "nope")).status_code == 404
        assert client.post(path).status_code == 405
    watcher = django_user_model.objects.create_user("wanda", password="w")
    Queue.objects.filter(name="demo").update(
        permissions=[{"subjects": [{"kind": "User", "name": "wanda"}], "verbs": ["watch"]}]
    )
    client.force_login(watcher)
    assert client.get("/runs/r-l/log.txt").content == b"line 1\n"
    client.logout()
    assert client.get("/runs/r-l/log").status_code == 302


def test_the_full_page_shows_the_log_of_the_run_asked_for(client, admin_user, queue):
    make_job("01r", state="running")
    make_run("r-old", "01r", state="failed", leased_at=at(1))
    make_run("r-new", "01r", state="running", leased_at=at(20))
    RunLog.objects.create(run_id="r-old", text="old output", updated_at=at(5))
    RunLog.objects.create(run_id="r-new", text="new output", updated_at=at(25))
    client.force_login(admin_user)
    latest = client.get("/jobs/01r").content.decode()
    assert "new output" in latest and "old output" not in latest
    older = client.get("/jobs/01r", {"run": "r-old"}).content.decode()
    assert "old output" in older and "new output" not in older
    assert '<option value="r-old" ' in older and 'data-active="0" selected' in older
    bad = client.get("/jobs/01r", {"run": "r-other"})
    assert bad.status_code == 400
    assert "run: 'r-other' is not a run of job 01r" in unescape(bad.content.decode())
    assert client.get("/jobs/01r", {"events": "some"}).status_code == 400
