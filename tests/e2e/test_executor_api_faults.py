"""Faults between executors and the executor API, through real processes.

One system for the module (web, grpc, the scheduler with beat, the ``executor-api`` process
and two ``armada-executor`` processes: ``local``, whose pods are real processes that outlive
it, and ``fake``, whose pods live in it), on the test database and broker. Each test breaks
something: the executor API stopped for less and for more than ``executorTimeout``, an
executor killed with SIGKILL and started again, a report batch sent three times, a second
process with the same executor id, the executor API killed with SIGKILL in the middle of a
report. Each ends by checking the books of its jobs (``check_books``): every job in one
correct terminal state, every run's events once, the failure and retry counts right.

The tests share the system but not their jobs (each has queues of its own, and node
selectors send a test's jobs to the executor it means), and each starts by making the
system whole again (the ``whole`` fixture), so that they do not depend on their order.
Nothing waits on a sleep being long enough: the local jobs write what they do to a marker
file, and those that must outlast something wait for a gate file the test creates.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

import pytest

from tests.e2e.faults_world import (
    ADOPTED,
    API_APP,
    CONFIG,
    EXECUTORS,
    NODE_LABELS,
    POLICY,
    TIMEOUT,
    WAIT,
    Faults,
    alive,
    attempts,
    check_books,
    current_log,
    fake_job,
    gated_jobs,
    kill9,
    log_of,
    log_size,
    make_queue,
    pid_alive,
    restart_executor_api,
    runs_in,
    start_executor_api,
    states,
    submit,
    wait_for_orphans,
    wait_for_rounds,
    wait_until_all,
    wait_until_ended,
)
from tests.e2e.wire_system import module_database, module_system

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def transactional_db(django_db_setup, django_db_blocker) -> Iterator[None]:
    """pytest-django's ``transactional_db`` for the whole module (``module_database``)."""
    yield from module_database(django_db_blocker)


@pytest.fixture(scope="module")
def faults(transactional_db, tmp_path_factory) -> Iterator[Faults]:
    from tests.tour.test_readme_tour import memory_cgroups_available

    cgroups = memory_cgroups_available(tmp_path_factory.mktemp("probe"))
    markers = tmp_path_factory.mktemp("markers")
    try:
        # module_system stops every process when closed, whatever happened.
        with contextlib.closing(module_system(tmp_path_factory, "executor-faults", CONFIG)) as up:
            system = next(up).system
            restart_executor_api(system)  # with its database connections named
            assert system.post("/api/v1/retry-policies", json=POLICY).status_code == 201
            commands = {e: list(system.children[f"executor-{e}"][0].args) for e in EXECUTORS}
            yield Faults(system, markers, commands, cgroups)
    finally:
        (markers / "teardown").touch()  # Faults.teardown_gate


@pytest.fixture
def whole(faults) -> Faults:
    """The module's system with every process up and both executors taking rounds."""
    system = faults.system
    if not alive(system, "executor-api"):
        restart_executor_api(system)
    for name in EXECUTORS:
        if not alive(system, f"executor-{name}"):
            if f"executor-{name}" in system.children:
                system.stop(f"executor-{name}")
            system.start(f"executor-{name}", faults.executor_commands[name])
    wait_for_rounds(system, EXECUTORS)
    return faults


@pytest.fixture
def local(whole) -> Faults:
    if not whole.cgroups:
        pytest.skip("no writable memory cgroup on this machine: the local backend needs one")
    return whole


def test_the_executor_api_stopped_for_less_than_the_timeout_costs_nothing(local):
    """The executor keeps its pods' outcomes while the server is away, and reports them
    when it is back: nothing expires, nothing is lost."""
    from django.utils import timezone

    from armada.models import Event

    system = local.system
    gate, markers, job_ids = gated_jobs(local, "brief", "outage", "running")

    stopped = time.monotonic()
    system.stop("executor-api")
    gate.touch()
    system.wait_for(  # bounded well below executorTimeout
        "the pods to end while the server is away",
        lambda: all(attempts(m)[-1:] == ["end"] for m in markers),
        timeout=TIMEOUT / 2,
    )
    time.sleep(max(0.0, 5 - (time.monotonic() - stopped)))  # down for 5 s at least
    restarted_at = timezone.now()
    start_executor_api(system)
    assert time.monotonic() - stopped < TIMEOUT * 0.75

    wait_until_ended(system, job_ids)
    books = check_books(job_ids, {j: ("succeeded", ["succeeded"]) for j in job_ids})
    # They ended while the server was away: their reports came late, and counted.
    assert any(runs[0].finished_at < restarted_at for runs in books.values()), books
    assert not Event.objects.filter(job_id__in=job_ids, type="lease_expired").exists()
    assert all(len(attempts(m)) == 2 for m in markers)  # each pod ran once


