"""A job's side panel (``/jobs/<id>/panel``): its tabs and what they hold, who may read it,
a fixed number of queries whatever the job's runs and events, and the numbers it shows (runs
and retries as the decision trail counts them, the memory retries added as an amount)."""

from __future__ import annotations

import re
from html import unescape

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from armada.models import Event, Job, RunLog
from tests.conftest import T0, at
from tests.lookout.builders import make_job, make_run
from tests.lookout.panel_jobs import MI, retried_job

pytestmark = pytest.mark.django_db


def panel(client, job_id: str, **params) -> str:
    response = client.get(f"/jobs/{job_id}/panel", params)
    assert response.status_code == 200, response.content
    return response.content.decode()


def text(response) -> str:
    """A response's HTML with its character references read (quotes written as &#x27;)."""
    return unescape(response.content.decode())


def part(client, job_id: str, tab: str, **params) -> str:
    response = client.get(f"/jobs/{job_id}/panel/{tab}", params)
    assert response.status_code == 200, response.content
    return response.content.decode()


def test_the_panel_has_the_job_parts_as_tabs(client, admin_user, queue):
    make_job("01p", state="running", annotations={"team": "vision"})
    make_run("r-p", "01p", state="running", node="node-3", executor="cluster-x")
    RunLog.objects.create(run_id="r-p", text="epoch 1\nepoch 2\n", updated_at=at(30))
    Event.objects.create(
        created=at(1), queue="demo", job_set="set-1", job_id="01p", type="submitted"
    )
    client.force_login(admin_user)
    html = panel(client, "01p")
    assert 'role="tablist"' in html
    tabs = re.findall(r'role="tab" id="job-tab-(\w+)"', html)
    assert tabs == ["details", "runs", "yaml", "events", "logs"]
    assert html.count('role="tabpanel"') == 5
    assert 'aria-selected="true"' in html.split('id="job-tab-details"')[1].split(">")[0]
    # Details is filled, with the link to the full page and the actions as htmx forms.
    assert 'href="/jobs/01p">Open full page' in html
    for fact in ("vision", "set-1", "armada-default", "Runs 1 · Retries 0"):
        assert fact in html, fact
    assert re.search(r"memory</span> 1Gi", html)
    assert 'hx-post="/jobs/01p/cancel"' in html and 'hx-post="/jobs/01p/preempt"' in html
    # The other tabs are read when first shown, each from its own address.
    for tab in ("runs", "yaml", "events", "logs"):
        assert f'data-part-url="/jobs/01p/panel/{tab}" hidden' in html, tab
    assert "image: busybox" not in html and "epoch 2" not in html and "node-3" not in html
    runs = part(client, "01p", "runs")
    assert "node-3" in runs and "cluster-x" in runs and "not decided" in runs
    yaml_part = part(client, "01p", "yaml")
    assert "image: busybox" in yaml_part and "copy-yaml" in yaml_part
    assert "<strong>submitted</strong>" in part(client, "01p", "events")
    logs = part(client, "01p", "logs")
    assert "epoch 2" in logs and 'data-follow-url="/runs/r-p/log"' in logs
    assert 'data-active="1"' in logs and 'href="/runs/r-p/log.txt"' in logs
    assert "<html" not in logs and 'role="tablist"' not in logs
    # ?tab= opens the panel on another tab, filled; an unknown one is refused.
    opened = panel(client, "01p", tab="logs")
    assert 'id="job-tabpanel-logs" aria-labelledby="job-tab-logs" tabindex="0"' in opened
    assert "epoch 2" in opened and "armada-default" not in opened
    bad = client.get("/jobs/01p/panel", {"tab": "nope"})
    assert bad.status_code == 400 and "tab: must be one of" in bad.content.decode()
    assert client.get("/jobs/01p/panel/nope").status_code == 404
    assert client.get("/jobs/01p/panel/events", {"events": "x"}).status_code == 400


