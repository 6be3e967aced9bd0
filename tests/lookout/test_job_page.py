"""The job's full page: details, pod spec, runs with their decision trail, the event
timeline, the log, and the actions (cancel, reprioritize, preempt) shown only to those
allowed and refused with 403 to the others. It is built from the same parts as the side
panel (tests/lookout/test_panel.py)."""

from __future__ import annotations

import pytest

from armada.core.states import EventType
from armada.models import Event, Job, Queue, Run, RunLog
from armada.services.submit import job_submit
from tests.conftest import T0, at, job_file
from tests.lookout.builders import make_job, make_run
from tests.lookout.panel_jobs import retried_job

pytestmark = pytest.mark.django_db


@pytest.fixture
def viewer(django_user_model, queue):
    """May watch queue ``demo`` and nothing else."""
    user = django_user_model.objects.create_user("vera", password="vera-password")
    Queue.objects.filter(name="demo").update(
        permissions=[{"subjects": [{"kind": "User", "name": "vera"}], "verbs": ["watch"]}]
    )
    return user


def test_the_page_shows_runs_with_their_decision_trail_and_the_events(
    client, admin_user, queue, owner
):
    [job_id] = job_submit(actor=owner, data=job_file(), now=T0)
    make_run(
        "r1",
        job_id,
        state="failed",
        node="node-7",
        executor="cluster-x",
        exit_code=137,
        reason="OOMKilled",
        message="out of memory",
        failure_category="oom",
        failure_subcategory="memory",
        hint="ask for more memory",
        retryable=True,
        finished_at=at(9),
        decision={
            "decision": "retry",
            "policy": "ml",
            "policyVersion": 3,
            "ruleIndex": 1,
            "retriesUsed": 1,
            "retryLimit": 4,
            "mutation": {
                "memory": {"kind": "factor", "before": 1073741824000, "after": 2147483648000},
                "avoidNodes": ["node-7"],
            },
            "reason": "rule 2 matched",
        },
    )
    client.force_login(admin_user)
    html = client.get(f"/jobs/{job_id}").content.decode()
    for text in (
        "node-7",
        "cluster-x",
        "137",
        "OOMKilled",
        "out of memory",
        "oom",
        "memory",
        "ask for more memory",
        "retry",
        "ml (version 3)",
        "rule 2",
        "1 of 4 used",
        "1Gi → 2Gi",
        "Nodes avoided",
        'href="/policies/ml/"',
        "Retryable",
    ):
        assert text in html, text
    # The pod spec as YAML and the timeline (the submitted and queued events, in order).
    assert "containers:" in html and "image: busybox:latest" in html
    assert html.index("<strong>submitted</strong>") < html.index("<strong>queued</strong>")


def test_an_undecided_run_says_so(client, admin_user, queue):
    make_job("01u", state="running")
    make_run("r-u", "01u")
    client.force_login(admin_user)
    html = client.get("/jobs/01u").content.decode()
    assert "not decided" in html and "Decision trail" not in html


def test_owner_sees_every_action_and_cancels_a_queued_job(client, owner, queue):
    [job_id] = job_submit(actor=owner, data=job_file(), now=T0)
    client.force_login(owner)
    html = client.get(f"/jobs/{job_id}").content.decode()
    assert "Cancel job" in html and "Reprioritize" in html
    assert "Preempt job" not in html  # nothing is running
    assert "csrfmiddlewaretoken" in html
    response = client.post(f"/jobs/{job_id}/cancel", {"reason": "not needed"}, follow=True)
    assert Job.objects.get(id=job_id).state == "cancelled"
    assert "Cancelling job" in response.content.decode()
    assert Job.objects.get(id=job_id).terminal_message == "not needed"


def test_reprioritize_through_the_service_and_errors_are_shown(client, owner, queue):
    [job_id] = job_submit(actor=owner, data=job_file(), now=T0)
    client.force_login(owner)
    client.post(f"/jobs/{job_id}/reprioritize", {"priority": "7"})
    assert Job.objects.get(id=job_id).priority == 7
    response = client.post(f"/jobs/{job_id}/reprioritize", {"priority": "-3"}, follow=True)
    assert "priority: must be a whole number" in response.content.decode()
    assert Job.objects.get(id=job_id).priority == 7
    response = client.post(f"/jobs/{job_id}/reprioritize", {"priority": "soon"}, follow=True)
    assert "must be a whole number" in response.content.decode()


def test_preempt_a_running_job_and_a_finished_job_cannot_be_cancelled(client, owner, queue):
    make_job("01r", state="running")
    make_run("r-run", "01r", state="running")
    client.force_login(owner)
    assert "Preempt job" in client.get("/jobs/01r").content.decode()
    client.post("/jobs/01r/preempt", {"reason": "make room"})
    run = Run.objects.get(id="r-run")
    assert run.stop_kind == "preempt" and run.stop_reason == "make room"
    make_job("01s", state="succeeded")
    assert "Cancel job" not in client.get("/jobs/01s").content.decode()
    response = client.post("/jobs/01s/cancel", follow=True)
    assert response.status_code == 200
    assert "no unfinished job 01s" in response.content.decode()


