"""Dry runs of the create endpoints (``?dryRun=true``): the same permission check and the
same core parsers as a real create, plus the checks against what is stored (the name is
free, the named retry policies exist), and nothing written."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from armada.models import Queue, RetryPolicy
from armada.services.authz import require_global
from armada.services.errors import Conflict, ValidationFailed
from armada.services.policies import policy_validate
from armada.services.queues import default_owners, queue_parse


def queue_create_check(*, actor: Any, data: Any, now: datetime) -> Queue:
    """The queue ``queue_create`` would store, unsaved; raises what it would raise."""
    require_global(actor, "create_queue", "create queues")
    fields = queue_parse(data)
    if not fields.get("owners") and not fields.get("group_owners"):
        fields.update(default_owners(actor))
    names = fields.get("retry_policies", [])
    known = set(RetryPolicy.objects.filter(name__in=names).values_list("name", flat=True))
    missing = [n for n in names if n not in known]
    if missing:
        raise ValidationFailed.one(
            "retryPolicies",
            f"unknown retry polic{'y' if len(missing) == 1 else 'ies'}: {', '.join(missing)}",
        )
    if Queue.objects.filter(name=fields["name"]).exists():
        raise Conflict(f"queue {fields['name']!r} already exists")
    return Queue(**fields, created_at=now, updated_at=now)


def policy_create_check(*, actor: Any, data: Any, now: datetime) -> RetryPolicy:
    """The policy ``policy_create`` would store (version 1), unsaved."""
    from armada.services.policies import _fields

    require_global(actor, "create_retry_policy", "create retry policies")
    spec = policy_validate(data=data)
    if RetryPolicy.objects.filter(name=spec.name).exists():
        raise Conflict(f"retry policy {spec.name!r} already exists; use update to change it")
    return RetryPolicy(
        name=spec.name,
        **_fields(spec),
        version=1,
        created_at=now,
        updated_at=now,
        updated_by=actor.get_username(),
    )
