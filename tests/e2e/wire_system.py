"""What the end-to-end tests of Armada's wire API share: a real system per test module
(web, grpc, a Celery scheduler with beat and a Celery executor on the fake backend), its users
and tokens, channels for the official ``armada_client`` as each user, and the requests, waits
and event readers the flows are written with (``test_armada_client_flows.py`` over gRPC,
``test_gateway_flows.py`` over the REST gateway)."""

from __future__ import annotations

import os
import queue as queues
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import pytest
from armada_client.armada import event_pb2, submit_pb2, submit_pb2_grpc
from armada_client.client import ArmadaClient
from armada_client.event import Event
from armada_client.k8s.io.api.core.v1 import generated_pb2 as core_v1
from armada_client.k8s.io.apimachinery.pkg.api.resource import generated_pb2 as quantity

from tests.e2e.conftest import (
    E2E_CONFIG,
    System,
    _free_port,
    process_env,
    web_command,
)
from tests.waiting import wait_for_http

pytestmark = [pytest.mark.e2e]

FAKE = "fake.armadaproject.io/"
# The events of a job, in order: one run to success; a run that failed, was retried and
# failed again.
TO_SUCCESS = ["submitted", "queued", "leased", "pending", "running", "succeeded"]
FAILED_AND_RETRIED = [
    *["submitted", "queued", "leased", "pending", "running", "failed"],
    *["leased", "pending", "running", "failed"],
]
ADMIN, ADMIN_PASSWORD = "e2e-admin", "e2e-password"
OUTSIDER = "otto"  # no permission anywhere
MEMBER = "sam"  # may submit to and watch the queues that grant it, nothing else
EVENT_TIMEOUT = 90.0  # seconds a flow may wait for its events on a busy machine
POLICY_NAME = "gpu-flaky"
# An executor whose errors are categorised: a CUDA error is gpu/transient (retried by the
# policy, and its pod deleted so that the retry can reuse the pod name).
CATEGORIES = {
    "enabled": True,
    "defaultCategory": "unknown",
    "categories": [
        {
            "name": "gpu",
            "action": "Delete",
            "rules": [
                {"onTerminationMessage": {"pattern": "CUDA error"}, "subcategory": "transient"}
            ],
        },
        {
            "name": "user-error",
            "action": "Retain",
            "rules": [{"onExitCodes": {"operator": "In", "values": [1]}}],
        },
    ],
}
CONFIG = {
    **E2E_CONFIG,
    "scheduling": {
        **E2E_CONFIG["scheduling"],
        "retryPolicy": {"enabled": True, "globalMaxRetries": 5},
    },
    # A policy attached a moment ago is seen by the next failure.
    "queueRefreshPeriod": "1s",
    "executors": [
        {
            **E2E_CONFIG["executors"][0],
            # The node id label, so that an avoidSameNode retry can name the node it avoids.
            "trackedNodeLabels": ["kubernetes.io/hostname"],
            "errorCategories": CATEGORIES,
        }
    ],
}
# The fake job that fails as a transient GPU fault, every time it runs.
GPU_FAULT = {
    FAKE + "exitCode": "3",
    FAKE + "terminationMessage": "CUDA error: an illegal memory access was encountered",
}
# A node selector no node matches: the job waits in the queue.
NOWHERE = {"zone": "nowhere"}


# --- the system ----------------------------------------------------------------------------


def new_system(workdir: Path, config: dict, *, tls: bool = False) -> System:
    """A system with ``config`` in ``workdir``, not started yet (``run_system``): the
    environment of conftest's ``launch``, for a system that outlives one test. With ``tls``
    its grpc and web ports speak TLS with a CA made for it (``System.use_tls``)."""
    logs = workdir / "logs"
    logs.mkdir()
    (workdir / "armadactl.yaml").write_text("{}\n")
    port = _free_port()
    env = process_env(
        workdir,
        ARMADA_URL=f"http://127.0.0.1:{port}",
        ARMADA_USERNAME=ADMIN,
        ARMADA_PASSWORD=ADMIN_PASSWORD,
        ARMADACTL_CONFIG=str(workdir / "armadactl.yaml"),
    )
    if os.environ.get("REDIS_URL"):
        import redis

        redis.Redis.from_url(env["REDIS_URL"]).flushdb()
    system = System(
        url=env["ARMADA_URL"],
        env=env,
        logs=logs,
        workdir=workdir,
        grpc_target=f"127.0.0.1:{_free_port()}",
    )
    if tls:
        config = system.use_tls(config)
    system.env["ARMADA_CONFIG"] = str(system.write_config(config))
    return system


