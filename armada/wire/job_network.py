"""Armada's ``ServiceConfig`` and ``IngressConfig`` messages as our job file's ``services``
and ``ingress`` items (``core.job_network``), and back.

Into the job file nothing is checked here: an enum value this version of Armada's API does
not name is passed on as its number, so that our validation refuses it naming the request's
field (``jobRequestItems[0].services[1].type``). Out of the job file, an item is the message
it came from (``IngressConfig.type`` is always ``Ingress``, Armada's only ingress type).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from armada_client.armada import submit_pb2


def _enum_name(enum: Any, value: int) -> str | int:
    try:
        return enum.Name(value)
    except ValueError:
        return value


def services_of(messages: Iterable[submit_pb2.ServiceConfig]) -> list[dict[str, Any]]:
    return [
        {
            "type": _enum_name(submit_pb2.ServiceType, m.type),
            "ports": list(m.ports),
            "name": m.name,
        }
        for m in messages
    ]


def ingress_of(messages: Iterable[submit_pb2.IngressConfig]) -> list[dict[str, Any]]:
    out = []
    for m in messages:
        item: dict[str, Any] = {
            "ports": list(m.ports),
            "annotations": dict(m.annotations),
            "tlsEnabled": m.tls_enabled,
            "certName": m.cert_name,
            "useClusterIP": m.use_clusterIP,
        }
        if m.type != submit_pb2.Ingress:
            item["type"] = _enum_name(submit_pb2.IngressType, m.type)
        out.append(item)
    return out


def service_messages(items: Any) -> list[submit_pb2.ServiceConfig]:
    """A stored job's ``services`` as messages (anything unreadable left out)."""
    out = []
    for item in items if isinstance(items, list) else ():
        if not isinstance(item, Mapping):
            continue
        kind = submit_pb2.Headless if item.get("type") == "Headless" else submit_pb2.NodePort
        out.append(
            submit_pb2.ServiceConfig(
                type=kind, ports=_ports(item.get("ports")), name=str(item.get("name") or "")
            )
        )
    return out


def ingress_messages(items: Any) -> list[submit_pb2.IngressConfig]:
    """A stored job's ``ingress`` as messages (anything unreadable left out)."""
    out = []
    for item in items if isinstance(items, list) else ():
        if not isinstance(item, Mapping):
            continue
        annotations = item.get("annotations")
        out.append(
            submit_pb2.IngressConfig(
                type=submit_pb2.Ingress,
                ports=_ports(item.get("ports")),
                annotations={str(k): str(v) for k, v in (annotations or {}).items()}
                if isinstance(annotations, Mapping)
                else {},
                tls_enabled=item.get("tlsEnabled") is True,
                cert_name=str(item.get("certName") or ""),
                use_clusterIP=item.get("useClusterIP") is True,
            )
        )
    return out


def _ports(value: Any) -> list[int]:
    if not isinstance(value, list):
        return []
    return [p for p in value if isinstance(p, int) and not isinstance(p, bool) and 0 < p < 2**32]
