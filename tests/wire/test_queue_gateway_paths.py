"""Armada's queue and retry-policy HTTP paths, served by the REST gateway with
grpc-gateway's JSON and errors."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import sync_to_async
from django.db import connections

pytestmark = pytest.mark.django_db


# --- through the REST gateway -----------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_queue_and_policy_paths_of_the_gateway(admin_user, owner):
    """Armada's HTTP paths reach these operations in Armada's JSON, and the errors come back
    with their HTTP status."""
    import base64
    import json

    from django.test import AsyncClient

    auth = {"Authorization": "Basic " + base64.b64encode(b"root:root-password").decode()}

    async def go() -> list[tuple[int, object]]:
        client = AsyncClient()
        out = []

        async def send(method: str, path: str, data: object = None) -> None:
            kwargs = (
                {}
                if data is None
                else {"data": json.dumps(data), "content_type": "application/json"}
            )
            response = await getattr(client, method)(path, headers=auth, **kwargs)
            raw = (
                b"".join([c async for c in response.streaming_content])
                if response.streaming
                else response.content
            )
            lines = [json.loads(line) for line in raw.decode().splitlines() if line.strip()]
            out.append((response.status_code, lines[0] if len(lines) == 1 else lines))

        await send("post", "/v1/queue", {"name": "gw", "priorityFactor": 2, "labels": {"a": "b"}})
        await send("post", "/v1/queue", {"name": "gw"})
        await send("put", "/v1/queue/gw", {"priorityFactor": 3, "userOwners": ["olive"]})
        await send("get", "/v1/queue/gw")
        await send("get", "/v1/batched/queues")
        await send("post", "/v1/queue", {"name": "bad", "priorityFactor": 0.5})
        await send(
            "post",
            "/v1/retry-policy",
            {
                "name": "p",
                "retryLimit": 2,
                "defaultAction": "RETRY_ACTION_FAIL",
                "rules": [
                    {
                        "action": "RETRY_ACTION_RETRY",
                        "onCategory": "oom",
                        "mutate": {"resources": {"memory": {"static": "1Gi"}}},
                    }
                ],
            },
        )
        await send("get", "/v1/retry-policy/p")
        await send("get", "/v1/retry-policies")
        await send("delete", "/v1/queue/gw")
        await send("delete", "/v1/queue/gw")
        await send("get", "/v1/queue/gw")
        return out

    try:
        answers = asyncio.run(go())
    finally:
        asyncio.run(sync_to_async(connections.close_all)())
    statuses = [status for status, _ in answers]
    assert statuses == [200, 409, 200, 200, 200, 400, 200, 200, 200, 200, 200, 404], answers
    # The update replaced the queue: its labels are gone (``omitempty`` leaves out empty fields).
    assert answers[3][1] == {"name": "gw", "priorityFactor": 3, "userOwners": ["olive"]}
    assert type(answers[3][1]["priorityFactor"]) is int  # Go writes 3, not 3.0
    assert answers[1][1]["code"] == 6  # ALREADY_EXISTS
    listed = answers[4][1]
    assert [m["result"]["Event"]["queue"]["name"] for m in listed[:-1]] == ["gw"]
    assert listed[-1] == {"result": {"Event": {"end": {}}}}
    assert answers[5][1]["message"].startswith("invalid request: priorityFactor: ")
    assert answers[5][1]["error"] == answers[5][1]["message"]
    assert answers[7][1]["rules"][0]["mutate"]["resources"]["memory"]["static"] == "1Gi"
    assert [p["name"] for p in answers[8][1]["retryPolicies"]] == ["p"]