def run_system(system: System, config: dict) -> None:
    """Start web, scheduler with beat, a worker per executor of ``config`` and grpc, as
    ``launch`` does, and wait until web and grpc answer. The caller stops them
    (``System.stop_all``) whatever happens."""
    system.start("web", web_command(int(system.url.rsplit(":", 1)[1]), system.tls))
    system.start_scheduler()
    system.start_executors(config)
    wait_for_http(
        system.url + "/healthz",
        "the web process",
        processes=[proc for proc, _ in system.children.values()],
        details=system.log_tail,
        verify=system.verify,
    )
    system.start_grpc()


@dataclass
class Flows:
    """The module's running system and its users' credentials."""

    system: System
    tokens: dict[str, str]
    channels: list[grpc.Channel] = field(default_factory=list)

    def channel(self, user: str | None) -> grpc.Channel:
        """A channel that sends ``user``'s token (none at all for None); over TLS, trusting
        the system's CA, when the system has TLS."""
        authorization = None if user is None else f"Bearer {self.tokens[user]}"
        self.channels.append(self.system.grpc_channel(authorization))
        return self.channels[-1]

    def client(self, user: str | None = ADMIN) -> ArmadaClient:
        return ArmadaClient(self.channel(user))

    def policies(self, user: str | None = ADMIN) -> submit_pb2_grpc.RetryPolicyServiceStub:
        return submit_pb2_grpc.RetryPolicyServiceStub(self.channel(user))

    def auth(self, user: str) -> dict[str, str]:
        """HTTP headers that carry ``user``'s token."""
        return {"Authorization": f"Bearer {self.tokens[user]}"}


def users_and_tokens() -> dict[str, str]:
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from armada.services.tokens import token_create

    model = get_user_model()
    users = [
        model.objects.create_superuser(ADMIN, "e2e@example.com", ADMIN_PASSWORD),
        model.objects.create_user(OUTSIDER, password="otto-password"),
        model.objects.create_user(MEMBER, password="sam-password"),
    ]
    return {
        u.username: token_create(user=u, name="flows", expires_at=None, now=timezone.now()).key
        for u in users
    }


def module_database(django_db_blocker) -> Iterator[None]:
    """The database of a module whose tests share one system: open to the module's tests
    with no transaction around them (the processes must see, and on SQLite be able to
    write, what each test does), and flushed when the module ends, as ``transactional_db``
    leaves it after a test."""
    from django.core.management import call_command

    with django_db_blocker.unblock():
        try:
            yield
        finally:
            call_command("flush", interactive=False, verbosity=0)


def module_system(
    tmp_path_factory, name: str, config: dict = CONFIG, *, tls: bool = False
) -> Iterator[Flows]:
    """A system for a whole module (database access must be open): its users, then its
    processes, stopped at the end whatever happens. With ``tls`` the grpc and web ports
    speak TLS (see ``System.use_tls``): ``Flows.client``/``channel`` then open TLS
    channels that trust the system's CA, and ``Flows.system.verify`` is the ``verify=`` of
    HTTPS requests."""
    flows: Flows | None = None
    try:
        tokens = users_and_tokens()
        system = new_system(tmp_path_factory.mktemp(name), config, tls=tls)
        flows = Flows(system=system, tokens=tokens)
        run_system(system, config)
        yield flows
    finally:
        if flows is not None:
            for channel in flows.channels:
                channel.close()
            flows.system.stop_all()


# --- building requests ---------------------------------------------------------------------


def pod_spec(cpu: str = "100m", memory: str = "64Mi") -> core_v1.PodSpec:
    resources = {"cpu": quantity.Quantity(string=cpu), "memory": quantity.Quantity(string=memory)}
    return core_v1.PodSpec(
        containers=[
            core_v1.Container(
                name="main",
                image="busybox:latest",
                command=["sleep", "1"],
                resources=core_v1.ResourceRequirements(requests=resources, limits=resources),
            )
        ]
    )


