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
import os
import signal
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from armada.executorapiserver import executor_api_command
from tests.e2e.conftest import ROOT, System
from tests.e2e.wire_system import module_database, module_system

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

TIMEOUT = 20  # executorTimeout, seconds
TOUR = yaml.safe_load((ROOT / "config" / "examples" / "tour.yaml").read_text())
NODE_LABELS = ["kubernetes.io/hostname", "faults"]
CONFIG = {
    "scheduling": {
        "cyclePeriod": "300ms",
        "retryPolicy": {"enabled": True, "globalMaxRetries": 5},
    },
    "queueRefreshPeriod": "1s",
    "executorTimeout": f"{TIMEOUT}s",
    "executors": [
        {
            "id": "local",
            "backend": "local",
            "tickPeriod": "500ms",
            "trackedNodeLabels": NODE_LABELS,
            "nodes": [
                {
                    "name": "local-node",
                    "labels": {"faults": "local"},
                    "allocatable": {"cpu": "4", "memory": "4Gi"},
                }
            ],
            "errorCategories": TOUR["executors"][0]["errorCategories"],
        },
        {
            "id": "fake",
            "backend": "fake",
            "tickPeriod": "300ms",
            "trackedNodeLabels": NODE_LABELS,
            "nodes": [
                {
                    "name": "fake-node",
                    "count": 2,
                    "labels": {"faults": "fake"},
                    "allocatable": {"cpu": "64", "memory": "256Gi"},
                }
            ],
        },
    ],
}
EXECUTORS = [e["id"] for e in CONFIG["executors"]]
# Retries a lost executor's runs (internal / lease-expired), nothing else.
POLICY = {
    "apiVersion": "armadaproject.io/v1beta1",
    "kind": "RetryPolicy",
    "name": "faults-lease-expired",
    "retryLimit": 3,
    "defaultAction": "Fail",
    "rules": [{"action": "Retry", "onCategory": "internal", "onSubcategory": "lease-expired"}],
}
# The executor API's database connections say who they are (libpq reads PGAPPNAME), so that
# a test can see a report in the middle of its transaction.
API_APP = "faults-executor-api"
# A local job. argv: marker file, seconds for the first attempt, seconds for later attempts,
# gate files. Each attempt writes "start <pid>" to the marker, waits its seconds or until a
# gate exists, and writes "end".
SLEEPER = """\
import os, sys, time
marker, first, later, *gates = sys.argv[1:]
attempt = open(marker).read().count("start") if os.path.exists(marker) else 0
with open(marker, "a") as out:
    out.write(f"start {os.getpid()}\\n")
deadline = time.monotonic() + float(later if attempt else first)
while time.monotonic() < deadline and not any(os.path.exists(g) for g in gates):
    time.sleep(0.1)
with open(marker, "a") as out:
    out.write("end\\n")
"""
RUN_EVENTS = (
    "leased",
    "pending",
    "running",
    "succeeded",
    "failed",
    "lease_expired",
    "lease_returned",
    "cancelled",
    "preempted",
)
WAIT = 120.0  # seconds a condition may take on a busy machine
# What a restarted executor says when it finds its pods (those of earlier tests' jobs too,
# when one failed).
ADOPTED = "pods of earlier runs; carrying on with them"


# --- the system ----------------------------------------------------------------------------


@dataclass
class Faults:
    system: System
    workdir: Path
    executor_commands: dict[str, list[str]]
    cgroups: bool

    def folder(self, name: str) -> Path:
        """A new folder for a test's markers and gates."""
        path = self.workdir / name
        path.mkdir()
        return path

    @property
    def teardown_gate(self) -> Path:
        """The gate every local job also waits for, opened when the module ends, so that
        no pod of a failed test outlives the module."""
        return self.workdir / "teardown"

    def local_job(
        self, marker: Path, first: float, later: float | None = None, gate: Path | None = None
    ) -> dict:
        """A job for the local executor (``SLEEPER``): its first attempt takes ``first``
        seconds (or until ``gate`` exists), later ones ``later`` (default: as long)."""
        later = first if later is None else later
        gates = [str(g) for g in (gate, self.teardown_gate) if g is not None]
        args = [str(marker), str(first), str(later), *gates]
        return {"podSpec": pod("local", {"command": ["python3", "-c", SLEEPER, *args]})}


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


def alive(system: System, name: str) -> bool:
    return name in system.children and system.children[name][0].poll() is None


def start_executor_api(system: System) -> None:
    command = executor_api_command(system.executor_api_target)  # the same address
    system.start("executor-api", command, env={**system.env, "PGAPPNAME": API_APP})


def restart_executor_api(system: System) -> None:
    if "executor-api" in system.children:
        system.stop("executor-api")
    start_executor_api(system)


