"""The executor API under concurrent callers, on PostgreSQL: threads each with a database
connection of its own (closed when the thread's work ends), calling the server's handler
(``wire.executor_server.handle``) as the API's worker threads do.

- one report batch sent at once by several threads, then again: every event once, every
  failure counted once, every retry decided once;
- two processes opening sessions for one executor id at once while rounds run: one
  session survives, the other is fenced, nothing deadlocks;
- rounds that mark runs missing (and expire them) beside scheduler cycles, report batches,
  cancellations and failure decisions: no deadlock, no failed transaction, and states that
  agree with the events afterwards.

Every step runs with ``lock_timeout`` set, so that a lock wait that never ends fails the test
instead of hanging it."""

from __future__ import annotations

import contextlib
import random
import threading
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timedelta

import grpc
import pytest
from django.conf import settings as django_settings
from django.db import connection
from django.utils import timezone

from armada.core.config import parse_config
from armada.core.states import JobState, RunState
from armada.executor.api import executorapi_pb2 as pb
from armada.executor.api.messages import config_nodes, timestamp
from armada.models import Event, Executor, Job, MetricCounter, Run
from armada.services.decisions import failures_decide
from armada.services.policies import policy_create
from armada.services.policy_cache import policy_cache
from armada.services.queues import queue_update
from armada.services.runs import FAILURE_CATEGORY_COUNTER
from armada.services.scheduler import scheduler_cycle, scheduler_state_reset
from armada.services.stopping import CANCEL, runs_request_stop
from armada.services.submit import job_submit
from armada.wire.executor_server import handle
from armada.wire.server import status_of
from tests.conftest import at, container, job_file
from tests.executor_api import credential_for
from tests.racing import Race, deadlocks, each_more_than, exit_code_categories, flaky_policy

pytestmark = pytest.mark.django_db(transaction=True)

EXECUTOR = "racer"
LOCK_TIMEOUT = "20s"
JOIN_TIMEOUT = 120.0
PEER = "ipv4:10.0.0.9:5000"
ACTIVE = [RunState.LEASED, RunState.PENDING, RunState.RUNNING]
ROLE = "example.com/race"
TERMINAL_EVENT = {
    RunState.SUCCEEDED: "succeeded",
    RunState.CANCELLED: "cancelled",
    RunState.LEASE_EXPIRED: "lease_expired",
}


@pytest.fixture(autouse=True)
def _postgresql_only():
    if connection.vendor != "postgresql":
        pytest.skip("row locks, lock timeouts and deadlock detection are PostgreSQL's")


def configure(settings, *, timeout: str = "1h"):
    settings.ARMADA = parse_config(
        {
            "scheduling": {
                "cyclePeriod": "100ms",
                "retryPolicy": {"enabled": True, "globalMaxRetries": 5},
            },
            "executorTimeout": timeout,
            "executors": [
                {
                    "id": EXECUTOR,
                    "nodes": [
                        {"name": "n", "count": 4, "allocatable": {"cpu": "16", "memory": "64Gi"}}
                    ],
                    "errorCategories": exit_code_categories("Retain"),
                }
            ],
        }
    )
    policy_cache.__init__()
    scheduler_state_reset()


def with_policy(admin_user, now: datetime) -> None:
    """Queue ``demo`` retries ``flaky`` failures (twice) and fails user errors at once."""
    policy_create(actor=admin_user, data=flaky_policy("racing"), now=now)
    queue_update(actor=admin_user, name="demo", data={"retryPolicies": ["racing"]}, now=now)


def bounded(step: Callable[[int], None]) -> Callable[[int], None]:
    """``step`` with ``lock_timeout`` set on its connection (and reset after, since pooled
    connections are used again)."""

    def run(n: int) -> None:
        with connection.cursor() as cursor:
            cursor.execute(f"SET lock_timeout = '{LOCK_TIMEOUT}'")
        try:
            step(n)
        finally:
            with contextlib.suppress(Exception), connection.cursor() as cursor:
                cursor.execute("RESET lock_timeout")

    return run


