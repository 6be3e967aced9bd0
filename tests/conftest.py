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
