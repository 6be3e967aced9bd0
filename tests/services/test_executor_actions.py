"""Cancel and preempt every job on an executor, and delete (retire) an executor
(services.executor_actions): selection by queues, priority classes and pools; Armada's global
permissions; 400 and 404 naming what is wrong, with nothing written; idempotence; a deleted
executor's credential refused, its nodes and record gone, its runs ended by lease expiry."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission

from armada.core.config import parse_config
from armada.models import Event, Executor, ExecutorCredential, Job, Node, Run
from armada.services.errors import NotFound, PermissionDenied, ValidationFailed
from armada.services.executor_actions import (
    executor_delete,
    executor_jobs_cancel,
    executor_jobs_preempt,
)
from armada.services.executors_admin import executor_list
from armada.services.queues import queue_create
from armada.services.scheduler import scheduler_cycle
from armada.services.submit import job_submit
from tests.conftest import T0, at, container, job_file
from tests.executor_api import ApiAgent, api_agent

FAKE = "fake.armadaproject.io/"
LONG = {FAKE + "duration": "1h"}
ACTIVE = ("leased", "pending", "running")


def configure(settings) -> tuple[ApiAgent, ApiAgent]:
    """Executors ``east`` (pool default) and ``west`` (pool gpu), one 4-cpu node each."""
    settings.ARMADA = parse_config(
        {
            "executorTimeout": "1h",
            "scheduling": {"pools": [{"name": "default"}, {"name": "gpu"}]},
            "executors": [
                {
                    "id": name,
                    "pool": pool,
                    "nodes": [{"name": "n", "allocatable": {"cpu": "4", "memory": "64Gi"}}],
                }
                for name, pool in (("east", "default"), ("west", "gpu"))
            ],
        }
    )
    agents = (api_agent(settings.ARMADA.executors[0]), api_agent(settings.ARMADA.executors[1]))
    for agent in agents:
        agent.tick(at(0))
    return agents


def submit(user, n: int = 1, queue: str = "demo", priority_class: str = "") -> list[str]:
    pod = {"containers": [container("1", "1Gi")]}
    if priority_class:
        pod["priorityClassName"] = priority_class
    jobs = [{"annotations": LONG, "podSpec": pod}] * n
    return job_submit(actor=user, data=job_file(queue=queue, jobs=jobs), now=at(0))


def on_executor(executor: str) -> list[str]:
    runs = Run.objects.filter(executor=executor, state__in=ACTIVE)
    return sorted(runs.values_list("job_id", flat=True))


def types_for(job_id: str) -> list[str]:
    return list(Event.objects.filter(job_id=job_id).order_by("id").values_list("type", flat=True))


def grant(user, codename: str) -> None:
    user.user_permissions.add(Permission.objects.get(codename=codename))


@pytest.fixture
def busy(settings, queue, owner, admin_user):
    """``east`` and ``west`` running demo jobs (one preemptible on each) and jobs of queue
    ``other``; more jobs stay queued."""
    agents = configure(settings)
    queue_create(actor=admin_user, data={"name": "other", "owners": [owner.username]}, now=T0)
    submit(owner, 4)
    submit(owner, 2, priority_class="armada-preemptible")
    submit(owner, 2, queue="other")
    submit(owner, 4)  # more than fits: some stay queued
    scheduler_cycle(now=at(1))
    for agent in agents:
        agent.tick(at(2))
    assert on_executor("east") and on_executor("west")
    return agents


# --- cancel and preempt ---------------------------------------------------------------------


@pytest.mark.django_db
def test_cancel_on_executor_stops_exactly_its_jobs(busy, admin_user):
    east, west = on_executor("east"), on_executor("west")
    queued = list(Job.objects.filter(state="queued").values_list("id", flat=True))
    assert queued

    assert executor_jobs_cancel(actor=admin_user, executor="east", now=at(3)) == east
    for job_id in east:
        assert types_for(job_id)[-1] == "cancelling"
        run = Run.objects.get(job_id=job_id)
        assert run.stop_reason == "cancelled on executor east by root"
    busy[0].tick(at(4))
    busy[0].tick(at(5))
    assert set(Job.objects.filter(id__in=east).values_list("state", flat=True)) == {"cancelled"}
    assert set(Job.objects.filter(id__in=west).values_list("state", flat=True)) == {"running"}
    assert set(Job.objects.filter(id__in=queued).values_list("state", flat=True)) == {"queued"}


@pytest.mark.django_db
def test_preempt_on_executor_ends_jobs_preempted_and_not_retried(busy, admin_user):
    west = on_executor("west")
    got = executor_jobs_preempt(actor=admin_user, executor="west", reason="drain", now=at(3))
    assert got == west
    busy[1].tick(at(4))
    busy[1].tick(at(5))
    scheduler_cycle(now=at(6))
    for job_id in west:
        assert Job.objects.get(id=job_id).state == "preempted"
        assert Run.objects.filter(job_id=job_id).count() == 1  # not retried
        assert Run.objects.get(job_id=job_id).stop_reason == "drain"


@pytest.mark.django_db
def test_queues_priority_classes_and_pools_narrow_the_selection(busy, admin_user):
    def matching(executor: str, **where) -> list[str]:
        runs = Run.objects.filter(executor=executor, state__in=ACTIVE, **where)
        return sorted(runs.values_list("job_id", flat=True))

    other_east = matching("east", job__queue_id="other")
    got = executor_jobs_cancel(actor=admin_user, executor="east", queues=["other"], now=at(3))
    assert got == other_east
    preemptible = matching("west", job__priority_class="armada-preemptible")
    got = executor_jobs_preempt(
        actor=admin_user,
        executor="west",
        priority_classes=["armada-preemptible"],
        now=at(3),
    )
    assert got == preemptible
    # east's runs are in pool default: asking for pool gpu there selects nothing.
    assert executor_jobs_cancel(actor=admin_user, executor="east", pools=["gpu"], now=at(3)) == []
    untouched = set(on_executor("east")) - set(other_east)
    assert (
        untouched
        and not Run.objects.filter(job_id__in=untouched, stop_requested_at__isnull=False).exists()
    )


@pytest.mark.django_db
def test_asking_twice_answers_the_same_jobs_and_writes_nothing_more(busy, admin_user):
    first = executor_jobs_cancel(actor=admin_user, executor="east", now=at(3))
    events = Event.objects.count()
    assert executor_jobs_cancel(actor=admin_user, executor="east", now=at(4)) == first
    assert Event.objects.count() == events


@pytest.mark.django_db
def test_an_executor_without_jobs_answers_none(settings, queue, admin_user):
    configure(settings)
    assert executor_jobs_cancel(actor=admin_user, executor="east", now=at(1)) == []


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("action", "codename"),
    [(executor_jobs_cancel, "cancel_any_jobs"), (executor_jobs_preempt, "preempt_any_jobs")],
)
def test_the_global_permission_is_needed_as_in_armada(busy, owner, action, codename):
    """Owning every queue on the executor is not enough: Armada asks for the global
    permission; with it, the request goes through."""
    events = Event.objects.count()
    with pytest.raises(PermissionDenied, match=codename):
        action(actor=owner, executor="east", now=at(3))
    assert Event.objects.count() == events
    grant(owner, codename)
    owner.refresh_from_db()
    assert action(actor=type(owner).objects.get(pk=owner.pk), executor="east", now=at(3))


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"queues": "demo"}, "queues", "list of names"),
        ({"queues": [""]}, "queues[0]", "non-empty"),
        ({"priority_classes": ["nope"]}, "priorityClasses[0]", "unknown priority class"),
        ({"pools": ["nowhere"]}, "pools[0]", "unknown pool 'nowhere'"),
        ({"pools": 3}, "pools", "list of names"),
        ({"reason": "x" * 256}, "reason", "at most 255"),
    ],
)
def test_bad_input_names_the_field_and_changes_nothing(busy, admin_user, fields, field, message):
    events = Event.objects.count()
    with pytest.raises(ValidationFailed) as caught:
        executor_jobs_cancel(actor=admin_user, executor="east", now=at(3), **fields)
    assert [(e.field, message in e.message) for e in caught.value.errors] == [(field, True)]
    assert Event.objects.count() == events


@pytest.mark.django_db
def test_unknown_executor_or_queue_is_not_found(busy, admin_user):
    with pytest.raises(NotFound, match="executor 'nowhere'"):
        executor_jobs_cancel(actor=admin_user, executor="nowhere", now=at(3))
    with pytest.raises(NotFound, match="queue 'ghost'"):
        executor_jobs_preempt(actor=admin_user, executor="east", queues=["ghost"], now=at(3))


# --- delete ---------------------------------------------------------------------------------


@pytest.mark.django_db
def test_delete_retires_the_executor_and_lease_expiry_ends_its_runs(
    busy, admin_user, owner, caplog
):
    east = on_executor("east")
    credentials = ExecutorCredential.objects.filter(cluster_id="east", revoked_at__isnull=True)
    assert credentials.count() == 1

    result = executor_delete(actor=admin_user, executor_id="east", now=at(3))
    assert result == {
        "id": "east",
        "credentialsRevoked": 1,
        "nodesRemoved": 1,
        "activeRuns": len(east),
    }
    assert not Executor.objects.filter(id="east").exists()
    assert not Node.objects.filter(executor_id="east").exists()
    assert [e["id"] for e in executor_list(now=at(3))] == ["west"]
    assert not ExecutorCredential.objects.filter(cluster_id="east", revoked_at__isnull=True)

    # Its process is refused from its next call, and registers nothing again.
    calls = len(busy[0].channel.calls)
    report = busy[0].tick(at(4))
    assert report.created == 0 and report.reported == 0
    assert "was revoked" in caplog.text
    assert len(busy[0].channel.calls) > calls  # it did call, and was refused
    assert not Executor.objects.filter(id="east").exists()

    # The next cycle's lease expiry ends its runs, as for a lost executor; nothing new
    # is placed on it.
    submit(owner, 2)
    scheduler_cycle(now=at(5))
    for job_id in east:
        assert "lease_expired" in types_for(job_id)
        assert not Run.objects.filter(job_id=job_id, executor="east", state__in=ACTIVE).exists()
    assert not Run.objects.filter(executor="east", leased_at__gte=at(4)).exists()


@pytest.mark.django_db
def test_delete_needs_update_executor_settings_and_an_executor(busy, owner, admin_user):
    with pytest.raises(PermissionDenied, match="update_executor_settings"):
        executor_delete(actor=owner, executor_id="east", now=at(3))
    assert Executor.objects.filter(id="east").exists()
    executor_delete(actor=admin_user, executor_id="east", now=at(3))
    with pytest.raises(NotFound, match="executor 'east'"):
        executor_delete(actor=admin_user, executor_id="east", now=at(4))


def test_a_round_that_lands_after_the_delete_writes_no_nodes(busy, admin_user):
    """The executor's round read its row before the delete and writes its changed nodes
    after it: nothing is written (no node of a deleted executor, no foreign-key error)."""
    from armada.services.executor_nodes import ReportedNode, executor_heartbeat_and_nodes

    read_before = Executor.objects.get(id="east")
    executor_delete(actor=admin_user, executor_id="east", now=at(3))
    wrote = executor_heartbeat_and_nodes(
        executor=read_before,
        pool=read_before.pool,
        nodes=[ReportedNode(name="new-node", allocatable={"cpu": 1000})],
        digest="changed",
        now=at(4),
    )
    assert wrote is False
    assert not Node.objects.filter(executor_id="east").exists()
    assert not Executor.objects.filter(id="east").exists()
