"""The grid's bulk actions over HTTP: POST /jobs/bulk/<action> (a fragment for the grid's script,
a redirect with a message for a plain form) and its check; every bad input is a 400 naming the
field with nothing changed, refusals are 403 with the reason, and the toolbar offers only the
actions the viewer may do somewhere."""

from __future__ import annotations

import re

import pytest
from django.template.loader import render_to_string
from django.test import Client, RequestFactory
from django.urls import resolve, reverse

from armada.models import Event, Job, Queue
from armada.services import job_bulk
from armada.services.errors import Conflict
from lookout import bulk_views
from tests.lookout.builders import make_job, make_run

pytestmark = pytest.mark.django_db
HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def jobs(queue):
    """In queue demo (olive owns it): two queued jobs, one running, one finished."""
    make_job("j-q1")
    make_job("j-q2", job_set="set-2")
    make_job("j-run", state="running")
    make_run("run-1", "j-run")
    make_job("j-done", state="succeeded")


@pytest.fixture
def as_owner(client, owner):
    client.force_login(owner)
    return client


@pytest.fixture
def watcher(django_user_model, queue):
    """May watch queue demo, nothing more."""
    user = django_user_model.objects.create_user("vera", password="vera-password")
    Queue.objects.filter(name="demo").update(
        permissions=[{"subjects": [{"kind": "User", "name": "vera"}], "verbs": ["watch"]}]
    )
    return user


def states() -> dict[str, tuple[str, int]]:
    return {j.id: (j.state, j.priority) for j in Job.objects.all()}


def url(action: str, check: bool = False) -> str:
    return reverse("lookout:jobs-bulk-check" if check else "lookout:jobs-bulk", args=[action])


def test_the_bulk_route_is_not_taken_for_a_job_called_bulk():
    for action in ("cancel", "reprioritize", "preempt"):
        assert resolve(url(action)).func is bulk_views.jobs_bulk
        assert resolve(url(action, check=True)).func is bulk_views.jobs_bulk_check


