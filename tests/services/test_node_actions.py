"""Cancel and preempt every job on a node (services.node_actions): selection by executor,
node, queues and priority classes; permission per queue, all or nothing; 404 and 400 naming
what is wrong; idempotence. On PostgreSQL, a node cancel races the scheduler leasing onto
that node and the executor reporting from it: no deadlock, every job ends in one state with
its events."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from django.db import connection
from django.utils import timezone

from armada.core.config import parse_config
from armada.models import Event, Job, Node, Run
from armada.services.errors import NotFound, PermissionDenied, ValidationFailed
from armada.services.node_actions import node_jobs_cancel, node_jobs_preempt
from armada.services.queues import queue_create
from armada.services.scheduler import scheduler_cycle, scheduler_state_reset
from armada.services.submit import job_submit
from tests.conftest import T0, at, container, job_file
from tests.executor_api import ApiAgent, api_agent
from tests.racing import Race, deadlocks, each_more_than

FAKE = "fake.armadaproject.io/"
LONG = {FAKE + "duration": "1h"}


def configure(settings, nodes: int = 2, cpu: str = "4", **extra) -> ApiAgent:
    settings.ARMADA = parse_config(
        {
            "executorTimeout": "1h",
            **extra,
            "executors": [
                {
                    "id": "test",
                    "nodes": [
                        {"name": "n", "count": nodes, "allocatable": {"cpu": cpu, "memory": "64Gi"}}
                    ],
                }
            ],
        }
    )
    agent = api_agent(settings.ARMADA.executors[0])
    agent.tick(at(0))
    return agent


def spec(cpu: str = "1", priority_class: str = "", annotations: dict | None = None) -> dict:
    pod = {"containers": [container(cpu, "1Gi")]}
    if priority_class:
        pod["priorityClassName"] = priority_class
    return {"annotations": annotations if annotations is not None else LONG, "podSpec": pod}


def submit(owner, n: int = 1, queue: str = "demo", **kw) -> list[str]:
    return job_submit(actor=owner, data=job_file(queue=queue, jobs=[spec(**kw)] * n), now=at(0))


def node_of(job_id: str) -> str:
    return Run.objects.get(job_id=job_id).node


def on_node(node: str) -> list[str]:
    return sorted(
        Run.objects.filter(node=node, state__in=["leased", "pending", "running"]).values_list(
            "job_id", flat=True
        )
    )


def types_for(job_id: str) -> list[str]:
    return list(Event.objects.filter(job_id=job_id).order_by("id").values_list("type", flat=True))


def grant(user, codename: str) -> None:
    user.user_permissions.add(Permission.objects.get(codename=codename))


@pytest.fixture
def other_queue(admin_user, django_user_model):
    """Queue ``other``, owned by ``ola``: the ``demo`` owner has no verb on it."""
    ola = django_user_model.objects.create_user("ola", password="ola-password")
    queue_create(actor=admin_user, data={"name": "other", "owners": ["ola"]}, now=T0)
    return ola


@pytest.fixture
def busy(settings, queue, owner, other_queue):
    """Two 4-cpu nodes: n-0 full of demo jobs (two preemptible) and one ``other`` job...
    placed by the scheduler; returns the agent after the pods run."""
    agent = configure(settings)
    submit(owner, 2)
    submit(owner, 1, priority_class="armada-preemptible")
    submit(other_queue, 1, queue="other")
    submit(owner, 5)  # more than fits: some stay queued
    scheduler_cycle(now=at(1))
    agent.tick(at(2))
    return agent


# --- selection and effect ---------------------------------------------------------------------


@pytest.mark.django_db
def test_cancel_on_node_stops_exactly_the_jobs_on_that_node(busy, admin_user):
    n0, n1 = on_node("n-0"), on_node("n-1")
    assert n0 and n1
    queued = list(Job.objects.filter(state="queued").values_list("id", flat=True))
    assert queued

    assert node_jobs_cancel(actor=admin_user, executor="test", node="n-0", now=at(3)) == n0
    for job_id in n0:
        assert types_for(job_id)[-1] == "cancelling"
        assert Run.objects.get(job_id=job_id).stop_reason == "cancelled on node test/n-0 by root"
    busy.tick(at(4))  # the pods are stopped...
    busy.tick(at(5))  # ...and reported gone
    assert set(Job.objects.filter(id__in=n0).values_list("state", flat=True)) == {"cancelled"}
    # Other nodes and queued jobs are left alone.
    assert set(Job.objects.filter(id__in=n1).values_list("state", flat=True)) == {"running"}
    assert set(Job.objects.filter(id__in=queued).values_list("state", flat=True)) == {"queued"}


@pytest.mark.django_db
def test_preempt_on_node_ends_the_jobs_preempted_and_not_retried(busy, admin_user):
    n1 = on_node("n-1")
    got = node_jobs_preempt(
        actor=admin_user, executor="test", node="n-1", reason="kernel upgrade", now=at(3)
    )
    assert got == n1
    busy.tick(at(4))
    busy.tick(at(5))
    scheduler_cycle(now=at(6))
    for job_id in n1:
        assert Job.objects.get(id=job_id).state == "preempted"
        assert Run.objects.filter(job_id=job_id).count() == 1  # not retried
        types = types_for(job_id)
        assert types.index("preempting") < types.index("preempted")
        assert Run.objects.get(job_id=job_id).stop_reason == "kernel upgrade"


@pytest.mark.django_db
def test_queues_and_priority_classes_narrow_the_selection(busy, owner, admin_user):
    everything = set(on_node("n-0")) | set(on_node("n-1"))
    by_queue = dict(Job.objects.filter(id__in=everything).values_list("id", "queue"))
    by_class = dict(Job.objects.filter(id__in=everything).values_list("id", "priority_class"))
    node = node_of(next(j for j in everything if by_class[j] == "armada-preemptible"))
    want = [
        j for j in on_node(node) if by_queue[j] == "demo" and by_class[j] == "armada-preemptible"
    ]
    got = node_jobs_preempt(
        actor=owner,
        executor="test",
        node=node,
        queues=["demo"],
        priority_classes=["armada-preemptible"],
        now=at(3),
    )
    assert got == want and len(got) == 1
    stopping = Run.objects.filter(stop_requested_at__isnull=False).values_list("job_id", flat=True)
    assert list(stopping) == want


@pytest.mark.django_db
def test_an_empty_node_answers_no_jobs(settings, queue, admin_user):
    configure(settings)
    assert node_jobs_cancel(actor=admin_user, executor="test", node="n-1", now=at(1)) == []
    assert not Event.objects.filter(type="cancelling").exists()


@pytest.mark.django_db
def test_asking_twice_answers_the_same_jobs_and_writes_nothing_more(busy, admin_user):
    first = node_jobs_cancel(actor=admin_user, executor="test", node="n-0", now=at(3))
    events = Event.objects.count()
    again = node_jobs_cancel(actor=admin_user, executor="test", node="n-0", now=at(3.5))
    assert again == first
    assert Event.objects.count() == events


@pytest.mark.django_db
def test_a_node_gone_from_the_configuration_keeps_its_jobs_until_stopped(busy, admin_user):
    n0 = on_node("n-0")
    Node.objects.filter(executor_id="test", name="n-0").delete()
    assert node_jobs_cancel(actor=admin_user, executor="test", node="n-0", now=at(3)) == n0


# --- permissions: per queue, all or nothing ---------------------------------------------------


@pytest.mark.django_db
def test_one_queue_without_the_verb_refuses_every_job(busy, owner):
    node = node_of(Job.objects.get(queue="other").id)
    before = Event.objects.count()
    with pytest.raises(PermissionDenied) as info:
        node_jobs_cancel(actor=owner, executor="test", node=node, now=at(3))
    assert "'other'" in str(info.value) and "cancel" in str(info.value)
    assert "cancel_any_jobs" in str(info.value)
    assert Event.objects.count() == before
    assert not Run.objects.filter(stop_requested_at__isnull=False).exists()
    # Narrowed to the owner's queue, the same request goes through.
    got = node_jobs_cancel(actor=owner, executor="test", node=node, queues=["demo"], now=at(3))
    assert got and set(Job.objects.filter(id__in=got).values_list("queue", flat=True)) == {"demo"}


@pytest.mark.django_db
def test_a_named_queue_without_the_verb_is_refused_even_with_no_jobs_there(busy, owner, outsider):
    with pytest.raises(PermissionDenied):
        node_jobs_preempt(actor=owner, executor="test", node="n-0", queues=["other"], now=at(3))
    with pytest.raises(PermissionDenied):
        node_jobs_cancel(actor=outsider, executor="test", node="n-0", now=at(3))


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("action", "codename"),
    [(node_jobs_cancel, "cancel_any_jobs"), (node_jobs_preempt, "preempt_any_jobs")],
)
def test_the_global_permission_covers_every_queue(busy, outsider, action, codename):
    everything = sorted(set(on_node("n-0")) | set(on_node("n-1")))
    with pytest.raises(PermissionDenied):
        action(actor=outsider, executor="test", node="n-0", now=at(3))
    grant(outsider, codename)
    outsider = type(outsider).objects.get(pk=outsider.pk)  # permissions are cached per object
    got = action(actor=outsider, executor="test", node="n-0", now=at(3))
    got += action(actor=outsider, executor="test", node="n-1", now=at(3))
    assert sorted(got) == everything


# --- not found and bad input ------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("executor", "node", "queues", "message"),
    [
        ("nope", "n-0", None, "executor 'nope' does not exist"),
        ("test", "n-9", None, "node 'n-9' does not exist on executor 'test'"),
        ("test", "n-0", ["demo", "ghost"], "queue 'ghost' does not exist"),
    ],
)
def test_unknown_executor_node_or_queue_is_not_found(
    settings, queue, admin_user, executor, node, queues, message
):
    configure(settings)
    with pytest.raises(NotFound) as info:
        node_jobs_cancel(actor=admin_user, executor=executor, node=node, queues=queues, now=at(1))
    assert str(info.value) == message


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"queues": "demo"}, "queues", "must be a list"),
        ({"queues": ["demo", ""]}, "queues[1]", "non-empty string"),
        ({"queues": [3]}, "queues[0]", "non-empty string"),
        ({"priority_classes": {"a": 1}}, "priorityClasses", "must be a list"),
        ({"priority_classes": ["armada-default", "gold"]}, "priorityClasses[1]", "'gold'"),
        ({"reason": "x" * 256}, "reason", "at most 255"),
        ({"reason": 7}, "reason", "text"),
    ],
)
def test_bad_input_names_the_field_and_changes_nothing(busy, admin_user, fields, field, message):
    before = Event.objects.count()
    with pytest.raises(ValidationFailed) as info:
        node_jobs_cancel(actor=admin_user, executor="test", node="n-0", now=at(3), **fields)
    [error] = info.value.errors
    assert error.field == field and message in error.message
    assert Event.objects.count() == before


# --- PostgreSQL: against the scheduler and the executor at once ---------------------------------


@pytest.mark.django_db(transaction=True)
def test_node_cancel_races_leases_and_reports_on_that_node_without_deadlock(
    settings, queue, owner, admin_user
):
    """One node, jobs that finish quickly and jobs that run: submitters keep it busy, the
    scheduler leases onto it, the executor reports pending/running/succeeded from it, and
    node cancels and preempts hit it, each in its own thread and connection."""
    if connection.vendor != "postgresql":
        pytest.skip("row locks and deadlock detection are PostgreSQL's")
    settings.ARMADA = parse_config(
        {
            "scheduling": {"cyclePeriod": "100ms"},
            "executorTimeout": "1h",
            "executors": [
                {
                    "id": "hot",
                    "nodes": [{"name": "n", "allocatable": {"cpu": "16", "memory": "64Gi"}}],
                }
            ],
        }
    )
    scheduler_state_reset()
    agent = api_agent(settings.ARMADA.executors[0])
    agent.tick(timezone.now())
    before = deadlocks()
    race = Race()
    answered: list[str] = []

    def submit_some(n: int) -> None:
        durations = ["0s", "300ms", "1h"]
        jobs = [
            spec("500m", annotations={FAKE + "duration": durations[(n + i) % 3]}) for i in range(10)
        ]
        job_submit(actor=owner, data=job_file(jobs=jobs), now=timezone.now())
        race.stop.wait(0.05)

    def cycle(_: int) -> None:
        scheduler_cycle(now=timezone.now())

    def tick(_: int) -> None:
        agent.tick(timezone.now())

    def cancel(_: int) -> None:
        answered.extend(
            node_jobs_cancel(actor=admin_user, executor="hot", node="n", now=timezone.now())
        )
        race.stop.wait(0.1)

    def preempt(_: int) -> None:
        node_jobs_preempt(
            actor=owner, executor="hot", node="n", queues=["demo"], now=timezone.now()
        )
        race.stop.wait(0.15)

    steps = {"submit": submit_some, "scheduler": cycle, "executor": tick, "cancel": cancel}
    steps["preempt"] = preempt
    race.run(steps, 12, until=each_more_than(3, steps))
    assert race.errors == []
    assert deadlocks() == before
    assert all(race.counts[name] > 3 for name in steps), dict(race.counts)
    assert answered, "the node cancels found jobs on the node"

    # Drain: the executor reports every stop; then every job is in one state, with its events.
    for _ in range(5):
        scheduler_cycle(now=timezone.now())
        agent.tick(timezone.now())
    terminal_event = {
        "cancelled": "cancelled",
        "preempted": "preempted",
        "succeeded": "succeeded",
        "failed": "failed",
    }
    for job in Job.objects.all():
        types = types_for(job.id)
        assert types[0] == "submitted"
        if job.state in terminal_event:
            assert types.count(terminal_event[job.state]) == 1, (job.id, job.state, types)
            ended = [t for t in types if t in ("cancelled", "preempted", "succeeded")]
            assert len(ended) <= 1, (job.id, types)
        else:
            assert job.state in ("queued", "leased", "pending", "running"), job.state
            assert not any(t in types for t in terminal_event.values()), (job.id, types)
        runs = list(Run.objects.filter(job_id=job.id))
        assert sum(r.state in ("leased", "pending", "running") for r in runs) <= 1
    cancelled = set(Job.objects.filter(state="cancelled").values_list("id", flat=True))
    assert cancelled and cancelled <= set(answered)
    for job_id in cancelled:
        assert "cancelling" in types_for(job_id)
