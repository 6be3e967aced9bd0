"""Armada's example client scripts as flows of our own: the same ``armada_client`` calls, in
the same order and with the same arguments, each run in a process of its own by
``test_armada_examples.py`` against a system that speaks TLS.

    python -m tests.e2e.armada_example_flows <flow>

As in the examples, only the environment says where to go: ``ARMADA_SERVER`` and
``ARMADA_PORT`` (``DISABLE_SSL`` for a plaintext channel), plus the credentials:
``ARMADA_TOKEN`` adds the token to every call as call credentials (``Bearer``); without it
the channel is exactly the examples' (no credentials, which the system's anonymous access
admits). The CA is trusted the way any gRPC program trusts one, through
``GRPC_DEFAULT_SSL_ROOTS_FILE_PATH`` (read once per process, hence a process per flow).

Each flow prints what it did as one JSON object on its last line, for the test to check
against the system; the ``print`` lines before it are what the examples print.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import uuid
from typing import Any

import grpc
from armada_client.client import ArmadaClient
from armada_client.k8s.io.api.core.v1 import generated_pb2 as core_v1
from armada_client.k8s.io.apimachinery.pkg.api.resource import generated_pb2 as api_resource
from armada_client.log_client import JobLogClient
from armada_client.permissions import Permissions, Subject
from armada_client.typings import EventType, JobState

HOST = os.environ.get("ARMADA_SERVER", "localhost")
PORT = os.environ.get("ARMADA_PORT", "50051")
DISABLE_SSL = bool(os.environ.get("DISABLE_SSL", False))
WATCH_ATTEMPTS = 10  # the monitor example gives up after this many failed connections


def channel() -> grpc.Channel:
    """The examples' channel, with the token as call credentials when one is given."""
    target = f"{HOST}:{PORT}"
    if DISABLE_SSL:
        return grpc.insecure_channel(target)
    credentials = grpc.ssl_channel_credentials()
    token = os.environ.get("ARMADA_TOKEN")
    if token:
        credentials = grpc.composite_channel_credentials(
            credentials, grpc.access_token_call_credentials(token)
        )
    return grpc.secure_channel(target, credentials)


def example_pod() -> core_v1.PodSpec:
    """The examples' pod: one Ubuntu container sleeping ten seconds, 120m and 510Mi."""
    amounts = {
        "cpu": api_resource.Quantity(string="120m"),
        "memory": api_resource.Quantity(string="510Mi"),
    }
    return core_v1.PodSpec(
        containers=[
            core_v1.Container(
                name="container1",
                image="index.docker.io/library/ubuntu:latest",
                args=["sleep", "10s"],
                securityContext=core_v1.SecurityContext(runAsUser=1000),
                resources=core_v1.ResourceRequirements(requests=amounts, limits=amounts),
            )
        ]
    )


def dummy_jobs(client: ArmadaClient, n: int = 1, **extra: Any) -> list:
    return [
        client.create_job_request_item(priority=1, pod_spec=example_pod(), **extra)
        for _ in range(n)
    ]


def create_or_update(client: ArmadaClient, request: Any) -> bool:
    """Create the queue, or update it when it exists; True when it was created."""
    try:
        client.create_queue(request)
        return True
    except grpc.RpcError as e:
        if e.code() != grpc.StatusCode.ALREADY_EXISTS:
            raise
        print(f"Queue {request.name} already exists")
        client.update_queue(request)
        return False


# --- the flows -------------------------------------------------------------------------------


def simple(client: ArmadaClient) -> dict:
    queue = f"simple-queue-{uuid.uuid1()}"
    job_set_id = f"simple-jobset-{uuid.uuid1()}"
    client.create_queue(client.create_queue_request(name=queue, priority_factor=1))
    response = client.submit_jobs(
        queue=queue, job_set_id=job_set_id, job_request_items=dummy_jobs(client)
    )
    return {
        "queue": queue,
        "jobSetId": job_set_id,
        "jobIds": [item.job_id for item in response.job_response_items],
    }


def full_queue_request(client: ArmadaClient, queue: str) -> Any:
    permissions = Permissions(
        subjects=[Subject(kind="Group", name="group1")], verbs=["cancel", "reprioritize"]
    )
    return client.create_queue_request(
        name=queue,
        priority_factor=3.0,
        user_owners=["user1"],
        group_owners=["group1"],
        resource_limits={"cpu": 1.0, "memory": 1.0},
        permissions=[permissions],
    )


def queues(client: ArmadaClient) -> dict:
    queue = os.environ.get("EXAMPLE_QUEUE", "test-queues")
    created = create_or_update(client, full_queue_request(client, queue))
    response = client.create_queues(
        [full_queue_request(client, queue), full_queue_request(client, queue + "2")]
    )
    failed = {}
    for item in response.failed_queues:
        print(f"Failed to create {item.queue.name}: {item.error}")
        failed[item.queue.name] = item.error
    return {"queue": queue, "created": created, "failed": failed}