class Api:
    """Calls of executor ``racer``'s API through the server's handler, as its process
    makes them."""

    def __init__(self, key: str) -> None:
        self.metadata = (("authorization", f"Bearer {key}"),)
        self.nodes = config_nodes(django_settings.ARMADA.executor(EXECUTOR))

    def open(self, instance: str, now: datetime) -> str:
        request = pb.OpenSessionRequest(
            executor_id=EXECUTOR, pool="default", backend="fake", instance=instance
        )
        [raw] = handle("OpenSession", self.metadata, PEER, request.SerializeToString(), now)
        return pb.OpenSessionResponse.FromString(raw).session

    def round(self, session: str, held: list[str], now: datetime) -> list[pb.LeaseStreamMessage]:
        request = pb.LeaseRequest(
            executor_id=EXECUTOR, session=session, pool="default", nodes=self.nodes, run_ids=held
        )
        raws = handle("LeaseJobRuns", self.metadata, PEER, request.SerializeToString(), now)
        return [pb.LeaseStreamMessage.FromString(raw) for raw in raws]

    def report(self, session: str, events: list[pb.RunEvent], now: datetime) -> list:
        request = pb.ReportRequest(executor_id=EXECUTOR, session=session, events=events)
        [raw] = handle("ReportEvents", self.metadata, PEER, request.SerializeToString(), now)
        return list(pb.ReportResponse.FromString(raw).results)


def event(run_id: str, phase: int, when: datetime, **more) -> pb.RunEvent:
    return pb.RunEvent(run_id=run_id, phase=phase, at=timestamp(when), **more)


def fenced(exc: BaseException) -> bool:
    status = status_of(exc)
    return status.code == grpc.StatusCode.FAILED_PRECONDITION and "fenced" in status.message


def at_once(works: list[Callable[[], object]]) -> tuple[list[object], list[str]]:
    """Each of ``works`` in a thread of its own, let go together; what each returned (or
    raised, when it was a FAILED_PRECONDITION) and any other error."""
    barrier = threading.Barrier(len(works))
    results: list[object] = [None] * len(works)
    errors: list[str] = []

    def body(i: int) -> None:
        try:
            connection.ensure_connection()
            with connection.cursor() as cursor:
                cursor.execute(f"SET lock_timeout = '{LOCK_TIMEOUT}'")
            barrier.wait(timeout=60)
            results[i] = works[i]()
        except Exception as exc:  # noqa: BLE001 - sorted below
            if fenced(exc):
                results[i] = exc
            else:
                errors.append(f"caller {i}: {type(exc).__name__}: {exc}")
        finally:
            with contextlib.suppress(Exception), connection.cursor() as cursor:
                cursor.execute("RESET lock_timeout")
            connection.close()

    threads = [
        threading.Thread(target=body, args=(i,), name=f"caller-{i}") for i in range(len(works))
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=JOIN_TIMEOUT)
    assert not any(t.is_alive() for t in threads), "a caller never finished (a lock wait?)"
    return results, errors


# --- (a) one batch, many times at once --------------------------------------------------------


