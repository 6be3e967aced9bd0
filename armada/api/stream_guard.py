"""Ending an open event stream whose credential or permission has gone.

Every stream (our REST stream, Armada's ``GetJobSetEvents`` and ``Watch``, and the
gateway's form of them) is authorized when it opens. An :class:`AccessGuard` asks again
while it is open (``services.stream_access.check_stream_access``: one query), at most once
every ``CHECK_SECONDS``: the follower (``api.event_follow``) calls :meth:`AccessGuard.check`
before each read, which costs nothing until a check is due, and never waits longer than
:meth:`AccessGuard.due_in`, so that an idle stream is checked on time too. A revoked or
expired token, a deactivated or deleted user, a changed password, a logged-out session or a
lost ``watch`` thus ends a stream within about ``CHECK_SECONDS``: ``check`` raises
``CredentialGone``, ``PermissionDenied`` or ``NotFound`` and each transport ends its stream
with that error.

The check runs on the loop's shared executor and gives its database connection back, as the
stream's reads do.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from asgiref.sync import sync_to_async
from django.db import connection
from django.utils import timezone

from armada.services.dbfaults import read_again_if_lost
from armada.services.stream_access import Credential, check_stream_access

#: How long a verdict is kept: the longest a stream outlives its credential or permission
#: (plus one check's time).
CHECK_SECONDS = 5.0


def _check_and_release(credential: Credential, queue: str) -> None:
    try:
        read_again_if_lost(
            lambda: check_stream_access(credential, queue, now=timezone.now()),
            "an event stream's access check",
        )
    finally:
        connection.close()


class AccessGuard:
    """The re-checks of one stream, made just after it was authorized."""

    def __init__(
        self,
        credential: Credential,
        queue: str,
        *,
        every: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.credential, self.queue, self.clock = credential, queue, clock
        self.every = CHECK_SECONDS if every is None else every
        self.next_at = clock() + self.every

    def due_in(self) -> float:
        """Seconds until the next check is due (0 when it is)."""
        return max(0.0, self.next_at - self.clock())

    async def check(self) -> None:
        """Nothing while the last verdict is fresh; else one query, raising when the stream
        must end (see the module docstring)."""
        if self.clock() < self.next_at:
            return
        await sync_to_async(_check_and_release, thread_sensitive=False)(self.credential, self.queue)
        self.next_at = self.clock() + self.every
