"""The world of ``test_executor_api_faults``: its system's configuration, the local jobs
that tell what they did through marker files, and the readers and checks its tests share."""

from __future__ import annotations

import contextlib
import os
import signal
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import yaml

from armada.executorapiserver import executor_api_command
from tests.e2e.conftest import ROOT, System

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


def gated_jobs(
    local: Faults, queue: str, job_set: str, *states: str
) -> tuple[Path, list[Path], list[str]]:
    """Four local jobs in a new queue ``queue`` that run until ``gate`` exists, once each of
    them has reached one of ``states``: the gate, their marker files and their job ids."""
    system = local.system
    make_queue(system, queue)
    folder = local.folder(queue)
    gate = folder / "gate"
    markers = [folder / f"job-{i}" for i in range(4)]
    job_ids = submit(system, queue, job_set, [local.local_job(m, 120, gate=gate) for m in markers])
    wait_until_all(system, job_ids, *states)
    return gate, markers, job_ids


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
