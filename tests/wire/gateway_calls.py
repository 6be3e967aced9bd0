"""Calling the REST gateway in tests: JSON bodies and answers, and a POST read on one event
loop as an ASGI server reads it."""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

from django.test import AsyncClient, Client

JSON = "application/json"


def body(response) -> dict:
    return json.loads(response.content)


ROOT_AUTH = {"Authorization": "Basic " + base64.b64encode(b"root:root-password").decode()}


def post_async(path: str, data: Any, **headers: str) -> tuple[Any, bytes]:
    """POST with Django's AsyncClient and read the whole answer on the same event loop, as
    an ASGI server does (a stream's operation runs on the loop of its request)."""

    async def go() -> tuple[Any, bytes]:
        client = AsyncClient()
        response = await client.post(path, json.dumps(data), content_type=JSON, headers=headers)
        if not response.streaming:
            return response, response.content
        return response, b"".join([chunk async for chunk in response.streaming_content])

    return asyncio.run(go())


def post(client: Client, path: str, data: Any, **extra) -> Any:
    raw = data if isinstance(data, str | bytes) else json.dumps(data)
    return client.post(path, raw, content_type=JSON, **extra)
