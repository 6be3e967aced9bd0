"""services.job_bulk: cancel, reprioritize and preempt a selection of jobs across queues and job
sets, each (queue, job set) in its own transaction through the one-job-set services."""

from __future__ import annotations

from collections import Counter

import pytest
from django.contrib.auth.models import Permission
from django.db import DatabaseError

from armada.models import Event, Job, Run
from armada.services import job_bulk
from armada.services.errors import Conflict, ValidationFailed
from armada.services.job_bulk import MAX_IDS, actions_allowed, jobs_act, jobs_check
from armada.services.queues import queue_create
from armada.services.stopping import jobs_cancel as real_jobs_cancel
from tests.conftest import T0, at
from tests.lookout.builders import make_job, make_run

pytestmark = pytest.mark.django_db

WATCH_ONLY = [{"subjects": [{"kind": "User", "name": "olive"}], "verbs": ["watch"]}]

# Every selected id below and where it ends for each action (olive owns "demo", may only
# watch "shared", may not even watch "hidden").
SELECTION = ["a-q1", "a-q2", "a-r1", "a-done", "b-q1", "b-r1", "c-q1", "c-r1", "d-q1", "nope"]
REFUSED = {"shared": ("c-q1", "c-r1")}
NOT_FOUND = ["d-q1", "nope"]  # a job olive may not watch reads like one that does not exist
EXPECTED = {
    "cancel": {
        "done": ["a-q1", "a-q2", "a-r1", "b-q1"],
        "finished": ["a-done"],
        "stopping": ["b-r1"],
        "not_running": [],
    },
    "reprioritize": {
        "done": ["a-q1", "a-q2", "a-r1", "b-q1", "b-r1"],
        "finished": ["a-done"],
        "stopping": [],
        "not_running": [],
    },
    "preempt": {
        "done": ["a-r1"],
        "finished": ["a-done"],
        "stopping": ["b-r1"],
        "not_running": ["a-q1", "a-q2", "b-q1"],
    },
}
# The events each action writes per job acted on.
EVENTS = {
    "cancel": {
        "a-q1": ["cancelling", "cancelled"],
        "a-q2": ["cancelling", "cancelled"],
        "b-q1": ["cancelling", "cancelled"],
        "a-r1": ["cancelling"],
    },
    "reprioritize": {
        j: ["reprioritizing", "reprioritized"] for j in ["a-q1", "a-q2", "a-r1", "b-q1", "b-r1"]
    },
    "preempt": {"a-r1": ["preempting"]},
}


@pytest.fixture
def world(admin_user, owner, django_user_model):
    """Queues demo (olive owns it), shared (olive may watch) and hidden; jobs in each."""
    django_user_model.objects.create_user("sam", password="sam-password")
    queue_create(actor=admin_user, data={"name": "demo", "owners": ["olive"]}, now=T0)
    queue_create(
        actor=admin_user,
        data={"name": "shared", "owners": ["sam"], "permissions": WATCH_ONLY},
        now=T0,
    )
    queue_create(actor=admin_user, data={"name": "hidden", "owners": ["sam"]}, now=T0)
    for job_id in ("a-q1", "a-q2"):
        make_job(job_id, job_set="set-a")
    make_job("a-r1", job_set="set-a", state="running")
    make_run("run-a-r1", "a-r1")
    make_job("a-done", job_set="set-a", state="succeeded")
    make_job("b-q1", job_set="set-b")
    make_job("b-r1", job_set="set-b", state="running")
    make_run("run-b-r1", "b-r1", stop_requested_at=at(2), stop_kind="cancel", stop_reason="x")
    make_job("c-q1", "shared", job_set="set-c")
    make_job("c-r1", "shared", job_set="set-c", state="running")
    make_run("run-c-r1", "c-r1")
    make_job("d-q1", "hidden", job_set="set-d")


def events_by_job() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for job_id, kind in Event.objects.order_by("id").values_list("job_id", "type"):
        out.setdefault(job_id, []).append(kind)
    return out


def outcome(result) -> dict:
    return {
        "done": result.done,
        "finished": result.finished,
        "stopping": result.stopping,
        "not_running": result.not_running,
    }


def state(job_id: str) -> tuple[str, int]:
    job = Job.objects.get(id=job_id)
    return job.state, job.priority


