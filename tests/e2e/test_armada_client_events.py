"""Armada's event stream through real processes (web, grpc, scheduler, a fake-backend
executor) with the official ``armada_client``, unmodified: jobs submitted with it are
watched to success and to a failure that a retry policy retries, the ``retryable`` flag,
the failure category and the exit codes arriving in ``JobFailedEvent``; the pod's UID on
every pod message, the containers and cause of each failure, and ``JobUtilisationEvent``s
of the running job; the REST gateway's ``/v1/job-set/{queue}/{id}`` answers the same
messages in Armada's JSON."""

from __future__ import annotations

import base64
import json
import threading

import pytest
import requests
from armada_client.armada import event_pb2
from armada_client.client import ArmadaClient

from armada.wire.podspec import pod_spec_message
from tests.e2e.conftest import HTTP_TIMEOUT, authenticated_channel
from tests.e2e.test_retry_policies import config, executor, job, set_up

pytestmark = [pytest.mark.e2e]
WATCH_TIMEOUT = 120.0  # seconds for the whole scenario on a busy machine


@pytest.fixture
def client_of():
    """``client_of(system)``: the official client on the system's grpc process, with the
    system's Basic credentials."""
    channels = []

    def make(system) -> ArmadaClient:
        raw = base64.b64encode(":".join(system.auth).encode()).decode()
        channels.append(authenticated_channel(system.grpc_target, f"Basic {raw}"))
        return ArmadaClient(channels[-1])

    yield make
    for channel in channels:
        channel.close()


def test_the_official_client_watches_success_and_a_retried_failure(launch, client_of):
    system = launch(config(executors=[{**executor("east", 2), "utilisationPeriod": "1s"}]))
    set_up(system)  # queue demo with policy training: oom is retried twice
    client = client_of(system)

    def item(annotations: dict[str, str]):
        spec = job(annotations)
        return client.create_job_request_item(
            priority=1,
            namespace="default",
            pod_spec=pod_spec_message(spec["podSpec"]),
            annotations=spec["annotations"],
        )

    response = client.submit_jobs(
        queue="demo",
        job_set_id="watched",
        job_request_items=[
            item({"duration": "4s"}),  # long enough for a few utilisation periods
            item({"condition": "OOMKilled", "duration": "1s"}),
        ],
    )
    ok, oom = [i.job_id for i in response.job_response_items]
    assert ok and oom and not any(i.error for i in response.job_response_items)

    seen: list[event_pb2.EventStreamMessage] = []
    stream = client.get_job_events_stream(queue="demo", job_set_id="watched")
    done = threading.Event()

    def finished() -> bool:
        kinds = {(m.message.WhichOneof("events"), _job_of(m)) for m in seen}
        final_failure = any(
            m.message.WhichOneof("events") == "failed"
            and m.message.failed.job_id == oom
            and not m.message.failed.retryable
            for m in seen
        )
        return ("succeeded", ok) in kinds and ("utilisation", ok) in kinds and final_failure

    def watch() -> None:
        try:
            for message in stream:
                seen.append(message)
                if finished():
                    return
        finally:
            done.set()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    if not done.wait(WATCH_TIMEOUT):
        stream.cancel()
        pytest.fail(
            "the stream did not bring both endings: "
            f"{[(m.message.WhichOneof('events'), _job_of(m)) for m in seen]}\n{system.log_tail()}"
        )
    stream.cancel()

    ids = [int(m.id) for m in seen]
    assert ids == sorted(set(ids))  # in order, each once
    events = [client.unmarshal_event_response(m) for m in seen]
    of_ok = [e.type.value for e in events if e.message.job_id == ok]
    assert [t for t in of_ok if t != "utilisation"] == [
        "submitted",
        "queued",
        "leased",
        "pending",
        "running",
        "succeeded",
    ]
    # Every message about the pod names it as Armada's executor does: one UID for its life.
    by_kind = {
        (m.message.WhichOneof("events"), _job_of(m)): getattr(
            m.message, m.message.WhichOneof("events")
        )
        for m in seen
    }
    pod_messages = [by_kind[(kind, ok)] for kind in ("pending", "running", "succeeded")]
    uids = {p.kubernetes_id for p in pod_messages}
    assert len(uids) == 1 and len(next(iter(uids))) == 36
    for p in pod_messages:
        assert (p.cluster_id, p.pod_name, p.pod_namespace, p.pod_number) == (
            "east",
            f"armada-{ok}-0",
            "default",
            0,
        )
    usage = [m.message.utilisation for m in seen if m.message.WhichOneof("events") == "utilisation"]
    assert usage and all(u.job_id == ok and u.kubernetes_id in uids for u in usage)
    for u in usage:
        assert {k: v.string for k, v in u.MaxResourcesForPeriod.items()} == {
            "cpu": "1",
            "memory": "1Gi",
        }
        assert u.node_name.startswith("east-node") and u.pod_name == f"armada-{ok}-0"
    submitted = next(e.message for e in events if e.type.value == "submitted")
    assert submitted.job.queue == "demo" and submitted.job.pod_spec.containers[0].name == "main"

    failed = [m.message.failed for m in seen if m.message.WhichOneof("events") == "failed"]
    assert [f.retryable for f in failed] == [True, True, False]  # retryLimit 2, then final
    for f in failed:
        assert f.job_id == oom
        assert (f.failure_category, f.reason, f.cause) == ("oom", "OOMKilled", event_pb2.OOM)
        assert f.cluster_id == "east" and f.node_name.startswith("east-node")
        [status] = f.container_statuses
        assert (status.name, status.exitCode, status.reason) == ("main", 137, "OOMKilled")
        assert status.cause == event_pb2.OOM and f.pod_number == 0
    assert len({f.kubernetes_id for f in failed}) == 3  # a new pod for each attempt
    leased = [m.message.leased for m in seen if m.message.WhichOneof("events") == "leased"]
    assert {lease.cluster_id for lease in leased} == {"east"}

    # The REST gateway's path gives the same messages, in Armada's JSON, with plain HTTP.
    answer = requests.post(
        f"{system.url}/v1/job-set/demo/watched",
        json={"watch": False},
        auth=system.auth,
        timeout=HTTP_TIMEOUT,
    )
    assert answer.status_code == 200, answer.text
    lines = [json.loads(line)["result"] for line in answer.text.splitlines() if line]
    assert [line["id"] for line in lines][: len(seen)] == [m.id for m in seen]
    final = [line["message"]["failed"] for line in lines if "failed" in line["message"]]
    assert final[-1]["failureCategory"] == "oom" and not final[-1].get("retryable", False)
    assert final[0]["retryable"] is True


def _job_of(message: event_pb2.EventStreamMessage) -> str:
    kind = message.message.WhichOneof("events")
    return getattr(message.message, kind).job_id if kind else ""
