"""Armada's REST gateway paths, read from the ``google.api.http`` options of its methods.

Each method of the five services may carry an HTTP rule (``post: "/v1/job/submit" body:
"*"``, ``get: "/v1/queue/{name}"``, plus ``additional_bindings``). :func:`http_rules` lists
them; :func:`django_route` turns a path template into a Django route whose keyword
arguments are the request fields the path sets (``{name}`` sets ``name``; a nested
``{queue.name}`` arrives as ``queue__name``). Nothing here names a path: a method that gains
or loses a rule in Armada's protos gains or loses its path here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from armada_client.google.api import annotations_pb2
from google.protobuf import descriptor_pool

from armada.wire.registry import SERVICES

VERBS = ("get", "put", "post", "delete", "patch")
_PARAM = re.compile(r"\{([A-Za-z_][A-Za-z0-9_.]*)(?:=([^}]*))?\}")
PREFIX = "/v1/"


@dataclass(frozen=True)
class HttpRule:
    verb: str  # "GET"
    template: str  # "/v1/queue/{name}"
    body: str  # "*" (the whole request), a field name, or "" (query parameters)
    method: str  # "api.Submit/GetQueue"
    streaming: bool

    @property
    def path_fields(self) -> tuple[str, ...]:
        """The request fields the path sets, as written in the template (``queue.name``)."""
        return tuple(m.group(1) for m in _PARAM.finditer(self.template))


def _rules_of(rule, method: str, streaming: bool) -> list[HttpRule]:
    found = []
    pattern = rule.WhichOneof("pattern")
    if pattern in VERBS:
        template = getattr(rule, pattern)
        found.append(HttpRule(pattern.upper(), template, rule.body, method, streaming))
    elif pattern == "custom":
        found.append(
            HttpRule(rule.custom.kind.upper(), rule.custom.path, rule.body, method, streaming)
        )
    for extra in rule.additional_bindings:
        found += _rules_of(extra, method, streaming)
    return found


@cache
def http_rules() -> tuple[HttpRule, ...]:
    """Every HTTP rule of every method of Armada's services, in proto order."""
    pool = descriptor_pool.Default()
    found: list[HttpRule] = []
    for service_name in SERVICES:
        service = pool.FindServiceByName(service_name)
        for method in service.methods:
            options = method.GetOptions()
            if not options.HasExtension(annotations_pb2.http):
                continue
            name = f"{service_name}/{method.name}"
            found += _rules_of(
                options.Extensions[annotations_pb2.http], name, method.server_streaming
            )
    return tuple(found)


def http_rule_of(method: str) -> HttpRule | None:
    """The first HTTP rule of ``method`` (``api.Submit/GetQueue``), or None."""
    return next((r for r in http_rules() if r.method == method), None)


def kwarg_name(field_path: str) -> str:
    return field_path.replace(".", "__")


def django_route(template: str) -> str:
    """``/v1/queue/{name}`` -> ``queue/<str:name>`` (relative to ``v1/``). A variable
    matches one path segment, or several for ``{x=**}``."""
    if not template.startswith(PREFIX):
        raise ValueError(f"{template}: not under {PREFIX}")

    def convert(match: re.Match) -> str:
        converter = "path" if (match.group(2) or "").endswith("**") else "str"
        return f"<{converter}:{kwarg_name(match.group(1))}>"

    return _PARAM.sub(convert, template[len(PREFIX) :])
