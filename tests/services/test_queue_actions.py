"""services.queue_actions: picking queues by name or label selector (with inverse), cancel,
preempt, cordon and uncordon across them, all or nothing with the permission checked on every
queue first, and dry runs that change nothing (the PostgreSQL race is in
``test_queue_actions_race``)."""

from __future__ import annotations

import pytest

from armada.core.config import parse_config
from armada.core.labels import parse_selector
from armada.models import Event, Job, Queue, Run
from armada.services.errors import NotFound, PermissionDenied, ValidationFailed
from armada.services.queue_actions import (
    CANCEL,
    CORDON,
    PREEMPT_ACTION,
    QueueSelection,
    parse_action_body,
    queues_cancel,
    queues_filter,
    queues_preempt,
    queues_set_cordoned,
)
from armada.services.queues import queue_create
from armada.services.scheduler import scheduler_cycle
from armada.services.submit import job_submit
from tests.conftest import T0, at, job, job_file
from tests.executor_api import api_agent

pytestmark = pytest.mark.django_db
LONG = {"fake.armadaproject.io/duration": "1h"}


def names(*queues: str) -> QueueSelection:
    return QueueSelection(names=queues)


def labelled(text: str, inverse: bool = False) -> QueueSelection:
    return QueueSelection(selector=parse_selector(text), inverse=inverse)


@pytest.fixture
def queues(admin_user, owner):
    """Queues ``ml-a`` and ``ml-b`` (team=ml, owned by ``owner``), ``web`` (team=web, owned by
    ``owner``) and ``ops`` (no labels, owned by the admin only)."""
    for name, labels, owners in [
        ("ml-a", {"team": "ml", "gpu": ""}, ["olive"]),
        ("ml-b", {"team": "ml"}, ["olive"]),
        ("web", {"team": "web"}, ["olive"]),
        ("ops", {}, ["root"]),
    ]:
        queue_create(
            actor=admin_user, data={"name": name, "labels": labels, "owners": owners}, now=T0
        )
    return ["ml-a", "ml-b", "ops", "web"]


def submit(user, queue: str, count: int = 1, **job_fields) -> list[str]:
    return job_submit(
        actor=user,
        data=job_file(queue=queue, jobs=[job(**job_fields) for _ in range(count)]),
        now=T0,
    )


def state_of(ids: list[str]) -> list[str]:
    return [Job.objects.get(id=i).state for i in ids]


def event_types(job_id: str) -> list[str]:
    return list(Event.objects.filter(job_id=job_id).order_by("id").values_list("type", flat=True))


# --- picking queues ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("selection", "picked"),
    [
        (names("web", "ml-a"), ["ml-a", "web"]),
        (QueueSelection(names=("web",), inverse=True), ["ml-a", "ml-b", "ops"]),
        (labelled("team=ml"), ["ml-a", "ml-b"]),
        (labelled("team=ml,gpu"), ["ml-a"]),
        (labelled("team"), ["ml-a", "ml-b", "web"]),
        (labelled("!team"), ["ops"]),
        (labelled("team!=ml"), ["ops", "web"]),
        (labelled("team=ml", inverse=True), ["ops", "web"]),
        (labelled("team=nobody"), []),
    ],
    ids=[
        "names",
        "names-inverse",
        "equal",
        "two-terms",
        "exists",
        "absent",
        "not-equal",
        "inverse",
        "none",
    ],
)
def test_the_queues_picked(admin_user, queues, selection, picked):
    result = queues_set_cordoned(
        actor=admin_user, selection=selection, cordoned=True, dry_run=True, now=T0
    )
    assert [q.name for q in result] == picked


def test_an_unknown_name_is_not_found_even_with_inverse_and_nothing_changes(admin_user, queues):
    for inverse in (False, True):
        with pytest.raises(NotFound, match="'nope'"):
            queues_set_cordoned(
                actor=admin_user,
                selection=QueueSelection(names=("web", "nope"), inverse=inverse),
                cordoned=True,
                now=T0,
            )
    assert not Queue.objects.filter(cordoned=True).exists()


def test_listing_with_a_selector_only_cordoned_and_inverse(admin_user, queues):
    queues_set_cordoned(actor=admin_user, selection=names("ml-b", "ops"), cordoned=True, now=T0)
    listed = lambda **kw: [q.name for q in queues_filter(**kw)]  # noqa: E731
    assert listed() == queues
    assert listed(selector=parse_selector("team=ml")) == ["ml-a", "ml-b"]
    assert listed(only_cordoned=True) == ["ml-b", "ops"]
    assert listed(selector=parse_selector("team=ml"), only_cordoned=True) == ["ml-b"]
    # As Armada's armadactl: inverse turns the whole filter around.
    assert listed(selector=parse_selector("team=ml"), only_cordoned=True, inverse=True) == [
        "ml-a",
        "ops",
        "web",
    ]


# --- cordon -----------------------------------------------------------------------------------


