"""Armada's example client scripts (``simple``, ``queues``, ``cancelling``, ``monitor``,
``preempting``, ``binoculars``), as flows of our own that make the same calls in the same
order (``armada_example_flows``), each in a process of its own, against one system whose
gRPC and web ports speak TLS with a CA made for the module. A flow is given only what the
examples read from their environment (host, port) and the credentials: a token, or none at
all, which the system admits as in Armada's development set-up (``auth.anonymousAuth`` with
``anonymousGroups: [everyone]``, and a group ``everyone`` holding every global permission).
What each flow did is then checked against the system with an administrator's client.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest
from armada_client.armada import submit_pb2

from armada.core.config import PERMISSION_CODENAMES
from tests.e2e.conftest import ROOT
from tests.e2e.wire_system import (
    ADMIN,
    CONFIG,
    EVENT_TIMEOUT,
    FAKE,
    Flows,
    item,
    make_queue,
    module_database,
    module_system,
    status,
    submit,
    wait_for_state,
)

pytestmark = [pytest.mark.e2e]

EVERYONE = "everyone"
EXAMPLES_CONFIG = {
    **CONFIG,
    "auth": {"anonymousAuth": True, "anonymousGroups": [EVERYONE]},
}
FLOW_TIMEOUT = 180.0  # seconds one example flow may take on a busy machine
FINAL = {submit_pb2.SUCCEEDED, submit_pb2.FAILED, submit_pb2.CANCELLED, submit_pb2.PREEMPTED}


@pytest.fixture(scope="module")
def transactional_db(django_db_setup, django_db_blocker) -> Iterator[None]:
    """pytest-django's ``transactional_db`` for the whole module (``module_database``)."""
    yield from module_database(django_db_blocker)


@pytest.fixture(scope="module")
def flows(transactional_db, tmp_path_factory) -> Iterator[Flows]:
    from django.contrib.auth.models import Group, Permission

    everyone = Group.objects.create(name=EVERYONE)
    everyone.permissions.set(
        Permission.objects.filter(
            content_type__app_label="armada", codename__in=PERMISSION_CODENAMES
        )
    )
    yield from module_system(tmp_path_factory, "armada-examples", EXAMPLES_CONFIG, tls=True)


def run_flow(flows: Flows, name: str, *, token: str | None, **env: str) -> dict:
    """Run example flow ``name`` in a process of its own with only host, port, the CA (as
    any gRPC program is told of one) and ``token``; its JSON result."""
    host, port = flows.system.grpc_target.rsplit(":", 1)
    environment = {
        k: v for k, v in os.environ.items() if not k.startswith(("ARMADA_", "GRPC_"))
    } | {
        "ARMADA_SERVER": "localhost",  # the name the server's certificate carries
        "ARMADA_PORT": port,
        "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH": str(flows.system.tls.ca),
        **env,
    }
    if token:
        environment["ARMADA_TOKEN"] = token
    done = subprocess.run(
        [sys.executable, "-m", "tests.e2e.armada_example_flows", name],
        env=environment,
        capture_output=True,
        text=True,
        timeout=FLOW_TIMEOUT,
        cwd=ROOT,
    )
    assert done.returncode == 0, f"{name} failed:\n{done.stdout}\n{done.stderr}"
    lines = done.stdout.strip().splitlines()
    assert lines[-2] == "Completed Workflow", done.stdout
    return json.loads(lines[-1])


def wait_final(flows: Flows, job_id: str) -> int:
    admin = flows.client()
    flows.system.wait_for(
        f"job {job_id} to finish", lambda: status(admin, job_id) in FINAL, timeout=EVENT_TIMEOUT
    )
    return status(admin, job_id)


# --- the flows -------------------------------------------------------------------------------


