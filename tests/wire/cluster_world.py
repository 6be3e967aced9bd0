"""A small world for the ``api.Node`` and ``api.Executor`` tests: two executors with running
jobs, and calls to those services over a real gRPC channel with stubs built from the
descriptors' message classes."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import Permission
from google.protobuf import empty_pb2

from armada.core.config import parse_config
from armada.models import Run
from armada.services.scheduler import scheduler_cycle
from armada.services.submit import job_submit
from armada.wire.node_executor_proto import message_class
from tests.conftest import at, container, job_file
from tests.executor_api import api_agent
from tests.wire.grpc_server import TIMEOUT, InProcessServer

LONG = {"fake.armadaproject.io/duration": "1h"}
ACTIVE = ("leased", "pending", "running")


def two_executors(settings, owner) -> list[Any]:
    """Executor ``east`` (nodes ``shared`` and ``east-only``) and ``west`` (node ``shared``),
    2 cpus a node, all running 1-cpu jobs of queue ``demo`` (``owner``'s); one preemptible
    job; two more wait, queued. Returns the agents after the pods run."""
    node = {"allocatable": {"cpu": "2", "memory": "16Gi"}}
    settings.ARMADA = parse_config(
        {
            "executorTimeout": "1h",
            "executors": [
                {
                    "id": "east",
                    "nodes": [{"name": "shared", **node}, {"name": "east-only", **node}],
                },
                {"id": "west", "nodes": [{"name": "shared", **node}]},
            ],
        }
    )
    agents = [api_agent(config) for config in settings.ARMADA.executors]
    for agent in agents:
        agent.tick(at(0))
    preemptible = {"containers": [container("1", "1Gi")], "priorityClassName": "armada-preemptible"}
    plain = {"annotations": LONG, "podSpec": {"containers": [container("1", "1Gi")]}}
    job_submit(
        actor=owner,
        data=job_file(jobs=[plain] * 5 + [{"annotations": LONG, "podSpec": preemptible}]),
        now=at(0),
    )
    scheduler_cycle(now=at(1))
    for agent in agents:
        agent.tick(at(2))
    job_submit(actor=owner, data=job_file(jobs=[plain] * 2), now=at(2))  # no room: queued
    return agents


def on(executor: str, node: str | None = None) -> list[str]:
    """The jobs with an active run on the executor (on its node ``node``), sorted."""
    runs = Run.objects.filter(executor=executor, state__in=ACTIVE)
    if node is not None:
        runs = runs.filter(node=node)
    return sorted(runs.values_list("job_id", flat=True))


def stopping(kind: str | None = None) -> list[str]:
    """The jobs whose run has a stop requested (of ``kind``: cancel or preempt), sorted."""
    runs = Run.objects.filter(stop_requested_at__isnull=False)
    if kind is not None:
        runs = runs.filter(stop_kind=kind)
    return sorted(runs.values_list("job_id", flat=True))


def grant(user, codename: str) -> None:
    user.user_permissions.add(
        Permission.objects.get(content_type__app_label="armada", codename=codename)
    )


def call(
    server: InProcessServer, service: str, method: str, metadata: Any, **fields: Any
) -> empty_pb2.Empty:
    """``service/method`` with a request of Armada's message built from ``fields``."""
    request_type = {
        "CancelOnNode": "NodeCancelRequest",
        "PreemptOnNode": "NodePreemptRequest",
        "UpsertExecutorSettings": "ExecutorSettingsUpsertRequest",
        "DeleteExecutorSettings": "ExecutorSettingsDeleteRequest",
        "CancelOnExecutor": "ExecutorCancelRequest",
        "PreemptOnExecutor": "ExecutorPreemptRequest",
        "DeleteExecutor": "ExecutorDeleteRequest",
    }[method]
    stub = server.channel.unary_unary(
        f"/{service}/{method}",
        request_serializer=lambda m: m.SerializeToString(),
        response_deserializer=empty_pb2.Empty.FromString,
    )
    return stub(message_class(request_type)(**fields), metadata=metadata, timeout=TIMEOUT)
