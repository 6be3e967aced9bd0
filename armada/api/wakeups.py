"""One Redis subscription per process (per event loop) that wakes waiting event streams.

Thousands of watchers share one pub/sub connection: each registers an ``asyncio.Event``
under its ``queue/jobSet`` key, and the hub's reader task sets the events named by each
notification (``armada.services.event_notify``). A woken stream reads the log by cursor as
always, so a notification can be early, late, repeated or lost without an event being
lost or repeated; the stream's poll timeout is the fallback (and the only mechanism
without ``REDIS_URL``, or while Redis is unreachable).

The subscription starts with the first watcher and stays for the life of the loop,
reconnecting with a back-off. After a (re)connect every watcher is woken once, because
notifications sent while it was down are gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections import defaultdict

from django.conf import settings

from armada.services.event_notify import channel_name, decode

log = logging.getLogger(__name__)

READY_WAIT_SECONDS = 1.0
BACKOFF_START, BACKOFF_MAX = 0.2, 5.0


class Waiter:
    """One stream's wake-up flag. Clear it before reading the log, then wait: a wake-up
    that arrives while the stream reads is kept for the next wait."""

    def __init__(self, hub: Hub | None, key: str) -> None:
        self.hub, self.key, self.flag = hub, key, asyncio.Event()

    async def wait(self, timeout: float) -> bool:
        """True when woken, False when ``timeout`` passed first."""
        try:
            await asyncio.wait_for(self.flag.wait(), timeout)
        except TimeoutError:
            return False
        return True

    def clear(self) -> None:
        self.flag.clear()

    @property
    def live(self) -> bool:
        """True while the process's Redis subscription is up, so that commits wake us."""
        return self.hub is not None and self.hub.ready.is_set()

    def close(self) -> None:
        if self.hub is not None:
            self.hub.unregister(self)


class Hub:
    def __init__(self, url: str) -> None:
        self.url = url
        self.channel = channel_name(url)
        self.waiters: dict[str, set[Waiter]] = defaultdict(set)
        self.ready = asyncio.Event()
        self.task: asyncio.Task | None = None

    def register(self, key: str) -> Waiter:
        waiter = Waiter(self, key)
        self.waiters[key].add(waiter)
        if self.task is None or self.task.done():
            self.task = asyncio.get_running_loop().create_task(self._run())
        return waiter

    def unregister(self, waiter: Waiter) -> None:
        group = self.waiters.get(waiter.key)
        if group is not None:
            group.discard(waiter)
            if not group:
                del self.waiters[waiter.key]

    def wake(self, keys: list[str] | None) -> None:
        groups = self.waiters.values() if keys is None else [self.waiters.get(k, ()) for k in keys]
        for group in list(groups):
            for waiter in list(group):
                waiter.flag.set()

    @property
    def watcher_count(self) -> int:
        return sum(len(g) for g in self.waiters.values())

    async def _run(self) -> None:
        import redis.asyncio as aioredis

        backoff = BACKOFF_START
        while True:
            client = aioredis.Redis.from_url(self.url)
            pubsub = client.pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.subscribe(self.channel)
                self.ready.set()
                self.wake(None)  # anything published while we were not listening
                backoff = BACKOFF_START
                while True:
                    message = await pubsub.get_message(timeout=30.0)
                    if message is not None and message.get("type") == "message":
                        self.wake(decode(message["data"]))
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - Redis went away: poll until it is back
                log.warning("event wake-up subscription lost; retrying", exc_info=True)
                self.ready.clear()
            finally:
                try:
                    await pubsub.aclose()
                    await client.aclose()
                except Exception:  # noqa: BLE001
                    pass
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, BACKOFF_MAX)


_hubs: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Hub] = weakref.WeakKeyDictionary()


def hub_for_loop() -> Hub | None:
    """This loop's hub, or None without ``REDIS_URL``."""
    url = getattr(settings, "REDIS_URL", None)
    if not url:
        return None
    loop = asyncio.get_running_loop()
    hub = _hubs.get(loop)
    if hub is None or hub.url != url:
        hub = _hubs[loop] = Hub(url)
    return hub


async def register(queue: str, job_set: str) -> Waiter:
    """A waiter for one job set. With Redis, waits (briefly, once per process) for the
    subscription, so that nothing committed after the stream's first read goes unnoticed."""
    key = f"{queue}/{job_set}"
    hub = hub_for_loop()
    if hub is None:
        return Waiter(None, key)
    waiter = hub.register(key)
    if not hub.ready.is_set():
        with contextlib.suppress(TimeoutError):  # Redis slow or down: the poll covers it
            await asyncio.wait_for(hub.ready.wait(), READY_WAIT_SECONDS)
    return waiter