def item(
    client: ArmadaClient,
    *,
    duration: str = "1s",
    annotations: dict[str, str] | None = None,
    **kwargs,
) -> submit_pb2.JobSubmitRequestItem:
    kwargs.setdefault("pod_spec", pod_spec())
    return client.create_job_request_item(
        priority=1,
        namespace="default",
        annotations={FAKE + "duration": duration, **(annotations or {})},
        **kwargs,
    )


def submit(client: ArmadaClient, queue: str, job_set: str, items: list) -> list[str]:
    response = client.submit_jobs(queue, job_set, items)
    assert all(not i.error for i in response.job_response_items), response
    return [i.job_id for i in response.job_response_items]


def make_queue(client: ArmadaClient, name: str, **kwargs) -> submit_pb2.Queue:
    client.create_queue(client.create_queue_request(name=name, priority_factor=1.0, **kwargs))
    return client.get_queue(name)


def denied(call: Callable[[], object]) -> grpc.RpcError:
    """The error ``call`` fails with (it must fail)."""
    with pytest.raises(grpc.RpcError) as error:
        call()
    return error.value


# --- following events ----------------------------------------------------------------------


def watch(
    flows: Flows,
    client: ArmadaClient,
    queue: str,
    job_set: str,
    until: Callable[[list[Event]], bool],
    *,
    from_message_id: str | None = None,
    timeout: float = EVENT_TIMEOUT,
) -> list[Event]:
    """Follow the job set with ``get_job_events_stream`` (a watching stream, as the client
    opens it) until ``until(events so far)`` holds; fail after ``timeout`` seconds with the
    events seen and the processes' logs. The client's iterator blocks, so a thread reads it
    and this one keeps the time."""
    stream = client.get_job_events_stream(queue, job_set, from_message_id=from_message_id)
    received: queues.Queue = queues.Queue()

    def pump() -> None:
        try:
            for message in stream:
                received.put(client.unmarshal_event_response(message))
        except Exception as exc:  # noqa: BLE001 - handed to the test's thread
            received.put(exc)

    threading.Thread(target=pump, daemon=True).start()
    events: list[Event] = []
    deadline = time.monotonic() + timeout
    try:
        while not until(events):
            remaining = deadline - time.monotonic()
            try:
                got = received.get(timeout=max(remaining, 0.01))
            except queues.Empty:
                seen = [(e.type.value, e.message.job_id) for e in events]
                pytest.fail(
                    f"timed out after {timeout:.0f} s following {queue}/{job_set}; saw {seen}"
                    f"\n{flows.system.log_tail()}"
                )
            if isinstance(got, Exception):
                raise got
            events.append(got)
    finally:
        client.unwatch_events(stream)
    return events


def of_job(events: list[Event], job_id: str) -> list[Event]:
    return [e for e in events if e.message.job_id == job_id]


def kinds(events: list[Event], job_id: str) -> list[str]:
    return [e.type.value for e in of_job(events, job_id)]


def seen(*wanted: tuple[str, str]) -> Callable[[list[Event]], bool]:
    """``until`` for ``watch``: every (job id, event type) of ``wanted`` has arrived."""

    def check(events: list[Event]) -> bool:
        have = {(e.message.job_id, e.type.value) for e in events}
        return all(w in have for w in wanted)

    return check


def job_set_events(client: ArmadaClient, queue: str, job_set: str) -> list[Event]:
    """Every event of the job set so far (a stream that does not watch ends by itself)."""
    request = event_pb2.JobSetRequest(queue=queue, id=job_set, watch=False)
    return [client.unmarshal_event_response(m) for m in client.event_stub.GetJobSetEvents(request)]


def status(client: ArmadaClient, job_id: str) -> int:
    return client.get_job_status([job_id]).job_states[job_id]


def wait_for_state(flows: Flows, client: ArmadaClient, job_id: str, state: int) -> None:
    flows.system.wait_for(
        f"job {job_id} to be {submit_pb2.JobState.Name(state)}",
        lambda: status(client, job_id) == state,
        timeout=EVENT_TIMEOUT,
    )


# --- the flows -----------------------------------------------------------------------------
