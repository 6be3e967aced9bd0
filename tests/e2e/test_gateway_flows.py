"""Armada's REST gateway paths with plain HTTP (``requests``), on real processes: the web
process (uvicorn) answering ``/v1/...`` beside the grpc process, a Celery scheduler with beat
and a Celery executor on the fake backend, on PostgreSQL and Redis.

The flows of ``test_armada_client_flows`` as a script that calls Armada's REST API makes
them, in the JSON Armada's gateway speaks (Go's encoding/json over its structs: json-tag
field names, enums and 64-bit integers as numbers, retry actions as "Fail"/"Retry", a false
or empty field left out, the queue listing's oneof under "Event", timestamps as
``{"seconds", "nanos"}``): a queue, jobs, the job set's event
stream (``POST /v1/job-set/{queue}/{id}``, one ``{"result": ...}`` per line) followed to
success and to a failure a retry policy retries (``retryable``, ``failureCategory``,
``failureSubcategory`` in the JSON), cancel by id and by state, reprioritize, preempt,
retry-policy CRUD, job status and details, 403 naming the missing permission, 400 naming the
field, 401 without credentials. One system serves the module; each test has queues of its
own.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.gateway_calls import (
    body_of,
    call,
    container,
    follow,
    item,
    job_set_events,
    kind,
    kinds,
    lines,
    make_queue,
    of_job,
    ok,
    refused,
    seen,
    states,
    submit,
    wait_for_state,
)
from tests.e2e.wire_system import (
    ADMIN,
    FAILED_AND_RETRIED,
    FAKE,
    GPU_FAULT,
    MEMBER,
    NOWHERE,
    OUTSIDER,
    TO_SUCCESS,
    Flows,
    module_database,
    module_system,
)

pytestmark = [pytest.mark.e2e]
POLICY_NAME = "gpu-flaky-http"
# grpc-gateway's error codes (gRPC's numbers) in an error body.
INVALID_ARGUMENT, NOT_FOUND, ALREADY_EXISTS, PERMISSION_DENIED = 3, 5, 6, 7
FAILED_PRECONDITION, UNAUTHENTICATED = 9, 16


@pytest.fixture(scope="module")
def transactional_db(django_db_setup, django_db_blocker) -> Iterator[None]:
    """One database for the module's tests, flushed at its end (``module_database``)."""
    yield from module_database(django_db_blocker)


@pytest.fixture(scope="module")
def gateway(transactional_db, tmp_path_factory) -> Iterator[Flows]:
    yield from module_system(tmp_path_factory, "gateway-flows")


