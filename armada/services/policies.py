"""Retry-policy services (writes) and selectors (reads).

Policies are validated by the core (``core.policy.parse_policy``) and stored with a version
that grows on every update. A queue names policies in order; deleting a policy that any
queue names is refused, naming the queues.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction

from armada.core.errors import ValidationFailed
from armada.core.policy import RetryPolicy as PolicySpec
from armada.core.policy import parse_policy, policy_document
from armada.models import Queue, RetryPolicy
from armada.services.authz import require_global
from armada.services.errors import Conflict, NotFound


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
    """The file form of a stored policy, with its version and who changed it last."""
    return {
        **policy_document(policy_spec(row)),
        "version": row.version,
        "createdAt": row.created_at.isoformat(),
        "updatedAt": row.updated_at.isoformat(),
        "updatedBy": row.updated_by,
    }


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


def policy_create(*, actor: Any, data: Any, now: datetime) -> RetryPolicy:
    require_global(actor, "create_retry_policy", "create retry policies")
    spec = parse_policy(data)
    try:
        with transaction.atomic():
            return RetryPolicy.objects.create(
                name=spec.name,
                **_fields(spec),
                version=1,
                created_at=now,
                updated_at=now,
                updated_by=actor.get_username(),
            )
    except IntegrityError:
        raise Conflict(
            f"retry policy {spec.name!r} already exists; use update to change it"
        ) from None


def policy_update(*, actor: Any, name: str, data: Any, now: datetime) -> RetryPolicy:
    """Replace the policy's rules and limits; its version grows by one."""
    require_global(actor, "update_retry_policy", "update retry policies")
    spec = parse_policy(data)
    if spec.name != name:
        raise ValidationFailed.one(
            "name",
            f"the body names {spec.name!r} but the request is for {name!r}; a policy cannot be renamed",
        )
    with transaction.atomic():
        row = RetryPolicy.objects.select_for_update().filter(name=name).first()
        if row is None:
            raise NotFound(f"retry policy {name!r} does not exist")
        for key, value in _fields(spec).items():
            setattr(row, key, value)
        row.version += 1
        row.updated_at = now
        row.updated_by = actor.get_username()
        row.save()
        return row


def queues_using(name: str) -> list[str]:
    """Queues whose retry-policy list names ``name`` (checked in Python: JSON lists)."""
    return sorted(
        q.name
        for q in Queue.objects.only("name", "retry_policies")
        if name in (q.retry_policies or [])
    )


def policy_delete(*, actor: Any, name: str) -> None:
    """Delete a policy; refused (409) while any queue names it."""
    require_global(actor, "delete_retry_policy", "delete retry policies")
    with transaction.atomic():
        row = RetryPolicy.objects.select_for_update().filter(name=name).first()
        if row is None:
            raise NotFound(f"retry policy {name!r} does not exist")
        users = queues_using(name)
        if users:
            raise Conflict(
                f"retry policy {name!r} is used by queue(s) {', '.join(users)}; detach it first"
            )
        row.delete()
