"""Reading the job database's rows (``services.jobdb``): the SQL that loads live jobs and
active runs as plain tuples, and the interner that turns their JSON text into shared objects,
so that a million queued jobs of a few shapes cost a few hundred bytes each."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

from django.db import connection
from django.utils.dateparse import parse_datetime

from armada.core.floating import split_floating
from armada.core.quantity import Resources
from armada.core.scheduling import Toleration
from armada.core.snapshot import NO_FLOATING
from armada.models import Job, Run
from armada.services.snapshot import pod_tolerations

CHUNK = 5000


def _json_path(column: str, key: str) -> str:
    if connection.vendor == "postgresql":
        return f"{column}->'{key}'"
    return f"json_extract({column}, '$.{key}')"


def job_query(where: str) -> str:
    """Live jobs as plain tuples; JSON comes back as text, parsed once per distinct value."""
    return (
        "SELECT id, queue, state, priority, priority_class, requests, "
        f"{_json_path('pod_spec', 'nodeSelector')}, {_json_path('pod_spec', 'tolerations')}, "
        f"{_json_path('mutations', 'avoidNodes')}, gang_id, gang_cardinality, "
        f"gang_uniformity_label, retry_not_before FROM {Job._meta.db_table} WHERE {where}"
    )


def run_query(where: str) -> str:
    return (
        "SELECT r.id, r.job_id, r.pool, r.executor, r.node, r.requests, "
        "r.stop_requested_at IS NOT NULL, j.queue, j.priority_class, j.gang_id, "
        "r.scheduled_priority "
        f"FROM {Run._meta.db_table} r JOIN {Job._meta.db_table} j ON j.id = r.job_id "
        f"WHERE {where}"
    )


def read_rows(sql: str, params: list, *, server_side: bool = False) -> Iterator[tuple]:
    """The rows of a query, fetched in chunks (through a server-side cursor when asked, so
    that a million rows are never all in memory as tuples at once)."""
    cursor = connection.chunked_cursor() if server_side else connection.cursor()
    with cursor:
        cursor.execute(sql, params)
        while rows := cursor.fetchmany(CHUNK):
            yield from rows


def moment(value: Any) -> datetime | None:
    """A timestamp as the database returned it (an aware or naive UTC datetime, or text on
    some SQLite paths) as an aware datetime."""
    if value is None:
        return None
    if isinstance(value, str):
        value = parse_datetime(value)
        if value is None:
            return None
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def text_of(value: Any) -> str | None:
    """A JSON value as the database returned it: text (bytes from some drivers), or already
    parsed where the driver does that."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode()
    return json.dumps(value, sort_keys=True)


class Interner:
    """One shared object per distinct JSON text (requests, selectors, tolerations, avoided
    nodes), parsed once."""

    def __init__(self, floating: frozenset[str] = frozenset()) -> None:
        self.floating_names = floating
        self.resources: dict[str, Resources] = {}
        self.split: dict[str, tuple[Resources, Mapping[str, int]]] = {}
        self.selectors: dict[str, Mapping[str, str]] = {}
        self.tolerations: dict[str, tuple[Toleration, ...]] = {}
        self.avoid: dict[str, frozenset[str]] = {}

    def requests(self, raw: Any) -> Resources:
        text = text_of(raw) or "{}"
        found = self.resources.get(text)
        if found is None:
            found = self.resources[text] = Resources(json.loads(text))
        return found

    def node_and_floating(self, raw: Any) -> tuple[Resources, Mapping[str, int]]:
        """The requests as (what a node must offer, what the pool's floating resources
        must offer), ``core.limits.split_floating``."""
        if not self.floating_names:
            return self.requests(raw), NO_FLOATING
        text = text_of(raw) or "{}"
        found = self.split.get(text)
        if found is None:
            on_node, floating = split_floating(json.loads(text), self.floating_names)
            found = self.split[text] = (
                Resources(on_node),
                MappingProxyType(floating) if floating else NO_FLOATING,
            )
        return found

    def selector(self, raw: Any) -> Mapping[str, str]:
        text = text_of(raw)
        if not text:
            return {}
        found = self.selectors.get(text)
        if found is None:
            value = json.loads(text)
            found = self.selectors[text] = (
                {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}
            )
        return found

    def toleration_list(self, raw: Any) -> tuple[Toleration, ...]:
        text = text_of(raw)
        if not text:
            return ()
        found = self.tolerations.get(text)
        if found is None:
            value = json.loads(text)
            found = self.tolerations[text] = (
                tuple(pod_tolerations({"tolerations": value})) if isinstance(value, list) else ()
            )
        return found

    def avoided(self, raw: Any) -> frozenset[str]:
        text = text_of(raw)
        if not text:
            return frozenset()
        found = self.avoid.get(text)
        if found is None:
            value = json.loads(text)
            found = self.avoid[text] = (
                frozenset(str(a) for a in value) if isinstance(value, list) else frozenset()
            )
        return found
