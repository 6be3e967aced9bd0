"""The pieces of every validation: ``details.causes`` entries as ``field.ErrorList`` gives
them, the API server's name rules and messages, and the checks of ``metadata``."""

from __future__ import annotations

import json
import re
from typing import Any

Cause = tuple[str, str, str]  # field, reason type, message
Obj = dict[str, Any]

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
PORT_MSG = "must be between 1 and 65535, inclusive"


def show(value: Any) -> str:
    return json.dumps(value) if isinstance(value, str) else str(value)


def required(field: str, detail: str = "") -> Cause:
    return (field, "FieldValueRequired", "Required value" + (f": {detail}" if detail else ""))


def bad_value(field: str, value: Any, detail: str) -> Cause:
    return (field, "FieldValueInvalid", f"Invalid value: {show(value)}: {detail}")


def unsupported(field: str, value: Any, allowed: tuple[str, ...]) -> Cause:
    listed = ", ".join(f'"{a}"' for a in allowed)
    return (
        field,
        "FieldValueNotSupported",
        f"Unsupported value: {show(value)}: supported values: {listed}",
    )


def duplicate(field: str, value: Any) -> Cause:
    return (field, "FieldValueDuplicate", f"Duplicate value: {show(value)}")


def forbidden(field: str, detail: str) -> Cause:
    return (field, "FieldValueForbidden", f"Forbidden: {detail}")


# -- metadata ------------------------------------------------------------------------------
def qualified(key: str) -> bool:
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not DNS1123_SUBDOMAIN.match(prefix)):
        return False
    return bool(name) and len(name) <= 63 and bool(_QUALIFIED_NAME.match(name))


def validate_meta(meta: Obj, name_rule: str = "subdomain") -> list[Cause]:
    causes: list[Cause] = []
    name = meta.get("name")
    if not name:
        causes.append(required("metadata.name", "name or generateName is required"))
    elif name_rule == "dns1035" and (len(name) > 63 or not DNS1035_LABEL.match(name)):
        causes.append(bad_value("metadata.name", name, DNS1035_MSG))
    elif name_rule == "subdomain" and (len(name) > 253 or not DNS1123_SUBDOMAIN.match(name)):
        causes.append(bad_value("metadata.name", name, SUBDOMAIN_MSG))
    for key, value in (meta.get("labels") or {}).items():
        if not qualified(key):
            causes.append(
                bad_value(
                    "metadata.labels",
                    key,
                    "name part must consist of alphanumeric "
                    "characters, '-', '_' or '.', and must start and end with an "
                    "alphanumeric character",
                )
            )
        if len(value) > 63 or not LABEL_VALUE.match(value):
            causes.append(
                bad_value(
                    "metadata.labels",
                    value,
                    "a valid label must be an empty string or "
                    "consist of alphanumeric characters, '-', '_' or '.', and must start "
                    "and end with an alphanumeric character",
                )
            )
    for key in meta.get("annotations") or {}:
        if not qualified(key.lower()):
            causes.append(
                bad_value(
                    "metadata.annotations",
                    key,
                    "name part must consist of alphanumeric characters, '-', '_' or '.'",
                )
            )
    for i, ref in enumerate(meta.get("ownerReferences") or []):
        base = "metadata.ownerReferences"
        for wire, what in (
            ("apiVersion", "version"),
            ("kind", "kind"),
            ("name", "name"),
            ("uid", "uid"),
        ):
            if not (ref or {}).get(wire):
                causes.append(bad_value(f"{base}.{wire}", "", f"{what} must not be empty"))
        del i
    return causes
