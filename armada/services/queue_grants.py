"""Granting and revoking one queue's permissions for some users and groups (writes).

The change is worked out by ``core.queue_grants`` on the queue's permissions as they are
under the queue's row lock, then saved through ``services.queues.queue_update`` (the
service of the API's ``PATCH /queues/{name}``), in one transaction: two people changing
the same queue's permissions at once each keep their change. Who may: whoever may update
queues (the global ``create_queue`` permission), as for any other field of a queue.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction

from armada.core.queue_grants import Change, grant, parse_change, revoke
from armada.models import Queue
from armada.services.authz import require_global
from armada.services.errors import NotFound
from armada.services.locking import lock
from armada.services.queues import queue_update

ACTIONS = ("grant", "revoke")


def queue_permissions_change(
    *, actor: Any, name: str, action: str, data: Any, now: datetime
) -> Queue:
    """``grant`` the body's verbs to its subjects on queue ``name``, or ``revoke`` them (every
    verb when the body names none). ``data``: ``{"subjects": [{kind, name}], "verbs": [...]}``.
    Raises PermissionDenied, ValidationFailed (naming the field) or NotFound."""
    if action not in ACTIONS:
        raise ValueError(f"unknown action {action!r}")
    require_global(actor, "create_queue", "change queue permissions")
    change: Change = parse_change(data, verbs_required=action == "grant")
    with transaction.atomic():
        queue = lock(Queue.objects.filter(name=name)).first()
        if queue is None:
            raise NotFound(f"queue {name!r} does not exist")
        current = queue.permissions or []
        if action == "grant":
            permissions = grant(current, change.subjects, change.verbs)
        else:
            permissions = revoke(current, change.subjects, change.verbs)
        return queue_update(actor=actor, name=name, data={"permissions": permissions}, now=now)
