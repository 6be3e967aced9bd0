"""Several processes starting at once with a configuration that no longer names two
executors, on PostgreSQL: each does the start-up step (``services.executor_startup``) while a
scheduler cycle and the remaining executor's tick run. No deadlock, no failed transaction,
every run of the removed executors expired exactly once, each executor removed once."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable

import pytest
from django.db import connection

from armada.executor.agent import ExecutorAgent
from armada.models import Event, Executor, Run
from armada.services.executor_startup import Deregistered, executors_deregister_unconfigured
from armada.services.expiry import ACTIVE
from armada.services.scheduler import scheduler_cycle
from tests.conftest import at
from tests.racing import deadlocks
from tests.services.executor_world import configure, submit

pytestmark = pytest.mark.django_db(transaction=True)

CALLERS = 4  # with the cycle and the tick: six connections, the pool holds 8
JOBS_PER_EXECUTOR = 25


def test_processes_starting_at_once_expire_each_run_once(settings, queue, owner):
    if connection.vendor != "postgresql":
        pytest.skip("needs concurrent writers")
    agents = configure(settings, "a", "b", "c", nodes=3)
    for agent in agents.values():
        agent.tick(at(0))
    for executor_id in ("a", "b", "c"):
        submit(owner, on=executor_id, count=JOBS_PER_EXECUTOR)
    for t in range(1, 6):
        scheduler_cycle(now=at(t))
        for agent in agents.values():
            agent.tick(at(t + 0.5))
    doomed = set(
        Run.objects.filter(executor__in=["b", "c"], state__in=ACTIVE).values_list("id", flat=True)
    )
    kept = set(Run.objects.filter(executor="a", state__in=ACTIVE).values_list("id", flat=True))
    assert len(doomed) == 2 * JOBS_PER_EXECUTOR and len(kept) == JOBS_PER_EXECUTOR
    agent_a = ExecutorAgent(configure(settings, "a")["a"].config, agents["a"].backend)
    agent_a.registered = True
    before = deadlocks()

    barrier = threading.Barrier(CALLERS + 2)
    errors: list[str] = []
    results: list[list[Deregistered]] = []

    def thread(name: str, work: Callable[[], object]) -> threading.Thread:
        def body() -> None:
            try:
                connection.ensure_connection()  # so that all start their work together
                barrier.wait(timeout=60)
                work()
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(f"{name}: {type(exc).__name__}: {exc}")
            finally:
                connection.close()

        return threading.Thread(target=body, name=name)

    def start_up() -> None:
        results.append(executors_deregister_unconfigured(configured=["a"], now=at(7)))

    threads = [thread(f"start-up-{k}", start_up) for k in range(CALLERS)]
    threads.append(thread("cycle", lambda: scheduler_cycle(now=at(7))))
    threads.append(thread("tick-a", lambda: agent_a.tick(at(7))))
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)

    assert errors == []
    assert deadlocks() == before
    assert len(results) == CALLERS
    removed = Counter(d.executor_id for done in results for d in done if d.registered)
    assert removed == {"b": 1, "c": 1}
    assert sum(d.runs_expired for done in results for d in done) == len(doomed)
    assert list(Executor.objects.values_list("id", flat=True)) == ["a"]
    states = Counter(Run.objects.filter(id__in=doomed).values_list("state", flat=True))
    assert states == {"lease_expired": len(doomed)}
    per_run = Counter(
        Event.objects.filter(type="lease_expired").values_list("payload__clusterId", "run_id")
    )
    assert set(per_run.values()) == {1}
    assert {run_id for _, run_id in per_run} == doomed
    assert not Run.objects.filter(id__in=kept, state="lease_expired").exists()
