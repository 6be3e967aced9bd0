"""Celery beat under a leader lease: one beat sends, any other stands by.

Started as its own process, ``celery -A armada.celery beat -S armada.beat:LeasedScheduler``
(the ``CELERY_BEAT_SCHEDULER`` setting names it too, so a plain ``celery beat`` is the same).

Invariants:
- A beat sends periodic tasks only while it holds the lease named ``beat``
  (``services.leader``: a guarded UPDATE on the database every process shares, SQLite or
  PostgreSQL). A second beat on this or another machine sends nothing.
- The holder renews the lease every ``RENEW_SECONDS`` of its own ticks and sends nothing
  once a renewal fails, so it never sends on a lease older than ``RENEW_SECONDS``, well
  inside ``LEASE_TTL``.
- A standby tries to take the lease every ``RETRY_SECONDS``; after the holder dies (even by
  ``kill -9``) one standby holds it within ``LEASE_TTL + RETRY_SECONDS`` and sends what is
  due at once. A holder that stops cleanly releases the lease, so a standby takes over on
  its next try.
- The schedule is kept in memory, not in a shelve file: every periodic task runs every few
  seconds to a minute and expires after one period, so a restarted beat has nothing worth
  remembering, and two beats on one machine share no file.
"""

from __future__ import annotations

import logging
import os
import socket
import time
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from celery.beat import Scheduler

log = logging.getLogger(__name__)

LEASE_NAME = "beat"
LEASE_TTL = timedelta(seconds=3)
RENEW_SECONDS = 0.75
RETRY_SECONDS = 0.5


def _django_ready() -> None:
    from django.apps import apps

    if not apps.ready:
        import django

        django.setup()


class LeasedScheduler(Scheduler):
    """An in-memory beat scheduler that sends only while it holds the ``beat`` lease."""

    lease_name = LEASE_NAME
    lease_ttl = LEASE_TTL
    renew_seconds = RENEW_SECONDS
    retry_seconds = RETRY_SECONDS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.holder = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.holding = False
        self._renewed_at: float | None = None
        self._announced_standby = False
        # Overridden by tests; the lease compares wall-clock times across processes.
        self.clock: Callable[[], float] = time.monotonic
        self.wall_clock: Callable[[], datetime] = _now
        super().__init__(*args, **kwargs)

    def setup_schedule(self) -> None:
        _django_ready()
        super().setup_schedule()

    def tick(self, *args: Any, **kwargs: Any) -> float:
        """One beat iteration: send what is due if the lease is ours, else wait to retry."""
        if not self.hold_lease():
            return self.retry_seconds
        return min(super().tick(*args, **kwargs), self.renew_seconds)

    def hold_lease(self) -> bool:
        """Take or renew the lease when due; True while this beat may send."""
        if (
            self.holding
            and self._renewed_at is not None
            and self.clock() - self._renewed_at < self.renew_seconds
        ):
            return True
        from django.db import Error as DatabaseError
        from django.db import close_old_connections

        from armada.services.leader import leader_acquire

        started = self.clock()
        try:
            close_old_connections()
            held = leader_acquire(
                name=self.lease_name, holder=self.holder, now=self.wall_clock(), ttl=self.lease_ttl
            )
        except DatabaseError as exc:
            # Unknown is not ours: send nothing until the database answers again.
            log.warning("beat: cannot reach the database to hold the lease (%s)", exc)
            held = False
        self._changed(held)
        self._renewed_at = started if held else None
        return held

    def _changed(self, held: bool) -> None:
        if held and not self.holding:
            log.info(
                "beat %s: took the %r lease; sending periodic tasks", self.holder, self.lease_name
            )
            self._announced_standby = False
        elif not held and self.holding:
            log.warning(
                "beat %s: lost the %r lease; sending nothing until it is ours again",
                self.holder,
                self.lease_name,
            )
        elif not held and not self._announced_standby:
            log.info(
                "beat %s: the %r lease is held by another beat; standing by",
                self.holder,
                self.lease_name,
            )
            self._announced_standby = True
        self.holding = held

    def close(self) -> None:
        """Stop cleanly: give the lease up so that a standby need not wait for it to lapse."""
        try:
            super().close()
        finally:
            if self.holding:
                self.holding = False
                self._release()

    def _release(self) -> None:
        from armada.services.leader import leader_release

        try:
            leader_release(name=self.lease_name, holder=self.holder)
        except Exception:  # noqa: BLE001 - shutting down: the lease lapses on its own anyway
            log.warning("beat %s: could not release the lease", self.holder, exc_info=True)
        else:
            log.info("beat %s: released the %r lease", self.holder, self.lease_name)


def _now() -> datetime:
    from django.utils import timezone

    return timezone.now()
