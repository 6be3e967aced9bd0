"""Away node types: a priority class whose jobs may run on nodes that belong to others, at a
lower priority, so that the owners' jobs take the room back first.

A *well-known node type* is a set of taints; a node is of the type when it carries them all
(``scheduling.wellKnownNodeTypes``). A priority class's ``awayNodeTypes`` lists, in order,
the other types its jobs may use when no home node (one the job's own tolerations allow)
has room: each entry with the priority its jobs run at there, and the types it names
(``wellKnownNodeTypeName``, or ``nodeTypes`` with conditions on what the job requests, such
as ``cpu < 4``; ``*`` names every type). For an entry, the job is tried again with
tolerations for the taints of every named type whose conditions hold, at the entry's
priority: it may then evict only jobs of lower priority, and, placed, it counts as a job of
that priority, so that a home job of higher urgency evicts it first (preemption takes the
least urgent jobs first).

Conditions: every condition of a type must hold (all of them, compared exactly in
milli-units). A job not matching any type of an entry skips the entry.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from armada.core.nodeindex import NodeIndex
from armada.core.snapshot import (
    REASON_NO_RESOURCES,
    QueuedJob,
    RoundResult,
    Taint,
    Toleration,
    _shape,
)

WILDCARD = "*"
OPERATORS = (">", "<", "==")


@dataclass(frozen=True)
class Condition:
    resource: str
    operator: str  # ">", "<" or "=="
    value: int  # milli-units

    def holds(self, requests: Mapping[str, int]) -> bool:
        asked = requests.get(self.resource, 0)
        if self.operator == ">":
            return asked > self.value
        if self.operator == "<":
            return asked < self.value
        return asked == self.value


@dataclass(frozen=True)
class AwayTarget:
    """A node type an away entry names (``*``: every type), with its conditions."""

    name: str
    conditions: tuple[Condition, ...] = ()


@dataclass(frozen=True)
class AwayEntry:
    priority: int
    targets: tuple[AwayTarget, ...]


@dataclass(frozen=True)
class AwayOption:
    """One away attempt for a job: the tolerations it gets and the priority it runs at."""

    priority: int
    tolerations: tuple[Toleration, ...]
    node_types: tuple[str, ...]

    @property
    def label(self) -> str:
        return ",".join(self.node_types)


def toleration_for(taint: Taint) -> Toleration:
    return Toleration(key=taint.key, operator="Equal", value=taint.value, effect=taint.effect)


TOLERATE_ALL = Toleration(operator="Exists")


def away_options(
    entries: Sequence[AwayEntry],
    node_types: Mapping[str, Sequence[Taint]],
    requests: Mapping[str, int],
) -> list[AwayOption]:
    """The away attempts of a job asking ``requests``, in the entries' order; an entry none
    of whose types match the job is left out."""
    out: list[AwayOption] = []
    for entry in entries:
        names: list[str] = []
        tolerations: list[Toleration] = []
        wildcard = False
        for target in entry.targets:
            if not all(c.holds(requests) for c in target.conditions):
                continue
            if target.name == WILDCARD:
                wildcard = True
                names.append(WILDCARD)
                continue
            names.append(target.name)
            for taint in node_types.get(target.name, ()):
                toleration = toleration_for(taint)
                if toleration not in tolerations:
                    tolerations.append(toleration)
        if not names:
            continue
        out.append(
            AwayOption(
                priority=entry.priority,
                tolerations=(TOLERATE_ALL,) if wildcard else tuple(tolerations),
                node_types=tuple(names),
            )
        )
    return out


class AwayPlanner:
    """The away attempts of a round's jobs, by priority class, worked out once per class
    and request shape."""

    def __init__(
        self,
        entries: Mapping[str, Sequence[AwayEntry]],
        node_types: Mapping[str, Sequence[Taint]],
    ) -> None:
        self.entries = entries
        self.node_types = node_types
        self._cache: dict[tuple[str, tuple], list[AwayOption]] = {}

    def __bool__(self) -> bool:
        return bool(self.entries)

    def options(self, priority_class: str, requests: Mapping[str, int]) -> list[AwayOption]:
        entries = self.entries.get(priority_class)
        if not entries:
            return []
        key = (priority_class, tuple(sorted(requests.items())))
        found = self._cache.get(key)
        if found is None:
            found = self._cache[key] = away_options(entries, self.node_types, requests)
        return found


def node_type_of(taints: Iterable[Taint], node_types: Mapping[str, Sequence[Taint]]) -> str:
    """The first well-known type (in name order) whose taints the node carries all of, or
    "" (for display: which type a node is)."""
    present = {(t.key, t.value, t.effect) for t in taints}
    for name in sorted(node_types):
        wanted = node_types[name]
        if wanted and all((t.key, t.value, t.effect) in present for t in wanted):
            return name
    return ""


def toleration_json(toleration: Toleration) -> dict[str, str]:
    """A toleration as a pod spec writes it (empty fields left out)."""
    out = {"operator": toleration.operator}
    if toleration.key:
        out["key"] = toleration.key
    if toleration.value and toleration.operator != "Exists":
        out["value"] = toleration.value
    if toleration.effect:
        out["effect"] = toleration.effect
    return out


def with_tolerations(pod_spec: dict[str, Any], tolerations: list[dict[str, str]]) -> dict[str, Any]:
    """``pod_spec`` with ``tolerations`` added to its own (those it has already kept once)."""
    own = pod_spec.get("tolerations")
    merged = list(own) if isinstance(own, list) else []
    merged += [t for t in tolerations if t not in merged]
    return {**pod_spec, "tolerations": merged}


class AwayMixin:
    """Away placement within a round (``scheduling._Round``, which provides ``index``,
    ``result``, ``away`` (an :class:`AwayPlanner`), ``place`` and ``try_urgency``)."""

    index: NodeIndex
    result: RoundResult
    away: AwayPlanner

    def try_away(self, job: QueuedJob) -> bool:
        """Place ``job`` on another node type (``core.away``): each of its class's away
        options in order, with the option's tolerations and at its priority (which may
        evict only less urgent jobs). The home reason stays the job's reason if none
        works."""
        index = self.index
        for option in self.away.options(job.priority_class, job.requests.to_dict()):
            away = replace(
                job, tolerations=(*job.tolerations, *option.tolerations), urgency=option.priority
            )
            scan = index.scan(away, _shape(away))
            view = index.first_fit(scan)
            if view is not None:
                self.place(away, view)
            elif not (scan.reason() == REASON_NO_RESOURCES and self.try_urgency(away, scan)):
                continue
            self.result.away[job.id] = option
            return True
        return False