@pytest.mark.parametrize("action", ["cancel", "reprioritize", "preempt"])
def test_each_action_over_mixed_queues_checks_then_acts_and_reports_every_id(world, owner, action):
    before = {j: state(j) for j in SELECTION if j != "nope"}
    check = jobs_check(actor=owner, action=action, job_ids=SELECTION)
    # The check changes nothing and predicts the action exactly.
    assert {j: state(j) for j in before} == before
    assert Event.objects.count() == 0
    assert check.checked_only and check.selected == len(SELECTION)

    result = jobs_act(
        actor=owner, action=action, job_ids=SELECTION, reason="tidy up", priority=7, now=at(10)
    )
    assert outcome(result) == outcome(check) == EXPECTED[action]
    for answer in (check, result):
        assert {r.queue: r.job_ids for r in answer.refused} == REFUSED
        assert [(r.permission, r.global_permission) for r in answer.refused] == [
            (action, f"{action}_any_jobs")
        ]
        assert answer.not_found == NOT_FOUND
        assert answer.failed == []
    # Every selected id is answered exactly once.
    placed = [*result.done, *result.finished, *result.stopping, *result.not_running]
    placed += [*result.refused_ids, *result.not_found]
    assert Counter(placed) == Counter(SELECTION)
    # Events: exactly those of the jobs acted on, once each; refused and hidden jobs untouched.
    assert events_by_job() == EVENTS[action]
    assert {j: state(j) for j in ("a-done", "c-q1", "c-r1", "d-q1")} == {
        j: before[j] for j in ("a-done", "c-q1", "c-r1", "d-q1")
    }


def test_what_each_action_changed(world, owner):
    jobs_act(actor=owner, action="cancel", job_ids=["a-q1", "a-r1"], reason="bye", now=at(10))
    assert Job.objects.get(id="a-q1").state == "cancelled"
    assert Job.objects.get(id="a-q1").terminal_message == "bye"
    run = Run.objects.get(id="run-a-r1")
    assert (run.stop_kind, run.stop_reason) == ("cancel", "bye")

    jobs_act(actor=owner, action="reprioritize", job_ids=["a-q2", "b-r1"], priority=9, now=at(11))
    assert state("a-q2") == ("queued", 9) and state("b-r1") == ("running", 9)
    payload = Event.objects.filter(job_id="a-q2", type="reprioritized").get().payload
    assert payload["newPriority"] == 9 and payload["requestor"] == "olive"


def test_preempt_marks_the_run_with_the_default_reason_and_the_requestor(world, owner):
    make_job("a-r2", job_set="set-a", state="pending")
    make_run("run-a-r2", "a-r2", state="pending")
    result = jobs_act(actor=owner, action="preempt", job_ids=["a-r2", "a-r1"], now=at(10))
    assert result.done == ["a-r1", "a-r2"]
    for run_id in ("run-a-r1", "run-a-r2"):
        run = Run.objects.get(id=run_id)
        assert (run.stop_kind, run.stop_reason) == ("preempt", "preempted by an operator")
    event = Event.objects.get(job_id="a-r1")
    assert (event.type, event.payload["requestor"]) == ("preempting", "olive")


def test_acting_twice_writes_each_event_once_and_skips_what_is_done(world, owner):
    ids = ["a-q1", "a-r1", "b-q1"]
    first = jobs_act(actor=owner, action="cancel", job_ids=ids, reason="", now=at(10))
    second = jobs_act(actor=owner, action="cancel", job_ids=ids, reason="", now=at(11))
    assert first.done == ids
    assert (second.done, second.finished, second.stopping) == ([], ["a-q1", "b-q1"], ["a-r1"])
    assert events_by_job() == {
        "a-q1": ["cancelling", "cancelled"],
        "a-r1": ["cancelling"],
        "b-q1": ["cancelling", "cancelled"],
    }


def test_groups_are_acted_on_in_queue_job_set_and_id_order(world, admin_user):
    result = jobs_act(
        actor=admin_user,
        action="reprioritize",
        job_ids=["d-q1", "c-q1", "b-q1", "a-q2", "a-q1", "c-r1"],
        priority=3,
        now=at(10),
    )
    # demo/set-a, demo/set-b, hidden/set-d, shared/set-c: the superuser may do it everywhere.
    assert result.done == ["a-q1", "a-q2", "b-q1", "d-q1", "c-q1", "c-r1"]
    assert result.refused == [] and result.not_found == []


@pytest.mark.parametrize(
    "error",
    [Conflict("the job set is busy"), DatabaseError("could not serialize access")],
    ids=["service-refuses", "database-error"],
)
def test_a_failing_group_is_rolled_back_alone_and_reported(world, owner, monkeypatch, error):
    def failing_for_set_b(**kwargs):
        done = real_jobs_cancel(**kwargs)  # writes, then fails: the group must roll back
        if kwargs["job_set"] == "set-b":
            raise error
        return done

    monkeypatch.setattr(job_bulk, "jobs_cancel", failing_for_set_b)
    make_job("b-q2", job_set="set-b")
    result = jobs_act(
        actor=owner, action="cancel", job_ids=["a-q1", "b-q1", "b-q2", "a-q2"], now=at(10)
    )
    assert result.done == ["a-q1", "a-q2"]
    [failed] = result.failed
    assert (failed.queue, failed.job_set, failed.job_ids) == ("demo", "set-b", ("b-q1", "b-q2"))
    assert failed.reason
    assert state("a-q1")[0] == state("a-q2")[0] == "cancelled"
    assert state("b-q1")[0] == state("b-q2")[0] == "queued"
    assert set(events_by_job()) == {"a-q1", "a-q2"}


