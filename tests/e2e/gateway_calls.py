"""Armada's REST gateway as a plain HTTP client (``requests``) sees it, for the end-to-end
gateway flows: calls with a user's token, grpc-gateway's answers and error bodies, job items in
Kubernetes JSON, and the job set's event stream read line by line (``{"result": ...}``)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest
import requests

from tests.e2e.conftest import HTTP_TIMEOUT
from tests.e2e.wire_system import ADMIN, EVENT_TIMEOUT, FAKE, Flows

# --- HTTP ----------------------------------------------------------------------------------


def call(
    flows: Flows, method: str, path: str, body: Any = None, *, user: str | None = ADMIN
) -> requests.Response:
    headers = flows.auth(user) if user is not None else {}
    return requests.request(
        method,
        flows.system.url + path,
        json=body,
        headers=headers,
        timeout=HTTP_TIMEOUT,
    )


def ok(response: requests.Response) -> Any:
    assert response.status_code == 200, f"{response.status_code}: {response.text}"
    assert response.headers["Content-Type"].startswith("application/json")
    return response.json()


def refused(response: requests.Response, status: int, code: int) -> str:
    """The message of a grpc-gateway v1 error answer with ``status`` and gRPC ``code``
    (``{"error", "code", "message"}``)."""
    assert response.status_code == status, f"{response.status_code}: {response.text}"
    body = response.json()
    assert set(body) == {"error", "code", "message"}, body
    assert body["code"] == code and body["error"] == body["message"], body
    return body["message"]


def lines(response: requests.Response) -> list[dict]:
    return [json.loads(line) for line in response.text.splitlines() if line]


# --- building requests ---------------------------------------------------------------------


def container(memory: str = "64Mi") -> dict:
    resources = {"cpu": "100m", "memory": memory}
    return {
        "name": "main",
        "image": "busybox:latest",
        "command": ["sleep", "1"],
        "resources": {"requests": resources, "limits": resources},
    }


def item(duration: str = "1s", annotations: dict | None = None, **fields: Any) -> dict:
    return {
        "priority": 1,
        "namespace": "default",
        "annotations": {FAKE + "duration": duration, **(annotations or {})},
        "podSpec": {"containers": [container()]},
        **fields,
    }


def submit(
    flows: Flows, queue: str, job_set: str, items: list[dict], *, user: str = ADMIN
) -> list[str]:
    body = {"queue": queue, "jobSetId": job_set, "jobRequestItems": items}
    answer = ok(call(flows, "POST", "/v1/job/submit", body, user=user))
    assert all("error" not in i for i in answer["jobResponseItems"]), answer
    return [i["jobId"] for i in answer["jobResponseItems"]]


def make_queue(flows: Flows, name: str, **fields: Any) -> dict:
    assert ok(call(flows, "POST", "/v1/queue", {"name": name, "priorityFactor": 1, **fields})) == {}
    return ok(call(flows, "GET", f"/v1/queue/{name}"))


def states(flows: Flows, *job_ids: str, user: str = ADMIN) -> dict[str, str]:
    """The jobs' states by name (the gateway writes their numbers, as Armada's does)."""
    from armada_client.armada import submit_pb2

    answer = ok(call(flows, "POST", "/v1/job/status", {"jobIds": list(job_ids)}, user=user))
    numbers = answer["jobStates"]
    assert all(type(n) is int for n in numbers.values()), numbers
    return {job_id: submit_pb2.JobState.Name(n) for job_id, n in numbers.items()}


def wait_for_state(flows: Flows, job_id: str, state: str) -> None:
    flows.system.wait_for(
        f"job {job_id} to be {state}",
        lambda: states(flows, job_id)[job_id] == state,
        timeout=EVENT_TIMEOUT,
    )


# --- the event stream ----------------------------------------------------------------------


def kind(event: dict) -> str:
    """The event's type: the one field of its ``message`` (``submitted``, ``failed``...)."""
    (name,) = event["message"]
    return name


def body_of(event: dict) -> dict:
    return event["message"][kind(event)]


def of_job(events: list[dict], job_id: str) -> list[dict]:
    return [e for e in events if body_of(e)["jobId"] == job_id]


def kinds(events: list[dict], job_id: str) -> list[str]:
    return [kind(e) for e in of_job(events, job_id)]


def seen(*wanted: tuple[str, str]) -> Callable[[list[dict]], bool]:
    def check(events: list[dict]) -> bool:
        have = {(body_of(e)["jobId"], kind(e)) for e in events}
        return all(w in have for w in wanted)

    return check


def follow(
    flows: Flows,
    queue: str,
    job_set: str,
    until: Callable[[list[dict]], bool],
    *,
    user: str = ADMIN,
    timeout: float = EVENT_TIMEOUT,
) -> list[dict]:
    """Read the job set's watching stream line by line until ``until(events so far)``
    holds. A line must come within ``timeout`` seconds (the read timeout) and the whole
    within the same again; either way the test fails with what it saw and the logs."""
    url = f"{flows.system.url}/v1/job-set/{queue}/{job_set}"
    events: list[dict] = []
    deadline = time.monotonic() + timeout

    def give_up(why: str) -> None:
        saw = [(kind(e), body_of(e)["jobId"]) for e in events]
        pytest.fail(f"{why} following {queue}/{job_set}; saw {saw}\n{flows.system.log_tail()}")

    try:
        with requests.post(
            url,
            json={"watch": True},
            headers=flows.auth(user),
            stream=True,
            timeout=(HTTP_TIMEOUT, timeout),
        ) as response:
            assert response.status_code == 200, response.text
            assert response.headers["Content-Type"].startswith("application/json")
            for line in response.iter_lines(chunk_size=None):
                if not line:
                    continue
                data = json.loads(line)
                assert set(data) == {"result"}, data
                events.append(data["result"])
                if until(events):
                    return events
                if time.monotonic() > deadline:
                    give_up(f"timed out after {timeout:.0f} s")
    except requests.ReadTimeout:
        give_up(f"no event for {timeout:.0f} s")
    give_up("the stream ended")
    raise AssertionError  # not reached: give_up fails the test


def job_set_events(flows: Flows, queue: str, job_set: str, **body: Any) -> list[dict]:
    """Every event of the job set so far (a stream that does not watch ends by itself)."""
    response = call(flows, "POST", f"/v1/job-set/{queue}/{job_set}", {"watch": False, **body})
    assert response.status_code == 200, response.text
    return [line["result"] for line in lines(response)]


# --- the flows -----------------------------------------------------------------------------
