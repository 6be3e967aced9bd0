"""Fair share, preemption and gangs through real processes (web, Celery scheduler with
beat, Celery executor on the fake backend)."""

from __future__ import annotations

import json

import pytest

pytestmark = [pytest.mark.e2e]
FAKE = "fake.armadaproject.io/"


def config(nodes: int, cpu: str, labels: dict | None = None) -> dict:
    return {
        "scheduling": {
            "cyclePeriod": "300ms",
            "priorityClasses": {
                "armada-default": {"priority": 1000, "preemptible": False},
                "armada-preemptible": {"priority": 1000, "preemptible": True},
                "urgent": {"priority": 2000, "preemptible": False},
            },
            "indexedNodeLabels": ["rack"],
        },
        "executors": [
            {
                "id": "farm",
                "tickPeriod": "300ms",
                "trackedNodeLabels": ["kubernetes.io/hostname", "rack", "zone"],
                "nodes": [
                    {
                        "name": "n",
                        "count": nodes,
                        "labels": labels or {},
                        "allocatable": {"cpu": cpu, "memory": "64Gi"},
                    }
                ],
            }
        ],
    }


def spec(cpu: str = "1", pc: str = "armada-preemptible", annotations: dict | None = None) -> dict:
    return {
        "annotations": {FAKE + "duration": "1h", **(annotations or {})},
        "podSpec": {
            "priorityClassName": pc,
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "resources": {
                        "requests": {"cpu": cpu, "memory": "1Gi"},
                        "limits": {"cpu": cpu, "memory": "1Gi"},
                    },
                }
            ],
        },
    }


def submit(system, queue: str, job_set: str, jobs: list[dict]) -> list[str]:
    response = system.post("/api/v1/jobs", json={"queue": queue, "jobSetId": job_set, "jobs": jobs})
    assert response.status_code == 201, response.text
    return response.json()["jobIds"]


def running(system, queue: str) -> int:
    text = system.get("/metrics").text
    prefix = f'armada_queue_jobs{{queue="{queue}",state="running"}} '
    return sum(
        int(float(line.split(" ")[-1])) for line in text.splitlines() if line.startswith(prefix)
    )


def events(system, queue: str, job_set: str) -> list[dict]:
    text = system.get(f"/api/v1/job-sets/{queue}/{job_set}/events").text
    return [json.loads(line) for line in text.splitlines() if line]


def test_two_queues_converge_to_their_fair_shares_and_urgent_work_preempts(launch):
    system = launch(config(nodes=3, cpu="4"))  # 12 cpu
    for name, factor in (("alpha", 1), ("beta", 2)):
        assert (
            system.post("/api/v1/queues", json={"name": name, "priorityFactor": factor}).status_code
            == 201
        )
    submit(system, "alpha", "fill", [spec() for _ in range(20)])
    system.wait_for("alpha to fill the farm", lambda: running(system, "alpha") == 12)

    submit(system, "beta", "late", [spec() for _ in range(20)])
    # Weights 1 and 1/2: alpha is entitled to 8 cpu, beta to 4 (half as much).
    system.wait_for(
        "the 2:1 split",
        lambda: (running(system, "alpha"), running(system, "beta")) == (8, 4),
        timeout=60,
    )
    preempting = [e for e in events(system, "alpha", "fill") if e["type"] == "preempting"]
    assert len(preempting) == 4
    assert all("over its fair share" in e["reason"] for e in preempting)
    assert len([e for e in events(system, "alpha", "fill") if e["type"] == "preempted"]) == 4

    [urgent] = submit(system, "beta", "urgent", [spec("1", "urgent")])
    system.wait_for(
        "the urgent job to run",
        lambda: system.get(f"/api/v1/jobs/{urgent}").json()["state"] == "running",
        timeout=60,
    )
    victims = [
        e
        for queue, job_set in (("alpha", "fill"), ("beta", "late"))
        for e in events(system, queue, job_set)
        if e["type"] == "preempting" and urgent in e.get("reason", "")
    ]
    assert len(victims) == 1


def test_a_gang_that_only_fits_whole_starts_whole_and_an_unindexed_label_never_starts(launch):
    system = launch(config(nodes=3, cpu="2", labels={"rack": "r1", "zone": "z1"}))
    assert system.post("/api/v1/queues", json={"name": "hpc"}).status_code == 201
    gang = {"armadaproject.io/gangId": "mpi", "armadaproject.io/gangCardinality": "3"}
    members = submit(
        system,
        "hpc",
        "mpi",
        [spec("2", "armada-default", gang) for _ in range(3)],
    )
    system.wait_for(
        "the gang to run",
        lambda: all(system.get(f"/api/v1/jobs/{j}").json()["state"] == "running" for j in members),
        timeout=60,
    )
    leased_at = {e["created"] for e in events(system, "hpc", "mpi") if e["type"] == "leased"}
    assert len(leased_at) == 1  # one round leased all three

    unindexed = {
        "armadaproject.io/gangId": "zonal",
        "armadaproject.io/gangCardinality": "2",
        "armadaproject.io/gangNodeUniformityLabel": "zone",
    }
    waiting = submit(
        system, "hpc", "zonal", [spec("1", "armada-default", unindexed) for _ in range(2)]
    )
    reason = system.wait_for(
        "a reason",
        lambda: (system.get(f"/api/v1/jobs/{waiting[0]}").json().get("schedulingReason") or {}).get(
            "reason"
        ),
        timeout=30,
    )
    assert "not indexed" in reason
    assert [system.get(f"/api/v1/jobs/{j}").json()["state"] for j in waiting] == [
        "queued",
        "queued",
    ]
