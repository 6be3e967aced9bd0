"""Counters kept in the database (``services.counters.counters_add_many``): several counters
at once, rows that exist added to in place and new ones created with their labels; on
PostgreSQL, writers in parallel (each under the event-log lock, as every caller writes)
lose no increment, whichever of them creates a row."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction

from armada.models import MetricCounter
from armada.services.counters import counters_add, counters_add_many
from armada.services.events import lock_event_log


def stored() -> dict[tuple[str, str], tuple[dict, int]]:
    return {
        (c.name, c.labels_key): (c.labels, c.value)
        for c in MetricCounter.objects.order_by("name", "labels_key")
    }


NODE_A = (("node", "a"), ("pool", "default"))
NODE_B = (("node", "b"), ("pool", "default"))

# (what is stored first, what is added, what is stored after)
CASES = [
    pytest.param(
        {},
        {"x": {NODE_A: 2}, "y": {NODE_A: 3, NODE_B: 4}},
        {
            ("x", "node=a,pool=default"): 2,
            ("y", "node=a,pool=default"): 3,
            ("y", "node=b,pool=default"): 4,
        },
        id="all-new",
    ),
    pytest.param(
        {"x": {NODE_A: 10}},
        {"x": {NODE_A: 1, NODE_B: 5}, "y": {NODE_B: 7}},
        {
            ("x", "node=a,pool=default"): 11,
            ("x", "node=b,pool=default"): 5,
            ("y", "node=b,pool=default"): 7,
        },
        id="some-exist",
    ),
    pytest.param(
        {"x": {NODE_A: 10}, "y": {NODE_A: 1}},
        {"x": {NODE_A: 5}, "y": {NODE_A: 0}},
        {("x", "node=a,pool=default"): 15, ("y", "node=a,pool=default"): 1},
        id="all-exist-zero-ignored",
    ),
    pytest.param(
        {},
        # The same label set given in two orders is one counter.
        {"x": {NODE_A: 1, (("pool", "default"), ("node", "a")): 2}},
        {("x", "node=a,pool=default"): 3},
        id="one-label-set-two-orders",
    ),
    pytest.param({"x": {NODE_A: 4}}, {}, {("x", "node=a,pool=default"): 4}, id="nothing"),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("before", "added", "after"), CASES)
def test_counters_add_many(before, added, after):
    counters_add_many(before)
    counters_add_many(added)
    got = stored()
    assert {key: value for key, (_, value) in got.items()} == after
    for (_, key), (labels, _) in got.items():
        assert labels == dict(item.split("=") for item in key.split(","))


@pytest.mark.django_db
def test_counters_add_is_counters_add_many_of_one_name():
    counters_add(name="x", increments={NODE_A: 2})
    counters_add(name="x", increments={NODE_A: 3, NODE_B: 1})
    assert {k: v for k, (_, v) in stored().items()} == {
        ("x", "node=a,pool=default"): 5,
        ("x", "node=b,pool=default"): 1,
    }


THREADS = 4
ROUNDS = 15


@pytest.mark.django_db(transaction=True)
def test_parallel_writers_lose_no_increment():
    """Each writer adds, in its own transactions, to counters that exist, to counters no
    one has created yet (all writers race to create the same ones) and to its own."""
    if connection.vendor != "postgresql":
        pytest.skip("races need PostgreSQL")
    counters_add_many({"shared": {NODE_A: 1}})
    barrier = threading.Barrier(THREADS, timeout=120)
    errors: list[str] = []

    def writer(k: int) -> None:
        try:
            barrier.wait()
            for r in range(ROUNDS):
                with transaction.atomic():
                    lock_event_log()
                    counters_add_many(
                        {
                            "shared": {NODE_A: 1, NODE_B: 2},
                            f"round-{r}": {NODE_A: 1},
                            f"own-{k}": {NODE_A: r + 1},
                        }
                    )
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(f"{type(exc).__name__}: {exc}")
        finally:
            connection.close()

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=180)
    assert errors == []
    values = {k: v for k, (_, v) in stored().items()}
    expected = {
        ("shared", "node=a,pool=default"): 1 + THREADS * ROUNDS,
        ("shared", "node=b,pool=default"): 2 * THREADS * ROUNDS,
        **{(f"round-{r}", "node=a,pool=default"): THREADS for r in range(ROUNDS)},
        **{(f"own-{k}", "node=a,pool=default"): ROUNDS * (ROUNDS + 1) // 2 for k in range(THREADS)},
    }
    assert values == expected