def test_a_queue_jobs_streamed_to_success_and_the_job_queries(gateway):
    grant = {"subjects": [{"kind": "User", "name": MEMBER}], "verbs": ["submit", "watch"]}
    queue = make_queue(gateway, "web-flows", userOwners=[ADMIN], permissions=[grant])
    assert queue == {
        "name": "web-flows",
        "priorityFactor": 1.0,
        "userOwners": [ADMIN],
        "permissions": [grant],
    }
    taken = call(gateway, "POST", "/v1/queue", {"name": "web-flows", "priorityFactor": 1})
    assert "web-flows" in refused(taken, 409, ALREADY_EXISTS)
    # PUT replaces the queue; labels are a map.
    updated = {**queue, "labels": {"team": "ml"}}
    assert ok(call(gateway, "PUT", "/v1/queue/web-flows", updated)) == {}
    assert ok(call(gateway, "GET", "/v1/queue/web-flows"))["labels"] == {"team": "ml"}
    listing = lines(call(gateway, "GET", "/v1/batched/queues"))
    assert listing[-1] == {"result": {"Event": {"end": {}}}}
    assert "web-flows" in [line["result"]["Event"]["queue"]["name"] for line in listing[:-1]]

    first, second = submit(gateway, "web-flows", "ok", [item(), item(duration="2s")])
    events = follow(gateway, "web-flows", "ok", seen((first, "succeeded"), (second, "succeeded")))
    for job_id in (first, second):
        assert kinds(events, job_id) == TO_SUCCESS
    submitted, *_, succeeded = [body_of(e) for e in of_job(events, first)]
    job = submitted["job"]
    assert (job["id"], job["queue"], job["jobSetId"], job["owner"]) == (
        first,
        "web-flows",
        "ok",
        ADMIN,
    )
    # The pod spec inside is Kubernetes' JSON: quantities are strings.
    assert job["podSpec"]["containers"][0]["resources"]["limits"] == {
        "cpu": "100m",
        "memory": "64Mi",
    }
    assert job["annotations"][FAKE + "duration"] == "1s"
    assert succeeded["clusterId"] == "e2e" and succeeded["nodeName"].startswith("worker")
    assert succeeded["podName"] == f"armada-{first}-0"
    assert set(succeeded["created"]) <= {"seconds", "nanos"}
    assert succeeded["created"]["seconds"] > 1_500_000_000
    ids = [e["id"] for e in events]
    assert all(isinstance(i, str) for i in ids) and [int(i) for i in ids] == sorted(map(int, ids))

    # From a message id on: the events after it, no repeat.
    middle = len(events) // 2
    rest = job_set_events(gateway, "web-flows", "ok", fromMessageId=events[middle]["id"])
    assert [e["id"] for e in rest] == ids[middle + 1 :]

    unknown = "01unknownjob0000000000000"
    assert states(gateway, first, second, unknown) == {
        first: "SUCCEEDED",
        second: "SUCCEEDED",
        unknown: "UNKNOWN",
    }
    body = {"jobIds": [first, unknown], "expandJobRun": True}
    details = ok(call(gateway, "POST", "/v1/job/details", body))["jobDetails"]
    assert list(details) == [first]
    detail = details[first]
    assert (detail["queue"], detail["jobset"], detail["state"]) == ("web-flows", "ok", 3)
    (run,) = detail["jobRuns"]
    assert run["runId"] == detail["latestRunId"]
    assert (run["state"], run["cluster"], run["node"]) == (
        4,  # RUN_STATE_SUCCEEDED
        "e2e",
        succeeded["nodeName"],
    )
    runs = ok(call(gateway, "POST", "/v1/run/details", {"runIds": [run["runId"]]}))
    assert runs["jobRunDetails"][run["runId"]]["jobId"] == first
    errors = ok(call(gateway, "POST", "/v1/job/errors", {"jobIds": [first]}))
    assert errors == {"jobErrors": {first: ""}}

    # The member the queue grants submit and watch to.
    (theirs,) = submit(gateway, "web-flows", "member", [item()], user=MEMBER)
    follow(gateway, "web-flows", "member", seen((theirs, "succeeded")), user=MEMBER)


def test_the_same_client_id_submits_one_job(gateway):
    make_queue(gateway, "web-idempotent")
    (original,) = submit(gateway, "web-idempotent", "s", [item(clientId="nightly-1")])
    (again,) = submit(gateway, "web-idempotent", "s", [item(clientId="nightly-1")])
    assert again == original
    known, new = submit(
        gateway, "web-idempotent", "s", [item(clientId="nightly-1"), item(clientId="nightly-2")]
    )
    assert known == original and new != original
    events = follow(
        gateway, "web-idempotent", "s", seen((original, "succeeded"), (new, "succeeded"))
    )
    submitted = [body_of(e)["jobId"] for e in events if kind(e) == "submitted"]
    assert sorted(submitted) == sorted([original, new])


def gpu_policy(retry_limit: int) -> dict:
    return {
        "name": POLICY_NAME,
        "retryLimit": retry_limit,
        "defaultAction": "Fail",
        "rules": [
            {"action": "Fail", "onCategory": "user-error"},
            {
                "action": "Retry",
                "onCategory": "gpu",
                "onSubcategory": "transient",
                "mutate": {"affinity": {"avoidSameNode": True}},
            },
        ],
    }