def test_jobs_of_queues_one_may_not_watch_read_as_not_found(world, outsider):
    result = jobs_act(actor=outsider, action="cancel", job_ids=["a-q1", "d-q1", "nope"], now=at(1))
    check = jobs_check(actor=outsider, action="cancel", job_ids=["a-q1", "d-q1", "nope"])
    for answer in (result, check):
        assert answer.not_found == ["a-q1", "d-q1", "nope"]
        assert answer.refused == [] and answer.done == []
    assert Event.objects.count() == 0


def test_a_global_permission_grants_the_action_on_every_watchable_queue(world, django_user_model):
    user = django_user_model.objects.create_user("gil", password="gil-password")
    user.user_permissions.add(
        Permission.objects.get(codename="cancel_any_jobs"),
        Permission.objects.get(codename="watch_all_events"),
    )
    result = jobs_act(actor=user, action="cancel", job_ids=["c-q1", "d-q1", "a-q1"], now=at(1))
    assert result.done == ["a-q1", "d-q1", "c-q1"]
    refused = jobs_act(actor=user, action="preempt", job_ids=["c-r1"], now=at(2))
    assert [r.queue for r in refused.refused] == ["shared"]


@pytest.mark.parametrize(
    ("kwargs", "field", "message"),
    [
        ({"job_ids": []}, "jobIds", "select at least one job"),
        ({"job_ids": "a-q1"}, "jobIds", "select at least one job"),
        ({"job_ids": ["a-q1", "a q2"]}, "jobIds[1]", "not a job id"),
        ({"job_ids": ["a-q1", "x" * 27]}, "jobIds[1]", "not a job id"),
        ({"job_ids": ["a-q1", 5]}, "jobIds[1]", "not a job id"),
        ({"job_ids": [f"j{i}" for i in range(MAX_IDS + 1)]}, "jobIds", "at most 1000"),
        ({"action": "delete"}, "action", "one of cancel, reprioritize, preempt"),
        ({"action": "reprioritize", "priority": None}, "priority", "whole number"),
        ({"action": "reprioritize", "priority": -1}, "priority", "whole number"),
        ({"action": "reprioritize", "priority": 2**32}, "priority", "whole number"),
        ({"action": "reprioritize", "priority": True}, "priority", "whole number"),
        ({"reason": "x" * 256}, "reason", "at most 255"),
        ({"reason": 5}, "reason", "at most 255"),
    ],
)
def test_bad_input_names_the_field_and_changes_nothing(world, owner, kwargs, field, message):
    call = {"actor": owner, "action": "cancel", "job_ids": ["a-q1"], "now": at(1), **kwargs}
    with pytest.raises(ValidationFailed) as caught:
        jobs_act(**call)
    assert caught.value.errors[0].field == field
    assert message in caught.value.errors[0].message
    assert Event.objects.count() == 0 and state("a-q1") == ("queued", 0)


def test_the_limit_counts_distinct_ids(world, owner):
    many = ["a-q1"] * 5 + [f"j{i}" for i in range(MAX_IDS - 1)]
    result = jobs_act(actor=owner, action="cancel", job_ids=many, now=at(1))
    assert result.selected == MAX_IDS
    assert result.done == ["a-q1"] and len(result.not_found) == MAX_IDS - 1


def test_actions_allowed_are_those_held_on_some_watchable_queue(
    world, owner, outsider, admin_user, django_user_model
):
    assert actions_allowed(owner) == {"cancel", "reprioritize", "preempt"}
    assert actions_allowed(admin_user) == {"cancel", "reprioritize", "preempt"}
    assert actions_allowed(outsider) == set()
    sam_watcher = django_user_model.objects.create_user("wes", password="wes-password")
    queue_create(
        actor=admin_user,
        data={
            "name": "granted",
            "owners": ["sam"],
            "permissions": [
                {"subjects": [{"kind": "User", "name": "wes"}], "verbs": ["watch", "preempt"]},
                {"subjects": [{"kind": "User", "name": "otto"}], "verbs": ["cancel"]},
            ],
        },
        now=T0,
    )
    assert actions_allowed(sam_watcher) == {"preempt"}
    assert actions_allowed(outsider) == set()  # may cancel there, but may not watch it
