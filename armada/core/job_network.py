"""A job's network objects: the ``services`` and ``ingress`` items of a job file.

They live and die with the job's pod: the Kubernetes backend makes one Service per
``services`` item and one Ingress per ``ingress`` item, owned by the pod
(docs/services-and-ingress.md). The shapes are Armada's ``ServiceConfig`` and
``IngressConfig``, spelled as in its submit files::

    services: [{type: NodePort | Headless, ports: [8080, ...], name: my-svc}]
    ingress:  [{ports: [8080], annotations: {k: v}, tlsEnabled: false, certName: "",
                useClusterIP: false}]

Checks, each naming its field (``jobs[0].ingress[1].ports[2]``):

- ``ports``: at least one, each a whole number from 1 to 65535, none twice in an item;
- a port in at most one ``ingress`` item (Armada's rule: one ingress per port);
- a service ``name``, when given, is a DNS-1123 label, and no two services of a job share one;
- ``certName``, when given, is a DNS-1123 subdomain (it names a Secret);
- ingress ``annotations`` follow Kubernetes' rules for annotations;
- an ingress item may say ``type: Ingress`` (Armada's only ingress type), nothing else.

As in Armada, a port need not be one a container declares (``containerPort``): the backends
expose every port an item lists, and a port nothing listens on leads nowhere. Armada's other
port rule applies to every pod spec (``pod_port_problems``): a ``containerPort`` is declared
at most once among the pod's containers.

Items come back complete, with every optional key at its default, so that the executor and
the API never have to supply one: ``{"type", "ports", "name"}`` and ``{"ports",
"annotations", "tlsEnabled", "certName", "useClusterIP"}``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from armada.core.errors import FieldError
from armada.core.labels import annotation_problems

SERVICE_TYPES = ("NodePort", "Headless")
INGRESS_TYPE = "Ingress"
SERVICE_KEYS = frozenset({"type", "ports", "name"})
INGRESS_KEYS = frozenset({"type", "ports", "annotations", "tlsEnabled", "certName", "useClusterIP"})
MAX_PORT = 65535
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def parse_services(value: Any, where: str, errors: list[FieldError]) -> list[dict[str, Any]]:
    """The job's ``services`` items, complete; problems are added to ``errors``."""
    items = _items(value, where, errors)
    out: list[dict[str, Any]] = []
    named: dict[str, int] = {}
    for i, item in enumerate(items):
        at = f"{where}[{i}]"
        if not _mapping_with_keys(item, SERVICE_KEYS, at, errors):
            continue
        kind = item.get("type", "NodePort")
        if kind not in SERVICE_TYPES:
            errors.append(FieldError(f"{at}.type", f"must be one of {', '.join(SERVICE_TYPES)}"))
        name = item.get("name", "")
        if name is None:
            name = ""
        if not isinstance(name, str) or (name and not _dns_label(name)):
            errors.append(
                FieldError(f"{at}.name", "must be a lower-case DNS-1123 label (at most 63)")
            )
            name = ""
        elif name in named:
            errors.append(
                FieldError(f"{at}.name", f"{where}[{named[name]}] has the same name {name!r}")
            )
        elif name:
            named[name] = i
        ports = _ports(item.get("ports"), f"{at}.ports", errors)
        out.append({"type": kind, "ports": ports, "name": name})
    return out