def test_unknown_jobs_are_404_and_queues_not_watched_are_403(client, outsider, queue):
    make_job("01q")
    client.force_login(outsider)
    for path in ("/jobs/01q/panel", "/jobs/01q/panel/logs", "/jobs/01q"):
        response = client.get(path)
        assert response.status_code == 403, path
        assert "may not watch on queue 'demo'" in text(response)
    for path in ("/jobs/nope/panel", "/jobs/nope/panel/runs", "/jobs/nope"):
        assert client.get(path).status_code == 404, path
    client.logout()
    response = client.get("/jobs/01q/panel")
    assert response.status_code == 302 and response["Location"].startswith("/login")


def test_runs_and_retries_are_counted_as_the_trail_counts_them(client, admin_user, queue):
    retried_job()
    client.force_login(admin_user)
    html = panel(client, "01m")
    # 4 runs, 3 of the 4 failures retried, out of the trail's limit of 5 (not "4 / 4").
    assert "Runs 4 · Retries 3 of 5" in html
    assert "4 / 4" not in html
    # A running job that never failed: one run, no retries, no limit decided yet.
    make_job("01n", state="running", run_count=1)
    make_run("r-n", "01n")
    assert "Runs 1 · Retries 0<" in panel(client, "01n")


def test_memory_grown_by_retries_is_shown_as_an_amount(client, admin_user, queue):
    retried_job()
    client.force_login(admin_user)
    html = panel(client, "01m")
    assert "256Mi → 864Mi (×3.375)" in html
    assert 'Memory grown by retries</dt><dd class="memory-growth">factor' not in html
    # The full page says the same.
    page = client.get("/jobs/01m").content.decode()
    assert "256Mi → 864Mi (×3.375)" in page and "Runs 4 · Retries 3 of 5" in page


def test_a_static_bump_shows_what_it_added(client, admin_user, queue):
    make_job(
        "01s",
        state="queued",
        retry_count=1,
        requests={"cpu": 1000, "memory": 1536 * MI},
        mutations={"memoryKind": "static"},
    )
    make_run(
        "r-s",
        "01s",
        state="failed",
        decision={
            "decision": "retry",
            "mutation": {"memory": {"kind": "static", "before": "1Gi", "after": "1536Mi"}},
        },
    )
    client.force_login(admin_user)
    assert "1Gi → 1.5Gi (+512Mi)" in panel(client, "01s")


def test_the_panel_reads_a_fixed_number_of_rows_whatever_the_job_holds(client, admin_user, queue):
    """50 runs with a log each and 5,000 events cost the queries one run and one event do:
    the latest run's log only, the latest 200 events and a count, no other job's row."""
    make_job("01a", state="running")
    make_run("a0", "01a")
    Event.objects.create(created=T0, queue="demo", job_set="set-1", job_id="01a", type="queued")
    make_job("01b", state="running", retry_count=49, run_count=50)
    for i in range(50):
        make_run(f"b{i:02}", "01b", state="failed" if i < 49 else "running", leased_at=at(i))
    RunLog.objects.bulk_create(
        RunLog(run_id=f"b{i:02}", text=f"log of run {i:02}\n" * 100, updated_at=at(i))
        for i in range(50)
    )
    Event.objects.bulk_create(
        Event(created=at(i), queue="demo", job_set="set-1", job_id="01b", type="running")
        for i in range(5000)
    )
    client.force_login(admin_user)
    client.get("/jobs/01a/panel")  # the session and the user are read once warm

    def queries(path: str) -> tuple[list[str], str]:
        with CaptureQueriesContext(connection) as captured:
            response = client.get(path)
        assert response.status_code == 200, path
        return [q["sql"] for q in captured.captured_queries], response.content.decode()

    pages = {}
    for path in ("/panel", "/panel/runs", "/panel/yaml", "/panel/events", "/panel/logs"):
        small, _ = queries(f"/jobs/01a{path}")
        large, pages[path] = queries(f"/jobs/01b{path}")
        extra = 1 if path == "/panel/events" else 0  # counting the events beyond 200
        assert len(large) == len(small) + extra, (path, large)
        assert len(large) <= 7, (path, large)
        for sql in large:  # nothing read beyond this job, its runs and one log
            if any(f'"armada_{table}"' in sql for table in ("job", "run", "event", "runlog")):
                assert "'01b'" in sql or "'b49'" in sql, sql
            assert "OFFSET" not in sql
    # The panel opens on Details: no event, log or pod spec read, no run rendered.
    assert not any(
        "armada_event" in sql or "armada_runlog" in sql for sql in queries("/jobs/01b/panel")[0]
    )
    assert "Runs 50 · Retries 49" in pages["/panel"]
    assert pages["/panel/runs"].count('class="run"') == 50
    assert "log of run 49" in pages["/panel/logs"] and "log of run 48" not in pages["/panel/logs"]
    assert "The last 200 of 5000 events" in pages["/panel/events"]
    assert pages["/panel/events"].count("<li><time") == 200


