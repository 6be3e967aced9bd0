"""The shared system of the scheduler-limits end-to-end tests (``test_scheduler_limits``,
whose docstring describes it): its configuration (three pools and every limit at once), the
REST client the tests use, and the helpers they submit, read jobs, reasons and rounds with."""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import requests

from tests.e2e.conftest import HTTP_TIMEOUT
from tests.e2e.wire_system import ADMIN, Flows

FAKE = "fake.armadaproject.io/"
SITE = "site"
LICENCE = "example.com/licence"
RATE, BURST = 2.0, 12
UNACKNOWLEDGED = BURST  # maxUnacknowledgedJobsPerExecutor
WEST, WEST_GPU, GPU = "west", "west-gpu", "gpu"
TEAM_TAINT = {"key": "team", "value": "west", "effect": "NoSchedule"}
GPU_TAINT = {"key": "gpu", "value": "true", "effect": "NoSchedule"}
TEAM_TOLERATION = {"key": "team", "operator": "Equal", "value": "west", "effect": "NoSchedule"}
GPU_TOLERATION = {"key": "gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
AWAY_PRIORITY = 500
STOPPED_FOR = 20.0  # seconds an executor may be kept stopped (executorTimeout is 30 s)
WAIT = 90.0  # seconds any one wait may take on a busy machine
POLICY = "retry-under-cap"
CATEGORIES = {
    "enabled": True,
    "categories": [
        {
            "name": "flaky",
            "action": "Delete",
            "rules": [{"onExitCodes": {"operator": "In", "values": [3]}}],
        }
    ],
}


def executor(executor_id: str, pool: str, count: int, cpu: str) -> dict:
    return {
        "id": executor_id,
        "pool": pool,
        "tickPeriod": "300ms",
        "trackedNodeLabels": ["kubernetes.io/hostname", SITE],
        "errorCategories": CATEGORIES,
        "nodes": [
            {
                "name": executor_id,
                "count": count,
                "labels": {SITE: executor_id},
                "allocatable": {"cpu": cpu, "memory": "32Gi"},
            }
        ],
    }


def west_executor() -> dict:
    """Pool ``third``'s executor: a node of team ``west`` and a ``gpu`` node, 4 cpu each,
    each tainted so that no job of the other tests can use it."""
    node = {"count": 1, "labels": {SITE: WEST}, "allocatable": {"cpu": "4", "memory": "32Gi"}}
    return {
        **executor(WEST, "third", 1, "4"),
        "nodes": [
            {**node, "name": WEST, "taints": [TEAM_TAINT]},
            {**node, "name": WEST_GPU, "taints": [GPU_TAINT]},
        ],
    }


CONFIG = {
    "scheduling": {
        "cyclePeriod": "300ms",
        "pools": [{"name": "default"}, {"name": "second"}, {"name": "third"}],
        "priorityClasses": {
            "armada-default": {"priority": 1000, "preemptible": False},
            "armada-preemptible": {"priority": 1000, "preemptible": True},
            "capped": {
                "priority": 1000,
                "preemptible": False,
                "maximumResourceFractionPerQueue": {"cpu": 0.25},
            },
            "pooled": {
                "priority": 1000,
                "preemptible": False,
                "maximumResourceFractionPerQueue": {"cpu": 0.25},
                "maximumResourceFractionPerQueueByPool": {"second": {"cpu": 0.5}},
            },
            "research": {
                "priority": 1000,
                "preemptible": True,
                "awayNodeTypes": [{"priority": AWAY_PRIORITY, "wellKnownNodeTypeName": GPU}],
            },
            "gpu-home": {"priority": 1000, "preemptible": False},
        },
        "wellKnownNodeTypes": [{"name": GPU, "taints": [GPU_TAINT]}],
        "maxUnacknowledgedJobsPerExecutor": UNACKNOWLEDGED,
        "maximumResourceFractionToScheduleByPool": {"second": {"cpu": 0.1}},
        "maximumPerQueueSchedulingRate": RATE,
        "maximumPerQueueSchedulingBurst": BURST,
        "floatingResources": [
            {"name": LICENCE, "resolution": "1", "pools": [{"name": "second", "quantity": "2"}]}
        ],
        "retryPolicy": {"enabled": True, "globalMaxRetries": 5},
    },
    "executorTimeout": "30s",
    "queueRefreshPeriod": "1s",
    "executors": [
        executor("main", "default", 2, "4"),
        executor("east", "second", 1, "8"),
        west_executor(),
    ],
}


# --- the system and its API ----------------------------------------------------------------


class Api:
    """The REST API as the administrator (with a token: no password hashing per request)."""

    def __init__(self, flows: Flows) -> None:
        self.system = flows.system
        self.headers = flows.auth(ADMIN)

    def call(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        return requests.request(
            method,
            f"{self.system.url}/api/v1{path}",
            headers=self.headers,
            timeout=HTTP_TIMEOUT,
            verify=self.system.verify,
            **kwargs,
        )

    def get(self, path: str, **params: Any) -> Any:
        response = self.call("GET", path, params=params)
        assert response.status_code == 200, response.text
        return response.json()

    def send(self, method: str, path: str, body: dict, status: int = 200) -> Any:
        response = self.call(method, path, json=body)
        assert response.status_code == status, response.text
        return response.json()

    def wait_for(self, what: str, predicate: Callable[[], Any], interval: float = 0.2) -> Any:
        return self.system.wait_for(what, predicate, timeout=WAIT, interval=interval)


def job(
    cpu: str = "1",
    *,
    pc: str = "armada-default",
    duration: str = "1h",
    priority: int | None = None,
    licences: int = 0,
    site: str = "",
    tolerations: list[dict[str, str]] | None = None,
    fake: dict[str, str] | None = None,
) -> dict:
    """A job for the fake backend: runs ``duration`` (then ends as ``fake`` asks)."""
    requests_ = {"cpu": cpu, "memory": "256Mi"}
    if licences:
        requests_[LICENCE] = str(licences)
    pod: dict[str, Any] = {
        "priorityClassName": pc,
        "containers": [
            {
                "name": "main",
                "image": "busybox",
                "resources": {"requests": requests_, "limits": dict(requests_)},
            }
        ],
    }
    if site:
        pod["nodeSelector"] = {SITE: site}
    if tolerations:
        pod["tolerations"] = tolerations
    annotations = {FAKE + "duration": duration} | {FAKE + k: v for k, v in (fake or {}).items()}
    body: dict[str, Any] = {"annotations": annotations, "podSpec": pod}
    if priority is not None:
        body["priority"] = priority
    return body


def west_job(cpu: str, pc: str, toleration: dict[str, str] = TEAM_TOLERATION) -> dict:
    """A job for pool ``third``: on ``site=west``, tolerating the team node's taint (or, with
    ``GPU_TOLERATION``, the gpu node's: a job at home there)."""
    return job(cpu, pc=pc, site=WEST, tolerations=[toleration])


@contextmanager
def executor_stopped(api: Api, executor_id: str) -> Iterator[Callable[[str, Callable], Any]]:
    """The block runs with executor ``executor_id``'s process stopped (SIGSTOP; continued
    afterwards whatever happens): it takes no lease and acknowledges nothing meanwhile, yet
    is not lost while the block stays well within ``executorTimeout``. Yields the block's
    ``wait(what, predicate)``, whose waits share ``STOPPED_FOR`` seconds."""
    process = api.system.children[f"executor-{executor_id}"][0]
    resume_by = time.monotonic() + STOPPED_FOR

    def wait(what: str, predicate: Callable[[], Any]) -> Any:
        left = max(resume_by - time.monotonic(), 1.0)
        return api.system.wait_for(what, predicate, timeout=left, interval=0.2)

    os.kill(process.pid, signal.SIGSTOP)
    try:
        yield wait
        assert time.monotonic() < resume_by, f"executor {executor_id} was stopped too long"
    finally:
        os.kill(process.pid, signal.SIGCONT)


def submit(api: Api, queue: str, job_set: str, jobs: list[dict]) -> list[str]:
    body = {"queue": queue, "jobSetId": job_set, "jobs": jobs}
    return api.send("POST", "/jobs", body, status=201)["jobIds"]


def fetch(api: Api, ids: list[str]) -> list[dict]:
    return [api.get(f"/jobs/{job_id}") for job_id in ids]


def reason(job_: dict) -> str:
    return (job_.get("schedulingReason") or {}).get("reason", "")


def in_state(jobs: list[dict], state: str) -> list[dict]:
    return [j for j in jobs if j["state"] == state]


def all_in(jobs: list[dict], state: str) -> list[dict] | None:
    """The jobs, when every one of them is in ``state``."""
    return jobs if all(j["state"] == state for j in jobs) else None


def pools(jobs: list[dict]) -> Counter:
    return Counter(j["runs"][-1]["pool"] for j in jobs)


def at(text: str) -> datetime:
    return datetime.fromisoformat(text)


def latest_round(api: Api) -> int:
    rounds = api.get("/reports/scheduling")["latestRounds"]
    return rounds[0]["id"] if rounds else 0


def after_rounds(api: Api, n: int) -> None:
    """Wait until ``n`` more scheduling rounds have been recorded."""
    start = latest_round(api)
    api.wait_for(f"{n} more rounds", lambda: latest_round(api) >= start + n)


def settle(api: Api, what: str, ids: list[str], check: Callable[[list[dict]], bool]) -> list[dict]:
    """Wait until ``check`` holds for the jobs, then let three more rounds pass and check
    again: a limit holds the jobs that wait, they are not merely slow to go."""
    api.wait_for(what, lambda: check(fetch(api, ids)))
    after_rounds(api, 3)
    jobs = fetch(api, ids)
    assert check(jobs), [(j["state"], reason(j)) for j in jobs]
    return jobs


# --- the tests ------------------------------------------------------------------------------


def reasons_until_leased(
    api: Api, queue: str, last: str, interval: float
) -> tuple[set[str], set[str]]:
    """Wait until no job of ``queue`` is queued, watching the reasons as it drains: every
    reason the queue's report gave, and every reason job ``last`` had while queued."""
    seen: set[str] = set()
    last_job: set[str] = set()

    def all_leased() -> bool:
        report = api.get(f"/reports/queues/{queue}", verbosity=1)
        seen.update(r["reason"] for r in report["pendingReasons"])
        tail = api.get(f"/jobs/{last}")
        if tail["state"] == "queued" and reason(tail):
            last_job.add(reason(tail))
        return not report["jobsByState"].get("queued")

    api.wait_for("every job of the queue to be leased", all_leased, interval=interval)
    return seen, last_job