def wait_for_rounds(system: System, executors: list[str], timeout: float = WAIT) -> None:
    """Wait until each of ``executors`` has taken a round since now."""
    from django.utils import timezone

    from armada.models import Executor

    since = timezone.now()
    system.wait_for(
        f"rounds of {', '.join(executors)}",
        lambda: (
            Executor.objects.filter(id__in=executors, last_heartbeat__gt=since).count()
            == len(executors)
        ),
        timeout=timeout,
    )


def kill9(system: System, name: str) -> list[int]:
    """SIGKILL the process ``name``, as an OOM kill would end it; returns the processes it
    had started (an embedded beat, say; not its pods, which run in sessions of their own),
    which must not outlive it (``wait_for_orphans``)."""
    proc, log = system.children.pop(name)
    started = descendants(proc.pid)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    log.close()
    return started


def wait_for_orphans(system: System, pids: list[int]) -> None:
    """Wait until the processes a killed process had started are gone (and kill those that
    are not, whatever happens, so that none outlives the test)."""
    try:
        system.wait_for(
            f"the processes {pids} to die with the process that started them",
            lambda: not any(pid_alive(pid) for pid in pids),
            timeout=30,
        )
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def descendants(pid: int) -> list[int]:
    """The processes started by ``pid`` and by them, except those in a session of their own
    (the local backend's pods)."""
    out: list[int] = []
    session = os.getsid(pid)
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            children = (task / "children").read_text().split()
        except OSError:
            continue
        for child in map(int, children):
            try:
                if os.getsid(child) != session:
                    continue
            except ProcessLookupError:
                continue
            out += [*descendants(child), child]
    return out


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"  # a zombie is gone
    except (ProcessLookupError, OSError):
        return False


def log_size(system: System, name: str) -> int:
    path = system.logs / f"{name}.log"
    return path.stat().st_size if path.exists() else 0


def current_log(system: System, name: str) -> str:
    """The name of the log the process ``name`` writes (a process started as another name
    may have taken its place)."""
    return Path(system.children[name][1].name).stem


def log_of(system: System, name: str, since: int = 0) -> str:
    """The log of the processes started as ``name``, from byte ``since`` on."""
    return (system.logs / f"{name}.log").read_bytes()[since:].decode(errors="replace")


# --- jobs ----------------------------------------------------------------------------------


def make_queue(system: System, name: str, *, policies: list[str] | None = None) -> None:
    body = {"name": name, "retryPolicies": policies or []}
    response = system.post("/api/v1/queues", json=body)
    assert response.status_code == 201, response.text


def submit(system: System, queue: str, job_set: str, jobs: list[dict]) -> list[str]:
    response = system.post("/api/v1/jobs", json={"queue": queue, "jobSetId": job_set, "jobs": jobs})
    assert response.status_code == 201, response.text
    return response.json()["jobIds"]


def pod(where: str, container: dict, cpu: str = "100m", memory: str = "64Mi") -> dict:
    resources = {"cpu": cpu, "memory": memory}
    return {
        "nodeSelector": {"faults": where},
        "containers": [
            {
                "name": "main",
                "image": "python:3.11-slim",
                **container,
                "resources": {"requests": resources, "limits": resources},
            }
        ],
    }


def attempts(marker: Path) -> list[str]:
    """What the attempts of a local job wrote: ``start <pid>`` and ``end`` lines."""
    return marker.read_text().splitlines() if marker.exists() else []


def fake_job(duration: str, where: str = "fake", cpu: str = "100m") -> dict:
    return {
        "annotations": {"fake.armadaproject.io/duration": duration},
        "podSpec": pod(where, {"command": ["true"]}, cpu=cpu),
    }


def states(job_ids: list[str]) -> dict[str, str]:
    from armada.models import Job

    return dict(Job.objects.filter(id__in=job_ids).values_list("id", "state"))


def runs_in(job_ids: list[str], *wanted: str) -> list:
    """The runs of ``job_ids`` in the ``wanted`` states."""
    from armada.models import Run

    return list(Run.objects.filter(job_id__in=job_ids, state__in=wanted))


def all_ended(job_ids: list[str]) -> bool:
    from armada.core.states import JobState

    found = states(job_ids)
    return len(found) == len(job_ids) and all(JobState(s).terminal for s in found.values())


def wait_until_ended(system: System, job_ids: list[str], timeout: float = WAIT) -> None:
    system.wait_for(
        f"{len(job_ids)} jobs to end", lambda: all_ended(job_ids), timeout=timeout, interval=0.5
    )


def wait_until_all(system: System, job_ids: list[str], *wanted: str) -> None:
    system.wait_for(
        f"a run of each of {len(job_ids)} jobs to be {' or '.join(wanted)}",
        lambda: len(runs_in(job_ids, *wanted)) == len(job_ids),
        timeout=WAIT,
    )


# --- the books -----------------------------------------------------------------------------


