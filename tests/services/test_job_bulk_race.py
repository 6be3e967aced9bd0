"""services.job_bulk on PostgreSQL with real parallel clients: operators cancelling and
reprioritizing overlapping selections at the same moment never deadlock, never fail, and
cancel every job exactly once (one ``cancelling`` event each, one ``cancelled`` for a queued
job), each job counted as done by exactly one of the cancels."""

from __future__ import annotations

import random
import threading
from collections import Counter

import pytest
from django.db import connection
from django.utils import timezone

from armada.models import Event, Job, Run
from armada.services.job_bulk import BulkResult, jobs_act
from armada.services.queues import queue_create
from tests.conftest import T0
from tests.lookout.builders import make_job, make_run
from tests.racing import JOIN_TIMEOUT, deadlocks

QUEUES = ("q-a", "q-b")
JOB_SETS = ("set-1", "set-2")
PER_SET = 12
ROUNDS = 6


def _round_jobs(n: int) -> tuple[list[str], list[str]]:
    """Fresh jobs for round ``n`` in every queue and job set, a third of them running;
    returns (queued ids, running ids)."""
    queued, running = [], []
    for queue in QUEUES:
        for job_set in JOB_SETS:
            for i in range(PER_SET):
                job_id = f"r{n}-{queue[-1]}{job_set[-1]}-{i:02d}"
                if i % 3 == 0:
                    make_job(job_id, queue, job_set=job_set, state="running")
                    make_run(f"run-{job_id}", job_id)
                    running.append(job_id)
                else:
                    make_job(job_id, queue, job_set=job_set)
                    queued.append(job_id)
    return queued, running


def _selections(ids: list[str], rng: random.Random) -> dict[str, list[str]]:
    """Overlapping selections, each across both queues and both job sets, in their own
    order: one picks everything (so every job ends cancelled), the others parts of it."""
    shuffled = ids[:]
    rng.shuffle(shuffled)
    return {
        "cancel-all": ids[::-1],
        "cancel-half": shuffled[: len(ids) // 2],
        "cancel-odd": ids[1::2],
        "cancel-sample": rng.sample(ids, len(ids) * 2 // 3),
        "reprioritize": shuffled,
    }


def _at_once(owner, selections: dict[str, list[str]]) -> tuple[dict[str, BulkResult], list[str]]:
    """Each selection acted on by its own operator (thread, connection), all released at the
    same moment; returns their results and errors, by operator."""
    results: dict[str, BulkResult] = {}
    errors: list[str] = []
    start = threading.Barrier(len(selections), timeout=JOIN_TIMEOUT)

    def operator(name: str, selection: list[str]) -> None:
        try:
            start.wait()
            results[name] = jobs_act(
                actor=owner,
                action="reprioritize" if name == "reprioritize" else "cancel",
                job_ids=selection,
                priority=5,
                reason=name,
                now=timezone.now(),
            )
        except Exception as exc:  # noqa: BLE001 - reported by the test, with the operator
            errors.append(f"{name}: {type(exc).__name__}: {exc}")
        finally:
            connection.close()

    threads = [
        threading.Thread(target=operator, args=item, name=item[0]) for item in selections.items()
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=JOIN_TIMEOUT)
    assert not any(t.is_alive() for t in threads)
    return results, errors


@pytest.mark.django_db(transaction=True)
def test_overlapping_bulk_cancels_and_reprioritizes_at_once_cancel_each_job_exactly_once(
    admin_user, owner
):
    if connection.vendor != "postgresql":
        pytest.skip("row locks and deadlock detection are PostgreSQL's")
    for name in QUEUES:
        queue_create(actor=admin_user, data={"name": name, "owners": ["olive"]}, now=T0)
    rng = random.Random(13)
    before = deadlocks()
    for n in range(ROUNDS):
        queued, running = _round_jobs(n)
        ids = sorted(queued + running)
        selections = _selections(ids, rng)
        results, errors = _at_once(owner, selections)
        assert errors == []
        assert all(r.failed == [] and r.refused == [] for r in results.values())

        cancels = [r for name, r in results.items() if name.startswith("cancel")]
        # Each job was done by exactly one cancel; the others found it finished or stopping.
        done = Counter(job_id for r in cancels for job_id in r.done)
        assert sorted(done) == ids and set(done.values()) == {1}
        for name, result in results.items():
            if name.startswith("cancel"):
                seen = [*result.done, *result.finished, *result.stopping]
                assert sorted(seen) == sorted(selections[name])
        # Every job cancelled exactly once, by the database's account too.
        events = Event.objects.filter(job_id__in=ids)
        cancelling = Counter(events.filter(type="cancelling").values_list("job_id", flat=True))
        cancelled = Counter(events.filter(type="cancelled").values_list("job_id", flat=True))
        assert cancelling == Counter(ids)
        assert cancelled == Counter(queued)
        assert set(Job.objects.filter(id__in=queued).values_list("state", flat=True)) == {
            "cancelled"
        }
        runs = Run.objects.filter(job_id__in=running)
        assert set(runs.values_list("stop_kind", flat=True)) == {"cancel"}
        # The one who cancelled a job is the one whose reason it carries.
        by_reason = {
            job_id: name
            for name, r in results.items()
            if name != "reprioritize"
            for job_id in r.done
        }
        for run in runs:
            assert run.stop_reason == by_reason[run.job_id]
        # Reprioritizing raced the cancels: it changed each job it reports done, once.
        repri = results["reprioritize"]
        assert sorted([*repri.done, *repri.finished]) == ids
        reprioritized = Counter(
            events.filter(type="reprioritized").values_list("job_id", flat=True)
        )
        assert reprioritized == Counter(repri.done)
    assert deadlocks() == before