def test_one_report_batch_sent_by_four_threads_at_once_and_three_times_more_counts_once(
    settings, queue, owner, admin_user
):
    configure(settings)
    with_policy(admin_user, at(0))
    api = Api(credential_for(EXECUTOR, at(0)))
    session = api.open("host/1", at(0))
    api.round(session, [], at(0))
    job_ids = job_submit(
        actor=owner,
        data=job_file(jobs=[{"podSpec": {"containers": [container("1", "1Gi")]}}] * 12),
        now=at(0),
    )
    assert scheduler_cycle(now=at(1)).leased == 12
    runs = dict(Run.objects.values_list("job_id", "id"))
    endings = {}  # run -> how it ends: success, a flaky failure (retried), a user error
    events: list[pb.RunEvent] = []
    for i, job_id in enumerate(job_ids):
        run_id = runs[job_id]
        kind = ("success", "flaky", "user-error")[i % 3]
        endings[run_id] = kind
        if kind == "success":
            end = event(run_id, pb.SUCCEEDED, at(4), exit_code=0, exit_codes={"main": 0})
        else:
            code = 3 if kind == "flaky" else 1
            end = event(
                run_id,
                pb.FAILED,
                at(4),
                exit_code=code,
                exit_codes={"main": code},
                failure_category=kind,
            )
        events += [event(run_id, pb.PENDING, at(2)), event(run_id, pb.RUNNING, at(3)), end]
    random.Random(7).shuffle(events)  # a run's reports out of order, runs interleaved

    results, errors = at_once([lambda: api.report(session, events, at(5))] * 4)
    assert errors == []
    for replay in range(3):
        results.append(api.report(session, events, at(6 + replay)))
    assert len(results) == 7
    for i, ev in enumerate(events):
        outcomes = Counter(r[i].outcome for r in results)
        assert outcomes == {pb.APPLIED: 1, pb.DUPLICATE: 6}, (i, ev.run_id, ev.phase, outcomes)
        assert all(r[i].run_id == ev.run_id for r in results)

    per_run = Counter(Event.objects.filter(run_id__in=endings).values_list("run_id", "type"))
    for run_id, kind in endings.items():
        ending = "succeeded" if kind == "success" else None
        expected = {"leased": 1, "pending": 1, "running": 1} | ({ending: 1} if ending else {})
        got = {t: c for (r, t), c in per_run.items() if r == run_id}
        assert got == expected, run_id
    counted = {
        c.labels["failure_category"]: c.value
        for c in MetricCounter.objects.filter(name=FAILURE_CATEGORY_COUNTER)
    }
    assert counted == {"flaky": 4, "user-error": 4}

    assert failures_decide(now=at(10)) == 8
    results, errors = at_once([lambda: api.report(session, events, at(11))] * 2)
    assert errors == [] and all(r.outcome == pb.DUPLICATE for rs in results for r in rs)
    assert failures_decide(now=at(12)) == 0
    for run_id, kind in endings.items():
        job = Job.objects.get(runs__id=run_id)
        expected = {
            "success": ("succeeded", 0, 0),
            "flaky": ("queued", 1, 1),
            "user-error": ("failed", 1, 0),
        }[kind]
        assert (job.state, job.failure_count, job.retry_count) == expected, run_id
        assert Event.objects.filter(job_id=job.id, type="failed").count() == (kind != "success")


# --- (b) two processes, one executor id -------------------------------------------------------


ROUNDS_EACH = 5