def test_the_executor_api_stopped_for_longer_than_the_timeout_expires_the_runs_once(local):
    """The runs of an executor cut off for longer than executorTimeout are expired (a
    genuine failure, retried by the queue's policy, or not under the legacy rules); its late
    reports are refused and its pods still running stopped when it reconnects."""
    system = local.system
    make_queue(system, "lost-retried", policies=[POLICY["name"]])
    make_queue(system, "lost-legacy")
    folder = local.folder("lost")
    gate = folder / "gate"
    # Per queue: a job whose first pod outlives the outage (it is stopped when the server is
    # back), and one whose first pod ends during it (its success comes late, and is refused).
    # Their later attempts take a second.
    retried = submit(
        system,
        "lost-retried",
        "outage",
        [
            local.local_job(folder / "retried-long", 120, 1),
            local.local_job(folder / "retried-short", 120, 1, gate=gate),
        ],
    )
    legacy = submit(
        system,
        "lost-legacy",
        "outage",
        [
            local.local_job(folder / "legacy-long", 120),
            local.local_job(folder / "legacy-short", 120, gate=gate),
        ],
    )
    job_ids = retried + legacy
    wait_until_all(system, job_ids, "running")

    system.stop("executor-api")
    gate.touch()
    # Silent for executorTimeout, the executor is lost: its runs are expired and decided
    # while it cannot say a thing.
    system.wait_for(
        "the runs to be expired and decided",
        lambda: all_decided(job_ids),
        timeout=TIMEOUT + WAIT,
        interval=0.5,
    )
    assert states(legacy) == dict.fromkeys(legacy, "failed")
    assert states(retried) == dict.fromkeys(retried, "queued")
    for name in ("retried-short", "legacy-short"):  # ended while the server was away
        assert attempts(folder / name)[-1:] == ["end"], attempts(folder / name)
    start_executor_api(system)

    wait_until_ended(system, job_ids)
    expected = {j: ("succeeded", ["lease_expired", "succeeded"]) for j in retried}
    expected |= {j: ("failed", ["lease_expired"]) for j in legacy}
    # A retry may find its pod name still taken by the stopped first pod: that lease is
    # returned (not a failure) and the job leased again.
    books = check_books(job_ids, expected, returns=True)
    for job_id in job_ids:
        first = books[job_id][0]
        assert (first.failure_category, first.failure_subcategory) == ("internal", "lease-expired")
        assert first.reason == "LeaseExpired"
    assert [books[j][0].retryable for j in job_ids] == [True, True, False, False]
    assert [books[j][0].decision["decision"] for j in job_ids] == [
        "retry",
        "retry",
        "not_retried",
        "not_retried",
    ]

    # The short pods' successes came late and were refused; the long pods, still running
    # when the server came back, were stopped.
    log = log_of(system, current_log(system, "executor-local"))
    for job_id in (retried[1], legacy[1]):
        run_id = books[job_id][0].id
        assert f"report succeeded of run {run_id} refused" in log, log[-5000:]
    for name in ("retried-long", "legacy-long"):
        first_pid = int(attempts(folder / name)[0].split()[1])
        system.wait_for(
            f"the first pod of {name} to be stopped",
            lambda pid=first_pid: not pid_alive(pid),
            timeout=WAIT,
        )
        assert attempts(folder / name)[1:2] != ["end"]  # it did not run to its end
    assert len([a for a in attempts(folder / "legacy-long") if a.startswith("start")]) == 1


def all_decided(job_ids: list[str]) -> bool:
    from armada.models import Run

    runs = Run.objects.filter(job_id__in=job_ids)
    return len(runs) == len(job_ids) and all(
        r.state == "lease_expired" and r.decided_at is not None for r in runs
    )


def test_an_executor_killed_between_pod_start_and_report_carries_on_when_started_again(local):
    """kill -9 of an executor whose pods run: started again, it finds its pods by their
    labels, holds their runs again and reports them; the server takes each phase once."""
    system = local.system
    gate, markers, job_ids = gated_jobs(local, "killed", "kill-9", "pending", "running")

    orphans = kill9(system, "executor-local")
    offset = log_size(system, "executor-local")
    system.start("executor-local", local.executor_commands["local"])
    # Its embedded beat (a child process) went with it: no orphan sends ticks to the new one.
    assert orphans
    wait_for_orphans(system, orphans)
    system.wait_for(
        "the new process to take the pods over",
        lambda: ADOPTED in log_of(system, "executor-local", offset),
        timeout=WAIT,
    )
    assert set(states(job_ids).values()) <= {"pending", "running"}
    gate.touch()

    wait_until_ended(system, job_ids)
    check_books(job_ids, {j: ("succeeded", ["succeeded"]) for j in job_ids})
    assert all(len(attempts(m)) == 2 for m in markers)  # each pod ran once, to its end