def test_retry_policy_crud_and_a_retried_failure_on_the_stream(gateway):
    path = f"/v1/retry-policy/{POLICY_NAME}"
    by_proto_name = {**gpu_policy(3), "defaultAction": "RETRY_ACTION_FAIL"}
    assert ok(call(gateway, "POST", "/v1/retry-policy", by_proto_name)) == {}
    assert ok(call(gateway, "GET", path)) == gpu_policy(3)
    taken = call(gateway, "POST", "/v1/retry-policy", gpu_policy(1))
    assert POLICY_NAME in refused(taken, 409, ALREADY_EXISTS)
    assert ok(call(gateway, "PUT", path, gpu_policy(1))) == {}
    assert ok(call(gateway, "GET", path)) == gpu_policy(1)
    listed = ok(call(gateway, "GET", "/v1/retry-policies"))["retryPolicies"]
    assert gpu_policy(1) in listed
    missing = call(gateway, "PUT", "/v1/retry-policy/nope", {**gpu_policy(1), "name": "nope"})
    refused(missing, 404, NOT_FOUND)
    bad_action = {**gpu_policy(1), "name": "bad", "defaultAction": "RETRY_ACTION_MAYBE"}
    message = refused(call(gateway, "POST", "/v1/retry-policy", bad_action), 400, INVALID_ARGUMENT)
    assert "defaultAction" in message
    refused(call(gateway, "GET", "/v1/retry-policy/bad"), 404, NOT_FOUND)  # nothing written

    queue = make_queue(gateway, "web-retrying")
    assert (
        ok(
            call(
                gateway, "PUT", "/v1/queue/web-retrying", {**queue, "retryPolicies": [POLICY_NAME]}
            )
        )
        == {}
    )
    in_use = refused(call(gateway, "DELETE", path), 400, FAILED_PRECONDITION)
    assert "web-retrying" in in_use

    (job_id,) = submit(gateway, "web-retrying", "gpu", [item("2s", GPU_FAULT)])

    def last_failure(events: list[dict]) -> bool:
        return any(
            kind(e) == "failed" and not body_of(e).get("retryable") for e in of_job(events, job_id)
        )

    events = follow(gateway, "web-retrying", "gpu", last_failure)
    assert kinds(events, job_id) == FAILED_AND_RETRIED
    first, last = [body_of(e) for e in of_job(events, job_id) if kind(e) == "failed"]
    assert first["retryable"] is True
    assert "retryable" not in last  # false, left out as Armada's gateway leaves it
    for failure in (first, last):
        assert (failure["failureCategory"], failure["failureSubcategory"]) == ("gpu", "transient")
        assert failure["clusterId"] == "e2e"
        assert failure["exitCodes"] == {"main": 3}
        (status,) = failure["containerStatuses"]
        assert status["name"] == "main" and status["exitCode"] == 3
        assert "CUDA error" in status["message"]
    assert first["nodeName"] != last["nodeName"]  # avoidSameNode
    assert states(gateway, job_id) == {job_id: "FAILED"}
    errors = ok(call(gateway, "POST", "/v1/job/errors", {"jobIds": [job_id]}))["jobErrors"]
    assert "retry limit" in errors[job_id]

    # Detached, the policy can go; deleting it again succeeds too.
    assert ok(call(gateway, "PUT", "/v1/queue/web-retrying", queue)) == {}
    assert ok(call(gateway, "DELETE", path)) == {}
    assert ok(call(gateway, "DELETE", path)) == {}
    refused(call(gateway, "GET", path), 404, NOT_FOUND)