def test_cordon_and_uncordon_across_queues(admin_user, queues):
    result = queues_set_cordoned(
        actor=admin_user, selection=labelled("team=ml"), cordoned=True, now=at(5)
    )
    assert [(q.name, q.cordoned) for q in result] == [("ml-a", True), ("ml-b", True)]
    assert sorted(Queue.objects.filter(cordoned=True).values_list("name", flat=True)) == [
        "ml-a",
        "ml-b",
    ]
    assert Queue.objects.get(name="ml-a").updated_at == at(5)
    queues_set_cordoned(actor=admin_user, selection=labelled("gpu"), cordoned=False, now=at(6))
    assert list(Queue.objects.filter(cordoned=True).values_list("name", flat=True)) == ["ml-b"]


def test_cordon_dry_run_changes_nothing(admin_user, queues):
    result = queues_set_cordoned(
        actor=admin_user, selection=labelled("team"), cordoned=True, dry_run=True, now=T0
    )
    assert [q.cordoned for q in result] == [True, True, True]
    assert not Queue.objects.filter(cordoned=True).exists()


def test_cordon_needs_the_global_permission_and_names_the_queues(owner, queues):
    for dry_run in (True, False):
        with pytest.raises(PermissionDenied, match="'ml-a', 'ml-b'.*cordon_queue"):
            queues_set_cordoned(
                actor=owner, selection=labelled("team=ml"), cordoned=True, dry_run=dry_run, now=T0
            )
    assert not Queue.objects.filter(cordoned=True).exists()


# --- cancel -----------------------------------------------------------------------------------


def test_cancel_across_queues_cancels_every_unfinished_job_by_default(owner, admin_user, queues):
    a, b, web = submit(owner, "ml-a", 2), submit(owner, "ml-b"), submit(owner, "web")
    result = queues_cancel(actor=owner, selection=labelled("team=ml"), reason="draining", now=at(3))
    assert [(p.name, p.job_ids) for p in result] == [("ml-a", sorted(a)), ("ml-b", b)]
    assert state_of(a + b) == ["cancelled"] * 3 and state_of(web) == ["queued"]
    # Each job's events name its own queue.
    for job_id, queue in [(a[0], "ml-a"), (b[0], "ml-b")]:
        assert event_types(job_id) == ["submitted", "queued", "cancelling", "cancelled"]
        cancelled = Event.objects.get(job_id=job_id, type="cancelled")
        assert (cancelled.queue, cancelled.payload.get("reason")) == (queue, "draining")
        assert cancelled.payload.get("requestor") == "olive"


def test_cancel_is_all_or_nothing_when_one_queue_is_denied(owner, admin_user, queues):
    mine, theirs = submit(owner, "web"), submit(admin_user, "ops")
    with pytest.raises(PermissionDenied, match="'ops'") as raised:
        queues_cancel(actor=owner, selection=labelled("!gpu"), now=T0)
    assert "'web'" not in str(raised.value) and "'ml-b'" not in str(raised.value)
    assert state_of(mine + theirs) == ["queued", "queued"]
    assert not Event.objects.filter(type__in=["cancelling", "cancelled"]).exists()


def test_cancel_dry_run_answers_and_changes_nothing(owner, queues):
    a = submit(owner, "ml-a", 2)
    events = Event.objects.count()
    result = queues_cancel(actor=owner, selection=names("ml-a", "web"), dry_run=True, now=T0)
    assert [(p.name, p.job_ids) for p in result] == [("ml-a", sorted(a)), ("web", [])]
    assert state_of(a) == ["queued", "queued"] and Event.objects.count() == events


def test_cancel_dry_run_checks_the_permission_too(member, owner, queues):
    submit(owner, "web")
    with pytest.raises(PermissionDenied):
        queues_cancel(actor=member, selection=names("web"), dry_run=True, now=T0)


@pytest.fixture
def cluster(settings, queues, owner):
    """A fake executor in pool ``default`` with room for two 1-CPU jobs (pools ``default`` and
    ``gpu`` configured); in ``ml-a`` two running jobs (one preemptible) and one queued."""
    settings.ARMADA = parse_config(
        {
            "scheduling": {"pools": [{"name": "default"}, {"name": "gpu"}]},
            "executors": [
                {"id": "x", "nodes": [{"name": "n", "allocatable": {"cpu": "2", "memory": "8Gi"}}]}
            ],
        }
    )
    agent = api_agent(settings.ARMADA.executors[0])
    agent.tick(at(0))
    preemptible = job(annotations=LONG)
    preemptible["podSpec"]["priorityClassName"] = "armada-preemptible"
    ids = job_submit(
        actor=owner,
        data=job_file(queue="ml-a", jobs=[job(annotations=LONG), preemptible, job()]),
        now=at(1),
    )
    scheduler_cycle(now=at(2))
    agent.tick(at(3))
    assert state_of(ids) == ["running", "running", "queued"]
    return ids


def test_cancel_filters_by_state(owner, cluster):
    running, _, queued = cluster
    result = queues_cancel(actor=owner, selection=names("ml-a"), states=["running"], now=at(4))
    assert result[0].job_ids == sorted(cluster[:2])
    assert state_of([queued]) == ["queued"]
    assert Run.objects.get(job_id=running).stop_kind == "cancel"


