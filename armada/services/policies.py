"""Retry-policy services (writes) and selectors (reads).

Policies are validated by the core (``core.policy.parse_policy``) and stored with a version
that grows on every update. Every create and update also writes a ``RetryPolicyVersion`` row
(the document as saved, who, when) in the same transaction, so the history never misses a
version and never holds one that was not saved. A queue names policies in order; deleting a
policy that any queue names is refused, naming the queues. Deleting a policy keeps its
history (the rows lose their link to the policy but keep its name).

Reading policies in Lookout needs ``view_retrypolicy`` or one of the three management
permissions (:func:`can_read_policies`); creating, updating and deleting need
``create_retry_policy``, ``update_retry_policy`` and ``delete_retry_policy``; attaching a
policy to a queue is a queue update and needs what ``queue_update`` needs.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction

from armada.core.errors import ValidationFailed
from armada.core.policy import API_VERSION, KIND, parse_policy, policy_document
from armada.core.policy import RetryPolicy as PolicySpec
from armada.models import Queue, RetryPolicy, RetryPolicyVersion
from armada.services.authz import has_global, require_global
from armada.services.errors import (
    AlreadyExists,
    FailedPrecondition,
    NotFound,
    PermissionDenied,
)
from armada.services.locking import lock
from armada.services.queues import queue_update

log = logging.getLogger(__name__)

READ_PERMISSIONS = (
    "view_retrypolicy",
    "create_retry_policy",
    "update_retry_policy",
    "delete_retry_policy",
)


def can_read_policies(actor: Any) -> bool:
    """Whether ``actor`` may see policies and their history in Lookout."""
    return any(has_global(actor, codename) for codename in READ_PERMISSIONS)


def require_policy_reader(actor: Any) -> None:
    if not can_read_policies(actor):
        raise PermissionDenied(
            f"user {getattr(actor, 'username', '') or 'anonymous'!r} may not read retry "
            "policies: needs the global 'view_retrypolicy' permission (or one that manages "
            "policies)"
        )


def policy_spec(row: RetryPolicy) -> PolicySpec:
    """The stored policy as the core sees it (raises ValidationFailed if it no longer parses)."""
    spec = parse_policy(
        {
            "name": row.name,
            "retryLimit": row.retry_limit,
            "defaultAction": row.default_action,
            "rules": row.rules,
        }
    )
    return PolicySpec(
        name=spec.name,
        retry_limit=spec.retry_limit,
        default_action=spec.default_action,
        rules=spec.rules,
        version=row.version,
    )


def policy_as_document(row: RetryPolicy) -> dict[str, Any]:
    """The file form of a stored policy, with its version and who changed it last, and, on
    a policy just saved or checked (one that carries ``row.warnings``), the warnings of its
    parse (``warnings``: field and message each, as errors are shown; empty when none)."""
    document = {
        **policy_document(policy_spec(row)),
        "version": row.version,
        "createdAt": row.created_at.isoformat(),
        "updatedAt": row.updated_at.isoformat(),
        "updatedBy": row.updated_by,
    }
    warnings = getattr(row, "warnings", None)
    if warnings is not None:
        document["warnings"] = [{"field": w.field, "message": w.message} for w in warnings]
    return document


def _with_warnings(row: RetryPolicy, spec: PolicySpec) -> RetryPolicy:
    """``row`` carrying the warnings of the parse that produced it (``row.warnings``), each
    also logged: the caller shows them (REST) or cannot (Armada's wire API answers Empty)."""
    row.warnings = spec.warnings
    for warning in spec.warnings:
        log.warning("retry policy %r saved with a warning: %s", row.name, warning)
    return row


def policy_file(row: RetryPolicy) -> dict[str, Any]:
    """The stored policy in its file form, as an editor shows it and ``update`` takes it back.

    Built from the stored fields without parsing them again, so that a policy stored before
    a rule of the format tightened can still be shown, and fixed.
    """
    document: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "name": row.name,
        "retryLimit": row.retry_limit,
        "defaultAction": row.default_action,
    }
    if row.rules:
        document["rules"] = row.rules
    return document


def policy_get(*, name: str) -> RetryPolicy:
    row = RetryPolicy.objects.filter(name=name).first()
    if row is None:
        raise NotFound(f"retry policy {name!r} does not exist")
    return row


def policy_list() -> list[RetryPolicy]:
    return list(RetryPolicy.objects.order_by("name"))


def _fields(spec: PolicySpec) -> dict[str, Any]:
    document = policy_document(spec)
    return {
        "retry_limit": spec.retry_limit,
        "default_action": spec.default_action,
        "rules": document.get("rules", []),
    }


def policy_validate(*, data: Any, name: str | None = None) -> PolicySpec:
    """Check a policy document without saving it: the core's checks, and, for an update of
    policy ``name``, that the document names the same policy. Raises ValidationFailed."""
    spec = parse_policy(data)
    if name is not None and spec.name != name:
        raise ValidationFailed.one(
            "name",
            f"the body names {spec.name!r} but the request is for {name!r}; a policy cannot be renamed",
        )
    return spec


def _record_version(row: RetryPolicy, spec: PolicySpec) -> RetryPolicyVersion:
    """The history row of ``row`` as just saved; call inside the save's transaction."""
    return RetryPolicyVersion.objects.create(
        policy=row,
        policy_name=row.name,
        version=row.version,
        document=policy_document(spec),
        saved_by=row.updated_by,
        saved_at=row.updated_at,
    )