def test_cancel_by_id_and_by_state(gateway):
    make_queue(gateway, "web-cancelling")
    runner, single = submit(gateway, "web-cancelling", "c", [item("1h"), item("1h")])
    (waiter,) = submit(gateway, "web-cancelling", "c", [item(requiredNodeLabels=NOWHERE)])
    for job_id in (runner, single):
        wait_for_state(gateway, job_id, "RUNNING")
    assert states(gateway, waiter) == {waiter: "QUEUED"}

    body = {"queue": "web-cancelling", "jobSetId": "c", "jobIds": [single], "reason": "not needed"}
    assert ok(call(gateway, "POST", "/v1/job/cancel", body)) == {"cancelledIds": [single]}
    by_state = {"queue": "web-cancelling", "jobSetId": "c", "filter": {"states": ["QUEUED"]}}
    assert ok(call(gateway, "POST", "/v1/jobset/cancel", by_state)) == {}
    events = follow(
        gateway, "web-cancelling", "c", seen((single, "cancelled"), (waiter, "cancelled"))
    )
    assert kinds(events, single)[-2:] == ["cancelling", "cancelled"]
    cancelled = body_of(of_job(events, single)[-1])
    assert cancelled["requestor"] == ADMIN and cancelled["reason"] == "not needed"
    assert states(gateway, runner) == {runner: "RUNNING"}

    finished = {**by_state, "filter": {"states": ["SUCCEEDED"]}}
    message = refused(call(gateway, "POST", "/v1/jobset/cancel", finished), 400, INVALID_ARGUMENT)
    assert "filter.states[0]" in message
    no_such = {**by_state, "filter": {"states": ["DONE"]}}
    message = refused(call(gateway, "POST", "/v1/jobset/cancel", no_such), 400, INVALID_ARGUMENT)
    assert "filter.states" in message
    assert states(gateway, runner) == {runner: "RUNNING"}  # neither changed anything
    running = {**by_state, "filter": {"states": ["PENDING", "RUNNING"]}}
    assert ok(call(gateway, "POST", "/v1/jobset/cancel", running)) == {}
    follow(gateway, "web-cancelling", "c", seen((runner, "cancelled")))
    assert states(gateway, runner) == {runner: "CANCELLED"}


def test_reprioritize_a_waiting_job(gateway):
    make_queue(gateway, "web-reprioritizing")
    (job_id,) = submit(gateway, "web-reprioritizing", "r", [item(requiredNodeLabels=NOWHERE)])
    body = {"queue": "web-reprioritizing", "jobSetId": "r", "jobIds": [job_id], "newPriority": 7}
    answer = ok(call(gateway, "POST", "/v1/job/reprioritize", body))
    assert answer == {"reprioritizationResults": {job_id: ""}}
    events = follow(gateway, "web-reprioritizing", "r", seen((job_id, "reprioritized")))
    reprioritized = body_of(of_job(events, job_id)[-1])
    assert reprioritized["newPriority"] == 7 and reprioritized["requestor"] == ADMIN
    fraction = call(gateway, "POST", "/v1/job/reprioritize", {**body, "newPriority": 2.5})
    assert "newPriority" in refused(fraction, 400, INVALID_ARGUMENT)
    cancel = {"queue": "web-reprioritizing", "jobSetId": "r"}
    assert ok(call(gateway, "POST", "/v1/jobset/cancel", cancel)) == {}


def test_preempt_a_running_job(gateway):
    make_queue(gateway, "web-preempting")
    (job_id,) = submit(gateway, "web-preempting", "p", [item("1h")])
    wait_for_state(gateway, job_id, "RUNNING")
    body = {"queue": "web-preempting", "jobSetId": "p", "jobIds": [job_id], "reason": "make room"}
    assert ok(call(gateway, "POST", "/v1/job/preempt", body)) == {"preemptionResults": {job_id: ""}}
    events = follow(gateway, "web-preempting", "p", seen((job_id, "preempted")))
    assert kinds(events, job_id)[-2:] == ["preempting", "preempted"]
    preempting, preempted = [body_of(e) for e in of_job(events, job_id)[-2:]]
    assert preempting["reason"] == "make room" and preempting["requestor"] == ADMIN
    assert preempted["clusterId"] == "e2e" and preempted["requestor"] == ADMIN
    assert states(gateway, job_id) == {job_id: "PREEMPTED"}
    again = ok(call(gateway, "POST", "/v1/job/preempt", body))["preemptionResults"]
    assert "not running" in again[job_id]