def test_all_events_come_as_the_events_part(client, admin_user, queue):
    make_job("01e")
    Event.objects.bulk_create(
        Event(created=at(i), queue="demo", job_set="set-1", job_id="01e", type="running")
        for i in range(205)
    )
    client.force_login(admin_user)
    html = part(client, "01e", "events")
    assert "The last 200 of 205 events" in html
    assert 'hx-get="/jobs/01e/panel/events?events=all"' in html
    assert 'href="/jobs/01e?events=all#events"' in html
    every = part(client, "01e", "events", events="all").strip()
    assert every.startswith('<div id="job-events-list">')
    assert every.count("<li><time") == 205 and "The last" not in every
    assert "<html" not in every


def test_a_log_is_text_never_markup(client, admin_user, queue):
    make_job("01x", state="running")
    make_run("r-x", "01x")
    RunLog.objects.create(
        run_id="r-x", text='<script>alert("x")</script>\n<b>bold</b>', updated_at=at(5)
    )
    client.force_login(admin_user)
    for html in (part(client, "01x", "logs"), client.get("/jobs/01x").content.decode()):
        assert "<script>alert" not in html and "<b>bold</b>" not in html
        assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html
    response = client.get("/runs/r-x/log")
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response.content.decode().startswith("<script>")  # as written, served as text


def test_htmx_actions_answer_with_the_panel_and_the_result(client, owner, outsider, queue):
    make_job("01c", state="queued")
    client.force_login(owner)
    response = client.post("/jobs/01c/cancel", {"reason": "no"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    html = response.content.decode()
    assert "Cancelling job 01c." in html and 'role="tablist"' in html
    assert 'class="state state-cancelled"' in html and "Cancel job" not in html
    assert Job.objects.get(id="01c").state == "cancelled"
    # An error the service names is shown in the panel too, and nothing changes.
    make_job("01d", state="queued")
    response = client.post("/jobs/01d/reprioritize", {"priority": "-1"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert "priority: must be a whole number" in response.content.decode()
    assert Job.objects.get(id="01d").priority == 0
    # A refusal is a 403 with the reason, in the panel's shape.
    client.force_login(outsider)
    response = client.post("/jobs/01d/cancel", HTTP_HX_REQUEST="true")
    assert response.status_code == 403
    assert "may not cancel" in text(response)
    assert "<html" not in response.content.decode()
    assert client.post("/jobs/nope/cancel", HTTP_HX_REQUEST="true").status_code == 404
    assert Job.objects.get(id="01d").state == "queued"


def test_odd_stored_values_do_not_break_the_panel(client, admin_user, queue):
    """Rows written by older versions or by hand: quantities as text, a limit that is not a
    number, a memory kind without any bump recorded."""
    make_job(
        "01o",
        state="failed",
        requests={"cpu": "2", "memory": "not a quantity", "nvidia.com/gpu": 1000},
        mutations={"memoryKind": "factor"},
    )
    make_run("r-o", "01o", state="failed", requests={}, decision={"retryLimit": "five"})
    client.force_login(admin_user)
    html = panel(client, "01o")
    assert "Runs 1 · Retries 0<" in html
    assert re.search(r"cpu</span> 2<", html) and re.search(r"nvidia.com/gpu</span> 1<", html)
    assert "Memory grown by retries" not in html
    for tab in ("runs", "yaml", "events", "logs"):
        part(client, "01o", tab)
