"""Recorded calls of Armada's REST gateway: for each path of Armada's ``api.swagger.json``, a
request as Armada's clients send it and the whole answer Armada's gateway gives, written from
what its Go structs write through Go's ``encoding/json`` (json tags, ``omitempty``, numbers
for 64-bit integers and enums, ``"Fail"``/``"Retry"`` for retry actions, oneofs under their
Go field name, gogo timestamps as ``{"seconds", "nanos"}``).

The recordings form one scenario, replayed in order (tests/wire/test_gateway_recordings.py):
a later request may use a value an earlier answer held (``Ref("job1")``, captured where the
answer has ``Capture("job1")``). Values that differ from run to run are matched by shape
(:data:`ID`, :data:`TIME`, :data:`TEXT`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Like:
    """A value matched by shape: its JSON type, and a pattern for text."""

    kind: type | tuple[type, ...]
    pattern: str = ""
    what: str = ""

    def matches(self, value: Any) -> bool:
        if isinstance(value, bool) or not isinstance(value, self.kind):
            return False
        return not self.pattern or re.fullmatch(self.pattern, str(value)) is not None


@dataclass(frozen=True)
class Capture:
    """Match like ``like`` and remember the value as ``name``."""

    name: str
    like: Like


@dataclass(frozen=True)
class Ref:
    """The value captured as ``name`` (in a request, a path or an expected answer)."""

    name: str


@dataclass(frozen=True)
class Timestamp:
    """gogo's ``types.Timestamp`` struct: ``{"seconds": n}`` plus ``"nanos"`` when not 0."""

    def matches(self, value: Any) -> bool:
        if not isinstance(value, dict) or "seconds" not in value:
            return False
        extra = set(value) - {"seconds", "nanos"}
        nanos = value.get("nanos", 1)
        return (
            not extra
            and isinstance(value["seconds"], int)
            and value["seconds"] > 1_500_000_000
            and isinstance(nanos, int)
            and 0 < nanos < 1_000_000_000
        )


ID = Like(str, r"[0-9a-z]{26}", "a job id")
TEXT = Like(str, r"(?s).+", "some text")
TIME = Timestamp()


def capture_id(name: str) -> Capture:
    return Capture(name, ID)


@dataclass(frozen=True)
class Recording:
    name: str
    method: str  # the gRPC method the path stands for
    verb: str
    path: str  # may hold "{job1}": a captured value
    request: Any  # the JSON body (None: no body)
    status: int
    response: Any  # the whole JSON answer; for a stream, the list of its lines
    query: dict[str, str] = field(default_factory=dict)


CONTAINER = {
    "name": "main",
    "image": "busybox:latest",
    "command": ["sleep", "1"],
    "resources": {
        "requests": {"cpu": "100m", "memory": "64Mi"},
        "limits": {"cpu": "100m", "memory": "64Mi"},
    },
}
QUEUE = {
    "name": "rec",
    "priorityFactor": 3,
    "userOwners": ["root"],
    "groupOwners": ["ops"],
    "permissions": [{"subjects": [{"kind": "Group", "name": "ops"}], "verbs": ["submit"]}],
    "labels": {"team": "a"},
}
POLICY = {
    "name": "rec-policy",
    "retryLimit": 3,
    "defaultAction": "Fail",
    "rules": [
        {"action": "Retry", "onCategory": "oom", "mutate": {"affinity": {"avoidSameNode": True}}},
        {
            "action": "Retry",
            "onCategory": "oom",
            "onSubcategory": "big",
            "mutate": {"resources": {"memory": {"factor": 1.5}}},
        },
    ],
}
END = {"result": {"Event": {"end": {}}}}
SUBMIT_ITEM = {
    "priority": 1,
    "namespace": "default",
    "clientId": "client-1",
    "labels": {"app": "rec"},
    "annotations": {"armadaproject.io/externalJobUri": "ext://one"},
    "podSpec": {"containers": [CONTAINER]},
}


def _error(code: int, message: Any) -> dict[str, Any]:
    return {"error": message, "code": code, "message": message}


