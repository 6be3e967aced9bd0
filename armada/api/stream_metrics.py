"""``armada_event_api_active_subscriptions{user}``: the event streams this process holds open.

As Armada's event server counts them: a long-lived subscription (a stream that follows new
events: REST ``watch=true``, gRPC ``GetJobSetEvents`` with ``watch`` and ``Watch``, the
gateway's ``/v1/job-set/...`` with ``watch``) adds one for its user while it is open; a stream
that ends after the events that exist is not counted. The count goes down however the
stream ends: it ran out, the client went away (the server cancels the stream), or the
server shuts down (the stream is closed with it).

Unlike the metrics read from the database, this gauge lives in the memory of the process
that serves the streams (prometheus-client's default registry): each web process reports
its own streams at ``/metrics``, and each grpc process its own where
``ARMADA_METRICS_ADDR`` serves it (``web.metrics_access``). Sum over the processes for the
whole system.

Use it around the part of a stream that follows, after the caller was let in:

    async with subscription(user, watch=watch), contextlib.aclosing(batches):
        ...
"""

from __future__ import annotations

import contextlib
from typing import Any

from prometheus_client import Gauge

ACTIVE_SUBSCRIPTIONS = Gauge(
    "armada_event_api_active_subscriptions",
    "Number of active (long-lived) event API subscriptions (Watch/GetJobSetEvents with "
    "watch=true) split by user.",
    ["user"],
)
#: The label of a caller without a user name (anonymous access), as Armada names it.
ANONYMOUS = "anonymous"


def user_label(user: Any) -> str:
    """The ``user`` label of a Django user (or ``AnonymousUser``)."""
    name = user.get_username() if user is not None else ""
    return name or ANONYMOUS


class subscription(contextlib.AbstractContextManager, contextlib.AbstractAsyncContextManager):
    """Counts one open subscription of ``user`` for as long as the block runs (nothing when
    ``watch`` is false). Usable with ``with`` and ``async with``; the count is given back in
    every case, a cancellation (client gone, shutdown) included."""

    def __init__(self, user: Any, *, watch: bool = True) -> None:
        self._label = user_label(user) if watch else None

    def __enter__(self) -> subscription:
        if self._label is not None:
            ACTIVE_SUBSCRIPTIONS.labels(self._label).inc()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._label is not None:
            ACTIVE_SUBSCRIPTIONS.labels(self._label).dec()
            self._label = None

    async def __aenter__(self) -> subscription:
        return self.__enter__()

    async def __aexit__(self, *exc: object) -> None:
        self.__exit__(*exc)
