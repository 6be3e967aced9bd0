"""Label and field selectors, parsed and matched as the API server does."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.kube_emulator.objects import bad_request

Obj = dict[str, Any]


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!"
    values: tuple[str, ...] = ()

    def matches(self, labels: dict[str, str]) -> bool:
        if self.op == "exists":
            return self.key in labels
        if self.op == "!":
            return self.key not in labels
        if self.op in ("=", "in"):
            return self.key in labels and labels[self.key] in self.values
        # "!=" and "notin" match objects without the label too
        return labels.get(self.key) not in self.values


_LABEL_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)
_LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")


def _split_top(text: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return parts


def _check_key(key: str, text: str) -> str:
    key = key.strip()
    if not _LABEL_KEY.match(key) or len(key.split("/")[0]) > 253:
        raise bad_request(
            f'unable to parse requirement: values[0][{key}]: Invalid value: "{key}": '
            f"name part must consist of alphanumeric characters, '-', '_' or '.', and must "
            f"start and end with an alphanumeric character (selector {text!r})"
        )
    return key


def _check_value(value: str) -> str:
    value = value.strip()
    if not _LABEL_VALUE.match(value):
        raise bad_request(
            f'unable to parse requirement: values[0]: Invalid value: "{value}": a valid label '
            "must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
            "and must start and end with an alphanumeric character"
        )
    return value


def parse_labels(text: str | None) -> list[Requirement]:
    """``a=b,c!=d,e,!f,g in (x,y),h notin (z)`` as a conjunction of requirements."""
    if not text or not text.strip():
        return []
    reqs: list[Requirement] = []
    for raw in _split_top(text):
        part = raw.strip()
        if not part:
            raise bad_request(
                f"unable to parse requirement: found '', expected: identifier ({text!r})"
            )
        m = re.match(r"^(\S+?)\s+(in|notin)\s*\((.*)\)$", part)
        if m:
            values = tuple(_check_value(v) for v in m.group(3).split(","))
            reqs.append(Requirement(_check_key(m.group(1), text), m.group(2), values))
        elif "!=" in part:
            key, value = part.split("!=", 1)
            reqs.append(Requirement(_check_key(key, text), "!=", (_check_value(value),)))
        elif "==" in part or "=" in part:
            key, value = part.split("==", 1) if "==" in part else part.split("=", 1)
            reqs.append(Requirement(_check_key(key, text), "=", (_check_value(value),)))
        elif part.startswith("!"):
            reqs.append(Requirement(_check_key(part[1:], text), "!"))
        else:
            reqs.append(Requirement(_check_key(part, text), "exists"))
    return reqs


def _get(obj: Obj, path: str) -> str:
    cur: Any = obj
    for step in path.split("."):
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(step)
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


_META = ("metadata.name", "metadata.namespace")
# The field labels each kind supports (as registered by its REST strategy's GetAttrs).
FIELDS: dict[str, tuple[str, ...]] = {
    "pods": _META
    + (
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "spec.hostNetwork",
        "status.phase",
        "status.podIP",
        "status.nominatedNodeName",
    ),
    "events": _META
    + (
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
    ),
    "nodes": ("metadata.name", "spec.unschedulable"),
    "namespaces": ("metadata.name", "status.phase"),
    "services": _META + ("spec.clusterIP", "spec.type"),
    "ingresses": _META,
}


def _field_value(plural: str, obj: Obj, field: str) -> str:
    if field == "source" and plural == "events":
        return _get(obj, "source.component") or _get(obj, "reportingComponent")
    if field == "spec.hostNetwork":
        return _get(obj, field) or "false"
    if field == "spec.unschedulable":
        return _get(obj, field) or "false"
    return _get(obj, field)


def parse_fields(plural: str, text: str | None) -> list[tuple[str, str, str]]:
    """``a=b,c!=d`` as (field, op, value); refuses a field the kind does not support."""
    if not text or not text.strip():
        return []
    out = []
    for raw in text.split(","):
        part = raw.strip()
        if "!=" in part:
            field, value = part.split("!=", 1)
            op = "!="
        elif "==" in part:
            field, value = part.split("==", 1)
            op = "="
        elif "=" in part:
            field, value = part.split("=", 1)
            op = "="
        else:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
        field = field.strip()
        if field not in FIELDS[plural]:
            raise bad_request(f"field label not supported: {field}")
        out.append((field, op, value.strip()))
    return out


def matcher(plural: str, labels: str | None, fields: str | None) -> Callable[[Obj], bool] | None:
    """A predicate for both selectors, or None when there is nothing to filter."""
    reqs = parse_labels(labels)
    terms = parse_fields(plural, fields)
    if not reqs and not terms:
        return None

    def match(obj: Obj) -> bool:
        obj_labels = (obj.get("metadata") or {}).get("labels") or {}
        if not all(r.matches(obj_labels) for r in reqs):
            return False
        for field, op, value in terms:
            equal = _field_value(plural, obj, field) == value
            if equal != (op == "="):
                return False
        return True

    return match