RECORDINGS: list[Recording] = [
    Recording(
        "create a queue (an unknown key is ignored, keys match in any case)",
        "api.Submit/CreateQueue",
        "POST",
        "/v1/queue",
        {"Name": "rec", "priorityFactor": 2, "userOwners": ["root"], "colour": "red"},
        200,
        {},
    ),
    Recording(
        "create it again",
        "api.Submit/CreateQueue",
        "POST",
        "/v1/queue",
        {"name": "rec", "priorityFactor": 1},
        409,
        _error(6, TEXT),
    ),
    Recording("update the queue", "api.Submit/UpdateQueue", "PUT", "/v1/queue/rec", QUEUE, 200, {}),
    Recording("get the queue", "api.Submit/GetQueue", "GET", "/v1/queue/rec", None, 200, QUEUE),
    Recording(
        "get a queue that is not there",
        "api.Submit/GetQueue",
        "GET",
        "/v1/queue/nope",
        None,
        404,
        _error(5, TEXT),
    ),
    Recording(
        "create queues, one of them there already",
        "api.Submit/CreateQueues",
        "POST",
        "/v1/batched/create_queues",
        {"queues": [{"name": "rec-b", "priorityFactor": 1}, {"name": "rec", "priorityFactor": 1}]},
        200,
        {"failedQueues": [{"queue": {"name": "rec", "priorityFactor": 1}, "error": TEXT}]},
    ),
    Recording(
        "update queues, one of them missing",
        "api.Submit/UpdateQueues",
        "PUT",
        "/v1/batched/update_queues",
        {
            "queues": [
                {"name": "rec-b", "priorityFactor": 2, "cordoned": True},
                {"name": "nope", "priorityFactor": 1},
            ]
        },
        200,
        {"failedQueues": [{"queue": {"name": "nope", "priorityFactor": 1}, "error": TEXT}]},
    ),
    Recording(
        "list the queues: the oneof under its Go name, as Lookout reads it",
        "api.Submit/GetQueues",
        "GET",
        "/v1/batched/queues",
        None,
        200,
        [
            {"result": {"Event": {"queue": QUEUE}}},
            {
                "result": {
                    "Event": {"queue": {"name": "rec-b", "priorityFactor": 2, "cordoned": True}}
                }
            },
            END,
        ],
        query={"num": "10"},
    ),
    Recording(
        "create a retry policy with the short action names",
        "api.RetryPolicyService/CreateRetryPolicy",
        "POST",
        "/v1/retry-policy",
        {"name": "rec-policy", "retryLimit": 2, "defaultAction": "Fail", "rules": []},
        200,
        {},
    ),
    Recording(
        "update it with actions by number and by proto name",
        "api.RetryPolicyService/UpdateRetryPolicy",
        "PUT",
        "/v1/retry-policy/rec-policy",
        {
            **POLICY,
            "defaultAction": 1,
            "rules": [
                {**POLICY["rules"][0], "action": "RETRY_ACTION_RETRY"},
                {**POLICY["rules"][1], "action": "retry"},
            ],
        },
        200,
        {},
    ),
    Recording(
        "get the policy: actions as Fail/Retry",
        "api.RetryPolicyService/GetRetryPolicy",
        "GET",
        "/v1/retry-policy/rec-policy",
        None,
        200,
        POLICY,
    ),
    Recording(
        "list the policies",
        "api.RetryPolicyService/GetRetryPolicies",
        "GET",
        "/v1/retry-policies",
        None,
        200,
        {"retryPolicies": [POLICY]},
    ),
    Recording(
        "a policy action that is no action",
        "api.RetryPolicyService/CreateRetryPolicy",
        "POST",
        "/v1/retry-policy",
        {"name": "bad-policy", "defaultAction": "Maybe"},
        400,
        _error(3, Like(str, r"invalid request: defaultAction: .*Maybe.*")),
    ),
    Recording(
        "submit two jobs",
        "api.Submit/SubmitJobs",
        "POST",
        "/v1/job/submit",
        {
            "queue": "rec",
            "jobSetId": "set",
            "jobRequestItems": [SUBMIT_ITEM, {**SUBMIT_ITEM, "clientId": "client-2"}],
        },
        200,
        {"jobResponseItems": [{"jobId": capture_id("job1")}, {"jobId": capture_id("job2")}]},
    ),
    Recording(
        "the jobs' states: numbers, 0 (QUEUED) written in a map",
        "api.Jobs/GetJobStatus",
        "POST",
        "/v1/job/status",
        {"jobIds": [Ref("job1"), "no-such-job"]},
        200,
        {"jobStates": {"{job1}": 0, "no-such-job": 5}},
    ),
    Recording(
        "the jobs of an external job URI",
        "api.Jobs/GetJobStatusUsingExternalJobUri",
        "POST",
        "/v1/job/statusUsingExternalJobUri",
        {"queue": "rec", "jobset": "set", "externalJobUri": "ext://one"},
        200,
        {"jobStates": {"{job1}": 0, "{job2}": 2}},
    ),
    Recording(
        "a job's details with its spec and runs (the run made by the scenario)",
        "api.Jobs/GetJobDetails",
        "POST",
        "/v1/job/details",
        {"jobIds": [Ref("job2")], "expandJobSpec": True, "expandJobRun": True},
        200,
        {
            "jobDetails": {
                "{job2}": {
                    "jobId": Ref("job2"),
                    "queue": "rec",
                    "jobset": "set",
                    "namespace": "default",
                    "state": 2,
                    "submittedTs": TIME,
                    "lastTransitionTs": TIME,
                    "latestRunId": "rec-run",
                    "jobSpec": {
                        "id": Ref("job2"),
                        "clientId": "client-2",
                        "jobSetId": "set",
                        "queue": "rec",
                        "namespace": "default",
                        # (our store keeps no labels: Armada's would be here)
                        "annotations": {"armadaproject.io/externalJobUri": "ext://one"},
                        "owner": "root",
                        "priority": 1,
                        "podSpec": {"containers": [CONTAINER]},
                        "created": TIME,
                    },
                    "jobRuns": [
                        {
                            "runId": "rec-run",
                            "jobId": Ref("job2"),
                            "state": 3,
                            "cluster": "cluster-1",
                            "node": "node-1",
                            "leasedTs": TIME,
                            "pendingTs": TIME,
                            "startedTs": TIME,
                        }
                    ],
                }
            }
        },
    ),
    Recording(
        "a run's details",
        "api.Jobs/GetJobRunDetails",
        "POST",
        "/v1/run/details",
        {"runIds": ["rec-run", "no-such-run"]},
        200,
        {
            "jobRunDetails": {
                "rec-run": {
                    "runId": "rec-run",
                    "jobId": Ref("job2"),
                    "state": 3,
                    "cluster": "cluster-1",
                    "node": "node-1",
                    "leasedTs": TIME,
                    "pendingTs": TIME,
                    "startedTs": TIME,
                }
            }
        },
    ),
    Recording(
        "the jobs' errors: none yet",
        "api.Jobs/GetJobErrors",
        "POST",
        "/v1/job/errors",
        {"jobIds": [Ref("job1")]},
        200,
        {"jobErrors": {"{job1}": ""}},
    ),
    Recording(
        "the active queues by pool",
        "api.Jobs/GetActiveQueues",
        "POST",
        "/v1/queues/active",
        {},
        200,
        {"activeQueuesByPool": {"pool-1": {"queues": ["rec"]}}},
    ),
    Recording(
        "reprioritize a job",
        "api.Submit/ReprioritizeJobs",
        "POST",
        "/v1/job/reprioritize",
        {"jobIds": [Ref("job1")], "queue": "rec", "jobSetId": "set", "newPriority": 5},
        200,
        {"reprioritizationResults": {"{job1}": ""}},
    ),
    Recording(
        "preempt the running job",
        "api.Submit/PreemptJobs",
        "POST",
        "/v1/job/preempt",
        {"queue": "rec", "jobSetId": "set", "jobIds": [Ref("job2")], "reason": "make room"},
        200,
        {"preemptionResults": {"{job2}": ""}},
    ),
    Recording(
        "cancel a job",
        "api.Submit/CancelJobs",
        "POST",
        "/v1/job/cancel",
        {"queue": "rec", "jobSetId": "set", "jobIds": [Ref("job1")], "reason": "done"},
        200,
        {"cancelledIds": [Ref("job1")]},
    ),
    Recording(
        "cancel the job set, states by name and by number",
        "api.Submit/CancelJobSet",
        "POST",
        "/v1/jobset/cancel",
        {
            "queue": "rec",
            "jobSetId": "set",
            "filter": {"states": ["QUEUED", 1, "RUNNING"]},
            "reason": "r",
        },
        200,
        {},
    ),
    Recording(
        "the job set's events: the message as its oneof's wrapper alone",
        "api.Event/GetJobSetEvents",
        "POST",
        "/v1/job-set/rec/set",
        {"watch": False, "errorIfMissing": True},
        200,
        "events",  # built by the test from the scenario's jobs (see there)
    ),
    Recording(
        "delete the policy",
        "api.RetryPolicyService/DeleteRetryPolicy",
        "DELETE",
        "/v1/retry-policy/rec-policy",
        None,
        200,
        {},
    ),
    Recording(
        "delete a queue", "api.Submit/DeleteQueue", "DELETE", "/v1/queue/rec-b", None, 200, {}
    ),
]

# Paths of Armada's api.swagger.json whose gRPC method this server does not serve (yet).
UNSERVED: dict[tuple[str, str], str] = {}
