"""Who may do what, for every API action: a table of actions x personas.

Personas (tests/conftest.py): ``admin_user`` (superuser), ``owner`` (owns queue ``demo``),
``member`` (group ``submitters``, which ``demo`` lets submit and nothing else), ``outsider``
(nothing), and ``anonymous`` (no credentials). Each action is one row: the personas that
may do it get its success status, the others 403 with a message naming the missing
permission (anonymous: 401), and a refused call leaves the database exactly as it was.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from armada.core.config import parse_config
from armada.models import (
    Event,
    Executor,
    Job,
    Queue,
    RetryPolicy,
    RetryPolicyVersion,
    Run,
    RunLog,
)
from armada.services.policies import policy_create
from armada.services.queues import queue_create
from armada.services.scheduler import scheduler_cycle
from armada.services.submit import job_submit
from tests.conftest import at, job, job_file
from tests.executor_api import api_agent

FAKE = "fake.armadaproject.io/"
PERSONAS = ("admin_user", "owner", "member", "outsider", "anonymous")
ADMIN = frozenset({"admin_user"})
QUEUE_MANAGERS = frozenset({"admin_user", "owner"})  # global permission or queue owner
SUBMITTERS = frozenset({"admin_user", "owner", "member"})
EVERYONE = frozenset({"admin_user", "owner", "member", "outsider"})
POLICY = {
    "apiVersion": "armadaproject.io/v1beta1",
    "kind": "RetryPolicy",
    "name": "p1",
    "retryLimit": 2,
    "defaultAction": "Fail",
}


@dataclass
class World:
    running: str  # a running job of demo/set-1
    waiting: str  # a queued job of demo/set-1
    run_id: str  # the running job's run (it has a log)


@dataclass(frozen=True)
class Action:
    name: str
    method: str
    path: Callable[[World], str]
    allowed: frozenset[str]
    ok: int
    permission: str = ""  # named in the 403 message of everyone else
    body: Callable[[World], Any] | None = None
    writes: bool = True  # False: nothing may change even when allowed (reads, dry runs)
    check: Callable[[World], bool] | None = field(default=None)  # the effect, when allowed


ACTIONS = [
    # queues
    Action("queue-list", "GET", lambda w: "/api/v1/queues", EVERYONE, 200, writes=False),
    Action("queue-get", "GET", lambda w: "/api/v1/queues/demo", EVERYONE, 200, writes=False),
    Action(
        "queue-create",
        "POST",
        lambda w: "/api/v1/queues",
        ADMIN,
        201,
        "create_queue",
        body=lambda w: {"name": "fresh"},
        check=lambda w: Queue.objects.filter(name="fresh").exists(),
    ),
    Action(
        "queue-create-dry-run",
        "POST",
        lambda w: "/api/v1/queues?dryRun=true",
        ADMIN,
        200,
        "create_queue",
        body=lambda w: {"name": "fresh"},
        writes=False,
    ),
    Action(
        "queue-update",
        "PATCH",
        lambda w: "/api/v1/queues/demo",
        ADMIN,
        200,
        "create_queue",
        body=lambda w: {"priorityFactor": 3},
        check=lambda w: Queue.objects.get(name="demo").priority_factor == 3,
    ),
    Action(
        "queue-delete",
        "DELETE",
        lambda w: "/api/v1/queues/spare",
        ADMIN,
        204,
        "delete_queue",
        check=lambda w: not Queue.objects.filter(name="spare").exists(),
    ),
    Action(
        "queue-cordon",
        "POST",
        lambda w: "/api/v1/queues/demo/cordon",
        ADMIN,
        200,
        "cordon_queue",
        check=lambda w: Queue.objects.get(name="demo").cordoned,
    ),
    Action(
        "queue-uncordon",
        "POST",
        lambda w: "/api/v1/queues/cordoned/uncordon",
        ADMIN,
        200,
        "cordon_queue",
        check=lambda w: not Queue.objects.get(name="cordoned").cordoned,
    ),
    Action(
        "queue-job-sets",
        "GET",
        lambda w: "/api/v1/queues/demo/job-sets",
        QUEUE_MANAGERS,
        200,
        "watch",
        writes=False,
    ),
    # retry policies
    Action("policy-list", "GET", lambda w: "/api/v1/retry-policies", EVERYONE, 200, writes=False),
    Action("policy-get", "GET", lambda w: "/api/v1/retry-policies/p1", EVERYONE, 200, writes=False),
    Action(
        "policy-create",
        "POST",
        lambda w: "/api/v1/retry-policies",
        ADMIN,
        201,
        "create_retry_policy",
        body=lambda w: {**POLICY, "name": "p2"},
        check=lambda w: RetryPolicy.objects.filter(name="p2").exists(),
    ),
    Action(
        "policy-create-dry-run",
        "POST",
        lambda w: "/api/v1/retry-policies?dryRun=true",
        ADMIN,
        200,
        "create_retry_policy",
        body=lambda w: {**POLICY, "name": "p2"},
        writes=False,
    ),
    Action(
        "policy-update",
        "PUT",
        lambda w: "/api/v1/retry-policies/p1",
        ADMIN,
        200,
        "update_retry_policy",
        body=lambda w: {**POLICY, "retryLimit": 5},
        check=lambda w: RetryPolicy.objects.get(name="p1").retry_limit == 5,
    ),
    Action(
        "policy-delete",
        "DELETE",
        lambda w: "/api/v1/retry-policies/p1",
        ADMIN,
        204,
        "delete_retry_policy",
        check=lambda w: not RetryPolicy.objects.filter(name="p1").exists(),
    ),
    # jobs
    Action(
        "submit",
        "POST",
        lambda w: "/api/v1/jobs",
        SUBMITTERS,
        201,
        "submit",
        body=lambda w: job_file(job_set="new"),
        check=lambda w: Job.objects.filter(job_set="new").count() == 1,
    ),
    Action(
        "job-list-of-a-queue",
        "GET",
        lambda w: "/api/v1/jobs?queue=demo",
        QUEUE_MANAGERS,
        200,
        "watch",
        writes=False,
    ),
    Action(
        "job-get",
        "GET",
        lambda w: f"/api/v1/jobs/{w.waiting}",
        QUEUE_MANAGERS,
        200,
        "watch",
        writes=False,
    ),
    Action(
        "job-scheduling",
        "GET",
        lambda w: f"/api/v1/jobs/{w.waiting}/scheduling",
        QUEUE_MANAGERS,
        200,
        "watch",
        writes=False,
    ),
    Action(
        "run-log",
        "GET",
        lambda w: f"/api/v1/runs/{w.run_id}/log",
        QUEUE_MANAGERS,
        200,
        "watch",
        writes=False,
    ),
    Action(
        "cancel-job",
        "POST",
        lambda w: "/api/v1/jobs/cancel",
        QUEUE_MANAGERS,
        200,
        "cancel",
        body=lambda w: {"queue": "demo", "jobSetId": "set-1", "jobIds": [w.waiting]},
        check=lambda w: Job.objects.get(id=w.waiting).state == "cancelled",
    ),
    Action(
        "cancel-job-set",
        "POST",
        lambda w: "/api/v1/jobs/cancel",
        QUEUE_MANAGERS,
        200,
        "cancel",
        body=lambda w: {"queue": "demo", "jobSetId": "set-1"},
        check=lambda w: Run.objects.get(id=w.run_id).stop_requested_at is not None,
    ),
    Action(
        "cancel-by-state",
        "POST",
        lambda w: "/api/v1/jobs/cancel",
        QUEUE_MANAGERS,
        200,
        "cancel",
        body=lambda w: {"queue": "demo", "states": ["queued"]},
        check=lambda w: Job.objects.get(id=w.waiting).state == "cancelled",
    ),
    Action(
        "cancel-by-state-endpoint",
        "POST",
        lambda w: "/api/v1/jobs/cancel-by-state",
        QUEUE_MANAGERS,
        200,
        "cancel",
        body=lambda w: {"queue": "demo", "states": ["queued", "running"]},
        check=lambda w: Job.objects.get(id=w.waiting).state == "cancelled",
    ),
    Action(
        "reprioritize",
        "POST",
        lambda w: "/api/v1/jobs/reprioritize",
        QUEUE_MANAGERS,
        200,
        "reprioritize",
        body=lambda w: {"queue": "demo", "jobSetId": "set-1", "priority": 7},
        check=lambda w: Job.objects.get(id=w.waiting).priority == 7,
    ),
    Action(
        "preempt",
        "POST",
        lambda w: f"/api/v1/jobs/{w.running}/preempt",
        QUEUE_MANAGERS,
        202,
        "preempt",
        body=lambda w: {"reason": "make room"},
        check=lambda w: Run.objects.get(id=w.run_id).stop_kind == "preempt",
    ),
    # executors
    Action("executor-list", "GET", lambda w: "/api/v1/executors", EVERYONE, 200, writes=False),
    Action("executor-get", "GET", lambda w: "/api/v1/executors/test", EVERYONE, 200, writes=False),
    Action(
        "executor-cordon",
        "POST",
        lambda w: "/api/v1/executors/test/cordon",
        ADMIN,
        200,
        "update_executor_settings",
        check=lambda w: Executor.objects.get(id="test").cordoned,
    ),
    Action(
        "executor-uncordon",
        "POST",
        lambda w: "/api/v1/executors/spare/uncordon",
        ADMIN,
        200,
        "update_executor_settings",
        check=lambda w: not Executor.objects.get(id="spare").cordoned,
    ),
]


def snapshot() -> dict[str, Any]:
    """Everything an action could change."""
    return {
        "queues": list(Queue.objects.order_by("name").values()),
        "policies": list(RetryPolicy.objects.order_by("name").values()),
        "policy_versions": RetryPolicyVersion.objects.count(),
        "jobs": list(Job.objects.order_by("id").values()),
        "runs": list(Run.objects.order_by("id").values()),
        "events": list(Event.objects.order_by("id").values_list("id", "type")),
        "executors": list(Executor.objects.order_by("id").values("id", "cordoned")),
    }


@pytest.fixture
def world(settings, queue, admin_user, owner) -> World:
    settings.ARMADA = parse_config(
        {
            "executors": [
                {
                    "id": "test",
                    "nodes": [{"name": "n", "allocatable": {"cpu": "1", "memory": "8Gi"}}],
                }
            ]
        }
    )
    agent = api_agent(settings.ARMADA.executors[0])
    agent.tick(at(0))
    running, waiting = job_submit(
        actor=owner,
        data=job_file(jobs=[job(annotations={FAKE + "duration": "1h"}), job()]),
        now=at(0),
    )
    scheduler_cycle(now=at(1))
    agent.tick(at(2))
    run = Run.objects.get(job_id=running)
    assert run.state == "running" and Job.objects.get(id=waiting).state == "queued"
    RunLog.objects.update_or_create(
        run=run, defaults={"text": "hello\n", "truncated": False, "updated_at": at(2)}
    )
    Executor.objects.create(
        id="spare",
        pool="default",
        backend="fake",
        cordoned=True,
        registered_at=at(0),
        last_heartbeat=at(0),
    )
    policy_create(actor=admin_user, data=POLICY, now=at(0))
    for name, cordoned in (("spare", False), ("cordoned", True)):
        queue_create(
            actor=admin_user,
            data={"name": name, "owners": [owner.username], "cordoned": cordoned},
            now=at(0),
        )
    return World(running=running, waiting=waiting, run_id=run.id)


@pytest.mark.django_db
@pytest.mark.parametrize("persona", PERSONAS)
@pytest.mark.parametrize("action", ACTIONS, ids=[a.name for a in ACTIONS])
def test_persona_matrix(request, api_as, world, action: Action, persona: str):
    user = None if persona == "anonymous" else request.getfixturevalue(persona)
    client = api_as(user)
    before = snapshot()
    call = getattr(client, action.method.lower())
    body = action.body(world) if action.body else None
    response = call(action.path(world), body, format="json") if body else call(action.path(world))

    if persona in action.allowed:
        assert response.status_code == action.ok, response.content
        if action.check is not None:
            assert action.check(world), f"{action.name} by {persona} had no effect"
        if not action.writes:
            assert snapshot() == before
        return
    expected = 401 if persona == "anonymous" else 403
    assert response.status_code == expected, response.content
    body = response.json()
    assert set(body) == {"message", "errors"}
    if expected == 403:
        assert f"'{action.permission}'" in body["message"], body["message"]
    assert snapshot() == before, f"a refused {action.name} by {persona} changed the database"


@pytest.mark.django_db
def test_job_list_shows_only_the_queues_a_persona_may_watch(request, api_as, world):
    seen = {}
    for persona in ("admin_user", "owner", "member", "outsider"):
        response = api_as(request.getfixturevalue(persona)).get("/api/v1/jobs")
        assert response.status_code == 200
        seen[persona] = sorted(j["id"] for j in response.json()["items"])
    both = sorted([world.running, world.waiting])
    assert seen == {"admin_user": both, "owner": both, "member": [], "outsider": []}


# The event stream is an async view that reads in a worker thread: it needs committed data.


def _basic(username: str, password: str) -> dict[str, str]:
    token = base64.b64encode(f"{username}:{password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


STREAM_CREDENTIALS = {
    "admin_user": _basic("root", "root-password"),
    "owner": _basic("olive", "olive-password"),
    "member": _basic("mo", "mo-password"),
    "outsider": _basic("otto", "otto-password"),
    "anonymous": {},
}
STREAM_EXPECTED = {
    "admin_user": 200,
    "owner": 200,
    "member": 403,
    "outsider": 403,
    "anonymous": 401,
}


@pytest.fixture
def _close_stream_thread_connections():
    from django.db import connections

    yield
    asyncio.run(sync_to_async(connections.close_all)())


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("_close_stream_thread_connections")
@pytest.mark.parametrize("persona", PERSONAS)
def test_event_stream_by_persona(request, queue, owner, persona):
    for name in ("admin_user", "member", "outsider"):
        request.getfixturevalue(name)
    job_submit(actor=owner, data=job_file(), now=at(0))
    before = snapshot()

    async def fetch() -> tuple[int, str]:
        response = await AsyncClient().get(
            "/api/v1/job-sets/demo/set-1/events", headers=STREAM_CREDENTIALS[persona]
        )
        if not response.streaming:
            return response.status_code, response.content.decode()
        text = ""
        async for chunk in response.streaming_content:
            text += chunk.decode() if isinstance(chunk, bytes) else chunk
        return response.status_code, text

    status, text = asyncio.run(fetch())
    assert status == STREAM_EXPECTED[persona]
    if status == 200:
        assert text.count("\n") == 2  # submitted, queued
    elif status == 403:
        assert "'watch'" in text and "'watch_all_events'" in text
    assert snapshot() == before
