"""Armada's ``api.Queue`` message and our queues, both ways.

Incoming, a message becomes the body our queue services take (``services.queues.queue_parse``
validates it), and the field errors those services raise are renamed to Armada's spelling
(:func:`armada_field_names`). The mapping:

==================================  ===========================================================
``name``                            the queue's name
``priorityFactor``                  at least 1.0; 0 (proto3's "not set") means the default, 1.0
``userOwners`` / ``groupOwners``    owners (our ``owners`` / ``groupOwners``); a queue created
                                    with neither is owned by its creator, as in Armada
``permissions[].subjects[]``        ``{kind: User|Group, name}``; ``verbs``: submit, cancel,
                                    preempt, reprioritize, watch
``cordoned``                        whether the queue refuses new jobs
``labels``                          the labels; ``labelsDeprecated`` (``"key=value"`` entries)
                                    is merged in, the ``labels`` map winning on a clash
``retryPolicies``                   policy names in order (only the first is evaluated)
``resourceLimits``                  deprecated in Armada and ignored here too: accepted (each
                                    value a fraction from 0 to 1), not stored, and logged as a
                                    warning (``core.queues.IGNORED_FIELDS``)
``resourceLimitsByPriorityClass``   priority class -> ``maximumResourceFraction`` (resource ->
``Name``                            fraction, 0 to 1) and ``maximumResourceFractionByPool``
                                    (pool -> ``{maximumResourceFraction}``): stored, both ways;
                                    a configured class and pool each, or INVALID_ARGUMENT
                                    naming the field's path
==================================  ===========================================================

Outgoing, a queue is written with every field above that it has (``labelsDeprecated`` stays
empty); owners and permissions only for a caller who may read them (``queue_message``). Our owners stay in ``userOwners``/``groupOwners``; Armada folds them into a
permission with every verb instead, which means the same to its own authorizer.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from armada_client.armada import submit_pb2

from armada.core.errors import FieldError, ValidationFailed
from armada.core.queues import FRACTION, FRACTION_BY_POOL, LIMITS
from armada.models import Queue
from armada.services.queues import queue_parse

DEFAULT_PRIORITY_FACTOR = 1.0
_RENAMED = {"owners": "userOwners"}


def _deprecated_labels(
    message: submit_pb2.Queue, errors: list[FieldError]
) -> dict[str, tuple[str, int]]:
    """``labelsDeprecated`` as ``key -> (value, index)``; malformed entries go to ``errors``."""
    out: dict[str, tuple[str, int]] = {}
    for i, entry in enumerate(message.labels_deprecated):
        key, equals, value = entry.partition("=")
        if not equals:
            errors.append(FieldError(f"labelsDeprecated[{i}]", f"{entry!r} must be key=value"))
        else:
            out[key] = (value, i)
    return out


def queue_body(message: submit_pb2.Queue) -> dict[str, Any]:
    """The body of our queue services for ``message`` (every field, as Armada's create and
    update both replace the whole queue). Raises ValidationFailed, in Armada's field names,
    when the message has something we cannot take (a malformed ``labelsDeprecated`` entry),
    listing the body's own problems too. ``resourceLimits`` goes into the body when given,
    where the queue services check it, ignore it and log it."""
    errors: list[FieldError] = []
    deprecated = _deprecated_labels(message, errors)
    labels = {key: value for key, (value, _) in deprecated.items()} | dict(message.labels)
    body = {
        "name": message.name,
        "priorityFactor": message.priority_factor or DEFAULT_PRIORITY_FACTOR,
        "owners": list(message.user_owners),
        "groupOwners": list(message.group_owners),
        "permissions": [
            {
                "subjects": [{"kind": s.kind, "name": s.name} for s in grant.subjects],
                "verbs": list(grant.verbs),
            }
            for grant in message.permissions
        ],
        "labels": labels,
        "cordoned": message.cordoned,
        "retryPolicies": list(message.retry_policies),
        LIMITS: {
            name: {
                FRACTION: dict(limits.maximum_resource_fraction),
                FRACTION_BY_POOL: {
                    pool: {FRACTION: dict(pool_limits.maximum_resource_fraction)}
                    for pool, pool_limits in limits.maximum_resource_fraction_by_pool.items()
                },
            }
            for name, limits in message.resource_limits_by_priority_class_name.items()
        },
    }
    if message.resource_limits:
        body["resourceLimits"] = dict(message.resource_limits)
    if errors:
        try:
            queue_parse(body)
        except ValidationFailed as exc:
            errors += armada_field_names(exc.errors, message)
        raise ValidationFailed(errors)
    return body


def armada_field_names(errors: list[FieldError], message: submit_pb2.Queue) -> list[FieldError]:
    """``errors`` of our queue validation with Armada's field names: ``owners`` is
    ``userOwners``, and a label that came from ``labelsDeprecated`` is named there."""
    from_deprecated = {
        key: i
        for key, (_, i) in _deprecated_labels(message, []).items()
        if key not in message.labels
    }
    out = []
    for error in errors:
        field = _RENAMED.get(error.field, error.field)
        if field.startswith("labels[") and field.endswith("]"):
            index = from_deprecated.get(field[len("labels[") : -1])
            if index is not None:
                field = f"labelsDeprecated[{index}]"
        out.append(FieldError(field, error.message))
    return out


@contextmanager
def armada_names(message: submit_pb2.Queue) -> Iterator[None]:
    """Re-raise a ValidationFailed of the block with Armada's field names."""
    try:
        yield
    except ValidationFailed as exc:
        raise ValidationFailed(armada_field_names(exc.errors, message)) from None


def queue_message(queue: Queue, *, with_access: bool = True) -> submit_pb2.Queue:
    """The ``api.Queue`` of a stored queue; without ``with_access`` (a caller who may not
    read who may act on it: ``authz.may_read_queue_access``) its ``userOwners``,
    ``groupOwners`` and ``permissions`` are left empty."""
    message = submit_pb2.Queue(
        name=queue.name,
        priority_factor=queue.priority_factor,
        cordoned=queue.cordoned,
        labels=queue.labels or {},
        retry_policies=queue.retry_policies or [],
        resource_limits_by_priority_class_name={
            name: submit_pb2.PriorityClassResourceLimits(
                maximum_resource_fraction=limits.get(FRACTION) or {},
                maximum_resource_fraction_by_pool={
                    pool: submit_pb2.PriorityClassPoolResourceLimits(
                        maximum_resource_fraction=pool_limits.get(FRACTION) or {}
                    )
                    for pool, pool_limits in (limits.get(FRACTION_BY_POOL) or {}).items()
                },
            )
            for name, limits in (queue.resource_limits_by_priority_class_name or {}).items()
        },
    )
    if with_access:
        message.user_owners.extend(queue.owners or [])
        message.group_owners.extend(queue.group_owners or [])
        message.permissions.extend(
            submit_pb2.Queue.Permissions(
                subjects=[
                    submit_pb2.Queue.Permissions.Subject(kind=s["kind"], name=s["name"])
                    for s in grant.get("subjects", [])
                ],
                verbs=grant.get("verbs", []),
            )
            for grant in queue.permissions or []
        )
    return message