def check_books(
    job_ids: list[str], expected: dict[str, tuple[str, list[str]]], *, returns: bool = False
) -> dict[str, list]:
    """Every job of ``job_ids`` ended as ``expected[job] = (state, [the states of its runs,
    lease returns left out])``, with each run's events once and the counts right; lease
    returns (a run that never started) only when ``returns``. Returns each job's runs,
    oldest first."""
    from armada.core.states import JobState, RunState
    from armada.models import Event, Job, Run

    out = {}
    for job_id in job_ids:
        job = Job.objects.get(id=job_id)
        runs = list(Run.objects.filter(job_id=job_id).order_by("id"))
        events = list(Event.objects.filter(job_id=job_id).order_by("id"))
        where = (
            f"job {job_id} ({job.state}, failures {job.failure_count}, retries "
            f"{job.retry_count}, returns {job.lease_return_count}, runs {job.run_count}): "
            f"runs {[(r.id, r.state, r.decision.get('decision')) for r in runs]}, "
            f"events {[(e.run_id, e.type) for e in events]}"
        )
        state, run_states = expected[job_id]
        assert job.state == state, where
        assert JobState(job.state).terminal, where
        assert [r.state for r in runs if r.state != RunState.LEASE_RETURNED] == run_states, where
        if not returns:
            assert not any(r.state == RunState.LEASE_RETURNED for r in runs), where
        assert all(RunState(r.state).terminal for r in runs), where

        # Each run's events once, and those its path gives.
        counts = Counter((e.run_id, e.type) for e in events if e.type in RUN_EVENTS)
        assert [k for k, n in counts.items() if n > 1] == [], where
        assert all(run_id for run_id, _ in counts), where
        assert Counter(e.type for e in events)["submitted"] == 1, where
        for run in runs:
            have = {kind for run_id, kind in counts if run_id == run.id}
            assert have == run_events(run), f"run {run.id}: {sorted(have)}; {where}"

        # The job's end, once: one success, or one failure that was not retried.
        ends = [
            e
            for e in events
            if e.type == "succeeded" or (e.type == "failed" and not e.payload.get("retryable"))
        ]
        assert len(ends) == 1 and ends[0].run_id == runs[-1].id, where
        assert ends[0].type == ("succeeded" if state == "succeeded" else "failed"), where

        # The budgets: every genuine failure decided, and counted, once.
        failures = [r for r in runs if r.state in (RunState.FAILED, RunState.LEASE_EXPIRED)]
        assert all(r.decided_at is not None for r in failures), where
        assert job.failure_count == len(failures), where
        assert job.retry_count == sum(bool(r.retryable) for r in failures), where
        retried = [e for e in events if e.type == "failed" and e.payload.get("retryable")]
        assert len(retried) == job.retry_count, where
        returned = sum(r.state == RunState.LEASE_RETURNED for r in runs)
        assert job.lease_return_count == returned, where
        assert job.run_count == len(runs), where
        out[job_id] = runs
    return out


def run_events(run) -> set[str]:
    """The events of a run in its (terminal) state: its lease, the phases its pod reached,
    and its end (a genuine failure with the scheduler's ``failed`` decision)."""
    from armada.core.states import RunState

    kinds = {"leased"}
    if run.pending_at is not None:
        kinds.add("pending")
    if run.running_at is not None:
        kinds.add("running")
    return (
        kinds
        | {
            RunState.SUCCEEDED: {"succeeded"},
            RunState.FAILED: {"failed"},
            RunState.LEASE_EXPIRED: {"lease_expired", "failed"},
            RunState.LEASE_RETURNED: {"lease_returned"},
            RunState.CANCELLED: {"cancelled"},
            RunState.PREEMPTED: {"preempted", "failed"},
        }[RunState(run.state)]
    )


# --- the faults ----------------------------------------------------------------------------


def test_the_executor_api_stopped_for_less_than_the_timeout_costs_nothing(local):
    """The executor keeps its pods' outcomes while the server is away, and reports them
    when it is back: nothing expires, nothing is lost."""
    from django.utils import timezone

    from armada.models import Event

    system = local.system
    make_queue(system, "brief")
    folder = local.folder("brief")
    gate = folder / "gate"
    markers = [folder / f"job-{i}" for i in range(4)]
    job_ids = submit(
        system, "brief", "outage", [local.local_job(m, 120, gate=gate) for m in markers]
    )
    wait_until_all(system, job_ids, "running")

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
    make_queue(system, "killed")
    folder = local.folder("killed")
    gate = folder / "gate"
    markers = [folder / f"job-{i}" for i in range(4)]
    job_ids = submit(
        system, "killed", "kill-9", [local.local_job(m, 120, gate=gate) for m in markers]
    )
    wait_until_all(system, job_ids, "pending", "running")

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
    make_queue(system, "twins")
    folder = local.folder("twins")
    gate = folder / "gate"
    markers = [folder / f"job-{i}" for i in range(4)]
    job_ids = submit(
        system, "twins", "twins", [local.local_job(m, 120, gate=gate) for m in markers]
    )
    wait_until_all(system, job_ids, "running")

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
