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

import logging
import os
import socket
import threading
import time
from datetime import datetime, timedelta

from django.db import IntegrityError, connections, transaction
from django.db.models import Q

from armada.models import LeaderLease

log = logging.getLogger(__name__)


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


def leader_renew(*, name: str, holder: str, now: datetime, ttl: timedelta) -> bool:
    """Extend ``name`` to ``now + ttl`` if ``holder`` holds it; False when it does not (one
    UPDATE: never claims a lease, never waits for a row another transaction is making)."""
    with transaction.atomic():
        return bool(
            LeaderLease.objects.filter(name=name, holder=holder).update(expires_at=now + ttl)
        )


def leader_release(*, name: str, holder: str) -> None:
    LeaderLease.objects.filter(name=name, holder=holder).update(holder="")


class LeaseLost(Exception):
    """The lease this work was done under is held by another holder now: write nothing."""


def leader_fence(*, name: str, holder: str) -> None:
    """Inside a write's transaction: lock the lease's row and raise LeaseLost unless
    ``holder`` still holds it. A standby's claim (an UPDATE of that row) then waits for the
    write to commit, so no write of a former holder lands after a successor took over (the
    lease's row comes before every other lock: ``services.locking``)."""
    row = (
        LeaderLease.objects.select_for_update(no_key=True)
        .filter(name=name)
        .values_list("holder", flat=True)
        .first()
    )
    if row != holder:
        raise LeaseLost(f"the {name!r} lease is held by {row or 'no one'!r} now, not by us")


class LeaseKeeper:
    """Renews ``name`` for ``holder`` every ``every`` seconds while a long piece of work runs
    (a thread of its own, with a database connection of its own), so that a live holder's
    lease never lapses mid-work however long the work takes, and a dead one's lapses within
    ``ttl``. Renewals run on the work's clock: ``now`` advanced by the monotonic time since
    the keeper started. ``lost`` is set when a renewal finds the lease taken."""

    def __init__(
        self, *, name: str, holder: str, now: datetime, ttl: timedelta, every: float
    ) -> None:
        self.name, self.holder, self.now, self.ttl, self.every = name, holder, now, ttl, every
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._started = time.monotonic()
        self._thread = threading.Thread(target=self._run, name=f"lease-{name}", daemon=True)

    def __enter__(self) -> LeaseKeeper:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        # A renewal under way is one UPDATE; one still running after this (waiting for a
        # row lock) does no harm: it extends a lease this holder had.
        self._thread.join(timeout=10.0)

    def _run(self) -> None:
        try:
            while not self._stop.wait(self.every):
                at = self.now + timedelta(seconds=time.monotonic() - self._started)
                try:
                    held = leader_renew(name=self.name, holder=self.holder, now=at, ttl=self.ttl)
                except Exception:  # noqa: BLE001 - a failed renewal is retried, not fatal
                    log.warning(
                        "renewing the %r lease failed; trying again", self.name, exc_info=True
                    )
                    continue
                if not held:
                    log.warning("the %r lease was taken by another holder", self.name)
                    self.lost.set()
                    return
        finally:
            connections.close_all()


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
