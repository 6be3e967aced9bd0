"""Validation of queue definitions (a ``kind: Queue`` file, an API body or CLI flags).

A queue's labels follow Kubernetes' rules for label keys and values (``core.labels``).

A queue's ``resourceLimitsByPriorityClassName`` (Armada's field of that name) caps the
fraction of a pool's resources that the queue's jobs of one priority class may hold::

    resourceLimitsByPriorityClassName:
      armada-preemptible:
        maximumResourceFraction: {cpu: 0.3, memory: 0.3}
        maximumResourceFractionByPool:
          gpu-pool: {maximumResourceFraction: {cpu: 0.1}}

It is stored in that shape (camelCase keys, both keys of a class always present, fractions
as floats). The priority-class and pool names must be configured ones; this module knows no
configuration, so the caller passes the names in (``services.queues.queue_parse`` does).
The scheduler merges a class's entry over the priority class's own limits
(``core.limits.class_fractions``)."""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from armada.core.errors import FieldError, ValidationFailed
from armada.core.labels import label_problems

RFC1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
VERBS = ("submit", "cancel", "preempt", "reprioritize", "watch")
SUBJECT_KINDS = ("User", "Group")
LIMITS = "resourceLimitsByPriorityClassName"
QUEUE_FIELDS = {
    "name",
    "priorityFactor",
    "owners",
    "groupOwners",
    "permissions",
    "labels",
    "cordoned",
    "retryPolicies",
    LIMITS,
}
#: The keys of one priority class's entry in ``resourceLimitsByPriorityClassName``.
FRACTION = "maximumResourceFraction"
FRACTION_BY_POOL = "maximumResourceFractionByPool"
#: Fields Armada still sends but no longer honours: accepted (their shape checked), ignored,
#: and reported back as warnings (``queue_warnings``) so that the caller learns they did
#: nothing. Per-queue limits by priority class (``resourceLimitsByPriorityClassName``) are
#: another field, stored and applied.
IGNORED_FIELDS = {
    "resourceLimits": (
        "is deprecated and ignored: limit a queue's share of a pool with "
        "resourceLimitsByPriorityClassName instead"
    ),
}


@dataclass(frozen=True)
class QueueSpec:
    name: str
    priority_factor: float = 1.0
    owners: list[str] = field(default_factory=list)
    group_owners: list[str] = field(default_factory=list)
    permissions: list[dict[str, Any]] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    cordoned: bool = False
    retry_policies: list[str] = field(default_factory=list)
    #: priority class -> {maximumResourceFraction, maximumResourceFractionByPool} (see above)
    resource_limits_by_priority_class_name: dict[str, dict[str, Any]] = field(default_factory=dict)


def validate_name(name: Any, where: str = "name") -> list[FieldError]:
    if not isinstance(name, str) or not name:
        return [FieldError(where, "is required")]
    if len(name) > 63 or not RFC1123_LABEL.fullmatch(name):
        return [
            FieldError(
                where,
                f"{name!r} must be a lower-case RFC 1123 label: a-z, 0-9 and '-', starting and ending with a letter or digit, at most 63 characters",
            )
        ]
    return []


def _finite(value: int | float) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an int beyond any float
        return False


def _names(value: Any, where: str, errors: list[FieldError]) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        errors.append(FieldError(where, "must be a list of non-empty names"))
        return []
    return list(dict.fromkeys(value))


