"""Armada's own Python client, unmodified, against real processes: web, grpc, a Celery
scheduler with beat and a Celery executor on the fake backend, on PostgreSQL and Redis.

One system serves the whole module (starting one costs tens of seconds); each test works in
queues and job sets of its own, so the tests do not depend on each other's order. What a
user of ``armada_client`` does, through the calls it offers (``ArmadaClient``) and the
generated stubs it ships (``RetryPolicyServiceStub`` on the same channel, which the client
class does not wrap):

- a queue with per-user permissions, jobs submitted and followed on the event stream
  (``get_job_events_stream``, ``unmarshal_event_response``) to success, a stream resumed from
  a message id, the job status, details, run details and errors;
- an idempotent submit (the same ``clientId`` twice is one job);
- retry-policy CRUD, a policy attached with ``update_queue``, and a job whose runs fail in the
  category the policy retries: a ``JobFailedEvent`` with ``retryable`` and the failure
  category and subcategory, a second run, and a last failure that is not retryable;
- a stream left idle longer than the client's ``event_timeout``, which the client
  reconnects from the last message id it saw (no gap, no repeat), and ``requiredNodeLabels``
  pinning a job to a node;
- stopping jobs is in ``test_armada_client_stops``;
- PERMISSION_DENIED naming the permission that is missing, INVALID_ARGUMENT naming the
  field of a bad job and writing nothing, UNAUTHENTICATED without credentials.

The fake cluster fails a pod as its job's annotations ask and fails every attempt alike, so
the retried job's second run fails too; the policy's limit of one retry makes that failure
the last.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import grpc
import pytest
from armada_client.armada import job_pb2, submit_pb2
from armada_client.client import ArmadaClient
from armada_client.event import Event
from armada_client.permissions import Permissions, Subject
from armada_client.typings import EventType

from tests.e2e.wire_system import (
    ADMIN,
    FAILED_AND_RETRIED,
    FAKE,
    GPU_FAULT,
    MEMBER,
    OUTSIDER,
    POLICY_NAME,
    TO_SUCCESS,
    Flows,
    denied,
    item,
    job_set_events,
    kinds,
    make_queue,
    module_database,
    module_system,
    of_job,
    pod_spec,
    seen,
    status,
    submit,
    watch,
)

pytestmark = [pytest.mark.e2e]


@pytest.fixture(scope="module")
def transactional_db(django_db_setup, django_db_blocker) -> Iterator[None]:
    """pytest-django's ``transactional_db`` for the whole module (see ``module_database``).
    Its name is what makes pytest-django create the test database for these tests."""
    yield from module_database(django_db_blocker)


@pytest.fixture(scope="module")
def flows(transactional_db, tmp_path_factory) -> Iterator[Flows]:
    yield from module_system(tmp_path_factory, "client-flows")


def test_a_queue_jobs_to_success_and_what_the_jobs_service_says_of_them(flows):
    admin = flows.client()
    grant = Permissions([Subject(kind="User", name=MEMBER)], ["submit", "watch"])
    made = make_queue(admin, "flows", permissions=[grant], user_owners=[ADMIN])
    assert made.name == "flows" and made.priority_factor == 1.0
    assert list(made.user_owners) == [ADMIN]
    assert [(list(p.subjects), list(p.verbs)) for p in made.permissions] == [
        ([submit_pb2.Queue.Permissions.Subject(kind="User", name=MEMBER)], ["submit", "watch"])
    ]
    assert "flows" in [q.name for q in admin.get_queues()]  # GetQueues, streamed

    first, second = submit(admin, "flows", "ok", [item(admin), item(admin, duration="2s")])
    assert first != second
    events = watch(flows, admin, "flows", "ok", seen((first, "succeeded"), (second, "succeeded")))
    for job_id in (first, second):
        assert kinds(events, job_id) == TO_SUCCESS
    submitted, *_, succeeded = of_job(events, first)
    assert submitted.type == EventType.submitted
    job = submitted.message.job
    assert (job.id, job.queue, job.job_set_id, job.owner) == (first, "flows", "ok", ADMIN)
    assert job.pod_spec.containers[0].resources.limits["memory"].string == "64Mi"
    assert job.annotations[FAKE + "duration"] == "1s"
    assert succeeded.message.cluster_id == "e2e"
    assert succeeded.message.node_name.startswith("worker")
    assert succeeded.message.pod_name == f"armada-{first}-0"
    ids = [int(e.id) for e in events]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)

    # A stream resumed from a message id goes on after it: no gap, no repeat.
    middle = events[len(events) // 2]
    rest = watch(
        flows,
        admin,
        "flows",
        "ok",
        lambda got: len(got) >= len(events) - len(events) // 2 - 1,
        from_message_id=middle.id,
    )
    assert [e.id for e in rest] == [e.id for e in events[len(events) // 2 + 1 :]]

    # The Jobs service.
    unknown = "01unknownjob0000000000000"
    states = admin.get_job_status([first, second, unknown]).job_states
    assert dict(states) == {
        first: submit_pb2.SUCCEEDED,
        second: submit_pb2.SUCCEEDED,
        unknown: submit_pb2.UNKNOWN,
    }
    details = admin.get_job_details([first, unknown]).job_details
    assert list(details) == [first]
    detail = details[first]
    assert (detail.queue, detail.jobset, detail.namespace) == ("flows", "ok", "default")
    assert detail.state == submit_pb2.SUCCEEDED
    (run,) = detail.job_runs
    assert run.run_id == detail.latest_run_id
    assert run.state == job_pb2.RUN_STATE_SUCCEEDED and run.cluster == "e2e"
    assert run.node == succeeded.message.node_name
    assert run.finished_ts.ToDatetime() >= run.started_ts.ToDatetime()
    run_details = admin.get_job_run_details([run.run_id, "no-such-run"]).job_run_details
    assert list(run_details) == [run.run_id]
    assert run_details[run.run_id].job_id == first
    assert run_details[run.run_id].state == job_pb2.RUN_STATE_SUCCEEDED
    assert dict(admin.get_job_errors([first]).job_errors) == {first: ""}

    # The member the queue grants submit and watch to does both with the same client.
    member = flows.client(MEMBER)
    (theirs,) = submit(member, "flows", "member", [item(member)])
    watch(flows, member, "flows", "member", seen((theirs, "succeeded")))
    assert status(member, theirs) == submit_pb2.SUCCEEDED


def test_the_same_client_id_submits_one_job(flows):
    admin = flows.client()
    make_queue(admin, "idempotent")
    (original,) = submit(admin, "idempotent", "s", [item(admin, client_id="train-42")])
    (again,) = submit(admin, "idempotent", "s", [item(admin, client_id="train-42")])
    assert again == original
    # A retried submit of which only some items are new: the known one keeps its id.
    known, new = submit(
        admin,
        "idempotent",
        "s",
        [item(admin, client_id="train-42"), item(admin, client_id="train-43")],
    )
    assert known == original and new != original
    # Another job set is another scope.
    (elsewhere,) = submit(admin, "idempotent", "other", [item(admin, client_id="train-42")])
    assert elsewhere != original
    events = watch(
        flows, admin, "idempotent", "s", seen((original, "succeeded"), (new, "succeeded"))
    )
    submitted = [e.message.job_id for e in events if e.type == EventType.submitted]
    assert sorted(submitted) == sorted([original, new])
    assert of_job(events, original)[0].message.job.client_id == "train-42"


def gpu_policy(retry_limit: int) -> submit_pb2.RetryPolicy:
    return submit_pb2.RetryPolicy(
        name=POLICY_NAME,
        retry_limit=retry_limit,
        default_action=submit_pb2.RETRY_ACTION_FAIL,
        rules=[
            submit_pb2.RetryRule(action=submit_pb2.RETRY_ACTION_FAIL, on_category="user-error"),
            submit_pb2.RetryRule(
                action=submit_pb2.RETRY_ACTION_RETRY,
                on_category="gpu",
                on_subcategory="transient",
                mutate=submit_pb2.RetryMutation(
                    affinity=submit_pb2.RetryAffinityMutation(avoid_same_node=True)
                ),
            ),
        ],
    )


def test_retry_policy_crud_and_a_failure_the_policy_retries(flows):
    admin, policies = flows.client(), flows.policies()
    policies.CreateRetryPolicy(gpu_policy(retry_limit=3))
    assert policies.GetRetryPolicy(submit_pb2.RetryPolicyGetRequest(name=POLICY_NAME)) == (
        gpu_policy(retry_limit=3)
    )
    taken = denied(lambda: policies.CreateRetryPolicy(gpu_policy(retry_limit=1)))
    assert taken.code() == grpc.StatusCode.ALREADY_EXISTS
    policies.UpdateRetryPolicy(gpu_policy(retry_limit=1))
    listed = policies.GetRetryPolicies(submit_pb2.RetryPolicyListRequest()).retry_policies
    assert gpu_policy(retry_limit=1) in listed
    unknown = gpu_policy(retry_limit=1)
    unknown.name = "nope"
    missing = denied(lambda: policies.UpdateRetryPolicy(unknown))
    assert missing.code() == grpc.StatusCode.NOT_FOUND
    bad = submit_pb2.RetryPolicy(name="bad", retry_limit=1)  # no default action
    invalid = denied(lambda: policies.CreateRetryPolicy(bad))
    assert invalid.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "defaultAction" in invalid.details()

    # Attach it to a queue with UpdateQueue (the whole queue, as read).
    queue = make_queue(admin, "retrying")
    queue.retry_policies.append(POLICY_NAME)
    admin.update_queue(queue)
    assert list(admin.get_queue("retrying").retry_policies) == [POLICY_NAME]
    in_use = denied(
        lambda: policies.DeleteRetryPolicy(submit_pb2.RetryPolicyDeleteRequest(name=POLICY_NAME))
    )
    assert in_use.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "retrying" in in_use.details()

    # Every run fails as a transient GPU fault: retried once, then the policy's limit.
    (job_id,) = submit(
        admin, "retrying", "gpu", [item(admin, duration="2s", annotations=GPU_FAULT)]
    )

    def last_failure(events: list[Event]) -> bool:
        return any(
            e.type == EventType.failed and not e.message.retryable for e in of_job(events, job_id)
        )

    events = watch(flows, admin, "retrying", "gpu", last_failure)
    assert kinds(events, job_id) == FAILED_AND_RETRIED
    first, last = [e.message for e in of_job(events, job_id) if e.type == EventType.failed]
    assert first.retryable is True and last.retryable is False
    for failure in (first, last):
        assert (failure.failure_category, failure.failure_subcategory) == ("gpu", "transient")
        assert failure.cluster_id == "e2e" and failure.pod_name == f"armada-{job_id}-0"
        assert dict(failure.exit_codes) == {"main": 3}
        (container,) = failure.container_statuses
        assert (container.name, container.exitCode) == ("main", 3)
        assert "CUDA error" in container.message
    # avoidSameNode: the retry ran on the other node.
    assert first.node_name != last.node_name

    assert status(admin, job_id) == submit_pb2.FAILED
    runs = admin.get_job_details([job_id]).job_details[job_id].job_runs
    assert [r.state for r in runs] == [job_pb2.RUN_STATE_FAILED] * 2
    assert "retry limit" in admin.get_job_errors([job_id]).job_errors[job_id]

    # Detached, the policy can go; deleting it again (or any missing one) succeeds.
    queue = admin.get_queue("retrying")
    del queue.retry_policies[:]
    admin.update_queue(queue)
    delete = submit_pb2.RetryPolicyDeleteRequest(name=POLICY_NAME)
    policies.DeleteRetryPolicy(delete)
    policies.DeleteRetryPolicy(delete)
    gone = denied(
        lambda: policies.GetRetryPolicy(submit_pb2.RetryPolicyGetRequest(name=POLICY_NAME))
    )
    assert gone.code() == grpc.StatusCode.NOT_FOUND


class StreamCounter(grpc.UnaryStreamClientInterceptor):
    """Counts the streams a client opens on a channel."""

    def __init__(self) -> None:
        self.count = 0

    def intercept_unary_stream(self, continuation, client_call_details, request):
        self.count += 1
        return continuation(client_call_details, request)


def test_an_idle_stream_is_reconnected_by_the_client_without_gap_or_repeat(flows):
    """The client reconnects a stream on which nothing arrived for ``event_timeout``, from
    the last message id it saw. The job's phases are further apart than that, so the stream
    is reconnected several times while the job runs."""
    admin = flows.client()
    make_queue(admin, "reconnecting")
    opened = StreamCounter()
    channel = grpc.intercept_channel(flows.channel(ADMIN), opened)
    impatient = ArmadaClient(channel, event_timeout=timedelta(seconds=1))
    pinned = {"kubernetes.io/hostname": "worker-1"}
    slow = {FAKE + "pendingDuration": "2500ms"}
    (job_id,) = submit(
        admin,
        "reconnecting",
        "slow",
        [item(admin, duration="2500ms", annotations=slow, required_node_labels=pinned)],
    )
    events = watch(flows, impatient, "reconnecting", "slow", seen((job_id, "succeeded")))
    assert kinds(events, job_id) == TO_SUCCESS
    ids = [int(e.id) for e in events]
    assert ids == sorted(set(ids))
    assert of_job(events, job_id)[-1].message.node_name == "worker-1"  # requiredNodeLabels
    assert opened.count >= 2  # the client did reconnect (a phase lasts longer than 1 s)


def test_permission_denied_names_the_permission(flows):
    admin, outsider, member = flows.client(), flows.client(OUTSIDER), flows.client(MEMBER)
    grant = Permissions([Subject(kind="User", name=MEMBER)], ["submit", "watch"])
    make_queue(admin, "guarded", permissions=[grant])
    (job_id,) = submit(member, "guarded", "mine", [item(member, duration="1h")])

    error = denied(lambda: outsider.create_queue(outsider.create_queue_request("x", 1.0)))
    assert error.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "create_queue" in error.details()
    error = denied(lambda: outsider.submit_jobs("guarded", "theirs", [item(outsider)]))
    assert error.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "'submit'" in error.details() and "submit_any_jobs" in error.details()
    for client, who in ((outsider, OUTSIDER), (member, MEMBER)):
        error = denied(lambda client=client: client.cancel_jobs("guarded", "mine", job_id=job_id))
        assert error.code() == grpc.StatusCode.PERMISSION_DENIED, who
        assert "'cancel'" in error.details() and "cancel_any_jobs" in error.details()
    error = denied(lambda: member.reprioritize_jobs(5, [job_id], "mine", "guarded"))
    assert error.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "reprioritize_any_jobs" in error.details()
    error = denied(lambda: member.preempt_jobs("guarded", "mine", job_id))
    assert error.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "preempt_any_jobs" in error.details()
    error = denied(lambda: flows.policies(MEMBER).CreateRetryPolicy(gpu_policy(1)))
    assert error.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "create_retry_policy" in error.details()
    error = denied(lambda: job_set_events(outsider, "guarded", "mine"))
    assert error.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "watch_all_events" in error.details()
    error = denied(lambda: outsider.get_job_status([job_id]))
    assert error.code() == grpc.StatusCode.PERMISSION_DENIED

    # The refused submit wrote nothing: its job set has no event at all.
    missing = denied(lambda: watch(flows, admin, "guarded", "theirs", lambda events: False))
    assert missing.code() == grpc.StatusCode.NOT_FOUND
    # Without credentials nobody is let in.
    nobody = denied(lambda: flows.client(None).get_queue("guarded"))
    assert nobody.code() == grpc.StatusCode.UNAUTHENTICATED
    admin.cancel_jobs("guarded", "mine", job_id=job_id)
    watch(flows, member, "guarded", "mine", seen((job_id, "cancelled")))


def test_a_bad_job_is_invalid_argument_naming_the_field_and_writes_nothing(flows):
    from armada.models import Job

    admin = flows.client()
    make_queue(admin, "strict")
    good = item(admin)
    bad_memory = item(admin, pod_spec=pod_spec(memory="lots"))
    error = denied(lambda: admin.submit_jobs("strict", "bad", [good, bad_memory]))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "jobRequestItems[1].podSpec.containers[0].resources" in error.details()
    assert "jobRequestItems[0]" not in error.details()
    bad_fake = item(admin, annotations={FAKE + "exitCode": "three"})
    error = denied(lambda: admin.submit_jobs("strict", "bad", [good, bad_fake]))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert f"jobRequestItems[1].annotations[{FAKE}exitCode]" in error.details()
    two_specs = item(admin, pod_spec=None, pod_specs=[pod_spec(), pod_spec()])
    error = denied(lambda: admin.submit_jobs("strict", "bad", [two_specs]))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "jobRequestItems[0].podSpecs" in error.details()
    error = denied(lambda: admin.submit_jobs("strict", "", [good]))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT and "jobSetId" in error.details()
    error = denied(lambda: admin.create_queue(admin.create_queue_request("half", 0.5)))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "priorityFactor" in error.details()
    missing = denied(lambda: admin.get_queue("half"))
    assert missing.code() == grpc.StatusCode.NOT_FOUND

    # Nothing of any refused submit is stored, and nothing reached the event stream.
    assert not Job.objects.filter(queue_id="strict").exists()
    none = denied(lambda: watch(flows, admin, "strict", "bad", lambda events: False))
    assert none.code() == grpc.StatusCode.NOT_FOUND
