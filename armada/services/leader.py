"""Expiring leader leases: one holder at a time, and a standby takes over when it lapses.

A lease is claimed with one guarded UPDATE (free, expired, or already ours) and the row
count says whether we won; no lock is held between calls, so a crashed holder blocks
nobody for longer than the lease's time to live.
"""

from __future__ import annotations

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
    try:
        with transaction.atomic():
            LeaderLease.objects.create(name=name, holder=holder, expires_at=expires)
        return True
    except IntegrityError:
        return False


def leader_release(*, name: str, holder: str) -> None:
    LeaderLease.objects.filter(name=name, holder=holder).update(holder="")
