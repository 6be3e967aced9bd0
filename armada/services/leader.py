"""Expiring leader leases: one holder at a time, and a standby takes over when it lapses.

A lease is claimed with one guarded UPDATE (free, expired, or already ours) and the row
count says whether we won; no lock is held between calls, so a crashed holder blocks
nobody for longer than the lease's time to live.

A holder made by ``process_holder`` names its host, its PID namespace and its process. A
lease whose holder is a process of this host and namespace that no longer exists (killed,
then restarted by its supervisor with a new pid) is free at once instead of at its expiry:
the restarted scheduler resumes in a cycle, not after the lease's 30 s. A pid that was
reused since only looks alive, which errs on the side of waiting.
"""

from __future__ import annotations

import os
import socket
from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.db.models import Q

from armada.models import LeaderLease


def leader_acquire(*, name: str, holder: str, now: datetime, ttl: timedelta) -> bool:
    """Claim or renew ``name`` for ``holder`` until ``now + ttl``; True when held."""
    expires = now + ttl
    with transaction.atomic():
        won = LeaderLease.objects.filter(
            Q(name=name) & (Q(holder=holder) | Q(holder="") | Q(expires_at__lt=now))
        ).update(holder=holder, expires_at=expires)
    if won:
        return True
    current = LeaderLease.objects.filter(name=name).values_list("holder", flat=True).first()
    if current and holder_gone(current):
        with transaction.atomic():
            won = LeaderLease.objects.filter(name=name, holder=current).update(
                holder=holder, expires_at=expires
            )
        return bool(won)
    if current is not None:
        return False
    try:
        with transaction.atomic():
            LeaderLease.objects.create(name=name, holder=holder, expires_at=expires)
        return True
    except IntegrityError:
        return False


def leader_release(*, name: str, holder: str) -> None:
    LeaderLease.objects.filter(name=name, holder=holder).update(holder="")


def _pid_namespace() -> str:
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return "-"


def process_holder() -> str:
    """``host:pid-namespace:pid`` of this process, a holder ``holder_gone`` can judge."""
    return f"{socket.gethostname()}:{_pid_namespace()}:{os.getpid()}"


def holder_gone(holder: str) -> bool:
    """True when ``holder`` (from ``process_holder``) was a process of this host and PID
    namespace that has exited. Any other holder, or one in another form, may be alive."""
    host, _, rest = holder.partition(":")
    namespace, _, pid = rest.partition(":")
    if host != socket.gethostname() or namespace != _pid_namespace() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False  # it exists (another user's, say)
    return False
