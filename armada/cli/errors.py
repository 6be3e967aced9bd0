"""The one error armadactl's client raises (a sentence for a person, with the server's
field errors when it sent them) and how it is read from an error response."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass
class ApiError(Exception):
    """A request failed. ``errors`` holds ``(field, message)`` pairs from the server."""

    message: str
    errors: list[tuple[str, str]] = field(default_factory=list)
    status: int | None = None

    def __post_init__(self) -> None:
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message


class GrpcEndpointError(ApiError):
    """The address given is a gRPC endpoint (Armada's gRPC API), not the REST API that
    armadactl talks to; ``ArmadaClient`` then tries the REST address paired with it."""


def error_from_body(status: int, reason: str, body: bytes | str) -> ApiError:
    """Build an ``ApiError`` from an error response, following the contract's JSON shape.

    A body that is not the contract's JSON (a proxy's HTML page, say) gives
    ``HTTP <status> <reason>`` with the first line of the body, if any.
    """
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    try:
        data: Any = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, Mapping) and (data.get("message") or data.get("errors")):
        message = str(data.get("message") or f"HTTP {status} {reason}".strip())
        pairs: list[tuple[str, str]] = []
        raw_errors = data.get("errors")
        if isinstance(raw_errors, list):
            for item in raw_errors:
                if isinstance(item, Mapping):
                    pairs.append((str(item.get("field") or ""), str(item.get("message") or "")))
                else:
                    pairs.append(("", str(item)))
        return ApiError(message, pairs, status)
    if isinstance(data, Mapping) and isinstance(data.get("detail"), str):
        # Django REST framework's own shape, in case a view bypasses the contract.
        return ApiError(data["detail"], [], status)
    first = text.strip().splitlines()[0][:200] if text.strip() else ""
    message = f"HTTP {status} {reason}".strip()
    return ApiError(f"{message}: {first}" if first else message, [], status)