def policy_create(*, actor: Any, data: Any, now: datetime) -> RetryPolicy:
    """Create a policy at version 1, with its first history row."""
    require_global(actor, "create_retry_policy", "create retry policies")
    spec = policy_validate(data=data)
    try:
        with transaction.atomic():
            row = RetryPolicy.objects.create(
                name=spec.name,
                **_fields(spec),
                version=1,
                created_at=now,
                updated_at=now,
                updated_by=actor.get_username(),
            )
            _record_version(row, spec)
    except IntegrityError:
        raise AlreadyExists(
            f"retry policy {spec.name!r} already exists; use update to change it"
        ) from None
    return _with_warnings(row, spec)


def policy_update(
    *,
    actor: Any,
    name: str,
    data: Any,
    now: datetime,
    expected_version: int | None = None,
    carries_backoff: bool = True,
) -> RetryPolicy:
    """Replace the policy's rules and limits; its version grows by one and the new version
    is added to the history.

    ``expected_version`` is the version the caller's edit started from: when the policy has
    moved on since (someone else saved meanwhile), the update is refused with
    FailedPrecondition instead of silently overwriting their change. ``carries_backoff``
    False says the caller's format has no place for a rule's ``backoff`` (our extension;
    Armada's gRPC message): a stored policy that has one is then refused with
    FailedPrecondition rather than losing it. Both are checked under the policy's lock.
    """
    require_global(actor, "update_retry_policy", "update retry policies")
    spec = policy_validate(data=data, name=name)
    with transaction.atomic():
        row = lock(RetryPolicy.objects.filter(name=name)).first()
        if row is None:
            raise NotFound(f"retry policy {name!r} does not exist")
        if expected_version is not None and row.version != expected_version:
            raise FailedPrecondition(
                f"retry policy {name!r} was changed by {row.updated_by or 'someone'} "
                f"(now version {row.version}) after you started editing version "
                f"{expected_version}; review their change and save again"
            )
        if not carries_backoff and any("backoff" in rule for rule in row.rules or ()):
            raise FailedPrecondition(
                f"retry policy {name!r} has a rule with a retry delay (backoff), which this "
                "API cannot carry; update it through /api/v1 or armadactl so that the delay "
                "is not lost"
            )
        for key, value in _fields(spec).items():
            setattr(row, key, value)
        row.version += 1
        row.updated_at = now
        row.updated_by = actor.get_username()
        row.save()
        _record_version(row, spec)
    return _with_warnings(row, spec)


def policy_versions(*, policy: RetryPolicy) -> list[RetryPolicyVersion]:
    """The policy's history, newest first."""
    return list(policy.versions.order_by("-version"))


def queues_using(name: str) -> list[str]:
    """Queues whose retry-policy list names ``name`` (checked in Python: JSON lists)."""
    return sorted(
        q.name
        for q in Queue.objects.only("name", "retry_policies")
        if name in (q.retry_policies or [])
    )


def queues_by_policy() -> dict[str, list[str]]:
    """Policy name -> the queues naming it, in queue-name order (one query for a list page)."""
    out: dict[str, list[str]] = {}
    for q in Queue.objects.only("name", "retry_policies").order_by("name"):
        for policy in dict.fromkeys(q.retry_policies or []):
            out.setdefault(policy, []).append(q.name)
    return out


def policy_attach(*, actor: Any, name: str, queue: str, first: bool, now: datetime) -> Queue:
    """Add policy ``name`` to ``queue``'s list: at the front when ``first`` (the front policy
    is the one evaluated), else at the end. A policy already listed moves only when
    ``first`` asks for it. Goes through ``queue_update``, with its permission and checks."""
    require_global(actor, "create_queue", "update queues")
    with transaction.atomic():
        row = lock(Queue.objects.filter(name=queue)).first()
        if row is None:
            raise NotFound(f"queue {queue!r} does not exist")
        names = list(row.retry_policies or [])
        if first:
            names = [name, *(n for n in names if n != name)]
        elif name not in names:
            names.append(name)
        return queue_update(actor=actor, name=queue, data={"retryPolicies": names}, now=now)


def policy_detach(*, actor: Any, name: str, queue: str, now: datetime) -> Queue:
    """Remove policy ``name`` from ``queue``'s list (through ``queue_update``)."""
    require_global(actor, "create_queue", "update queues")
    with transaction.atomic():
        row = lock(Queue.objects.filter(name=queue)).first()
        if row is None:
            raise NotFound(f"queue {queue!r} does not exist")
        names = [n for n in row.retry_policies or [] if n != name]
        return queue_update(actor=actor, name=queue, data={"retryPolicies": names}, now=now)


def policy_delete(*, actor: Any, name: str) -> None:
    """Delete a policy; refused (FailedPrecondition, 409) while any queue names it. Its
    history is kept."""
    require_global(actor, "delete_retry_policy", "delete retry policies")
    with transaction.atomic():
        row = lock(RetryPolicy.objects.filter(name=name)).first()
        if row is None:
            raise NotFound(f"retry policy {name!r} does not exist")
        users = queues_using(name)
        if users:
            raise FailedPrecondition(
                f"retry policy {name!r} is used by queue(s) {', '.join(users)}; detach it first"
            )
        row.delete()