def test_cancel_from_the_script_answers_a_status_fragment(as_owner, jobs):
    response = as_owner.post(
        url("cancel"), {"ids": "j-q1,j-run, j-done", "reason": "wrong input"}, **HX
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert 'role="status"' in html and 'data-applies="2"' in html
    assert "Cancelling 2 jobs." in html and "Skipped 1 already finished." in html
    assert "<html" not in html
    assert Job.objects.get(id="j-q1").state == "cancelled"
    assert Job.objects.get(id="j-q1").terminal_message == "wrong input"
    assert Event.objects.filter(job_id="j-run", type="cancelling").count() == 1


def test_ids_may_be_repeated_fields_or_comma_separated(as_owner, jobs):
    response = as_owner.post(
        url("reprioritize"), {"ids": ["j-q1", "j-q2,j-run"], "priority": "4"}, **HX
    )
    assert response.status_code == 200
    assert "Priority of 3 jobs set to 4." in response.content.decode()
    assert {k: v[1] for k, v in states().items()} == {
        "j-q1": 4,
        "j-q2": 4,
        "j-run": 4,
        "j-done": 0,
    }


def test_preempt_acts_on_running_jobs_and_says_why_others_were_skipped(as_owner, jobs):
    response = as_owner.post(url("preempt"), {"ids": "j-run,j-q1"}, **HX)
    html = response.content.decode()
    assert response.status_code == 200
    assert "Preempting 1 job." in html and "Skipped 1 not running: nothing to preempt." in html
    assert Event.objects.get(job_id="j-run").type == "preempting"


def test_a_plain_form_post_redirects_back_to_the_grid_with_a_message(as_owner, jobs):
    response = as_owner.post(url("cancel"), {"ids": "j-q1", "next": "/?state=queued"})
    assert response.status_code == 302 and response.url == "/?state=queued"
    page = as_owner.get(response.url)
    messages = [str(m) for m in page.context["messages"]]
    assert messages == ["Cancelling 1 job."]
    assert Job.objects.get(id="j-q1").state == "cancelled"


@pytest.mark.parametrize("target", ["https://elsewhere.example/", "//elsewhere.example/", ""])
def test_a_redirect_never_leaves_the_site(as_owner, jobs, target):
    response = as_owner.post(url("cancel"), {"ids": "j-q1", "next": target})
    assert response.status_code == 302 and response.url == reverse("lookout:jobs")


BAD_INPUTS = [
    ("cancel", {}, "ids", "select at least one job"),
    ("cancel", {"ids": ""}, "ids", "select at least one job"),
    ("cancel", {"ids": " , ,"}, "ids", "select at least one job"),
    ("cancel", {"ids": "j-q1,not an id"}, "ids[1]", "is not a job id"),
    ("cancel", {"ids": "j-q1,<b>x</b>"}, "ids[1]", "is not a job id"),
    ("cancel", {"ids": "j-q1," + "x" * 27}, "ids[1]", "is not a job id"),
    ("cancel", {"ids": ",".join(f"j{i}" for i in range(1001))}, "ids", "at most 1000"),
    ("cancel", {"ids": "j" * 40_001}, "ids", "at most 1000"),
    ("cancel", {"ids": "j-q1", "reason": "x" * 256}, "reason", "at most 255"),
    ("reprioritize", {"ids": "j-q1"}, "priority", "give the new priority"),
    ("reprioritize", {"ids": "j-q1", "priority": "high"}, "priority", "whole number"),
    ("reprioritize", {"ids": "j-q1", "priority": "-1"}, "priority", "whole number"),
    ("reprioritize", {"ids": "j-q1", "priority": "1.5"}, "priority", "whole number"),
    ("reprioritize", {"ids": "j-q1", "priority": "²"}, "priority", "whole number"),
    ("reprioritize", {"ids": "j-q1", "priority": str(2**32)}, "priority", "whole number"),
    ("reprioritize", {"ids": "j-q1", "priority": "9" * 30}, "priority", "whole number"),
]


@pytest.mark.parametrize("script", [True, False], ids=["fragment", "page"])
@pytest.mark.parametrize(("action", "data", "field", "message"), BAD_INPUTS)
def test_bad_input_is_a_400_naming_the_field_with_nothing_changed(
    as_owner, jobs, action, data, field, message, script
):
    before = states()
    response = as_owner.post(url(action), data, **(HX if script else {}))
    assert response.status_code == 400
    html = response.content.decode()
    assert f"{field}: " in html and message in html and "Nothing was changed" in html
    assert ("<html" in html) is not script
    assert states() == before and not Event.objects.exists()


@pytest.mark.parametrize("method", ["get", "post"])
def test_an_unknown_action_is_a_404(as_owner, jobs, method):
    assert as_owner.post(url("delete"), {"ids": "j-q1"}, **HX).status_code == 404
    response = getattr(as_owner, method)(url("delete", check=True), {"ids": "j-q1"})
    assert response.status_code == 404
    assert states()["j-q1"] == ("queued", 0)


def test_the_action_takes_only_post(as_owner, jobs):
    assert as_owner.get(url("cancel"), {"ids": "j-q1"}).status_code == 405
    assert states()["j-q1"] == ("queued", 0)


def test_a_login_is_required(client, jobs):
    response = client.post(url("cancel"), {"ids": "j-q1"})
    assert response.status_code == 302 and response.url.startswith(reverse("lookout:login"))
    assert client.get(url("cancel", check=True), {"ids": "j-q1"}).status_code == 302
    assert states()["j-q1"] == ("queued", 0)


def test_the_csrf_token_is_required(owner, jobs):
    client = Client(enforce_csrf_checks=True)
    client.force_login(owner)
    assert client.post(url("cancel"), {"ids": "j-q1"}, **HX).status_code == 403
    assert states()["j-q1"] == ("queued", 0)
    client.get("/")  # sets the CSRF cookie, as the grid page does
    token = client.cookies["csrftoken"].value
    response = client.post(url("cancel"), {"ids": "j-q1"}, HTTP_X_CSRFTOKEN=token, **HX)
    assert response.status_code == 200
    assert states()["j-q1"][0] == "cancelled"


def test_everything_refused_is_a_403_with_the_reason(client, watcher, jobs):
    client.force_login(watcher)
    response = client.post(url("cancel"), {"ids": "j-q1,j-run"}, **HX)
    assert response.status_code == 403
    html = response.content.decode()
    assert "No job was cancelled." in html
    assert "Refused 2 in queue demo: you may not cancel there" in html
    assert "&#x27;cancel_any_jobs&#x27;" in html
    assert states()["j-q1"] == ("queued", 0) and not Event.objects.exists()
    page = client.post(url("cancel"), {"ids": "j-q1"})  # a plain form: back, with the error
    assert page.status_code == 302
    assert "may not cancel" in str(list(client.get(page.url).context["messages"])[0])


def test_jobs_one_may_not_watch_are_not_found_not_refused(client, outsider, jobs):
    client.force_login(outsider)
    response = client.post(url("cancel"), {"ids": "j-q1,nope"}, **HX)
    html = response.content.decode()
    assert response.status_code == 200
    assert "No job was cancelled." in html and "2 not found." in html and "demo" not in html
    assert states()["j-q1"] == ("queued", 0)


def test_a_mixed_outcome_is_200_and_says_both(client, watcher, jobs, admin_user):
    from armada.services.queues import queue_create
    from tests.conftest import T0

    queue_create(actor=admin_user, data={"name": "mine", "owners": ["vera"]}, now=T0)
    make_job("m-1", "mine")
    client.force_login(watcher)
    response = client.post(url("cancel"), {"ids": "m-1,j-q1"}, **HX)
    html = response.content.decode()
    assert response.status_code == 200
    assert "Cancelling 1 job." in html and "Refused 1 in queue demo" in html


def test_a_failed_group_with_nothing_done_is_a_409_saying_so(as_owner, jobs, monkeypatch):
    def refuse(**kwargs):
        raise Conflict("the job set is being changed")

    monkeypatch.setattr(job_bulk, "jobs_cancel", refuse)
    response = as_owner.post(url("cancel"), {"ids": "j-q1"}, **HX)
    assert response.status_code == 409
    html = response.content.decode()
    assert "Failed for 1 job of queue demo, job set set-1" in html
    assert "the job set is being changed" in html


@pytest.mark.parametrize("method", ["get", "post"])
def test_the_check_says_what_the_action_would_do_and_changes_nothing(
    client, watcher, jobs, admin_user, method
):
    from armada.services.queues import queue_create
    from tests.conftest import T0

    queue_create(actor=admin_user, data={"name": "mine", "owners": ["vera"]}, now=T0)
    make_job("m-1", "mine")
    make_job("m-2", "mine", job_set="other")
    make_job("m-done", "mine", state="failed")
    client.force_login(watcher)
    ids = "m-1,m-2,m-done,j-q1,j-run,nope"
    response = getattr(client, method)(url("cancel", check=True), {"ids": ids})
    assert response.status_code == 200
    html = response.content.decode()
    assert 'data-applies="2"' in html and 'data-selected="6"' in html
    assert "Cancel 2 of the 6 jobs selected?" in html
    assert "1 is already finished." in html
    assert "2 are in queue demo where you may not cancel" in html
    assert "1 is not found." in html
    assert not Event.objects.exists() and Job.objects.get(id="m-1").state == "queued"


def test_the_check_of_a_selection_it_fully_applies_to_and_of_none(as_owner, jobs):
    html = as_owner.get(url("preempt", check=True), {"ids": "j-run"}).content.decode()
    assert "Preempt 1 job?" in html
    html = as_owner.get(url("preempt", check=True), {"ids": "j-q1,j-done"}).content.decode()
    assert 'data-applies="0"' in html
    assert "None of the 2 jobs selected can be preempted." in html
    assert "1 is not running: nothing to preempt." in html


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({}, "ids"),
        ({"ids": "a b"}, "ids[0]"),
        ({"ids": ",".join(f"j{i}" for i in range(1001))}, "ids"),
    ],
)
def test_the_check_refuses_bad_ids_naming_the_field(as_owner, jobs, data, field):
    response = as_owner.get(url("cancel", check=True), data, **HX)
    assert response.status_code == 400
    assert f"{field}: " in response.content.decode()