def test_cancel_filters_by_priority_class(owner, cluster):
    result = queues_cancel(
        actor=owner, selection=names("ml-a"), priority_classes=["armada-preemptible"], now=at(4)
    )
    assert result[0].job_ids == [cluster[1]]


def test_a_pool_filter_matches_jobs_running_there_and_every_queued_job(owner, cluster):
    in_gpu = queues_cancel(
        actor=owner, selection=names("ml-a"), pools=["gpu"], dry_run=True, now=at(4)
    )
    assert in_gpu[0].job_ids == [cluster[2]]  # the queued one only
    in_default = queues_cancel(
        actor=owner, selection=names("ml-a"), pools=["default"], dry_run=True, now=at(4)
    )
    assert in_default[0].job_ids == sorted(cluster)


@pytest.mark.parametrize(
    ("filters", "field"),
    [
        ({"states": ["succeeded"]}, "states[0]"),
        ({"states": []}, "states"),
        ({"states": "queued"}, "states"),
        ({"priority_classes": ["gold"]}, "priorityClasses[0]"),
        ({"priority_classes": [""]}, "priorityClasses"),
        ({"pools": ["default", "moon"]}, "pools[1]"),
        ({"reason": "x" * 256}, "reason"),
    ],
    ids=[
        "terminal-state",
        "no-state",
        "states-not-list",
        "unknown-class",
        "empty-class",
        "unknown-pool",
        "long-reason",
    ],
)
def test_bad_filters_name_the_field_and_change_nothing(owner, cluster, filters, field):
    with pytest.raises(ValidationFailed) as raised:
        queues_cancel(actor=owner, selection=names("ml-a"), now=at(4), **filters)
    assert field in {e.field for e in raised.value.errors}
    assert state_of(cluster) == ["running", "running", "queued"]


# --- preempt ----------------------------------------------------------------------------------


def test_preempt_across_queues_stops_the_running_jobs(owner, cluster):
    result = queues_preempt(
        actor=owner, selection=labelled("team=ml"), reason="maintenance", now=at(4)
    )
    assert [(p.name, p.job_ids) for p in result] == [("ml-a", sorted(cluster[:2])), ("ml-b", [])]
    runs = Run.objects.filter(job_id__in=cluster[:2])
    assert {(r.stop_kind, r.stop_reason) for r in runs} == {("preempt", "maintenance")}
    assert state_of([cluster[2]]) == ["queued"]
    preempting = Event.objects.filter(type="preempting", queue="ml-a")
    assert [e.payload.get("requestor") for e in preempting] == ["olive", "olive"]


def test_preempt_dry_run_and_refusal_change_nothing(owner, member, cluster):
    result = queues_preempt(
        actor=owner, selection=names("ml-a"), pools=["default"], dry_run=True, now=at(4)
    )
    assert result[0].job_ids == sorted(cluster[:2])
    with pytest.raises(PermissionDenied):
        queues_preempt(actor=member, selection=names("ml-a"), now=at(4))
    assert not Run.objects.filter(stop_requested_at__isnull=False).exists()


# --- the request body -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "selector"),
        ({"queues": ["a"], "selector": "team=ml"}, "queues"),
        ({"queues": []}, "queues"),
        ({"queues": "a"}, "queues"),
        ({"queues": [""]}, "queues"),
        ({"selector": "team=a b"}, "selector"),
        ({"selector": ""}, "selector"),
        ({"selector": "a", "inverse": "yes"}, "inverse"),
        ({"selector": "a", "dryRun": 1}, "dryRun"),
        ({"selector": "a", "reason": 5}, "reason"),
        ({"selector": "a", "colour": "blue"}, "colour"),
        ([], ""),
    ],
    ids=[
        "neither",
        "both",
        "empty-names",
        "names-not-list",
        "empty-name",
        "bad-selector",
        "empty-selector",
        "inverse-not-bool",
        "dry-run-not-bool",
        "reason-not-text",
        "unknown-field",
        "not-a-mapping",
    ],
)
def test_bad_bodies_name_the_field(body, field):
    with pytest.raises(ValidationFailed) as raised:
        parse_action_body(body, CANCEL)
    assert field in {e.field for e in raised.value.errors}


def test_each_action_takes_its_own_fields():
    with pytest.raises(ValidationFailed) as raised:
        parse_action_body({"selector": "a", "states": ["queued"], "reason": "r"}, CORDON)
    assert {e.field for e in raised.value.errors} == {"states", "reason"}
    with pytest.raises(ValidationFailed) as raised:
        parse_action_body({"selector": "a", "states": ["queued"]}, PREEMPT_ACTION)
    assert {e.field for e in raised.value.errors} == {"states"}
    parsed = parse_action_body(
        {
            "queues": ["a", "a", "b"],
            "inverse": True,
            "dryRun": True,
            "states": ["queued"],
            "pools": ["p"],
        },
        CANCEL,
    )
    assert parsed["selection"] == QueueSelection(names=("a", "b"), inverse=True)
    assert (parsed["dry_run"], parsed["states"], parsed["pools"], parsed["reason"]) == (
        True,
        ["queued"],
        ["p"],
        "",
    )
