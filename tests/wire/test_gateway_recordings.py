"""Replays the recorded calls of Armada's REST gateway (tests/wire/gateway_recordings.py)
against ours, with the real operations, and compares whole answers."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.db import connections
from django.test import AsyncClient

from armada.wire.http_rules import http_rules
from armada.wire.registry import load_operations
from tests.conftest import at
from tests.wire.gateway_calls import JSON, ROOT_AUTH
from tests.wire.gateway_recordings import (
    CONTAINER,
    ID,
    RECORDINGS,
    TIME,
    UNSERVED,
    Capture,
    Like,
    Recording,
    Ref,
    Timestamp,
)
from tests.wire.gateway_recordings_cluster import CLUSTER_RECORDINGS

pytestmark = pytest.mark.django_db

# The whole scenario, in order: Armada's api.swagger.json paths, then api.Node's and
# api.Executor's.
SCENARIO = [*RECORDINGS, *CLUSTER_RECORDINGS]

# Every path of Armada's pkg/api/api.swagger.json (binoculars and scheduler objects aside).
SWAGGER_PATHS = {
    ("POST", "/v1/batched/create_queues"),
    ("GET", "/v1/batched/queues"),
    ("PUT", "/v1/batched/update_queues"),
    ("POST", "/v1/job-set/{queue}/{id}"),
    ("POST", "/v1/job/cancel"),
    ("POST", "/v1/job/details"),
    ("POST", "/v1/job/errors"),
    ("POST", "/v1/job/preempt"),
    ("POST", "/v1/job/reprioritize"),
    ("POST", "/v1/job/status"),
    ("POST", "/v1/job/statusUsingExternalJobUri"),
    ("POST", "/v1/job/submit"),
    ("POST", "/v1/jobset/cancel"),
    ("POST", "/v1/node/cancel/{name}"),
    ("POST", "/v1/node/preempt/{name}"),
    ("POST", "/v1/queue"),
    ("GET", "/v1/queue/{name}"),
    ("PUT", "/v1/queue/{name}"),
    ("DELETE", "/v1/queue/{name}"),
    ("POST", "/v1/queues/active"),
    ("GET", "/v1/retry-policies"),
    ("POST", "/v1/retry-policy"),
    ("GET", "/v1/retry-policy/{name}"),
    ("PUT", "/v1/retry-policy/{name}"),
    ("DELETE", "/v1/retry-policy/{name}"),
    ("POST", "/v1/run/details"),
}


def _rule_of(recording: Recording) -> tuple[str, str]:
    rule = next(
        r for r in http_rules() if r.method == recording.method and r.verb == recording.verb
    )
    return rule.verb, rule.template


def test_every_swagger_path_has_a_recording_or_is_listed_as_not_served():
    load_operations()
    recorded = {_rule_of(r) for r in SCENARIO}
    assert SWAGGER_PATHS - recorded == set(UNSERVED), "paths with no recording"
    ours = {(r.verb, r.template): r.method for r in http_rules()}
    served = load_operations()
    # The unserved ones: no path here, or a path whose method nobody registered (501).
    still_unserved = {path for path in UNSERVED if ours.get(path) not in served}
    assert still_unserved == set(UNSERVED), (
        f"now served, record them: {set(UNSERVED) - still_unserved}"
    )


def _resolve(value: Any, names: dict[str, Any]) -> Any:
    """A request with its ``Ref``s and ``{name}`` keys replaced by the captured values."""
    if isinstance(value, Ref):
        return names[value.name]
    if isinstance(value, dict):
        return {_key(k, names): _resolve(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve(v, names) for v in value]
    return value


def _key(key: str, names: dict[str, Any]) -> str:
    if key.startswith("{") and key.endswith("}"):
        return names[key[1:-1]]
    return key


def match(expected: Any, actual: Any, names: dict[str, Any], where: str = "$") -> list[str]:
    """Where ``actual`` differs from ``expected`` (whole objects: no key more, none less)."""
    if isinstance(expected, Capture):
        if expected.like.matches(actual):
            names[expected.name] = actual
            return []
        return [f"{where}: {actual!r} is not {expected.like.what}"]
    if isinstance(expected, Like | Timestamp):
        return [] if expected.matches(actual) else [f"{where}: {actual!r} does not match"]
    if isinstance(expected, Ref):
        expected = names[expected.name]
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{where}: expected an object, got {actual!r}"]
        expected = {_key(k, names): v for k, v in expected.items()}
        problems = [f"{where}: unexpected key {k!r}" for k in actual if k not in expected]
        problems += [f"{where}: missing key {k!r}" for k in expected if k not in actual]
        for k in expected:
            if k in actual:
                problems += match(expected[k], actual[k], names, f"{where}.{k}")
        return problems
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [f"{where}: expected {len(expected)} items, got {actual!r}"]
        return [
            p
            for i, (e, a) in enumerate(zip(expected, actual, strict=True))
            for p in match(e, a, names, f"{where}[{i}]")
        ]
    if type(expected) is not type(actual) or expected != actual:
        return [f"{where}: expected {expected!r}, got {actual!r}"]
    return []


def test_the_matcher_compares_whole_bodies():
    names: dict[str, Any] = {}
    assert match({"a": 1}, {"a": 1, "b": 2}, names) == ["$: unexpected key 'b'"]
    assert match({"a": 1}, {}, names) == ["$: missing key 'a'"]
    assert match({"a": 1}, {"a": 1.0}, names)  # 1.0 is not Go's 1
    assert match({"t": TIME}, {"t": {"seconds": 1_700_000_000, "nanos": 5}}, names) == []
    assert match({"t": TIME}, {"t": "2024-01-01T00:00:00Z"}, names)
    assert match({"t": TIME}, {"t": {"seconds": 1_700_000_000, "nanos": 0}}, names)
    assert match([Capture("x", ID)], ["01hzzzzzzzzzzzzzzzzzzzzzzz"], names) == []
    assert match({"{x}": 1}, {"01hzzzzzzzzzzzzzzzzzzzzzzz": 1}, names) == []
    assert match(Like(str, "a+"), "b", names)


def _make_a_run(job_id: str) -> None:
    """The scenario's running job: a run on cluster-1's node-1 in pool-1 (the executor and
    its node registered, for the node and executor calls)."""
    from armada.core.states import JobState, RunState
    from armada.models import Executor, Job, Node, Run

    executor = Executor.objects.create(
        id="cluster-1", pool="pool-1", backend="fake", registered_at=at(0), last_heartbeat=at(0)
    )
    Node.objects.create(
        executor=executor, name="node-1", pool="pool-1", allocatable={}, last_seen=at(0)
    )
    Run.objects.create(
        id="rec-run",
        job_id=job_id,
        executor="cluster-1",
        node="node-1",
        pool="pool-1",
        state=RunState.RUNNING,
        leased_at=at(1.25),
        pending_at=at(2.5),
        running_at=at(3.75),
    )
    Job.objects.filter(id=job_id).update(state=JobState.RUNNING)


async def _send(client: AsyncClient, recording: Recording, names: dict) -> tuple[int, Any]:
    path = recording.path.format(**names)
    kwargs: dict[str, Any] = {"headers": ROOT_AUTH}
    if recording.request is not None:
        kwargs.update(data=json.dumps(_resolve(recording.request, names)), content_type=JSON)
    elif recording.query:
        kwargs["data"] = recording.query
    if recording.verb == "GET":
        response = await client.get(path, **kwargs)
    else:
        response = await client.generic(recording.verb, path, **kwargs)
    if response.streaming:
        raw = b"".join([chunk async for chunk in response.streaming_content])
        return response.status_code, [json.loads(line) for line in raw.splitlines()]
    return response.status_code, json.loads(response.content)


def _expected_events(names: dict[str, Any]) -> list[Any]:
    """The scenario's job set, event by event: ``{"result": {"id", "message": {"<kind>":
    {...}}}}`` per line (``EventMessage`` written as its oneof's wrapper alone)."""

    def event(kind: str, job_name: str, **more: Any) -> dict[str, Any]:
        body = {
            "jobId": names[job_name],
            "jobSetId": "set",
            "queue": "rec",
            "created": TIME,
            **more,
        }
        return {"result": {"id": Like(str, r"[0-9]+"), "message": {kind: body}}}

    def submitted(job_name: str, client_id: str) -> dict[str, Any]:
        spec = {
            "id": names[job_name],
            "clientId": client_id,
            "jobSetId": "set",
            "queue": "rec",
            "namespace": "default",
            "annotations": {"armadaproject.io/externalJobUri": "ext://one"},
            "owner": "root",
            "priority": Like(int, what="a priority"),  # (the job's, as written by our events)
            "podSpec": {"containers": [CONTAINER]},
            "created": TIME,
        }
        return event("submitted", job_name, job=spec)

    by_root = {"requestor": "root"}
    return [
        submitted("job1", "client-1"),
        event("queued", "job1"),
        submitted("job2", "client-2"),
        event("queued", "job2"),
        event("reprioritizing", "job1", newPriority=5, **by_root),
        event("reprioritized", "job1", newPriority=5, **by_root),
        event("preempting", "job2", **by_root, reason="make room"),
        event("cancelling", "job1", **by_root, reason="done"),
        event("cancelled", "job1", **by_root, reason="done"),
    ]


@pytest.mark.django_db(transaction=True)
def test_the_recorded_calls_answer_as_armadas_gateway(admin_user):
    names: dict[str, Any] = {}
    problems: list[str] = []

    async def replay() -> None:
        client = AsyncClient()
        for recording in SCENARIO:
            try:
                status, answer = await _send(client, recording, names)
            except KeyError as missing:  # an earlier answer did not hold the value
                problems.append(f"{recording.name}: no value captured for {missing}")
                break
            expected = recording.response
            if expected == "events":
                expected = _expected_events(names)
            if status != recording.status:
                problems.append(f"{recording.name}: status {status}, {answer}")
                continue
            found = match(expected, answer, names)
            problems.extend(f"{recording.name}: {p}" for p in found)
            if recording.name == "submit two jobs" and "job2" in names:
                await sync_to_async(_make_a_run)(names["job2"])

    try:
        asyncio.run(replay())
    finally:
        asyncio.run(sync_to_async(connections.close_all)())
    assert problems == [], "\n".join(problems)
