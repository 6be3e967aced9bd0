"""Ending an open event stream whose credential or permission has gone.

Every stream (our REST stream, Armada's ``GetJobSetEvents`` and ``Watch``, and the
gateway's form of them) is authorized when it opens. Its :class:`AccessGuard` is then
asked again while it is open, by the process's **access sweep** (one per event loop): every
``CHECK_SECONDS`` it checks every open stream of the loop at once
(``services.stream_access.streams_access_refusals``: a fixed number of queries in one
transaction, however many streams are open), so a thousand idle streams cost what one does.
A revoked or expired token, a deactivated or deleted user, a changed password, a
logged-out session or a lost ``watch`` thus ends a stream within about ``CHECK_SECONDS``:
the sweep keeps the refusal on the stream's guard and wakes the stream, whose follower
(``api.event_follow``) raises it (``CredentialGone``, ``PermissionDenied`` or ``NotFound``);
each transport ends its stream with that error.

The sweep runs on the loop's shared executor and gives its database connection back, as
the streams' reads do. When the database cannot be read, the streams go on (they could not
read events either) and the sweep tries again at its next turn. It runs only while a guard
is open.
"""

from __future__ import annotations

import asyncio
import logging
import weakref

from asgiref.sync import sync_to_async
from django.db import connection
from django.utils import timezone

from armada.api.wakeups import Waiter
from armada.services.dbfaults import DATABASE_ERRORS, read_again_if_lost
from armada.services.stream_access import Credential, streams_access_refusals

log = logging.getLogger(__name__)

#: How often the open streams are checked: the longest a stream outlives its credential or
#: permission (plus one sweep's time).
CHECK_SECONDS = 5.0


class AccessGuard:
    """The re-checks of one stream, made just after it was authorized: open it when the
    stream starts following (:meth:`open`), ask :meth:`raise_if_refused` before each read
    and after each wait, close it when the stream ends."""

    def __init__(self, credential: Credential, queue: str) -> None:
        self.credential, self.queue = credential, queue
        self.refusal: Exception | None = None
        self.waiter: Waiter | None = None
        self._sweep: AccessSweep | None = None

    def open(self, waiter: Waiter | None) -> None:
        """Join this loop's access sweep; ``waiter`` (if any) is woken when it refuses."""
        self.waiter = waiter
        self._sweep = AccessSweep.for_loop()
        self._sweep.add(self)

    def close(self) -> None:
        if self._sweep is not None:
            self._sweep.discard(self)
            self._sweep = None

    def raise_if_refused(self) -> None:
        """Raise the error that ends the stream once the sweep has found one (no query)."""
        if self.refusal is not None:
            raise self.refusal

    def refuse(self, error: Exception) -> None:
        self.refusal = error
        if self.waiter is not None:
            self.waiter.flag.set()


def _refusals_and_release(
    checks: list[tuple[Credential, str]],
) -> dict[tuple[Credential, str], Exception]:
    try:
        return read_again_if_lost(
            lambda: streams_access_refusals(checks, now=timezone.now()),
            "the open streams' access check",
        )
    finally:
        connection.close()


class AccessSweep:
    """The guards of one event loop, checked together every ``CHECK_SECONDS``."""

    _by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, AccessSweep] = (
        weakref.WeakKeyDictionary()
    )

    def __init__(self) -> None:
        self.guards: set[AccessGuard] = set()
        self.task: asyncio.Task | None = None
        self.sooner = asyncio.Event()  # set when the period was shortened meanwhile

    @classmethod
    def for_loop(cls) -> AccessSweep:
        loop = asyncio.get_running_loop()
        sweep = cls._by_loop.get(loop)
        if sweep is None:
            sweep = cls._by_loop[loop] = cls()
        return sweep

    def add(self, guard: AccessGuard) -> None:
        self.guards.add(guard)
        if self.task is None or self.task.done():
            self.task = asyncio.get_running_loop().create_task(self._run())
        else:
            self.sooner.set()  # the period may have changed since the sweep began waiting

    def discard(self, guard: AccessGuard) -> None:
        self.guards.discard(guard)

    async def _run(self) -> None:
        """Every ``CHECK_SECONDS`` while a guard is open: check them all, refuse those that
        must end. A guard is first checked at most ``CHECK_SECONDS`` after it opened."""
        loop = asyncio.get_running_loop()
        due = loop.time() + CHECK_SECONDS
        while self.guards:
            self.sooner.clear()
            try:
                async with asyncio.timeout(max(0.0, due - loop.time())):
                    await self.sooner.wait()
                due = min(due, loop.time() + CHECK_SECONDS)  # CHECK_SECONDS may be shorter now
                continue
            except TimeoutError:
                pass
            due = loop.time() + CHECK_SECONDS
            guards = [g for g in self.guards if g.refusal is None]
            if not guards:
                continue
            checks = list({(g.credential, g.queue) for g in guards})
            try:
                refusals = await sync_to_async(_refusals_and_release, thread_sensitive=False)(
                    checks
                )
            except DATABASE_ERRORS:
                log.warning("open streams' access check failed; trying again", exc_info=True)
                continue
            for guard in guards:
                refusal = refusals.get((guard.credential, guard.queue))
                if refusal is not None:
                    guard.refuse(refusal)
