"""Wake-ups for "any job set" (``wakeups.register_any``) and the process stopping
(``wakeups.stopping``): what wakes such a waiter, and what does not."""

from __future__ import annotations

import asyncio
import os
import signal
import threading

import pytest
from asgiref.sync import sync_to_async
from django.conf import settings

from armada.api import wakeups
from armada.api.wakeups import ANY, Hub, Waiter
from armada.services.event_notify import channel_name
from armada.services.submit import job_submit
from tests.conftest import T0, job_file

needs_redis = pytest.mark.skipif(not settings.REDIS_URL, reason="REDIS_URL is not set")


@pytest.fixture(autouse=True)
def _close_thread_connections():
    """Commits made through ``sync_to_async`` leave a connection in asgiref's thread."""
    from django.db import connections

    yield
    asyncio.run(sync_to_async(connections.close_all)())


def idle_hub() -> tuple[Hub, dict[str, Waiter]]:
    """A hub with waiters for two job sets and one for any, and no subscription."""
    hub = Hub("redis://127.0.0.1:1/0")
    waiters = {}
    for key in ("demo/set-1", "demo/set-2", ANY):
        waiters[key] = Waiter(hub, key)
        hub.waiters[key].add(waiters[key])
    return hub, waiters


def woken(waiters: dict[str, Waiter]) -> set[str]:
    return {key for key, w in waiters.items() if w.flag.is_set()}


def test_any_waiter_is_woken_by_every_job_sets_notification():
    async def scenario() -> list[set[str]]:
        hub, waiters = idle_hub()
        seen = []
        for keys in (["demo/set-1"], ["other/x", "demo/set-2"], ["nobody/watches"], [], None):
            for w in waiters.values():
                w.clear()
            hub.wake(keys)
            seen.append(woken(waiters))
        return seen

    assert asyncio.run(scenario()) == [
        {"demo/set-1", ANY},
        {"demo/set-2", ANY},
        {ANY},
        set(),  # a notification naming nothing is no commit
        {"demo/set-1", "demo/set-2", ANY},  # "*": every waiter
    ]


def test_any_waiters_come_and_go_like_the_others():
    async def scenario() -> tuple[int, int]:
        hub, waiters = idle_hub()
        before = hub.watcher_count
        waiters[ANY].close()
        hub.wake(["demo/set-1"])
        return before, hub.watcher_count

    assert asyncio.run(scenario()) == (3, 2)


def test_without_redis_an_any_waiter_is_never_live_and_waits_out_its_timeout(settings):
    settings.REDIS_URL = None

    async def scenario() -> tuple[bool, bool]:
        waiter = await wakeups.register_any()
        return waiter.live, await waiter.wait(0.01)

    assert asyncio.run(scenario()) == (False, False)


@needs_redis
@pytest.mark.django_db(transaction=True)
def test_any_waiter_wakes_on_a_commit_in_any_job_set(queue, owner):
    async def scenario() -> list[bool]:
        waiter = await wakeups.register_any()
        one_set = await wakeups.register("demo", "set-1")
        assert waiter.live
        results = []
        for job_set in ("set-1", "set-9"):
            waiter.clear()
            one_set.clear()
            await sync_to_async(job_submit)(actor=owner, data=job_file(job_set=job_set), now=T0)
            results.append(await waiter.wait(5.0))
            results.append(one_set.flag.is_set())
        waiter.close()
        one_set.close()
        return results

    assert asyncio.run(scenario()) == [True, True, True, False]