@pytest.mark.parametrize("credentials", ["token", "none"])
def test_simple(flows, credentials):
    token = flows.tokens[ADMIN] if credentials == "token" else None
    result = run_flow(flows, "simple", token=token)
    [job_id] = result["jobIds"]
    wait_for_state(flows, flows.client(), job_id, submit_pb2.SUCCEEDED)
    from armada.models import Job, Queue

    job = Job.objects.get(id=job_id)
    assert (job.queue_id, job.job_set) == (result["queue"], result["jobSetId"])
    assert job.owner == (ADMIN if token else "anonymous")
    queue = Queue.objects.get(name=result["queue"])
    # A queue made with no owners belongs to its creator, or to the groups of a caller with
    # no credentials.
    assert (queue.owners, queue.group_owners) == (([ADMIN], []) if token else ([], [EVERYONE]))


def test_queues_creates_then_updates_and_reports_the_batch_failures(flows):
    first = run_flow(flows, "queues", token=flows.tokens[ADMIN])
    assert first["created"] is True
    # The batch holds the queue made a moment ago (refused) and a new one.
    assert list(first["failed"]) == ["test-queues"]
    assert "already exists" in first["failed"]["test-queues"]
    admin = flows.client()
    for name in ("test-queues", "test-queues2"):
        queue = admin.get_queue(name)
        assert queue.priority_factor == 3.0
        assert (list(queue.user_owners), list(queue.group_owners)) == (["user1"], ["group1"])
        [grant] = queue.permissions
        assert [(s.kind, s.name) for s in grant.subjects] == [("Group", "group1")]
        assert list(grant.verbs) == ["cancel", "reprioritize"]
        assert not queue.resource_limits  # deprecated: accepted and ignored
    again = run_flow(flows, "queues", token=flows.tokens[ADMIN])
    assert again["created"] is False  # ALREADY_EXISTS, so the example updates it
    assert sorted(again["failed"]) == ["test-queues", "test-queues2"]


def test_cancelling(flows):
    result = run_flow(flows, "cancelling", token=flows.tokens[ADMIN])
    assert wait_final(flows, result["cancelledById"]) == submit_pb2.CANCELLED
    # The second job set is not the one cancelled: its job runs to the end.
    assert wait_final(flows, result["untouched"]) == submit_pb2.SUCCEEDED
    # Cancelled only if it was pending or running when the filtered cancel came.
    assert wait_final(flows, result["filtered"]) in {submit_pb2.SUCCEEDED, submit_pb2.CANCELLED}


def test_monitor_sees_every_job_end_while_the_workflow_runs(flows):
    result = run_flow(flows, "monitor", token=flows.tokens[ADMIN])
    events = result["events"]
    assert "error" not in events and "workflowError" not in result, result.get("workflowError")
    first, *others = result["jobIds"]
    assert events[first][-1] == "cancelled"
    from armada.models import Job

    for job_id in others:
        assert events[job_id][-1] == "succeeded"
        # Reprioritized with an event, unless it had ended before the call came (a machine
        # slow enough to run a job between two calls): then unchanged and no event.
        priority = Job.objects.get(id=job_id).priority
        assert ("reprioritized" in events[job_id]) == (priority == 2), (events[job_id], priority)
    assert flows.client().get_queue("test-monitor").priority_factor == 2.0


def test_preempting(flows):
    result = run_flow(flows, "preempting", token=flows.tokens[ADMIN])
    job_id = result["jobId"]
    why_not = result["results"][job_id]
    final = wait_final(flows, job_id)
    # Preempted if it was running when asked; otherwise the answer says why not, and it runs.
    if why_not:
        assert "nothing to preempt" in why_not and final == submit_pb2.SUCCEEDED
    else:
        assert final == submit_pb2.PREEMPTED


def test_binoculars_reads_a_finished_jobs_log_with_no_credentials(flows):
    admin = flows.client()
    make_queue(admin, "logs")
    log = "loading the model\nstep 1 of 2\nstep 2 of 2\n"
    [job_id] = submit(admin, "logs", "set", [item(admin, annotations={FAKE + "log": log})])
    wait_for_state(flows, admin, job_id, submit_pb2.SUCCEEDED)
    result = run_flow(flows, "binoculars", token=None, JOB_ID=job_id)
    assert result["lines"] == log.splitlines()