def parse_queue(
    data: Any,
    *,
    partial: bool = False,
    priority_classes: Collection[str] | None = None,
    pools: Collection[str] | None = None,
) -> dict[str, Any]:
    """Validate a queue body; returns the fields given, in model names. ``partial`` for updates.

    ``priority_classes`` and ``pools`` are the configured names that
    ``resourceLimitsByPriorityClassName`` may use; None checks its shape alone."""
    if not isinstance(data, Mapping):
        raise ValidationFailed.one("", "a queue is a mapping")
    errors: list[FieldError] = []
    for key in sorted(set(data) - QUEUE_FIELDS - set(IGNORED_FIELDS), key=str):
        errors.append(
            FieldError(str(key), f"unknown field; allowed: {', '.join(sorted(QUEUE_FIELDS))}")
        )
    if "resourceLimits" in data:
        _resource_fractions(data["resourceLimits"], "resourceLimits", errors)
    out: dict[str, Any] = {}
    if "name" in data or not partial:
        errors += validate_name(data.get("name"))
        out["name"] = data.get("name")
    if "priorityFactor" in data:
        pf = data["priorityFactor"]
        if isinstance(pf, bool) or not isinstance(pf, int | float) or not _finite(pf) or pf < 1.0:
            errors.append(FieldError("priorityFactor", "must be a number of at least 1.0"))
        else:
            out["priority_factor"] = float(pf)
    if "owners" in data:
        out["owners"] = _names(data["owners"], "owners", errors)
    if "groupOwners" in data:
        out["group_owners"] = _names(data["groupOwners"], "groupOwners", errors)
    if "retryPolicies" in data:
        out["retry_policies"] = _names(data["retryPolicies"], "retryPolicies", errors)
    if "cordoned" in data:
        if not isinstance(data["cordoned"], bool):
            errors.append(FieldError("cordoned", "must be true or false"))
        else:
            out["cordoned"] = data["cordoned"]
    if "labels" in data:
        labels = data["labels"]
        if labels is None:
            labels = {}
        if not isinstance(labels, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in labels.items()
        ):
            errors.append(FieldError("labels", "must be a mapping of strings to strings"))
        elif problems := label_problems(labels, "labels"):
            errors += problems
        else:
            out["labels"] = dict(labels)
    if "permissions" in data:
        out["permissions"] = _permissions(data["permissions"], errors)
    if LIMITS in data:
        before = len(errors)
        limits = limits_by_priority_class(
            data[LIMITS], errors, priority_classes=priority_classes, pools=pools
        )
        if len(errors) == before:
            out["resource_limits_by_priority_class_name"] = limits
    if errors:
        raise ValidationFailed(errors)
    return out


def _permissions(value: Any, errors: list[FieldError]) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list):
        errors.append(FieldError("permissions", "must be a list of {subjects, verbs}"))
        return []
    out = []
    for i, grant in enumerate(value):
        where = f"permissions[{i}]"
        if not isinstance(grant, Mapping) or set(grant) - {"subjects", "verbs"}:
            errors.append(FieldError(where, "must be a mapping with only subjects and verbs"))
            continue
        subjects = grant.get("subjects")
        verbs = grant.get("verbs")
        ok = True
        if not isinstance(subjects, list) or not subjects:
            errors.append(FieldError(f"{where}.subjects", "must be a non-empty list"))
            ok = False
        else:
            for j, s in enumerate(subjects):
                if (
                    not isinstance(s, Mapping)
                    or s.get("kind") not in SUBJECT_KINDS
                    or not isinstance(s.get("name"), str)
                    or not s.get("name")
                ):
                    errors.append(
                        FieldError(
                            f"{where}.subjects[{j}]", "must be {kind: User|Group, name: <name>}"
                        )
                    )
                    ok = False
        if not isinstance(verbs, list) or not verbs or not all(v in VERBS for v in verbs):
            errors.append(
                FieldError(f"{where}.verbs", f"must be a non-empty list of {', '.join(VERBS)}")
            )
            ok = False
        if ok:
            out.append(
                {
                    "subjects": [{"kind": s["kind"], "name": s["name"]} for s in subjects],
                    "verbs": list(dict.fromkeys(verbs)),
                }
            )
    return out


