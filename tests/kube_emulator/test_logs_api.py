"""The emulated log endpoint (``GET .../pods/{name}/log``) answers as the API server does,
through the official client: lines timed by ``logInterval``, ``timestamps`` in RFC 3339 with
nanoseconds, ``sinceTime`` in whole seconds, ``sinceSeconds``, ``tailLines``, ``limitBytes``,
``container``, and the refusals (422 naming the option, 400 for a bad time or container)."""

from __future__ import annotations

import json
import re
import time

import pytest
from kubernetes.client.exceptions import ApiException

from tests.kube_emulator.conftest import phase, pod_body, wait_for

F = "fake.armadaproject.io/"
STAMPED = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?Z) (.*)$")
LINES = "".join(f"tick {i}\n" for i in range(1, 7))


@pytest.fixture
def ticking(emu, v1) -> str:
    """A running pod writing one line every 0.2 s."""
    body = pod_body("ticks", {F + "duration": "30s", F + "log": LINES, F + "logInterval": "0.2s"})
    v1.create_namespaced_pod("default", body)
    wait_for(lambda: phase(emu, "ticks") == "Running", what="Running")
    return "ticks"


def test_lines_come_one_an_interval_while_the_container_runs(v1, ticking):
    first = v1.read_namespaced_pod_log(ticking, "default")
    assert first.startswith("tick 1\n") and LINES.startswith(first)
    wait_for(lambda: v1.read_namespaced_pod_log(ticking, "default") == LINES, what="6 lines")


def test_timestamps_are_rfc3339_with_nanoseconds_in_order(v1, ticking):
    wait_for(lambda: v1.read_namespaced_pod_log(ticking, "default") == LINES, what="6 lines")
    stamped = v1.read_namespaced_pod_log(ticking, "default", timestamps=True).splitlines()
    found = [STAMPED.match(line) for line in stamped]
    assert all(found) and [m.group(2) for m in found] == LINES.splitlines()
    times = [m.group(1) for m in found]
    assert all(not re.search(r"\.\d*0Z$", t) for t in times)  # trailing zeros left out
    assert times == sorted(times, key=lambda t: (t[:19], (t[20:-1] + "0" * 9)[:9]))


def test_since_time_is_taken_in_whole_seconds_and_since_seconds_by_the_server_clock(v1, ticking):
    wait_for(lambda: v1.read_namespaced_pod_log(ticking, "default") == LINES, what="6 lines")
    stamped = v1.read_namespaced_pod_log(ticking, "default", timestamps=True).splitlines()
    last = STAMPED.match(stamped[-1]).group(1)
    # The fraction is dropped: every line of that second comes, none before it.
    same_second = v1.api_client.call_api(
        *v1.api_client.param_serialize(
            "GET",
            "/api/v1/namespaces/{namespace}/pods/{name}/log",
            path_params={"namespace": "default", "name": ticking},
            query_params=[("sinceTime", last), ("timestamps", "true")],
            auth_settings=["BearerToken"],
        )
    )
    same_second.read()
    got = same_second.data.decode().splitlines()
    assert got and got[-1] == stamped[-1] and all(g[:19] == last[:19] for g in got)
    assert v1.read_namespaced_pod_log(ticking, "default", since_seconds=3600) == LINES
    time.sleep(1.2)  # sinceSeconds counts back from now: the lines are older than a second
    assert v1.read_namespaced_pod_log(ticking, "default", since_seconds=1) == ""


def test_tail_lines_and_limit_bytes(v1, ticking):
    wait_for(lambda: v1.read_namespaced_pod_log(ticking, "default") == LINES, what="6 lines")
    assert v1.read_namespaced_pod_log(ticking, "default", tail_lines=2) == "tick 5\ntick 6\n"
    assert v1.read_namespaced_pod_log(ticking, "default", limit_bytes=10) == "tick 1\ntic"


@pytest.mark.parametrize(
    ("options", "status", "message"),
    [
        ({"since_seconds": 0}, 422, "sinceSeconds: Invalid value: 0: must be greater than 0"),
        ({"limit_bytes": 0}, 422, "limitBytes: Invalid value: 0: must be greater than 0"),
        (
            {"tail_lines": -1},
            422,
            "tailLines: Invalid value: -1: must be greater than or equal to 0",
        ),
        ({"container": "sidecar"}, 400, "container sidecar is not valid for pod ticks"),
    ],
    ids=["since-seconds-0", "limit-bytes-0", "tail-lines-negative", "unknown-container"],
)
def test_bad_options_are_refused_as_the_api_server_does(v1, ticking, options, status, message):
    with pytest.raises(ApiException) as refused:
        v1.read_namespaced_pod_log(ticking, "default", **options)
    assert refused.value.status == status
    body = json.loads(refused.value.body)
    assert message in body["message"] and body["code"] == status
    if status == 422:
        assert body["reason"] == "Invalid" and body["details"]["kind"] == "PodLogOptions"


@pytest.mark.parametrize(
    ("query", "status", "message"),
    [
        (
            [("sinceTime", "2026-01-01T00:00:00Z"), ("sinceSeconds", "5")],
            422,
            "at most one of `sinceTime` or `sinceSeconds` may be specified",
        ),
        ([("sinceTime", "yesterday")], 400, 'parsing time "yesterday"'),
    ],
    ids=["both-since", "bad-time"],
)
def test_since_time_refusals(v1, ticking, query, status, message):
    request = v1.api_client.param_serialize(
        "GET",
        "/api/v1/namespaces/{namespace}/pods/{name}/log",
        path_params={"namespace": "default", "name": ticking},
        query_params=query,
        auth_settings=["BearerToken"],
    )
    response = v1.api_client.call_api(*request)
    response.read()
    assert response.status == status and message in json.loads(response.data)["message"]
