"""Wake-up notifications for event streams, published through Redis after a commit.

A notification carries no event: it only tells the web processes that a job set has new
events, so that their waiting streams read the log again by cursor at once instead of at
their next poll (see ``armada.api.wakeups``). Losing one therefore costs latency, never an
event. It is published from ``transaction.on_commit``, i.e. after the events are visible:
a reader woken by it is sure to find them.

Channel ``armada:events:<redis db>`` (pub/sub ignores the db number, so the number keeps
installations that share one Redis apart). Payload: a JSON list of ``"<queue>/<jobSet>"``
(a queue name never holds ``/``), or ``"*"`` when a transaction touched many job sets.
Without ``REDIS_URL`` nothing is published and streams poll.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from urllib.parse import urlsplit

from django.conf import settings

log = logging.getLogger(__name__)

# Above this many job sets in one commit, wake every watcher instead of naming them. A
# scheduling cycle or an executor tick touches hundreds of job sets at once; waking every
# one of a thousand watchers for it cost a thousand reads where a few dozen were due, so
# the list stays explicit up to a size (about 60 KiB) that Redis passes on in microseconds.
MAX_KEYS = 2000
_client = None


def channel_name(url: str) -> str:
    path = urlsplit(url).path.strip("/")
    return f"armada:events:{path if path.isdigit() else '0'}"


def encode(keys: Iterable[str]) -> str:
    unique = sorted(set(keys))
    return json.dumps("*" if len(unique) > MAX_KEYS else unique, separators=(",", ":"))


def decode(payload: bytes | str) -> list[str] | None:
    """The job-set keys of a notification, or None for "wake every watcher"."""
    try:
        value = json.loads(payload)
    except ValueError:
        return None
    if isinstance(value, list) and all(isinstance(k, str) for k in value):
        return value
    return None


def _redis():
    global _client
    if _client is None:
        import redis

        # Short timeouts: a publish runs in the request that committed; a sick Redis must
        # not hold it up (the watchers still poll).
        _client = redis.Redis.from_url(
            settings.REDIS_URL, socket_timeout=0.5, socket_connect_timeout=0.5
        )
    return _client


def publish(keys: Iterable[str]) -> None:
    """Publish now (call after the commit). Errors are logged, never raised."""
    url = getattr(settings, "REDIS_URL", None)
    if not url:
        return
    try:
        _redis().publish(channel_name(url), encode(keys))
    except Exception:  # noqa: BLE001 - a missed wake-up only delays a watcher to its poll
        log.warning("could not publish an event wake-up to Redis", exc_info=True)


def publish_on_commit(keys: Iterable[str]) -> None:
    """Publish the job-set keys once the current transaction commits (never if it rolls
    back)."""
    if not getattr(settings, "REDIS_URL", None):
        return
    from django.db import transaction

    frozen = list(keys)
    transaction.on_commit(lambda: publish(frozen))
