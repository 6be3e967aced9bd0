"""One Redis subscription and one log sweep per process (per event loop) that wake waiting
event streams.

Thousands of watchers share them: each registers an ``asyncio.Event`` under its
``queue/jobSet`` key and waits on it, reading nothing while it waits. Two things set it:

- the hub's Redis reader, at once, for the job sets each notification names
  (``armada.services.event_notify``);
- the hub's **sweep**, one read of the log for the whole process
  (``services.events.job_sets_with_events_after``): which job sets have events beyond the
  newest id it saw last time. Every ``POLL_SECONDS_WITH_WAKEUPS`` while the subscription is
  live (a notification can still be lost: a publish that timed out, say), every
  ``POLL_SECONDS`` without ``REDIS_URL`` or while Redis is unreachable (then it is the only
  mechanism). It runs only while some stream waits.

A woken stream reads the log by cursor as always, so a wake-up can be early, late, repeated
or lost without an event being lost or repeated. An idle stream thus costs the database
nothing: a thousand idle watchers cost one small read per sweep, not a thousand.

A waiter registered with :func:`register_any` (under the reserved key :data:`ANY`) is woken
by every notification and sweep that finds anything, whichever job sets it names: Lookout's
live grid follows the whole log, filtered by the queues its viewer may watch, not one job
set.

The subscription starts with the first watcher and stays for the life of the loop,
reconnecting with a back-off. After a (re)connect every watcher is woken once, because
notifications sent while it was down are gone; so is every watcher at a sweep's first read
(it has no earlier id to compare with).

:func:`stopping` is set when the process is asked to stop (SIGTERM or SIGINT, as uvicorn's
graceful shutdown handles them), so that long-lived streams end instead of keeping the
server waiting for them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import threading
import weakref
from collections import defaultdict
from collections.abc import Callable
from types import FrameType
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connection

from armada.services.dbfaults import DATABASE_ERRORS, read_again_if_lost
from armada.services.event_notify import MAX_KEYS, channel_name, decode
from armada.services.events import job_sets_with_events_after

log = logging.getLogger(__name__)

READY_WAIT_SECONDS = 1.0
#: The sweep's period without a live subscription: how late a stream may see a commit then.
POLL_SECONDS = 0.25
#: The sweep's period while the subscription is live: a safety net for lost notifications.
POLL_SECONDS_WITH_WAKEUPS = 5.0
BACKOFF_START, BACKOFF_MAX = 0.2, 5.0
#: The key of the waiters woken by every notification. A job set's key always holds a
#: ``/`` (``queue/jobSet``), so this one can never be a job set's.
ANY = "*"


class Waiter:
    """One stream's wake-up flag. Clear it before reading the log, then wait: a wake-up
    that arrives while the stream reads is kept for the next wait."""

    def __init__(self, hub: Hub, key: str) -> None:
        self.hub, self.key, self.flag = hub, key, asyncio.Event()

    async def wait(self, timeout: float) -> bool:
        """True when woken, False when ``timeout`` passed first. A cancellation always
        propagates, even when the wake-up comes in the same turn of the loop (Python 3.11's
        ``asyncio.wait_for`` would then return the result and drop the cancellation, and a
        stream whose client went away would go on reading)."""
        if self.flag.is_set():
            await asyncio.sleep(0)  # a cancellation pending on this task is raised here
            return True
        try:
            async with asyncio.timeout(timeout):
                await self.flag.wait()
        except TimeoutError:
            return False
        return True

    def clear(self) -> None:
        self.flag.clear()

    @property
    def live(self) -> bool:
        """True while the process's Redis subscription is up, so that commits wake us."""
        return self.hub.url is not None and self.hub.ready.is_set()

    def close(self) -> None:
        self.hub.unregister(self)


class Hub:
    """The wake-ups of one event loop: the Redis reader (with ``url``) and the sweep."""

    def __init__(self, url: str | None) -> None:
        self.url = url
        self.channel = channel_name(url) if url else ""
        self.waiters: dict[str, set[Waiter]] = defaultdict(set)
        self.ready = asyncio.Event()
        self.task: asyncio.Task | None = None
        self.sweeper: asyncio.Task | None = None
        self.swept = asyncio.Event()  # set once the sweep knows the newest id

    def register(self, key: str) -> Waiter:
        waiter = Waiter(self, key)
        self.waiters[key].add(waiter)
        loop = asyncio.get_running_loop()
        if self.url and (self.task is None or self.task.done()):
            self.task = loop.create_task(self._run())
        if self.sweeper is None or self.sweeper.done():
            self.sweeper = loop.create_task(self._sweep())
        return waiter

    def unregister(self, waiter: Waiter) -> None:
        group = self.waiters.get(waiter.key)
        if group is not None:
            group.discard(waiter)
            if not group:
                del self.waiters[waiter.key]

    def wake(self, keys: list[str] | None) -> None:
        """Wake the waiters of ``keys`` and every :data:`ANY` waiter (all waiters for None)."""
        if keys is None:
            groups = list(self.waiters.values())
        else:
            groups = [self.waiters.get(k, ()) for k in keys]
            if keys:
                groups.append(self.waiters.get(ANY, ()))
        for group in list(groups):
            for waiter in list(group):
                waiter.flag.set()

    @property
    def watcher_count(self) -> int:
        return sum(len(g) for g in self.waiters.values())

    async def _sweep(self) -> None:
        """The process's reads of the log for its waiting streams (the module docstring);
        ends when no stream waits (``register`` starts it again). Its first read only finds
        the newest id, and wakes every waiter registered before it was known."""
        newest: int | None = None
        while self.waiters:
            if newest is not None:
                live = self.ready.is_set()
                await asyncio.sleep(POLL_SECONDS_WITH_WAKEUPS if live else POLL_SECONDS)
                if not self.waiters:
                    break
            try:
                top, keys = await sync_to_async(_sweep_read, thread_sensitive=False)(newest)
            except DATABASE_ERRORS:
                log.warning("event sweep could not read the log; trying again", exc_info=True)
                await asyncio.sleep(POLL_SECONDS)
                continue
            except Exception:  # noqa: BLE001 - the streams must not lose their sweep
                log.exception("event sweep failed; trying again")
                await asyncio.sleep(POLL_SECONDS_WITH_WAKEUPS)
                continue
            if newest is None or keys is None or keys:
                self.wake(None if newest is None else keys)
            newest = top
            self.swept.set()
        self.swept.clear()

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


