"""Resource kinds the emulator serves, their wire form and the ``v1.Status`` errors.

Every object the emulator stores or returns has been through the official client's model
for its kind (``Model.from_dict`` then ``ApiClient().sanitize_for_serialization``), so a
shape the ``kubernetes`` library cannot read never leaves the emulator.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kubernetes import client

_API = client.ApiClient()


@dataclass(frozen=True)
class Resource:
    """One REST resource: ``pods``, ``services``..."""

    plural: str
    kind: str
    group: str  # "" for core
    version: str
    namespaced: bool
    model: type
    list_model: type

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


RESOURCES: dict[str, Resource] = {
    r.plural: r
    for r in (
        Resource("pods", "Pod", "", "v1", True, client.V1Pod, client.V1PodList),
        Resource("nodes", "Node", "", "v1", False, client.V1Node, client.V1NodeList),
        Resource(
            "namespaces", "Namespace", "", "v1", False, client.V1Namespace, client.V1NamespaceList
        ),
        Resource("events", "Event", "", "v1", True, client.CoreV1Event, client.CoreV1EventList),
        Resource("services", "Service", "", "v1", True, client.V1Service, client.V1ServiceList),
        Resource(
            "ingresses",
            "Ingress",
            "networking.k8s.io",
            "v1",
            True,
            client.V1Ingress,
            client.V1IngressList,
        ),
    )
}


def to_wire(resource: Resource, obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` as the API serves it: read by the library's model and written back out."""
    body = dict(obj)
    body["kind"] = resource.kind
    body["apiVersion"] = resource.api_version
    model = resource.model.from_dict(body)
    return _API.sanitize_for_serialization(model)


def list_wire(
    resource: Resource, items: list[dict[str, Any]], rv: int, cont: str = "", remaining: int = 0
) -> dict[str, Any]:
    """A list body; the items are already in wire form (checked when they were stored)."""
    meta: dict[str, Any] = {"resourceVersion": str(rv)}
    if cont:
        meta["continue"] = cont
    if remaining:
        meta["remainingItemCount"] = remaining
    # The envelope is checked through the list model too (with no items, for speed).
    envelope = _API.sanitize_for_serialization(
        resource.list_model.from_dict(
            {
                "kind": f"{resource.kind}List",
                "apiVersion": resource.api_version,
                "metadata": meta,
                "items": [],
            }
        )
    )
    envelope["items"] = items
    return envelope


def now() -> datetime:
    """Wall-clock time in UTC, at the second precision Kubernetes timestamps carry."""
    return datetime.fromtimestamp(int(time.time()), tz=UTC)


def timestamp(at: float | None = None) -> str:
    """An RFC 3339 timestamp (``2026-01-01T12:00:00Z``) for ``at`` (default: now)."""
    moment = datetime.fromtimestamp(int(time.time() if at is None else at), tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def new_uid() -> str:
    return str(uuid.uuid4())


class ApiError(Exception):
    """A request refused: becomes a ``v1.Status`` body with ``code``."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details is not None:
            body["details"] = self.details
        out = _API.sanitize_for_serialization(client.V1Status.from_dict(body))
        out.setdefault("metadata", {})
        return out


def _details(resource: Resource, name: str) -> dict[str, Any]:
    d: dict[str, Any] = {"name": name, "kind": resource.plural}
    if resource.group:
        d["group"] = resource.group
    return d


def not_found(resource: Resource, name: str) -> ApiError:
    return ApiError(
        404, "NotFound", f'{resource.plural} "{name}" not found', _details(resource, name)
    )


def already_exists(resource: Resource, name: str) -> ApiError:
    return ApiError(
        409,
        "AlreadyExists",
        f'{resource.plural} "{name}" already exists',
        _details(resource, name),
    )


def invalid(resource: Resource, name: str, causes: list[tuple[str, str, str]]) -> ApiError:
    """422 Invalid. ``causes`` are (field, reason type, message) as in ``field.Error``."""
    parts = [f"{field}: {msg}" for field, _, msg in causes]
    text = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    details = _details(resource, name)
    details["kind"] = resource.kind
    details["causes"] = [
        {"reason": reason, "message": msg, "field": field} for field, reason, msg in causes
    ]
    return ApiError(422, "Invalid", f'{resource.kind} "{name}" is invalid: {text}', details)


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def success_status(resource: Resource, name: str, uid: str) -> dict[str, Any]:
    """The ``Status`` a delete returns for kinds that do not return the deleted object."""
    details = _details(resource, name)
    details["uid"] = uid
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    }
    out = _API.sanitize_for_serialization(client.V1Status.from_dict(body))
    out.setdefault("metadata", {})
    return out
