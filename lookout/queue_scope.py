"""Which queues a Lookout viewer's pages are about: the queues they may watch
(``services.authz.watchable_queues``; every queue with ``watch_all_events``).

A viewer who may watch no queue sees every per-queue list empty for that reason, not for
their filters: the pages say so with ``lookout/_no_queue.html`` (who grants ``watch``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from armada.services.authz import watchable_queues


def watches_no_queue(user: Any) -> bool:
    return watchable_queues(user) == []


def watches_no_queue_later(user: Any) -> Callable[[], bool]:
    """:func:`watches_no_queue`, read only if a template asks (a page with rows never does)."""
    return lambda: watches_no_queue(user)
