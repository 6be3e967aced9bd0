"""Helpers of the end-to-end tests of the ``kubernetes`` backend (``test_kubernetes_backend``):
two emulated API servers, the configuration of the executors that reach them over HTTP with a
kubeconfig, job specs, REST look-ups, and the RBAC manifest read as a table of grants.

The main cluster has two general nodes and one small node kept for the preemption scenario
(tainted, so that only jobs tolerating it land there). The second cluster has one tainted
node and an executor whose ``keptPodRetention`` is short, for the retention scenario."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from tests.executor.kubernetes_world import POLICY as AGENT_POLICY
from tests.kube_emulator import KubeEmulator
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
FAKE = "fake.armadaproject.io/"
MEMORY_NEEDED = "emulator.armadaproject.io/memoryNeeded"
TOKEN = "e2e-kube-token"
DEDICATED = "armadaproject.io/dedicated"
HOSTNAME = "kubernetes.io/hostname"
SUFFIX = "jobs.e2e.example.com"
TIMEOUT = 120  # seconds for one outcome; a busy CI machine is slow, not broken
TOUR = yaml.safe_load((ROOT / "config/examples/tour.yaml").read_text())
[TOUR_EXECUTOR] = TOUR["executors"]

#: The policy of queue ``demo``: the in-process agent tests' (``kubernetes_world``).
POLICY = AGENT_POLICY


def start_clusters() -> tuple[KubeEmulator, KubeEmulator]:
    """The main cluster (node-1, node-2 and the 1-cpu node-p, tainted ``dedicated=preempt``)
    and the retention cluster (node-r, tainted ``dedicated=retention``)."""
    main = KubeEmulator(token=TOKEN, bookmark_interval=0.5)
    main.add_node("node-1")
    main.add_node("node-2")
    main.add_node(
        "node-p",
        taints=[taint("preempt")],
        allocatable={"cpu": "1", "memory": "4Gi", "pods": "110"},
    )
    short = KubeEmulator(token=TOKEN, bookmark_interval=0.5)
    short.add_node("node-r", taints=[taint("retention")])
    main.start()
    short.start()
    return main, short


def taint(value: str) -> dict:
    return {"key": DEDICATED, "value": value, "effect": "NoSchedule"}


def executor(executor_id: str, kubeconfig: Path, **extra: Any) -> dict:
    """A kubernetes executor with the tour's error categories."""
    return {
        "id": executor_id,
        "backend": "kubernetes",
        "tickPeriod": "300ms",
        "trackedNodeLabels": [HOSTNAME],
        "kubernetes": {
            "kubeconfig": str(kubeconfig),
            "watchTimeout": "30s",
            "toleratedTaints": [DEDICATED],
            "ingress": {"hostnameSuffix": SUFFIX},
        },
        "errorCategories": TOUR_EXECUTOR["errorCategories"],
        **extra,
    }


def config(main_kubeconfig: Path, short_kubeconfig: Path) -> dict:
    """The tour's retry settings, two priority classes for preemption, two executors."""
    return {
        "scheduling": {
            "cyclePeriod": "300ms",
            "retryPolicy": TOUR["scheduling"]["retryPolicy"],
            "priorityClasses": {
                "armada-default": {"priority": 1000, "preemptible": False},
                "batch": {"priority": 100, "preemptible": True},
                "urgent": {"priority": 2000, "preemptible": False},
            },
            "defaultPriorityClassName": "armada-default",
        },
        "queueRefreshPeriod": "1s",
        "executorTimeout": "30s",
        "executors": [
            executor("kube", main_kubeconfig, keptPodRetention="1h"),
            executor("kube-short", short_kubeconfig, keptPodRetention="3s"),
        ],
    }


def job(
    annotations: dict | None = None,
    *,
    memory: str = "64Mi",
    cpu: str = "100m",
    node: str = "",
    priority_class: str = "",
    **extra: Any,
) -> dict:
    """A job item; bare annotation keys are ``fake.armadaproject.io/`` ones. ``node`` pins
    the job to a dedicated node and tolerates its taint."""
    pod: dict[str, Any] = {
        "terminationGracePeriodSeconds": 1,
        "containers": [
            {
                "name": "main",
                "image": "busybox:1.36",
                "resources": {
                    "requests": {"cpu": cpu, "memory": memory},
                    "limits": {"cpu": cpu, "memory": memory},
                },
            }
        ],
    }
    if node:
        pod["nodeSelector"] = {HOSTNAME: node}
        pod["tolerations"] = [{"key": DEDICATED, "operator": "Exists", "effect": "NoSchedule"}]
    if priority_class:
        pod["priorityClassName"] = priority_class
    ann = {(k if "/" in k else FAKE + k): v for k, v in (annotations or {}).items()}
    return {"annotations": ann, "podSpec": pod, **extra}


