"""Service and ingress validation: service types and ports, cluster IPs, selectors;
ingress rules, paths and backends."""

from __future__ import annotations

import ipaddress
import re

from tests.kube_emulator.validation_meta import (
    DNS1035_LABEL,
    DNS1035_MSG,
    DNS1123_LABEL,
    DNS1123_SUBDOMAIN,
    LABEL_MSG,
    LABEL_VALUE,
    PORT_MSG,
    SUBDOMAIN_MSG,
    Cause,
    Obj,
    bad_value,
    duplicate,
    forbidden,
    qualified,
    required,
    unsupported,
    validate_meta,
)

# -- services ------------------------------------------------------------------------------
SERVICE_TYPES = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")


def validate_service(svc: Obj) -> list[Cause]:
    causes = validate_meta(svc.get("metadata") or {}, "dns1035")
    spec = svc.get("spec") or {}
    typ = spec.get("type", "ClusterIP")
    if typ not in SERVICE_TYPES:
        causes.append(unsupported("spec.type", typ, SERVICE_TYPES))
    headless = spec.get("clusterIP") == "None"
    if headless and typ in ("NodePort", "LoadBalancer"):
        causes.append(
            bad_value("spec.clusterIPs[0]", "None", f"may not be set to 'None' for {typ} services")
        )
    if typ == "ExternalName" and not spec.get("externalName"):
        causes.append(required("spec.externalName"))
    ports = spec.get("ports") or []
    if not ports and not headless and typ != "ExternalName":
        causes.append(required("spec.ports"))
    names: set[str] = set()
    for i, port in enumerate(ports):
        p = f"spec.ports[{i}]"
        name = port.get("name") or ""
        if len(ports) > 1 and not name:
            causes.append(required(f"{p}.name"))
        elif name and not DNS1123_LABEL.match(name):
            causes.append(bad_value(f"{p}.name", name, LABEL_MSG))
        elif name in names:
            causes.append(duplicate(f"{p}.name", name))
        names.add(name)
        number = port.get("port")
        if number is None:
            causes.append(required(f"{p}.port"))
        elif not 1 <= number <= 65535:
            causes.append(bad_value(f"{p}.port", number, PORT_MSG))
        proto = port.get("protocol", "TCP")
        if proto not in ("TCP", "UDP", "SCTP"):
            causes.append(unsupported(f"{p}.protocol", proto, ("SCTP", "TCP", "UDP")))
        target = port.get("targetPort")
        if isinstance(target, int) and not 1 <= target <= 65535:
            causes.append(bad_value(f"{p}.targetPort", target, PORT_MSG))
        elif isinstance(target, str) and not re.match(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", target):
            causes.append(
                bad_value(
                    f"{p}.targetPort",
                    target,
                    "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
                )
            )
        node_port = port.get("nodePort")
        if node_port and typ == "ClusterIP":
            causes.append(forbidden(f"{p}.nodePort", "may not be used when `type` is 'ClusterIP'"))
    ip = spec.get("clusterIP")
    if ip and ip != "None":
        try:
            ipaddress.ip_address(ip)
        except ValueError:
            causes.append(
                bad_value(
                    "spec.clusterIPs[0]",
                    ip,
                    "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
                )
            )
    for key, value in (spec.get("selector") or {}).items():
        if not qualified(key) or len(value) > 63 or not LABEL_VALUE.match(value):
            causes.append(
                bad_value(
                    "spec.selector",
                    value,
                    "a valid label must be an empty string or consist of alphanumeric characters",
                )
            )
    return causes


# -- ingresses -----------------------------------------------------------------------------
PATH_TYPES = ("Exact", "ImplementationSpecific", "Prefix")


def _backend(backend: Obj | None, path: str) -> list[Cause]:
    if not backend or not (backend.get("service") or backend.get("resource")):
        return [bad_value(path, "", "resource or service backend is required")]
    svc = backend.get("service")
    if not svc:
        return []
    causes: list[Cause] = []
    name = svc.get("name")
    if not name:
        causes.append(required(f"{path}.service.name"))
    elif not DNS1035_LABEL.match(name):
        causes.append(bad_value(f"{path}.service.name", name, DNS1035_MSG))
    port = svc.get("port") or {}
    if port.get("name") and port.get("number"):
        causes.append(
            bad_value(f"{path}.service.port", port, "cannot set both port name & port number")
        )
    elif not port.get("name") and not port.get("number"):
        causes.append(bad_value(f"{path}.service.port", "", "port name or number is required"))
    elif port.get("number") is not None and not 1 <= port["number"] <= 65535:
        causes.append(bad_value(f"{path}.service.port.number", port["number"], PORT_MSG))
    return causes


def validate_ingress(ing: Obj) -> list[Cause]:
    causes = validate_meta(ing.get("metadata") or {})
    spec = ing.get("spec") or {}
    rules = spec.get("rules") or []
    if not rules and not spec.get("defaultBackend"):
        causes.append(
            bad_value("spec", spec, "either `defaultBackend` or `rules` must be specified")
        )
    if spec.get("defaultBackend"):
        causes += _backend(spec["defaultBackend"], "spec.defaultBackend")
    for i, rule in enumerate(rules):
        base = f"spec.rules[{i}]"
        host = rule.get("host")
        if host and not DNS1123_SUBDOMAIN.match(host.removeprefix("*.")):
            causes.append(bad_value(f"{base}.host", host, SUBDOMAIN_MSG))
        http = rule.get("http")
        if http is None:
            continue
        if not http.get("paths"):
            causes.append(required(f"{base}.http.paths"))
        for j, p in enumerate(http.get("paths") or []):
            pp = f"{base}.http.paths[{j}]"
            ptype = p.get("pathType")
            if not ptype:
                causes.append(required(f"{pp}.pathType", "pathType must be specified"))
            elif ptype not in PATH_TYPES:
                causes.append(unsupported(f"{pp}.pathType", ptype, PATH_TYPES))
            elif ptype in ("Exact", "Prefix") and not str(p.get("path", "")).startswith("/"):
                causes.append(
                    bad_value(f"{pp}.path", p.get("path", ""), "must be an absolute path")
                )
            causes += _backend(p.get("backend"), f"{pp}.backend")
    return causes