@needs_redis
def test_a_reconnect_of_the_subscription_wakes_any_waiters(monkeypatch):
    """Notifications sent while the subscription was down are gone: every waiter reads."""
    from redis.asyncio.client import PubSub
    from redis.exceptions import ConnectionError as RedisConnectionError

    break_next = threading.Event()
    original = PubSub.get_message

    async def get_message(self, *args, **kwargs):
        if break_next.is_set():
            break_next.clear()
            raise RedisConnectionError("connection reset (test)")
        return await original(self, *args, **kwargs)

    monkeypatch.setattr(PubSub, "get_message", get_message)

    import redis

    publisher = redis.Redis.from_url(settings.REDIS_URL)

    async def scenario() -> tuple[bool, bool, bool]:
        waiter = await wakeups.register_any()
        hub = wakeups.hub_for_loop()
        assert hub is not None and waiter.live
        waiter.clear()
        break_next.set()
        # A notification naming no job set wakes nobody; the read after it breaks.
        await asyncio.to_thread(publisher.publish, channel_name(settings.REDIS_URL), "[]")
        lost = await _wait_for(lambda: not hub.ready.is_set(), 10.0)
        asleep_while_down = not waiter.flag.is_set()
        was_woken = await waiter.wait(10.0)
        waiter.close()
        return lost, asleep_while_down, was_woken and hub.ready.is_set()

    assert asyncio.run(scenario()) == (True, True, True)


async def _wait_for(condition, timeout: float) -> bool:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            return False
        await asyncio.sleep(0.01)
    return True


def test_a_stop_request_sets_the_flag_and_wakes_the_waiters(monkeypatch, settings):
    monkeypatch.setattr(wakeups, "_stop_requested", False)

    async def scenario() -> tuple[bool, bool, bool]:
        stop = wakeups.stopping()
        before = stop.is_set()
        waiter = await wakeups.register_any()
        waiter.clear()
        # From another thread, as a signal handler or a server's shutdown would.
        await asyncio.get_running_loop().run_in_executor(None, wakeups.request_stop)
        await asyncio.wait_for(stop.wait(), 5.0)
        woke = waiter.live is False or await waiter.wait(5.0)
        waiter.close()
        return before, stop.is_set(), woke

    assert asyncio.run(scenario()) == (False, True, True)
    # A loop that starts once the stop was asked for finds the flag set.
    assert asyncio.run(_flag_now()) is True


async def _flag_now() -> bool:
    return wakeups.stopping().is_set()


def test_sigterm_sets_the_flag_and_still_reaches_the_servers_handler(monkeypatch):
    """The handler is chained in front of the one the server installed (uvicorn's)."""
    monkeypatch.setattr(wakeups, "_stop_requested", False)
    monkeypatch.setattr(wakeups, "_handlers_installed", False)
    received: list[int] = []
    before_sigterm = signal.getsignal(signal.SIGTERM)
    before_sigint = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGTERM, lambda signum, frame: received.append(signum))
    try:

        async def scenario() -> bool:
            stop = wakeups.stopping()
            os.kill(os.getpid(), signal.SIGTERM)
            await asyncio.wait_for(stop.wait(), 5.0)
            return stop.is_set()

        assert asyncio.run(scenario()) is True
        assert received == [signal.SIGTERM]
    finally:
        signal.signal(signal.SIGTERM, before_sigterm)
        signal.signal(signal.SIGINT, before_sigint)


def test_a_cancellation_that_meets_a_wake_up_still_cancels():
    """A stream whose client goes away as a commit wakes it must end, not read on."""

    async def scenario() -> tuple[bool, bool]:
        waiter = Waiter(None, "demo/set-1")
        task = asyncio.create_task(waiter.wait(10.0))
        await asyncio.sleep(0)  # the task waits
        waiter.flag.set()  # woken ...
        task.cancel()  # ... and cancelled in the same turn of the loop
        cancelled = False
        try:
            await task
        except asyncio.CancelledError:
            cancelled = True
        # Woken before it waits, it still lets a cancellation in: every wait is a point
        # where a stream can be stopped.
        again = asyncio.create_task(waiter.wait(10.0))
        await asyncio.sleep(0)  # it has started
        again.cancel()
        try:
            await again
        except asyncio.CancelledError:
            return cancelled, True
        return cancelled, False

    assert asyncio.run(scenario()) == (True, True)