def test_of_two_processes_opening_sessions_at_once_one_survives_and_the_other_is_fenced(
    settings, queue, owner
):
    configure(settings)
    api = Api(credential_for(EXECUTOR, at(0)))
    job_submit(
        actor=owner,
        data=job_file(jobs=[{"podSpec": {"containers": [container("1", "1Gi")]}}] * 8),
        now=at(0),
    )

    def rounds(session: str, t: float) -> list[str]:
        """Rounds with ``session`` until done; what each came to (ok, or fenced)."""
        seen: list[str] = []
        for i in range(ROUNDS_EACH):
            try:
                api.round(session, [], at(t + 0.1 * (i + 1)))
                seen.append("ok")
            except Exception as exc:
                if not fenced(exc):
                    raise
                seen.append("fenced")
        return seen

    def process(name: str, t: float) -> Callable[[], tuple[str, list[str]]]:
        """A new process: it opens a session, then makes its rounds."""

        def run() -> tuple[str, list[str]]:
            session = api.open(name, at(t))
            return session, rounds(session, t)

        return run

    def still_going(session: str, t: float) -> Callable[[], tuple[str, list[str]]]:
        """The process that held the executor so far, making rounds meanwhile."""
        return lambda: (session, rounds(session, t))

    def scheduling(t: float) -> Callable[[], None]:
        def run() -> None:
            for i in range(3):
                scheduler_cycle(now=at(t + 0.05 * i))

        return run

    before = deadlocks()
    earlier = ""
    for attempt in range(8):  # the first makes the executor; the others find it
        t = 10.0 * attempt
        works = [process(f"p{attempt}-a", t), process(f"p{attempt}-b", t), scheduling(t)]
        if earlier:
            works.append(still_going(earlier, t))
        results, errors = at_once(works)
        assert errors == [], (attempt, errors)
        opened = [results[0][0], results[1][0]]
        current = Executor.objects.get(id=EXECUTOR).session
        assert current in opened and opened[0] != opened[1], attempt
        for session, seen in [results[0], results[1], *results[3:]]:
            if session == current:
                assert seen == ["ok"] * ROUNDS_EACH, (attempt, seen)  # never fenced
            elif "fenced" in seen:  # fenced for good once fenced
                assert "ok" not in seen[seen.index("fenced") :], (attempt, seen)
        # Afterwards exactly the current session works; every other is fenced.
        for session in [*opened, *([earlier] if earlier else [])]:
            try:
                api.round(session, [], at(t + 5))
                outcome = "ok"
            except Exception as exc:
                assert fenced(exc), exc
                outcome = "fenced"
            assert outcome == ("ok" if session == current else "fenced"), (attempt, session)
        earlier = current
    assert deadlocks() == before
    assert list(Executor.objects.values_list("id", flat=True)) == [EXECUTOR]
    assert Executor.objects.get().instance in ("p7-a", "p7-b")
    assert Run.objects.filter(executor=EXECUTOR).count() == 8  # the rounds beside scheduling


# --- (c) rounds, scheduler, reports, decisions at once ----------------------------------------


SECONDS = 10.0