def _toolbar(user) -> str:
    request = RequestFactory().get("/")
    request.user = user
    return render_to_string("lookout/grid/_actions.html", request=request)


def test_the_toolbar_offers_only_the_actions_allowed_somewhere(
    owner, watcher, outsider, admin_user, jobs
):
    full = _toolbar(owner)
    for action in ("cancel", "reprioritize", "preempt", "copy"):
        assert f'data-bulk="{action}"' in full
    assert f'data-url="{url("cancel")}"' in full
    assert f'data-check-url="{url("preempt", check=True)}"' in full
    assert "csrfmiddlewaretoken" in full and "<dialog" in full
    for user in (watcher, outsider):
        html = _toolbar(user)
        assert 'data-bulk="copy"' in html
        assert not any(f'data-bulk="{a}"' in html for a in ("cancel", "reprioritize", "preempt"))
    Queue.objects.filter(name="demo").update(
        permissions=[
            {"subjects": [{"kind": "User", "name": "vera"}], "verbs": ["watch", "reprioritize"]}
        ]
    )
    watcher = type(watcher).objects.get(pk=watcher.pk)
    html = _toolbar(watcher)
    assert 'data-bulk="reprioritize"' in html and 'data-bulk="cancel"' not in html


def test_the_toolbar_has_no_inline_script_or_style(owner, jobs):
    html = _toolbar(owner)
    assert "<script" not in html and "style=" not in html
    assert not re.search(r"\s(on[a-z]+|hx-on[^=]*)=", html)
