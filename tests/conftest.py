"""Shared fixtures: personas (admin, queue owner, submit-only group member, outsider),
API clients, a fixed clock and small builders for job files."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def at(seconds: float) -> datetime:
    """``T0`` plus ``seconds``: tests pass time in explicitly."""
    return T0 + timedelta(seconds=seconds)


def container(cpu: str = "1", memory: str = "1Gi", name: str = "main") -> dict:
    return {
        "name": name,
        "image": "busybox:latest",
        "command": ["true"],
        "resources": {
            "requests": {"cpu": cpu, "memory": memory},
            "limits": {"cpu": cpu, "memory": memory},
        },
    }


def job(cpu: str = "1", memory: str = "1Gi", annotations: dict | None = None, **extra) -> dict:
    return {
        "priority": 0,
        "annotations": annotations or {},
        "podSpec": {"containers": [container(cpu, memory)]},
        **extra,
    }


def job_file(queue: str = "demo", job_set: str = "set-1", jobs: list[dict] | None = None) -> dict:
    return {"queue": queue, "jobSetId": job_set, "jobs": jobs if jobs is not None else [job()]}


def fake_agent(settings, *, cpu: str = "4", memory: str = "16Gi", **config):
    """Configure one fake-backend executor ``test`` with a single node of ``cpu`` and
    ``memory`` (plus any other top-level configuration given), register it at ``at(0)`` and
    return its agent."""
    from armada.core.config import parse_config
    from tests.executor_api import api_agent

    settings.ARMADA = parse_config(
        {
            **config,
            "executors": [
                {
                    "id": "test",
                    "nodes": [{"name": "n", "allocatable": {"cpu": cpu, "memory": memory}}],
                }
            ],
        }
    )
    agent = api_agent(settings.ARMADA.executors[0])
    agent.tick(at(0))
    return agent


@pytest.fixture
def admin_user(django_user_model):
    return django_user_model.objects.create_superuser("root", "root@example.com", "root-password")


@pytest.fixture
def owner(django_user_model):
    return django_user_model.objects.create_user("olive", password="olive-password")


@pytest.fixture
def member(django_user_model):
    """In group ``submitters``, which a queue may grant ``submit`` and nothing else."""
    from django.contrib.auth.models import Group

    user = django_user_model.objects.create_user("mo", password="mo-password")
    user.groups.add(Group.objects.create(name="submitters"))
    return user


@pytest.fixture
def outsider(django_user_model):
    return django_user_model.objects.create_user("otto", password="otto-password")


@pytest.fixture
def queue(admin_user, owner):
    """Queue ``demo`` owned by ``owner``; group ``submitters`` may submit."""
    from armada.services.queues import queue_create

    return queue_create(
        actor=admin_user,
        data={
            "name": "demo",
            "owners": [owner.username],
            "permissions": [
                {"subjects": [{"kind": "Group", "name": "submitters"}], "verbs": ["submit"]}
            ],
        },
        now=T0,
    )


@pytest.fixture
def api(admin_user):
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_authenticate(admin_user)
    return client


@pytest.fixture
def api_as():
    from rest_framework.test import APIClient

    def make(user):
        client = APIClient()
        if user is not None:
            client.force_authenticate(user)
        return client

    return make


@pytest.fixture(autouse=True)
def _fresh_scheduler_memory():
    """The scheduler keeps its job database and what it last recorded in memory; each test
    starts as a new scheduler process would (the test database is new too)."""
    from armada.services import records, scheduler

    scheduler.scheduler_state_reset()
    records.forget_written()
    yield
    scheduler.scheduler_state_reset()
    records.forget_written()


@pytest.fixture(autouse=True)
def _fresh_grid_plans():
    """How the grid reads a filter's page is kept in this process for a minute; each test
    counts against its own data."""
    from django.core.cache import caches

    from lookout.grid.pages import PLAN_CACHE

    caches[PLAN_CACHE].clear()


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    """Tests make many users; the production hasher is slow on purpose."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _fresh_login_throttle():
    """Failed logins are counted across tests otherwise (in Redis or files), and many tests
    send wrong passwords on purpose: each test starts with no failures counted."""
    from armada.services.login_throttle import login_throttle_reset

    login_throttle_reset()
    yield
    login_throttle_reset()


@pytest.fixture
def _close_stream_thread_connections():
    """A stream's reads run in the event loop's worker threads; close what they may have
    left (use it by name, or with ``pytest.mark.usefixtures``)."""
    import asyncio

    from asgiref.sync import sync_to_async
    from django.db import connections

    yield
    asyncio.run(sync_to_async(connections.close_all)())
