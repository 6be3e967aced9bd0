"""Pod validation: containers, images, resources (limits >= requests), ports, volumes,
restartPolicy, deadlines, nodeName and nodeSelector."""

from __future__ import annotations

from armada.core.quantity import parse_quantity
from tests.kube_emulator.validation_meta import (
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
    qualified,
    required,
    show,
    unsupported,
    validate_meta,
)

STANDARD_RESOURCES = ("cpu", "memory", "ephemeral-storage", "storage")


def _resources(res: Obj, path: str) -> list[Cause]:
    causes: list[Cause] = []
    parsed: dict[str, dict[str, int]] = {}
    for kind in ("limits", "requests"):
        parsed[kind] = {}
        for name, raw in (res.get(kind) or {}).items():
            field = f"{path}.{kind}[{name}]"
            if (
                name not in STANDARD_RESOURCES
                and not name.startswith("hugepages-")
                and "/" not in name
            ):
                causes.append(
                    bad_value(field, name, "must be a standard resource type or fully qualified")
                )
                continue
            if raw.startswith("-"):
                causes.append(bad_value(field, raw, "must be greater than or equal to 0"))
                continue
            parsed[kind][name] = parse_quantity(raw)
            if "/" in name and parsed[kind][name] % 1000:
                causes.append(bad_value(field, raw, "must be an integer"))
    for name, request in parsed["requests"].items():
        limit = parsed["limits"].get(name)
        extended = "/" in name or name.startswith("hugepages-")
        if limit is None:
            if extended:
                causes.append(
                    required(f"{path}.limits", "Limit must be set for non overcommitable resources")
                )
            continue
        if extended and request != limit:
            causes.append(
                bad_value(
                    f"{path}.requests[{name}]",
                    res["requests"][name],
                    f"must be equal to {name} limit of {res['limits'][name]}",
                )
            )
        elif request > limit:
            causes.append(
                bad_value(
                    f"{path}.requests",
                    res["requests"][name],
                    f"must be less than or equal to {name} limit of {res['limits'][name]}",
                )
            )
    return causes


def _container(c: Obj, path: str, volumes: set[str]) -> list[Cause]:
    causes: list[Cause] = []
    name = c.get("name")
    if not name:
        causes.append(required(f"{path}.name"))
    elif len(name) > 63 or not DNS1123_LABEL.match(name):
        causes.append(bad_value(f"{path}.name", name, LABEL_MSG))
    if not c.get("image") or not str(c["image"]).strip():
        causes.append(required(f"{path}.image"))
    causes += _resources(c.get("resources") or {}, f"{path}.resources")
    for j, port in enumerate(c.get("ports") or []):
        p = f"{path}.ports[{j}]"
        cp = port.get("containerPort")
        if cp is None:
            causes.append(required(f"{p}.containerPort"))
        elif not 1 <= cp <= 65535:
            causes.append(bad_value(f"{p}.containerPort", cp, PORT_MSG))
        hp = port.get("hostPort")
        if hp is not None and not 0 <= hp <= 65535:
            causes.append(bad_value(f"{p}.hostPort", hp, PORT_MSG))
        proto = port.get("protocol", "TCP")
        if proto not in ("TCP", "UDP", "SCTP"):
            causes.append(unsupported(f"{p}.protocol", proto, ("SCTP", "TCP", "UDP")))
    for j, mount in enumerate(c.get("volumeMounts") or []):
        p = f"{path}.volumeMounts[{j}]"
        if mount.get("name") not in volumes:
            causes.append(
                (f"{p}.name", "FieldValueNotFound", f"Not found: {show(mount.get('name'))}")
            )
        if not mount.get("mountPath"):
            causes.append(required(f"{p}.mountPath"))
    for j, env in enumerate(c.get("env") or []):
        if not env.get("name"):
            causes.append(required(f"{path}.env[{j}].name"))
    return causes


def validate_pod(pod: Obj) -> list[Cause]:
    causes = validate_meta(pod.get("metadata") or {})
    spec = pod.get("spec") or {}
    volumes: set[str] = set()
    for i, vol in enumerate(spec.get("volumes") or []):
        vname = vol.get("name")
        if not vname:
            causes.append(required(f"spec.volumes[{i}].name"))
        elif not DNS1123_LABEL.match(vname):
            causes.append(bad_value(f"spec.volumes[{i}].name", vname, LABEL_MSG))
        elif vname in volumes:
            causes.append(duplicate(f"spec.volumes[{i}].name", vname))
        volumes.add(vname or "")
    containers = spec.get("containers") or []
    if not containers:
        causes.append(required("spec.containers"))
    seen: set[str] = set()
    for group in ("initContainers", "containers"):
        for i, c in enumerate(spec.get(group) or []):
            path = f"spec.{group}[{i}]"
            causes += _container(c, path, volumes)
            if c.get("name") in seen:
                causes.append(duplicate(f"{path}.name", c["name"]))
            seen.add(c.get("name"))
    policy = spec.get("restartPolicy", "Always")
    if policy not in ("Always", "OnFailure", "Never"):
        causes.append(unsupported("spec.restartPolicy", policy, ("Always", "OnFailure", "Never")))
    grace = spec.get("terminationGracePeriodSeconds")
    if grace is not None and grace < 0:
        causes.append(
            bad_value(
                "spec.terminationGracePeriodSeconds", grace, "must be greater than or equal to 0"
            )
        )
    deadline = spec.get("activeDeadlineSeconds")
    if deadline is not None and not 1 <= deadline <= 2147483647:
        causes.append(
            bad_value(
                "spec.activeDeadlineSeconds",
                deadline,
                "must be between 1 and 2147483647, inclusive",
            )
        )
    node = spec.get("nodeName")
    if node and not DNS1123_SUBDOMAIN.match(node):
        causes.append(bad_value("spec.nodeName", node, SUBDOMAIN_MSG))
    for key, value in (spec.get("nodeSelector") or {}).items():
        if not qualified(key) or len(value) > 63 or not LABEL_VALUE.match(value):
            causes.append(
                bad_value(
                    f"spec.nodeSelector[{key}]",
                    value,
                    "a valid label must be an empty string or consist of alphanumeric characters",
                )
            )
    return causes