def cancelling(client: ArmadaClient) -> dict:
    queue = "test-cancelling"
    create_or_update(client, client.create_queue_request(name=queue, priority_factor=1))
    job_set_id1, job_set_id2 = f"set-{uuid.uuid1()}", f"set-{uuid.uuid1()}"
    first = client.submit_jobs(
        queue=queue, job_set_id=job_set_id1, job_request_items=dummy_jobs(client)
    )
    job_id = first.job_response_items[0].job_id
    # The example passes only job_id, which armada_client 0.5.1 refuses before sending
    # anything (queue and job_set_id are required arguments): the nearest call it takes.
    client.cancel_jobs(queue=queue, job_set_id=job_set_id1, job_id=job_id)
    second = client.submit_jobs(
        queue=queue, job_set_id=job_set_id2, job_request_items=dummy_jobs(client)
    )
    client.cancel_jobs(queue=queue, job_set_id=job_set_id1)
    job_set_id3 = f"set-{uuid.uuid1()}"
    third = client.submit_jobs(
        queue=queue, job_set_id=job_set_id3, job_request_items=dummy_jobs(client)
    )
    client.cancel_jobset(
        queue=queue, job_set_id=job_set_id3, filter_states=[JobState.PENDING, JobState.RUNNING]
    )
    return {
        "queue": queue,
        "cancelledById": job_id,
        "untouched": second.job_response_items[0].job_id,
        "filtered": third.job_response_items[0].job_id,
    }


def _watch(client: ArmadaClient, queue: str, job_set_id: str, n: int, seen: dict) -> None:
    attempts = 0
    terminated = 0
    while True:
        try:
            for event_grpc in client.get_job_events_stream(queue=queue, job_set_id=job_set_id):
                event = client.unmarshal_event_response(event_grpc)
                print(f"Job {event.message.job_id} - {event.type}")
                seen.setdefault(event.message.job_id, []).append(event.type.name)
                if event.type in [EventType.succeeded, EventType.cancelled]:
                    print(f"Job {event.message.job_id} Terminated")
                    terminated += 1
                if terminated >= n:
                    print(f"{n} jobs were terminated")
                    return
        except grpc.RpcError as e:
            if e.code() != grpc.StatusCode.NOT_FOUND:
                print("Unexpected error:", e)
                seen["error"] = [str(e.code())]
                return
        attempts += 1
        time.sleep(1)
        if attempts > WATCH_ATTEMPTS:
            print("Exiting - too many attempts")
            seen["error"] = ["too many attempts"]
            return


def _run_workflow(client: ArmadaClient, queue: str, job_set_id: str, items: list, out: dict):
    try:
        _workflow_calls(client, queue, job_set_id, items, out)
    except Exception as exc:  # a thread's failure would otherwise only be printed
        out["workflowError"] = repr(exc)
        raise


def _workflow_calls(client: ArmadaClient, queue: str, job_set_id: str, items: list, out: dict):
    create_or_update(client, client.create_queue_request(name=queue, priority_factor=1))
    client.update_queue(client.create_queue_request(name=queue, priority_factor=2))
    response = client.submit_jobs(queue=queue, job_set_id=job_set_id, job_request_items=items)
    out["jobIds"] = [item.job_id for item in response.job_response_items]
    out["cancelled"] = out["jobIds"][0]
    client.cancel_jobs(queue=queue, job_id=out["cancelled"], job_set_id=job_set_id)
    # The example leaves job_ids out, which armada_client 0.5.1 requires (None means the
    # whole job set): the nearest call it takes.
    client.reprioritize_jobs(new_priority=2, job_ids=None, queue=queue, job_set_id=job_set_id)


def monitor(client: ArmadaClient) -> dict:
    queue = "test-monitor"
    job_set_id = f"set-{uuid.uuid1()}"
    items = dummy_jobs(client, 3)
    out: dict = {"queue": queue, "jobSetId": job_set_id}
    seen: dict = {}
    workflow = threading.Thread(target=_run_workflow, args=(client, queue, job_set_id, items, out))
    watcher = threading.Thread(target=_watch, args=(client, queue, job_set_id, len(items), seen))
    workflow.start()
    watcher.start()
    workflow.join()
    watcher.join()
    out["events"] = seen
    return out


def preempting(client: ArmadaClient) -> dict:
    queue = "test-preempting"
    create_or_update(client, client.create_queue_request(name=queue, priority_factor=1))
    job_set_id1 = f"set-{uuid.uuid1()}"
    response = client.submit_jobs(
        queue=queue,
        job_set_id=job_set_id1,
        job_request_items=dummy_jobs(client, namespace="default"),
    )
    job_id = response.job_response_items[0].job_id
    print(f"preempting {queue} {job_set_id1} {job_id}")
    result = client.preempt_jobs(queue=queue, job_set_id=job_set_id1, job_id=job_id)
    return {
        "queue": queue,
        "jobSetId": job_set_id1,
        "jobId": job_id,
        "results": dict(result.preemption_results),
    }


def binoculars() -> dict:
    job_id = os.environ["JOB_ID"]
    client = JobLogClient(f"{HOST}:{PORT}", job_id, DISABLE_SSL)
    lines = [line.line for line in client.logs()]
    for line in lines:
        print(line)
    return {"jobId": job_id, "lines": lines}


FLOWS = {
    "simple": simple,
    "queues": queues,
    "cancelling": cancelling,
    "monitor": monitor,
    "preempting": preempting,
}


def main(name: str) -> int:
    result = binoculars() if name == "binoculars" else FLOWS[name](ArmadaClient(channel()))
    print("Completed Workflow")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