def _resource_fractions(value: Any, where: str, errors: list[FieldError]) -> dict[str, float]:
    """Resource name -> a fraction (0 to 1): Armada's old ``resourceLimits`` and every
    ``maximumResourceFraction``. None is no fractions."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        errors.append(
            FieldError(where, "must be a mapping of resource names to fractions (0 to 1)")
        )
        return {}
    out = {}
    for name, fraction in value.items():
        if not isinstance(name, str) or not name:
            errors.append(FieldError(where, "resource names must be non-empty strings"))
        elif (
            isinstance(fraction, bool)
            or not isinstance(fraction, int | float)
            or not _finite(fraction)
            or not 0 <= fraction <= 1
        ):
            errors.append(FieldError(f"{where}.{name}", "must be a number from 0 to 1"))
        else:
            out[name] = float(fraction)
    return out


def _entries(
    value: Any, where: str, what: str, known: Collection[str] | None, errors: list[FieldError]
) -> list[tuple[str, Mapping[str, Any]]]:
    """The ``(name, mapping)`` entries of a mapping keyed by ``what`` names (priority class,
    pool), each name non-empty and, when ``known`` is given, one of those; a None value is
    an empty entry. Problems go to ``errors``."""
    if value is None:
        return []
    if not isinstance(value, Mapping):
        errors.append(FieldError(where, f"must be a mapping of {what} names to limits"))
        return []
    out = []
    for name, entry in value.items():
        if not isinstance(name, str) or not name:
            errors.append(FieldError(where, f"{what} names must be non-empty strings"))
            continue
        if known is not None and name not in known:
            listed = ", ".join(sorted(known)) or "none"
            errors.append(FieldError(f"{where}.{name}", f"unknown {what}; configured: {listed}"))
            continue
        if entry is None:
            entry = {}
        if not isinstance(entry, Mapping):
            errors.append(FieldError(f"{where}.{name}", "must be a mapping"))
            continue
        out.append((name, entry))
    return out


def _only_keys(
    entry: Mapping[str, Any], allowed: tuple[str, ...], where: str, errors: list[FieldError]
) -> None:
    for key in sorted(set(entry) - set(allowed), key=str):
        errors.append(FieldError(f"{where}.{key}", f"unknown field; allowed: {', '.join(allowed)}"))


def limits_by_priority_class(
    value: Any,
    errors: list[FieldError],
    *,
    priority_classes: Collection[str] | None = None,
    pools: Collection[str] | None = None,
    where: str = LIMITS,
) -> dict[str, dict[str, Any]]:
    """``resourceLimitsByPriorityClassName`` in its stored shape (see the module docstring);
    every problem goes to ``errors``, named by its full path
    (``resourceLimitsByPriorityClassName.armada-preemptible.maximumResourceFraction.cpu``).

    Rules: a mapping of priority-class name to an entry with only ``maximumResourceFraction``
    and ``maximumResourceFractionByPool``; a fraction is a finite number from 0 to 1 (not a
    boolean); resource, class and pool names are non-empty; class and pool names are among
    ``priority_classes`` and ``pools`` when those are given; empty mappings and None (empty)
    are fine at every level."""
    out: dict[str, dict[str, Any]] = {}
    for class_name, entry in _entries(value, where, "priority class", priority_classes, errors):
        at = f"{where}.{class_name}"
        _only_keys(entry, (FRACTION, FRACTION_BY_POOL), at, errors)
        by_pool = {}
        pool_entries = _entries(
            entry.get(FRACTION_BY_POOL), f"{at}.{FRACTION_BY_POOL}", "pool", pools, errors
        )
        for pool, pool_entry in pool_entries:
            pool_at = f"{at}.{FRACTION_BY_POOL}.{pool}"
            _only_keys(pool_entry, (FRACTION,), pool_at, errors)
            fractions = _resource_fractions(
                pool_entry.get(FRACTION), f"{pool_at}.{FRACTION}", errors
            )
            by_pool[pool] = {FRACTION: fractions}
        out[class_name] = {
            FRACTION: _resource_fractions(entry.get(FRACTION), f"{at}.{FRACTION}", errors),
            FRACTION_BY_POOL: by_pool,
        }
    return out


def queue_warnings(data: Any) -> list[str]:
    """What a queue body asked for that is accepted but ignored (``IGNORED_FIELDS``), one
    line per field, naming it; empty when there is nothing to say."""
    if not isinstance(data, Mapping):
        return []
    return [f"{key}: {text}" for key, text in IGNORED_FIELDS.items() if data.get(key)]