def submit(system, job_set: str, jobs: list[dict], queue: str = "demo") -> list[str]:
    response = system.post("/api/v1/jobs", json={"queue": queue, "jobSetId": job_set, "jobs": jobs})
    assert response.status_code == 201, response.text
    return response.json()["jobIds"]


def job_state(system, job_id: str) -> dict:
    response = system.get(f"/api/v1/jobs/{job_id}")
    assert response.status_code == 200, response.text
    return response.json()


def wait_state(system, job_id: str, *states: str, what: str = "") -> dict:
    """Wait (``TIMEOUT``) until the job is in one of ``states``; on failure, show it."""
    return wait_until(
        what or f"job {job_id} to be {' or '.join(states)}",
        in_state(system, job_id, *states),
        timeout=TIMEOUT,
        interval=0.3,
        details=lambda: json.dumps(job_state(system, job_id), indent=1) + system.log_tail(),
    )


def in_state(system, job_id: str, *states: str):
    """A predicate for ``system.wait_for``: the job, once in one of ``states``."""

    def check():
        body = job_state(system, job_id)
        return body if body["state"] in states else None

    return check


def run_in_state(system, job_id: str, index: int, state: str):
    """A predicate: the job's ``index``-th run, once in ``state``."""

    def check():
        runs = job_state(system, job_id)["runs"]
        return runs[index] if len(runs) > index and runs[index]["state"] == state else None

    return check


def events(system, queue: str, job_set: str, job_id: str | None = None) -> list[dict]:
    text = system.get(f"/api/v1/job-sets/{queue}/{job_set}/events").text
    found = [json.loads(line) for line in text.splitlines() if line.strip()]
    return [e for e in found if job_id is None or e["jobId"] == job_id]


def pod_name(job_id: str) -> str:
    return f"armada-{job_id}-0"


def decisions_counted(system, queue: str, policy: str) -> dict[str, float]:
    """``armada_scheduler_retry_policy_decisions_total`` of ``queue`` and ``policy``, by
    decision."""
    counted: dict[str, float] = {}
    for line in system.get("/metrics").text.splitlines():
        if not line.startswith("armada_scheduler_retry_policy_decisions_total{"):
            continue
        labels, value = line.rsplit(" ", 1)
        if f'queue="{queue}"' in labels and f'policy="{policy}"' in labels:
            decision = re.search(r'decision="([^"]+)"', labels).group(1)
            counted[decision] = counted.get(decision, 0.0) + float(value)
    return counted


# --- RBAC ------------------------------------------------------------------------------------

_VERBS = {"POST": "create", "DELETE": "delete"}
_GROUPS = {"api": "", "apis": None}


def rbac_grants(path: Path | None = None) -> set[tuple[str, str, str]]:
    """(apiGroup, resource, verb) granted by the ClusterRoles of ``deploy/kubernetes/
    rbac.yaml``, bound to the executor's service account by its ClusterRoleBindings."""
    docs = list(yaml.safe_load_all((path or ROOT / "deploy/kubernetes/rbac.yaml").read_text()))
    account = next(d for d in docs if d["kind"] == "ServiceAccount")["metadata"]
    bound = {
        d["roleRef"]["name"]
        for d in docs
        if d["kind"] == "ClusterRoleBinding"
        and {"kind": "ServiceAccount", "name": account["name"], "namespace": account["namespace"]}
        in d["subjects"]
    }
    grants = set()
    for role in (d for d in docs if d["kind"] == "ClusterRole" and d["metadata"]["name"] in bound):
        for rule in role["rules"]:
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    for verb in rule["verbs"]:
                        grants.add((group, resource, verb))
    return grants


def request_permission(request: dict) -> tuple[str, str, str] | None:
    """The (apiGroup, resource, verb) a logged request needs, ``None`` for the paths that
    need no RBAC rule on a resource (``/version``)."""
    parts = [p for p in request["path"].split("?")[0].split("/") if p]
    if parts[:1] == ["api"]:
        group, rest = "", parts[2:]  # /api/v1/...
    elif parts[:1] == ["apis"]:
        group, rest = (parts[1] if len(parts) > 1 else ""), parts[3:]  # /apis/<group>/<v>/...
    else:
        return None
    if not rest:
        return None  # discovery, granted to every user by system:discovery
    if rest[:1] == ["namespaces"] and len(rest) >= 3:
        rest = rest[2:]  # /namespaces/<ns>/<resource>...
    resource = rest[0]
    named = len(rest) >= 2
    if len(rest) >= 3:
        resource = f"{resource}/{rest[2]}"  # a subresource: pods/<name>/log
    method = request["method"]
    if method == "GET":
        verb = "watch" if request["watch"] else ("get" if named else "list")
    else:
        verb = _VERBS.get(method, method.lower())
    return group, resource, verb