def _sweep_read(after: int | None) -> tuple[int, list[str] | None]:
    try:
        return read_again_if_lost(
            lambda: job_sets_with_events_after(after, limit=MAX_KEYS), "the event sweep"
        )
    finally:
        connection.close()


_hubs: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Hub] = weakref.WeakKeyDictionary()


def hub_for_loop() -> Hub:
    """This loop's hub (subscribing to Redis when ``REDIS_URL`` is set)."""
    url = getattr(settings, "REDIS_URL", None) or None
    loop = asyncio.get_running_loop()
    hub = _hubs.get(loop)
    if hub is None or hub.url != url:
        hub = _hubs[loop] = Hub(url)
    return hub


async def hub_close() -> None:
    """End this loop's subscription, if it has one: for a loop about to be closed (a server
    stopped for good inside a longer-lived process), whose subscription would otherwise stay
    open on Redis until the process exits."""
    hub = _hubs.pop(asyncio.get_running_loop(), None)
    tasks = [t for t in (hub.task, hub.sweeper) if t is not None] if hub is not None else []
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def register(queue: str, job_set: str) -> Waiter:
    """A waiter for one job set. Waits (briefly, once per process) for the sweep to know
    the newest id and, with Redis, for the subscription, so that nothing committed after
    the stream's first read goes unnoticed."""
    return await _register(f"{queue}/{job_set}")


async def register_any() -> Waiter:
    """A waiter woken by every commit's notification, whatever its job sets (and, like any
    waiter, after each (re)connect of the subscription)."""
    return await _register(ANY)


async def _register(key: str) -> Waiter:
    hub = hub_for_loop()
    waiter = hub.register(key)
    waits = [] if hub.swept.is_set() else [hub.swept.wait()]
    if hub.url and not hub.ready.is_set():
        waits.append(hub.ready.wait())
    if waits:
        # Redis or the database slow or down: the sweep's first read wakes this waiter
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(READY_WAIT_SECONDS):
                await asyncio.gather(*waits)
    return waiter


# --- the process stopping -------------------------------------------------------------------

_stop_events: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Event] = (
    weakref.WeakKeyDictionary()
)
_stop_lock = threading.Lock()
_stop_requested = False
_handlers_installed = False


def stopping() -> asyncio.Event:
    """This loop's "the process is stopping" flag (set once SIGTERM or SIGINT arrived).

    uvicorn's graceful shutdown stops accepting connections and then waits for the open ones
    to finish: a stream that follows the log for minutes would hold it up for as long. The
    first call from the main thread chains a handler in front of the server's own SIGTERM
    and SIGINT handlers (only where the server installed one: a process that dies on the
    signal takes its streams with it); the handler sets the flag of every loop and then
    calls the server's. Setting it also wakes every waiter of that loop's hub, so a stream
    that checks the flag after each wait ends at once (without Redis, at its next poll)."""
    global _handlers_installed
    loop = asyncio.get_running_loop()
    with _stop_lock:
        event = _stop_events.get(loop)
        if event is None:
            event = _stop_events[loop] = asyncio.Event()
            if _stop_requested:
                event.set()
        if not _handlers_installed and threading.current_thread() is threading.main_thread():
            _handlers_installed = True
            for sig in (signal.SIGTERM, signal.SIGINT):
                previous = signal.getsignal(sig)
                if callable(previous):
                    signal.signal(sig, _chained(previous))
    return event


def _chained(previous: Callable[[int, FrameType | None], Any]) -> Callable:
    def handler(signum: int, frame: FrameType | None) -> Any:
        request_stop()
        return previous(signum, frame)

    return handler


def request_stop() -> None:
    """Set every loop's :func:`stopping` flag (thread-safe; what the signal handler calls)."""
    global _stop_requested
    _stop_requested = True
    for loop, event in list(_stop_events.items()):
        hub = _hubs.get(loop)
        with contextlib.suppress(RuntimeError):  # that loop is closed already
            loop.call_soon_threadsafe(event.set)
            if hub is not None:  # waiting streams look at the flag at once
                loop.call_soon_threadsafe(hub.wake, None)