def test_forbidden_names_the_permission_and_no_credentials_is_401(gateway):
    grant = {"subjects": [{"kind": "User", "name": MEMBER}], "verbs": ["submit", "watch"]}
    make_queue(gateway, "web-guarded", permissions=[grant])
    (job_id,) = submit(gateway, "web-guarded", "mine", [item("1h")], user=MEMBER)
    job_set = {"queue": "web-guarded", "jobSetId": "mine"}

    def forbidden(method: str, path: str, body: Any, user: str) -> str:
        return refused(call(gateway, method, path, body, user=user), 403, PERMISSION_DENIED)

    assert "create_queue" in forbidden("POST", "/v1/queue", {"name": "mine"}, OUTSIDER)
    submit_body = {**job_set, "jobSetId": "theirs", "jobRequestItems": [item()]}
    message = forbidden("POST", "/v1/job/submit", submit_body, OUTSIDER)
    assert "'submit'" in message and "submit_any_jobs" in message
    for user in (OUTSIDER, MEMBER):
        message = forbidden("POST", "/v1/job/cancel", {**job_set, "jobIds": [job_id]}, user)
        assert "'cancel'" in message and "cancel_any_jobs" in message
        assert "cancel_any_jobs" in forbidden("POST", "/v1/jobset/cancel", job_set, user)
    reprioritize = {**job_set, "jobIds": [job_id], "newPriority": 3}
    assert "reprioritize_any_jobs" in forbidden(
        "POST", "/v1/job/reprioritize", reprioritize, MEMBER
    )
    preempt = {**job_set, "jobIds": [job_id]}
    assert "preempt_any_jobs" in forbidden("POST", "/v1/job/preempt", preempt, MEMBER)
    policy = {**gpu_policy(1), "name": "members-policy"}
    assert "create_retry_policy" in forbidden("POST", "/v1/retry-policy", policy, MEMBER)
    stream = call(gateway, "POST", "/v1/job-set/web-guarded/mine", {"watch": False}, user=OUTSIDER)
    assert "watch_all_events" in refused(stream, 403, PERMISSION_DENIED)
    forbidden("POST", "/v1/job/status", {"jobIds": [job_id]}, OUTSIDER)

    # Nothing was done: the refused submit's job set has no event, the job still runs.
    empty = call(
        gateway, "POST", "/v1/job-set/web-guarded/theirs", {"watch": False, "errorIfMissing": True}
    )
    refused(empty, 404, NOT_FOUND)
    wait_for_state(gateway, job_id, "RUNNING")
    nobody = call(gateway, "POST", "/v1/job/submit", submit_body, user=None)
    refused(nobody, 401, UNAUTHENTICATED)  # by the body guard, in the gateway's shape
    assert ok(call(gateway, "POST", "/v1/jobset/cancel", job_set)) == {}
    follow(gateway, "web-guarded", "mine", seen((job_id, "cancelled")), user=MEMBER)


def test_bad_input_is_400_naming_the_field_and_writes_nothing(gateway):
    from armada.models import Job

    make_queue(gateway, "web-strict")

    def invalid(body: dict) -> str:
        response = call(gateway, "POST", "/v1/job/submit", body)
        return refused(response, 400, INVALID_ARGUMENT)

    def request(*items: dict) -> dict:
        return {"queue": "web-strict", "jobSetId": "bad", "jobRequestItems": list(items)}

    bad_memory = item()
    bad_memory["podSpec"] = {"containers": [container(memory="lots")]}
    message = invalid(request(item(), bad_memory))
    assert "jobRequestItems[1].podSpec.containers[0].resources" in message
    assert "jobRequestItems[0]" not in message
    message = invalid(request(item(annotations={FAKE + "exitCode": "three"})))
    assert f"jobRequestItems[0].annotations[{FAKE}exitCode]" in message
    message = invalid(request({**item(), "priority": "high"}))
    assert "jobRequestItems[0].priority" in message
    message = invalid(request({**item(), "podSpecs": [item()["podSpec"]] * 2}))
    assert "jobRequestItems[0].podSpec" in message
    message = invalid({**request(item()), "jobSetId": ""})
    assert "jobSetId" in message
    half = call(gateway, "POST", "/v1/queue", {"name": "web-half", "priorityFactor": 0.5})
    assert "priorityFactor" in refused(half, 400, INVALID_ARGUMENT)
    refused(call(gateway, "GET", "/v1/queue/web-half"), 404, NOT_FOUND)

    assert not Job.objects.filter(queue_id="web-strict").exists()
    empty = call(
        gateway, "POST", "/v1/job-set/web-strict/bad", {"watch": False, "errorIfMissing": True}
    )
    refused(empty, 404, NOT_FOUND)