def parse_ingress(value: Any, where: str, errors: list[FieldError]) -> list[dict[str, Any]]:
    """The job's ``ingress`` items, complete; problems are added to ``errors``."""
    items = _items(value, where, errors)
    out: list[dict[str, Any]] = []
    owner: dict[int, int] = {}  # port -> the item that exposes it
    for i, item in enumerate(items):
        at = f"{where}[{i}]"
        if not _mapping_with_keys(item, INGRESS_KEYS, at, errors):
            continue
        if item.get("type", INGRESS_TYPE) not in (INGRESS_TYPE, None):
            errors.append(FieldError(f"{at}.type", f"must be {INGRESS_TYPE} (or left out)"))
        ports = _ports(item.get("ports"), f"{at}.ports", errors)
        for j, port in enumerate(ports):
            if port in owner:
                errors.append(
                    FieldError(
                        f"{at}.ports[{j}]",
                        f"port {port} is in {where}[{owner[port]}] already: a port has at "
                        "most one ingress",
                    )
                )
            else:
                owner[port] = i
        annotations = _annotations(item.get("annotations"), f"{at}.annotations", errors)
        tls = _flag(item.get("tlsEnabled"), f"{at}.tlsEnabled", errors)
        cluster_ip = _flag(item.get("useClusterIP"), f"{at}.useClusterIP", errors)
        cert = item.get("certName", "")
        if cert is None:
            cert = ""
        if not isinstance(cert, str) or (
            cert and (len(cert) > 253 or not _DNS_SUBDOMAIN.fullmatch(cert))
        ):
            errors.append(
                FieldError(
                    f"{at}.certName", "must be a Secret's name (a lower-case DNS-1123 subdomain)"
                )
            )
            cert = ""
        out.append(
            {
                "ports": ports,
                "annotations": annotations,
                "tlsEnabled": tls,
                "certName": cert,
                "useClusterIP": cluster_ip,
            }
        )
    return out


def pod_port_problems(pod_spec: Mapping[str, Any], where: str) -> list[FieldError]:
    """Armada's rule for every pod: a ``containerPort`` is declared once among the pod's
    containers (they share one network)."""
    errors: list[FieldError] = []
    first: dict[int, str] = {}
    containers = pod_spec.get("containers")
    if not isinstance(containers, list):
        return errors
    for i, container in enumerate(containers):
        ports = container.get("ports") if isinstance(container, Mapping) else None
        if not isinstance(ports, list):
            continue
        for j, port in enumerate(ports):
            number = _whole(port.get("containerPort")) if isinstance(port, Mapping) else None
            if number is None:
                continue
            at = f"{where}.containers[{i}].ports[{j}].containerPort"
            if number in first:
                errors.append(
                    FieldError(at, f"port {number} is declared already at {first[number]}")
                )
            else:
                first[number] = at
    return errors


def _items(value: Any, where: str, errors: list[FieldError]) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        errors.append(FieldError(where, "must be a list"))
        return []
    return value


def _mapping_with_keys(
    item: Any, allowed: frozenset[str], where: str, errors: list[FieldError]
) -> bool:
    if not isinstance(item, Mapping):
        errors.append(FieldError(where, "must be a mapping"))
        return False
    for key in sorted(set(item) - allowed, key=str):
        errors.append(
            FieldError(f"{where}.{key}", f"unknown field; allowed: {', '.join(sorted(allowed))}")
        )
    return True


def _whole(value: Any) -> int | None:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value


def _ports(value: Any, where: str, errors: list[FieldError]) -> list[int]:
    if not isinstance(value, list) or not value:
        errors.append(FieldError(where, "at least one port is required (a list)"))
        return []
    out: list[int] = []
    for j, raw in enumerate(value):
        port = _whole(raw)
        if port is None or not 1 <= port <= MAX_PORT:
            errors.append(
                FieldError(f"{where}[{j}]", f"must be a whole number from 1 to {MAX_PORT}")
            )
        elif port in out:
            errors.append(FieldError(f"{where}[{j}]", f"port {port} is listed twice"))
        else:
            out.append(port)
    return out


def _annotations(value: Any, where: str, errors: list[FieldError]) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        errors.append(FieldError(where, "must be a mapping of strings to strings"))
        return {}
    out: dict[str, str] = {}
    for key, text in value.items():
        if not isinstance(key, str) or not isinstance(text, str):
            errors.append(
                FieldError(
                    f"{where}[{key}]",
                    "keys and values must be strings (quote numbers and booleans)",
                )
            )
            continue
        out[key] = text
    errors.extend(annotation_problems(out, where))
    return out


def _flag(value: Any, where: str, errors: list[FieldError]) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        errors.append(FieldError(where, "must be true or false"))
        return False
    return value


def _dns_label(name: str) -> bool:
    return len(name) <= 63 and _DNS_LABEL.fullmatch(name) is not None