def test_a_viewer_without_the_verbs_sees_no_buttons_and_gets_403(client, viewer, owner, queue):
    [job_id] = job_submit(actor=owner, data=job_file(), now=T0)
    client.force_login(viewer)
    html = client.get(f"/jobs/{job_id}").content.decode()
    assert "Cancel job" not in html and "Reprioritize" not in html and "Preempt" not in html
    for action, data in (("cancel", {}), ("reprioritize", {"priority": "1"}), ("preempt", {})):
        response = client.post(f"/jobs/{job_id}/{action}", data)
        assert response.status_code == 403, action
        assert f"may not {action}" in response.content.decode()
    job = Job.objects.get(id=job_id)
    assert job.state == "queued" and job.priority == 0


def test_outsiders_get_403_and_actions_need_post(client, outsider, owner, queue):
    [job_id] = job_submit(actor=owner, data=job_file(), now=T0)
    client.force_login(outsider)
    assert client.get(f"/jobs/{job_id}").status_code == 403
    assert client.post(f"/jobs/{job_id}/cancel").status_code == 403
    assert Job.objects.get(id=job_id).state == "queued"
    client.force_login(owner)
    assert client.get(f"/jobs/{job_id}/cancel").status_code == 405
    assert client.post("/jobs/nope/cancel").status_code == 404


def test_actions_need_a_csrf_token(owner, queue):
    from django.test import Client

    [job_id] = job_submit(actor=owner, data=job_file(), now=T0)
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(owner)
    assert strict.post(f"/jobs/{job_id}/cancel").status_code == 403
    assert Job.objects.get(id=job_id).state == "queued"


def test_the_page_has_every_part_as_a_section_and_works_without_script(client, admin_user, queue):
    make_job("01w", state="running")
    make_run("r-w", "01w", state="running")
    RunLog.objects.create(run_id="r-w", text="step 3 of 9\n", updated_at=at(4))
    client.force_login(admin_user)
    html = client.get("/jobs/01w").content.decode()
    for section in ("details", "runs", "logs", "events", "yaml"):
        assert f'<section id="{section}"' in html, section
        assert f'href="#{section}"' in html, section
    assert "step 3 of 9" in html and 'href="/runs/r-w/log.txt"' in html
    # The run picker is a plain form to this page; the tabs are the panel's, not the page's.
    assert '<form class="log-pick" method="get" action="/jobs/01w#logs">' in html
    assert 'role="tablist"' not in html and "Open full page" not in html
    assert "lookout/panel.css" in html and "lookout/job_parts.js" in html


def test_runs_and_retries_read_as_the_decision_trail_counts_them(client, admin_user, queue):
    """4 runs, 3 of them retried, under a limit of 5: not "Runs / retries used 4 / 4"."""
    retried_job("01rr")
    client.force_login(admin_user)
    html = client.get("/jobs/01rr").content.decode()
    assert "Runs 4 · Retries 3 of 5" in html
    assert "4 / 4" not in html and "runs / retries used" not in html.lower()


def test_memory_grown_by_retries_is_the_amount_not_the_kind(client, admin_user, queue):
    retried_job("01mm")
    client.force_login(admin_user)
    html = client.get("/jobs/01mm").content.decode()
    assert '<dd class="memory-growth">256Mi → 864Mi (×3.375)</dd>' in html


def test_the_page_shows_the_latest_events_and_links_to_all(client, admin_user, queue, monkeypatch):
    make_job("01e1", state="running")
    Event.objects.bulk_create(
        Event(
            created=at(i),
            queue="demo",
            job_set="set-1",
            job_id="01e1",
            type=EventType.RUNNING if i % 2 else EventType.PENDING,
            payload={"node": f"node-{i}"},
        )
        for i in range(7)
    )
    monkeypatch.setattr("lookout.panel_parts.EVENTS_SHOWN", 3)
    client.force_login(admin_user)
    response = client.get("/jobs/01e1")
    shown = [item["event"].payload["node"] for item in response.context["events"]]
    assert shown == ["node-4", "node-5", "node-6"]  # the latest three, in order
    html = response.content.decode()
    assert "The last 3 of 7 events" in html and "?events=all" in html
    every = client.get("/jobs/01e1", {"events": "all"})
    assert [item["event"].payload["node"] for item in every.context["events"]] == [
        f"node-{i}" for i in range(7)
    ]
    assert "The last" not in every.content.decode()


def test_run_times_and_the_timeline_are_shown_in_the_time_zone_and_escaped(
    client, admin_user, queue, owner, settings
):
    """The runs' times and the events are written in Python, not by template filters: each
    time as a <time> with its ISO value, in the current time zone; every value escaped."""
    settings.TIME_ZONE = "Europe/Berlin"  # UTC+1 in January
    [job_id] = job_submit(actor=owner, data=job_file(), now=T0)
    make_run("r1", job_id, state="failed", running_at=at(5), finished_at=at(9))
    Event.objects.filter(job_id=job_id, type=EventType.SUBMITTED).update(
        payload={"reason": "<script>alert(1)</script>"}
    )
    client.force_login(admin_user)
    html = client.get(f"/jobs/{job_id}").content.decode()
    for label, seconds in (("Leased", 1), ("Started", 5), ("Finished", 9)):
        assert (
            f'<dt>{label}</dt><dd><time datetime="2026-01-01T13:00:0{seconds}+01:00">'
            f"2026-01-01 13:00:0{seconds}</time></dd>"
        ) in html, label
    assert "<dt>Pending</dt>" not in html
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert '<span class="k">reason</span>' in html
    submitted = html.index("<strong>submitted</strong>")
    assert html.rindex('<li><time datetime="2026-01-01T13:00:00+01:00">', 0, submitted) > 0