def test_rounds_marking_runs_missing_beside_scheduling_and_reports_never_deadlock(
    settings, queue, owner, admin_user
):
    configure(settings, timeout="2s")  # runs never held expire within the race
    now = timezone.now()
    with_policy(admin_user, now)
    api = Api(credential_for(EXECUTOR, now))
    session = api.open("host/1", now)
    api.round(session, [], now)
    before = deadlocks()
    race = Race()
    outcomes: Counter[int] = Counter()
    guard = threading.Lock()

    def active(limit: int = 200) -> list[tuple[str, str, str, object, str]]:
        """Active runs of the executor, at random: id, job, state, stop asked, role."""
        return [
            (*row, (annotations or {}).get(ROLE, ""))
            for *row, annotations in Run.objects.filter(executor=EXECUTOR, state__in=ACTIVE)
            .order_by("?")
            .values_list("id", "job_id", "state", "stop_requested_at", "job__annotations")[:limit]
        ]

    def submit(_: int) -> None:
        # One job of each role: "lost" is never held nor reported (a lease not taken, a pod
        # gone), so its runs are expired by the rounds; "unheld" is reported but never
        # held, so reports race the rounds' expiry; "flapping" is held every other round
        # (marked missing and found again, over and over); "held" is always held.
        jobs = [
            {"podSpec": {"containers": [container("100m", "64Mi")]}, "annotations": {ROLE: r}}
            for r in ("lost", "unheld", "flapping", "held")
        ]
        job_submit(actor=owner, data=job_file(jobs=jobs), now=timezone.now())
        race.stop.wait(0.2)

    def schedule(_: int) -> None:
        scheduler_cycle(now=timezone.now())

    def rounds(n: int) -> None:
        held = [
            run_id
            for run_id, *_, role in active(10_000)
            if role == "held" or (role == "flapping" and n % 2 == 0)
        ]
        api.round(session, held, timezone.now())

    def report(n: int) -> None:
        rng = random.Random(n)
        events = []
        for run_id, _, state, stop, role in active(30):
            if role == "lost":
                continue
            t = timezone.now()
            if stop is not None:
                events.append(event(run_id, pb.CANCELLED, t))
            elif state == RunState.LEASED:
                events.append(event(run_id, pb.PENDING, t))
            elif state == RunState.PENDING:
                events.append(event(run_id, pb.RUNNING, t))
            else:
                kind = rng.choice(["success", "flaky", "user-error", "later"])
                if kind == "success":
                    events.append(event(run_id, pb.SUCCEEDED, t, exit_code=0))
                elif kind != "later":
                    code = 3 if kind == "flaky" else 1
                    events.append(
                        event(run_id, pb.FAILED, t, exit_code=code, failure_category=kind)
                    )
        rng.shuffle(events)
        results = api.report(session, events, timezone.now())
        if n % 3 == 0:
            results += api.report(session, events, timezone.now())  # an answer lost: again
        with guard:
            outcomes.update(r.outcome for r in results)

    def cancel(n: int) -> None:
        jobs = [job_id for _, job_id, *_, role in active(3) if role != "lost"]
        if jobs:
            runs_request_stop(job_ids=jobs, kind=CANCEL, reason="racing", now=timezone.now())
        race.stop.wait(0.3)

    def decide(_: int) -> None:
        failures_decide(now=timezone.now())

    steps = {
        "submit": submit,
        "scheduler": schedule,
        "rounds": rounds,
        "reports": report,
        "cancel": cancel,
        "decide": decide,
    }
    race.run(
        {name: bounded(step) for name, step in steps.items()},
        SECONDS,
        until=each_more_than(3, steps),
    )
    ended = timezone.now()
    assert race.errors == []
    assert deadlocks() == before
    assert all(race.counts[name] > 3 for name in steps), sorted(race.counts.items())
    while failures_decide(now=timezone.now()):
        pass

    # Something of everything happened.
    states = Counter(Run.objects.values_list("state", flat=True))
    assert outcomes[pb.APPLIED] > 0 and outcomes[pb.DUPLICATE] > 0, outcomes
    for state in ("succeeded", "failed", "cancelled", "lease_expired"):
        assert states[state] > 0, states
    assert Run.objects.filter(missing_since__isnull=False).exists()
    # A lease never taken, and not being stopped, was expired once it was 2 s old (the
    # rounds came every few milliseconds until the end).
    lost = Run.objects.filter(job__annotations__contains={ROLE: "lost"}, stop_requested_at=None)
    old = lost.filter(leased_at__lt=ended - timedelta(seconds=4))
    assert old.exists()
    assert set(old.values_list("state", flat=True)) == {RunState.LEASE_EXPIRED}

    # Every run's events agree with its state: each phase at most once, its end exactly once.
    per_run: dict[str, Counter] = {}
    for run_id, type_ in Event.objects.exclude(run_id="").values_list("run_id", "type"):
        per_run.setdefault(run_id, Counter())[type_] += 1
    for run in Run.objects.all():
        types = per_run.get(run.id, Counter())
        assert all(count == 1 for count in types.values()), (run.id, run.state, types)
        for state, type_ in TERMINAL_EVENT.items():
            assert (types[type_] == 1) is (run.state == state), (run.id, run.state, types)
        if run.state in ACTIVE:
            assert run.finished_at is None
        else:
            assert run.finished_at is not None, run.id
        if run.state in (RunState.FAILED, RunState.LEASE_EXPIRED):
            assert run.decided_at is not None and types["failed"] == 1, (run.id, types)
    # A job has at most one active run, and an ended job none.
    live = Counter(Run.objects.filter(state__in=ACTIVE).values_list("job_id", flat=True))
    assert all(n == 1 for n in live.values())
    ended = set(Job.objects.filter(id__in=list(live)).values_list("state", flat=True)) & {
        s.value for s in JobState if s.terminal
    }
    assert ended == set()
    # Every reported failure counted once.
    counted = sum(c.value for c in MetricCounter.objects.filter(name=FAILURE_CATEGORY_COUNTER))
    assert counted == Run.objects.filter(state=RunState.FAILED).count()