def test_a_report_batch_sent_three_times_is_applied_once(whole):
    """A real batch (two runs to their ends, one a failure) through the real client, sent
    three times: applied, then duplicate, and nothing changes after the first."""
    from django.utils import timezone

    from armada.core.reports import RunReport
    from armada.core.states import RunState
    from armada.executor.api import executorapi_pb2 as pb
    from armada.executor.api.client import ExecutorApiClient, open_channel
    from armada.executor.api.messages import run_event
    from armada.services.executor_credentials import executor_credential_issue

    system = whole.system
    make_queue(system, "replayed")
    # Only the test's own executor has a node labelled faults=replay.
    job_ids = submit(system, "replayed", "replay", [fake_job("1s", where="replay")] * 2)
    key = executor_credential_issue(cluster_id="replay", name="replay", now=timezone.now()).key
    client = ExecutorApiClient(open_channel(system.executor_api_target), lambda: key, timeout=30)
    try:
        session = client.open_session(
            pb.OpenSessionRequest(
                executor_id="replay",
                pool="default",
                backend="fake",
                tracked_node_labels=NODE_LABELS,
                instance="test/replay",
            )
        ).session
        node = pb.NodeInfo(
            name="replay-node",
            labels={"kubernetes.io/hostname": "replay-node", "faults": "replay"},
            allocatable={"cpu": "8", "memory": "16Gi"},
        )
        leases: dict[str, object] = {}

        def leased() -> bool:
            answer = client.lease(
                pb.LeaseRequest(
                    executor_id="replay",
                    session=session,
                    pool="default",
                    nodes=[node],
                    run_ids=list(leases),
                )
            )
            leases.update({lease.run_id: lease for lease in answer.leases})
            return len(leases) == len(job_ids)

        system.wait_for("the jobs to be leased to the test's executor", leased, timeout=WAIT)
        good, bad = sorted(leases.values(), key=lambda lease: job_ids.index(lease.job_id))
        at = timezone.now()
        reports = [
            RunReport(good.run_id, RunState.PENDING, at),
            RunReport(bad.run_id, RunState.PENDING, at),
            RunReport(good.run_id, RunState.RUNNING, at),
            RunReport(bad.run_id, RunState.RUNNING, at),
            RunReport(
                good.run_id,
                RunState.SUCCEEDED,
                at,
                exit_code=0,
                exit_codes={"main": 0},
                log="done\n",
            ),
            RunReport(
                bad.run_id,
                RunState.FAILED,
                at,
                exit_code=1,
                exit_codes={"main": 1},
                reason="Error",
                message="exit code 1",
                failure_category="user-error",
                log="it went wrong\n",
            ),
        ]
        batch = pb.ReportRequest(
            executor_id="replay", session=session, events=[run_event(r) for r in reports]
        )
        first = client.report(batch)
        assert [r.outcome for r in first] == [pb.APPLIED] * len(reports), first
        applied = reported(job_ids)
        # At once (before the scheduler decides the failure, most likely): nothing changes.
        second = client.report(batch)
        assert [r.outcome for r in second] == [pb.DUPLICATE] * len(reports), second
        assert [r.run_id for r in second] == [r.run_id for r in reports]
        assert reported(job_ids) == applied
        # Once the failure is decided nothing of these jobs moves on its own: a third time
        # changes no row at all.
        wait_until_ended(system, job_ids)
        before = snapshot(job_ids)
        third = client.report(batch)
        assert [r.outcome for r in third] == [pb.DUPLICATE] * len(reports), third
        assert snapshot(job_ids) == before
        assert reported(job_ids) == applied
    finally:
        client.close()
    check_books(
        job_ids,
        {job_ids[0]: ("succeeded", ["succeeded"]), job_ids[1]: ("failed", ["failed"])},
    )


def reported(job_ids: list[str]) -> tuple:
    """What reports write of the jobs' runs: their phases and outcomes, their logs, and the
    events of their phases."""
    from armada.models import Event, Run, RunLog

    fields = ["id", "state", "pending_at", "running_at", "finished_at", "exit_code"]
    fields += ["exit_codes", "reason", "message", "failure_category", "failure_subcategory"]
    return (
        list(Run.objects.filter(job_id__in=job_ids).order_by("id").values(*fields)),
        list(RunLog.objects.filter(run__job_id__in=job_ids).order_by("run_id").values()),
        list(
            Event.objects.filter(job_id__in=job_ids, type__in=["pending", "running", "succeeded"])
            .order_by("id")
            .values()
        ),
    )


