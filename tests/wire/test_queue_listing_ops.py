"""Armada's streamed queue listing (GetQueues), called as the transports call it: the queues
in name order page by page, then the end, holding no connection between pages."""

from __future__ import annotations

import asyncio

import pytest
from armada_client.armada import submit_pb2
from asgiref.sync import sync_to_async
from django.db import connections

from armada.wire.registry import Call, load_operations
from tests.conftest import T0
from tests.wire.queue_calls import Q, call

pytestmark = pytest.mark.django_db


# --- the streamed listing ---------------------------------------------------------------------


async def _collect(stream) -> list[submit_pb2.StreamingQueueMessage]:
    return [message async for message in stream]


def listing(user, num: int = 0) -> list[submit_pb2.StreamingQueueMessage]:
    operation = load_operations()["api.Submit/GetQueues"]
    stream = operation.func(Call(actor=user, now=T0), submit_pb2.StreamingQueueGetRequest(num=num))
    return asyncio.run(_collect(stream))


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("count", "num", "expected"), [(0, 0, 0), (5, 0, 5), (5, 3, 3), (7, 3, 3), (3, 5, 3), (7, 0, 7)]
)
def test_get_queues_streams_the_queues_in_name_order_then_the_end(
    monkeypatch, admin_user, count, num, expected
):
    from armada.wire import queue_ops

    monkeypatch.setattr(queue_ops, "PAGE", 2)  # several pages
    for i in reversed(range(count)):
        call("CreateQueue", admin_user, Q(name=f"q{i}", labels={"i": str(i)}))
    try:
        messages = listing(admin_user, num)
    finally:
        asyncio.run(sync_to_async(connections.close_all)())
    assert [m.WhichOneof("event") for m in messages] == ["queue"] * expected + ["end"]
    assert [m.queue.name for m in messages[:-1]] == [f"q{i}" for i in range(expected)]
    assert messages[0 if expected else -1].queue.labels == ({"i": "0"} if expected else {})


@pytest.mark.django_db(transaction=True)
def test_get_queues_holds_no_connection_between_pages(monkeypatch, admin_user):
    """Each page is read on a pooled connection that is handed back before the page is
    sent: between messages the stream has no connection out of the pool."""
    from django.db import connection

    from armada.wire import queue_ops

    if getattr(connection, "pool", None) is None:
        pytest.skip("counts the connections taken from the pool")
    monkeypatch.setattr(queue_ops, "PAGE", 1)
    for name in ("a", "b", "c"):
        call("CreateQueue", admin_user, Q(name=name))
    connection.close()  # this thread's own, back to the pool too

    def taken() -> int:
        stats = connection.pool.get_stats()
        return stats["pool_size"] - stats["pool_available"]

    seen = []

    async def run() -> None:
        stream = queue_ops.get_queues(
            Call(actor=admin_user, now=T0), submit_pb2.StreamingQueueGetRequest()
        )
        async for message in stream:
            seen.append((message.WhichOneof("event"), taken()))

    assert taken() == 0
    asyncio.run(run())
    assert seen == [("queue", 0), ("queue", 0), ("queue", 0), ("end", 0)]


@pytest.mark.django_db(transaction=True)
def test_get_queues_shows_who_may_act_only_on_queues_the_caller_may_watch(admin_user, owner):
    """Every queue is listed (as Armada lists them); a queue's owners and permissions only
    where the caller may watch it (``authz.may_read_queue_access``)."""
    grant = Q.Permissions(subjects=[Q.Permissions.Subject(kind="User", name="mo")], verbs=["watch"])
    call("CreateQueue", admin_user, Q(name="mine", user_owners=[owner.username]))
    call("CreateQueue", admin_user, Q(name="theirs", user_owners=["zed"], permissions=[grant]))
    try:
        messages = listing(owner)
    finally:
        asyncio.run(sync_to_async(connections.close_all)())
    shown = {m.queue.name: m.queue for m in messages[:-1]}
    assert list(shown) == ["mine", "theirs"]
    assert list(shown["mine"].user_owners) == [owner.username]
    hidden = shown["theirs"]
    assert not hidden.user_owners and not hidden.group_owners and not hidden.permissions
