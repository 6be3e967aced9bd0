"""Executor sessions: an executor process registers itself, and the newest process wins.

``executor_session_open`` is the first call of every executor process. It creates the
executor (or updates its pool, backend and tracked labels) and gives it a new session id,
which every later call of that process carries. Opening a session **fences** every older
session of the same executor id: their calls are refused from then on
(:func:`executor_session_check` raises ``FailedPrecondition``), and a fenced process stops
acting on its cluster. So when a second process claims an executor id that one already
holds, the second takes over and the first stands down; a restarted executor (whose old
process is gone) takes over at once, without waiting for anything to time out.

The session is checked at the start of each call, not under a lock: a process fenced while
one of its calls is under way may finish that call. That is harmless, because what a call
does is idempotent and true of the cluster (a report of what a pod did), and the fenced
process makes no further call.
"""

from __future__ import annotations

import logging
import secrets
from datetime import datetime

from django.conf import settings
from django.db import IntegrityError, transaction

from armada.core.config_types import RFC1123_LABEL
from armada.models import Executor
from armada.services.errors import FailedPrecondition, FieldError, NotFound, ValidationFailed
from armada.services.locking import lock

log = logging.getLogger(__name__)

MAX_LABELS = 64


def check_executor_id(executor_id: str, field: str = "executorId") -> None:
    if not RFC1123_LABEL.match(executor_id) or len(executor_id) > 63:
        raise ValidationFailed.one(
            field,
            f"{executor_id!r} must be a lower-case RFC 1123 label (a-z, 0-9 and '-', at most "
            "63 characters)",
        )


def check_pool(pool: str) -> None:
    pools = [p.name for p in settings.ARMADA.scheduling.pools]
    if pool not in pools:
        raise ValidationFailed.one(
            "pool", f"{pool!r} is not a pool of this control plane ({', '.join(pools)})"
        )


def executor_session_open(
    *,
    executor_id: str,
    pool: str,
    backend: str,
    tracked_node_labels: list[str],
    instance: str,
    now: datetime,
) -> Executor:
    """Register ``executor_id`` (or refresh it) with a new session; returns the executor
    with its ``session``. Older sessions of the same id are fenced from now on."""
    check_executor_id(executor_id)
    check_pool(pool)
    problems = []
    if not backend or len(backend) > 32:
        problems.append(FieldError("backend", "must be 1 to 32 characters"))
    if len(tracked_node_labels) > MAX_LABELS:
        problems.append(FieldError("trackedNodeLabels", f"at most {MAX_LABELS} labels"))
    problems += [
        FieldError(f"trackedNodeLabels[{i}]", "must be 1 to 317 characters")
        for i, label in enumerate(tracked_node_labels)
        if not label or len(label) > 317
    ]
    if problems:
        raise ValidationFailed(problems)
    session = secrets.token_hex(16)
    fields = {
        "pool": pool,
        "backend": backend,
        "tracked_node_labels": list(tracked_node_labels),
        "session": session,
        "session_opened_at": now,
        "instance": instance[:255],
        "last_heartbeat": now,
    }
    with transaction.atomic():
        previous = lock(Executor.objects.filter(id=executor_id)).first()
        if previous is None:
            try:
                with transaction.atomic():  # a savepoint: another process may insert it first
                    executor = Executor.objects.create(id=executor_id, registered_at=now, **fields)
            except IntegrityError:
                # Its first session was opened at the same moment by another process, whose
                # row the insert waited for: this session is the newer one, and fences that.
                previous = lock(Executor.objects.filter(id=executor_id)).get()
        if previous is not None:
            if previous.pool != pool:
                previous.nodes_digest = ""  # its nodes move pool with the next round
            for name, value in fields.items():
                setattr(previous, name, value)
            previous.save()
            executor = previous
    if previous is not None and previous.session:
        log.info(
            "executor %s: new session from %s; any older process of it is fenced",
            executor_id,
            instance,
            extra={"executor": executor_id},
        )
    return executor


def executor_session_check(*, executor_id: str, session: str) -> Executor:
    """The executor, if ``session`` is its current session. ``NotFound`` when the executor
    is not registered (open a session); ``FailedPrecondition`` when the session is not its
    newest (this process is fenced)."""
    executor = Executor.objects.filter(id=executor_id).first()
    if executor is None:
        raise NotFound(f"executor {executor_id} is not registered: open a session first")
    if not session or not secrets.compare_digest(executor.session, session):
        opened = executor.session_opened_at.isoformat() if executor.session_opened_at else "?"
        raise FailedPrecondition(
            f"fenced: executor {executor_id} has a newer session (opened at {opened} by "
            f"{executor.instance or 'another process'}); this process must stop acting for it"
        )
    return executor