def snapshot(job_ids: list[str]) -> tuple:
    """Every row of the jobs, their runs, logs and events, as the database has them."""
    from armada.models import Event, Job, Run, RunLog

    return (
        list(Job.objects.filter(id__in=job_ids).order_by("id").values()),
        list(Run.objects.filter(job_id__in=job_ids).order_by("id").values()),
        list(Event.objects.filter(job_id__in=job_ids).order_by("id").values()),
        list(RunLog.objects.filter(run__job_id__in=job_ids).order_by("run_id").values()),
    )


def test_a_second_executor_process_with_the_same_id_fences_the_first(local):
    """A second process with the same file while the first runs jobs: its session fences
    the first, which stops acting; the second takes the pods over and ends them."""
    system = local.system
    gate, markers, job_ids = gated_jobs(local, "twins", "twins", "running")

    first_name = current_log(system, "executor-local")
    offset = log_size(system, first_name)
    second_offset = log_size(system, "executor-local-2")

    def first_since() -> str:
        return log_of(system, first_name, offset)

    system.start("executor-local-2", local.executor_commands["local"])
    try:
        system.wait_for(
            "the first process to be fenced",
            lambda: "fenced, so this process stops acting" in first_since(),
            timeout=WAIT,
        )
        second = log_of(system, "executor-local-2", second_offset)
        assert ADOPTED in second, second[-5000:]
        # The newest session is the second process's.
        from armada.models import Executor

        second_pid = system.children["executor-local-2"][0].pid
        assert Executor.objects.get(id="local").instance.endswith(f"/{second_pid}")
        gate.touch()
        wait_until_ended(system, job_ids)
        check_books(job_ids, {j: ("succeeded", ["succeeded"]) for j in job_ids})
        assert all(len(attempts(m)) == 2 for m in markers)  # each pod ran once, to its end
        # Once fenced, the first did nothing more: no session, no pod stopped, no report.
        after = first_since()
        tail = after[after.index("fenced, so this process stops acting") :]
        assert [line for line in tail.splitlines()[1:] if "armada.executor" in line] == [], tail
    finally:
        # The second process is the executor from now on.
        system.stop("executor-local")
        system.children["executor-local"] = system.children.pop("executor-local-2")


def test_the_executor_api_killed_in_the_middle_of_a_report_loses_and_doubles_nothing(whole):
    """kill -9 of the executor API while reports flow, in the middle of a report's
    transaction where the database lets us see one: the executor sends its reports again
    to the new process, and each is applied once."""
    from django.db import connection

    system = whole.system
    make_queue(system, "flowing")
    executor_log = current_log(system, "executor-fake")
    offset = log_size(system, executor_log)
    # 16 at a time (8 cpus each on two 64-cpu nodes), 1 to 3 s each: reports for a while.
    jobs = [fake_job(f"{1 + i % 3}s", cpu="8") for i in range(96)]
    job_ids = submit(system, "flowing", "kill-9", jobs)
    caught = []
    for done in (8, 32, 56):
        system.wait_for(
            f"{done} jobs to succeed",
            lambda done=done: len(runs_in(job_ids, "succeeded")) >= done,
            timeout=WAIT,
        )
        if connection.vendor == "postgresql":
            caught.append(report_in_flight())
        wait_for_orphans(system, kill9(system, "executor-api"))
        assert len(runs_in(job_ids, "succeeded")) < len(job_ids)
        start_executor_api(system)
    wait_until_ended(system, job_ids)
    check_books(job_ids, {j: ("succeeded", ["succeeded"]) for j in job_ids})
    if connection.vendor == "postgresql":
        # At least one kill fell in a report's transaction, and the executor saw its call cut.
        assert any(caught), caught
        log = log_of(system, executor_log, offset)
        assert "a report: the server is unreachable" in log, log[-5000:]


def report_in_flight(timeout: float = 30.0) -> str:
    """Wait (at most ``timeout`` seconds) until the executor API is in the middle of a
    transaction that has written and not committed, other than a heartbeat: a report here.
    Returns its latest statement, or "" when none was seen in time."""
    from django.db import connection

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT query FROM pg_stat_activity WHERE application_name = %s "
                "AND datname = current_database() AND backend_xid IS NOT NULL "
                "AND state IN ('active', 'idle in transaction') AND query NOT LIKE %s",
                [API_APP, "%armada_executor%"],
            )
            row = cursor.fetchone()
        if row:
            return row[0]
        time.sleep(0.002)
    return ""
