"""The ``kubernetes`` backend through real processes: web, the scheduler, the executor API and
two ``armada-executor`` processes that reach emulated Kubernetes API servers
(``tests.kube_emulator``, run in this test's process) over HTTP with a kubeconfig and a
bearer token, as a deployment outside the cluster does (``kubernetes_system``).

One system; the scenarios run side by side in it, each job asking the emulated kubelet for
its own outcome with annotations: success with its log, ``armadactl watch`` of a finished
set, cancellation, OOM retried with more memory, a vanished pod retried on another node,
Delete and Retain, a short ``keptPodRetention`` (second executor, second cluster), services
and ingress with one ``ingress_info`` event, and preemption. The README's retry-policy tour
runs in the same system on the same executor (``check_tour``): its job programs do not run
on the emulator; annotations stand for what each program does on a real cluster. Every
request the executors made is checked against the grants of ``deploy/kubernetes/rbac.yaml``
(``check_rbac``)."""

from __future__ import annotations

import json
from datetime import datetime

import pytest
import yaml

from tests.e2e.kubernetes_system import (
    MEMORY_NEEDED,
    POLICY,
    ROOT,
    SUFFIX,
    TIMEOUT,
    TOKEN,
    config,
    decisions_counted,
    events,
    job,
    job_state,
    pod_name,
    rbac_grants,
    request_permission,
    run_in_state,
    start_clusters,
    submit,
    wait_state,
)
from tests.tour.readme_tour import check_oom_retries

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]


@pytest.fixture
def clusters():
    main, short = start_clusters()
    try:
        yield main, short
    finally:
        main.stop()
        short.stop()


@pytest.fixture
def kube_system(clusters, launch, tmp_path):  # the clusters outlive the executors
    main, short = clusters
    main_config = main.write_kubeconfig(tmp_path / "kubeconfig-main", token=TOKEN)
    short_config = short.write_kubeconfig(tmp_path / "kubeconfig-short", token=TOKEN)
    system = launch(config(main_config, short_config))
    assert system.post("/api/v1/retry-policies", json=POLICY).status_code == 201
    body = {"name": "demo", "retryPolicies": ["training"]}
    assert system.post("/api/v1/queues", json=body).status_code == 201
    # The tour's queue and policy, made as the tour makes them.
    for args in (
        ("create", "retry-policy", "-f", "config/examples/retry-policy.yaml"),
        ("create", "queue", "tour", "--retry-policies", "ml-training-retries"),
    ):
        done = system.armadactl(*args)
        assert done.returncode == 0, done.stderr
    return system


def test_jobs_on_kubernetes_end_to_end(kube_system, clusters):
    system, (main, short) = kube_system, clusters
    [ok] = submit(system, "ok", [job({"duration": "1s", "log": "step 1\nstep 2\n"})])
    cancel, oom, vanish, kept, deleted, served = submit(
        system,
        "k8s",
        [
            job({"duration": "1h"}),
            job({"duration": "1s", MEMORY_NEEDED: "100Mi"}, memory="64Mi"),
            job({"duration": "1h"}),
            job({"duration": "1s", "exitCode": "1"}),  # user-error: Retain
            job(
                {"duration": "1s", "condition": "OOMKilled", "armadaproject.io/failFast": "true"}
            ),  # oom: Delete (failFast: one run, not retried)
            job(
                {"duration": "3s"},
                services=[{"type": "NodePort", "ports": [9090]}],
                ingress=[{"ports": [8080]}],
            ),
        ],
    )
    [retained] = submit(
        system, "retention", [job({"duration": "1s", "exitCode": "1"}, node="node-r")]
    )
    [low] = submit(
        system, "low", [job({"duration": "1h"}, cpu="1", node="node-p", priority_class="batch")]
    )
    tour = submit_tour(system)

    # Success, with its log through REST and armadactl.
    done = wait_state(system, ok, "succeeded", what="the job to succeed")
    [run] = done["runs"]
    assert run["executor"] == "kube" and run["node"] in ("node-1", "node-2")
    log = system.get(f"/api/v1/runs/{run['id']}/log").json()["log"]
    assert "step 1\nstep 2" in log
    shown = system.armadactl("logs", run["id"])
    assert shown.returncode == 0 and "step 2" in shown.stdout, shown.stderr
    # armadactl watch on the finished set prints its events and ends.
    watched = system.armadactl("watch", "demo", "ok", "--exit-if-inactive")
    assert watched.returncode == 0, watched.stderr
    lines = [line for line in watched.stdout.splitlines() if ok in line]
    for kind in ("submitted", "leased", "pending", "running", "succeeded"):
        assert any(kind in line for line in lines), watched.stdout
    system.wait_for(
        "the succeeded pod to be deleted", lambda: main.pod("default", pod_name(ok)) is None
    )

    # Cancel a running job: its pod is stopped and gone.
    wait_state(system, cancel, "running", what="the job to run")
    done = system.armadactl("cancel", "job", "demo", "k8s", cancel)
    assert done.returncode == 0, done.stderr
    wait_state(system, cancel, "cancelled", what="the cancellation")
    assert main.pod("default", pod_name(cancel)) is None

    # OOM-killed at 64Mi and 96Mi, retried with memory x1.5, then it fits at 144Mi.
    done = wait_state(system, oom, "succeeded", "failed", what="the OOM job to end")
    assert done["state"] == "succeeded", done
    assert [r["requests"]["memory"] for r in done["runs"]] == ["64Mi", "96Mi", "144Mi"]
    assert [(r["reason"], r["failureCategory"]) for r in done["runs"][:2]] == [
        ("OOMKilled", "oom")
    ] * 2

    # A pod that vanished (its node failed under it): pod-missing, retried on another node.
    first = system.wait_for(
        "the first run to run", run_in_state(system, vanish, 0, "running"), TIMEOUT
    )
    main.vanish("default", pod_name(vanish))
    second = system.wait_for(
        "the retry to run", run_in_state(system, vanish, 1, "running"), TIMEOUT
    )
    first = job_state(system, vanish)["runs"][0]
    assert (first["failureCategory"], first["failureSubcategory"]) == ("internal", "pod-missing")
    assert first["decision"]["decision"] == "retry"
    assert second["node"] != first["node"]

    # Retain keeps the failed pod (Failed phase); Delete removes the OOM-killed one.
    done = wait_state(system, kept, "failed", what="the user error")
    assert done["failureCategory"] == "user-error" and done["runs"][0]["podKeptUntil"]
    assert main.pod("default", pod_name(kept))["status"]["phase"] == "Failed"
    done = wait_state(system, deleted, "failed", what="the OOM kill")
    assert done["failureCategory"] == "oom" and len(done["runs"]) == 1
    assert main.pod("default", pod_name(deleted)) is None

    # keptPodRetention 3s on the second executor: kept, then deleted once it has passed.
    done = wait_state(system, retained, "failed", what="the kept failure")
    [run] = done["runs"]
    assert run["executor"] == "kube-short" and run["node"] == "node-r"
    until = datetime.fromisoformat(run["podKeptUntil"])
    assert 2 <= (until - datetime.fromisoformat(run["finishedAt"])).total_seconds() <= 4
    system.wait_for(
        "the kept pod to be deleted after its retention",
        lambda: short.pod("default", pod_name(retained)) is None,
        TIMEOUT,
    )
    [deletion] = [
        r for r in short.request_log if r["method"] == "DELETE" and pod_name(retained) in r["path"]
    ][:1]
    assert deletion["time"] >= until.timestamp() - 1.5, "the kept pod was deleted too early"

    # Services and ingress: made with the pod, one ingress_info event, gone with the pod.
    done = wait_state(system, served, "succeeded", what="the served job")
    infos = [e for e in events(system, "demo", "k8s", served) if e["type"] == "ingress_info"]
    assert len(infos) == 1, infos
    addresses = infos[0]["ingressAddresses"]
    assert addresses["8080"] == f"{pod_name(served)}-8080.default.{SUFFIX}"
    assert "9090" in addresses
    assert done["runs"][0]["ingressAddresses"] == addresses
    made = {(r["method"], r["path"].rsplit("/", 1)[-1]) for r in main.request_log}
    assert {("POST", "services"), ("POST", "ingresses")} <= made
    system.wait_for(
        "the services and ingress to go with the pod",
        lambda: not main.store.items("services")[0] and not main.store.items("ingresses")[0],
        TIMEOUT,
    )

    check_tour(system, main, tour)
    check_rbac(main, short)

    # Preemption: an urgent job needing node-p's only cpu preempts the batch job there.
    wait_state(system, low, "running", what="the batch job to run")
    [urgent] = submit(
        system, "urgent", [job({"duration": "1h"}, cpu="1", node="node-p", priority_class="urgent")]
    )
    wait_state(system, low, "preempted", what="the preemption")
    assert main.pod("default", pod_name(low)) is None
    done = wait_state(system, urgent, "running", "failed", what="the urgent job to start")
    assert done["state"] == "running", [(r["reason"], r["message"]) for r in done["runs"]]
    assert done["runs"][-1]["node"] == "node-p"
    types = [e["type"] for e in events(system, "demo", "low", low)]
    assert "preempting" in types and "preempted" in types


# --- the README's tour, on the emulated cluster ---------------------------------------------

#: What each tour job's program does on a cluster, said to the emulated kubelet. The job
#: programs do not run on the emulator: these annotations stand for what they do. oom.yaml
#: holds 120 MiB (OOM-killed at 64Mi and 96Mi, fits at 144Mi) and prints "holding N MiB" as
#: it goes; exit-code.yaml exits with code 2; fail-fast.yaml is oom.yaml marked failFast.
HOLDING = "holding 20 MiB\nholding 40 MiB\nholding 60 MiB\n"
TOUR_ANNOTATIONS = {
    "oom": {MEMORY_NEEDED: "120Mi", "fake.armadaproject.io/log": HOLDING},
    "exit-code": {
        "fake.armadaproject.io/exitCode": "2",
        "fake.armadaproject.io/log": "reading input.csv\ninput.csv: No such file\n",
    },
    "fail-fast": {MEMORY_NEEDED: "120Mi", "fake.armadaproject.io/log": HOLDING},
}


def submit_tour(system) -> dict[str, str]:
    """Submit the tour's three job files with ``armadactl submit``, each with the annotations
    that make the emulated kubelet do what its program does; returns their job ids."""
    ids = {}
    for name, extra in TOUR_ANNOTATIONS.items():
        data = yaml.safe_load((ROOT / "examples/tour" / f"{name}.yaml").read_text())
        [item] = data["jobs"]
        item["annotations"] = {**item.get("annotations", {}), **extra}
        path = system.workdir / f"tour-{name}.yaml"
        path.write_text(yaml.safe_dump(data))
        done = system.armadactl("submit", str(path))
        assert done.returncode == 0, done.stderr
        ids[name] = done.stdout.split()[4]  # the tour reads it so: awk '{print $5}'
    return ids


def shown(system, job_id: str) -> dict:
    done = system.armadactl("get", "job", job_id, "-o", "json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def check_tour(system, main, ids: dict[str, str]) -> None:
    """The outcomes the README's tour promises (as ``tests/tour/test_readme_tour`` checks
    them on the local backend), here on the kubernetes backend."""
    for name, job_id in ids.items():
        wait_state(system, job_id, "succeeded", "failed", what=f"tour job {name} to end")
    # 2. OOM-killed at 64Mi and 96Mi, each time retried with memory x1.5, then it fits.
    oom = shown(system, ids["oom"])
    runs = oom["runs"]
    assert oom["state"] == "succeeded", oom
    assert [r["requests"]["memory"] for r in runs] == ["64Mi", "96Mi", "144Mi"]
    failed = runs[:2]
    check_oom_retries(failed)
    # The README says a failed run's message is the last lines of its log: that is the local
    # backend's message. On Kubernetes the message is the kubelet's (the container's exit),
    # and the log is read from the API server and kept with the run.
    assert all(r["hint"] and "137" in r["message"] for r in failed), failed
    for r in failed:
        assert "holding 60 MiB" in system.get(f"/api/v1/runs/{r['id']}/log").json()["log"]
    assert runs[2]["state"] == "succeeded" and oom["retryCount"] == 2

    # 3. Exit code 2 is a user-error: failed at once by rule 1, its pod kept (Retain).
    exit_code = shown(system, ids["exit-code"])
    [only] = exit_code["runs"]
    assert exit_code["state"] == "failed" and exit_code["failureCategory"] == "user-error"
    assert (only["exitCode"], only["retryable"]) == (2, False)
    assert (only["decision"]["decision"], only["decision"]["rule"]) == ("fail_rule", 1)
    assert "ml-training-retries" in exit_code["terminalReason"]
    assert "rule 1" in exit_code["terminalReason"]
    assert main.pod("default", pod_name(exit_code["id"]))["status"]["phase"] == "Failed"

    # 4. failFast: an OOM kill the policy would retry, failed on the first failure.
    fail_fast = shown(system, ids["fail-fast"])
    [only] = fail_fast["runs"]
    assert fail_fast["state"] == "failed" and only["failureCategory"] == "oom"
    assert (only["decision"]["decision"], only["retryable"]) == ("not_retried", False)
    assert "failFast" in only["decision"]["reason"]

    # 5. Two retries and one fail_rule for queue tour; the fail-fast job is not counted.
    assert decisions_counted(system, "tour", "ml-training-retries") == {
        "retry": 2.0,
        "fail_rule": 1.0,
    }


# --- RBAC ------------------------------------------------------------------------------------


def check_rbac(*emulators) -> None:
    """Every request the executors made is one deploy/kubernetes/rbac.yaml grants."""
    grants = rbac_grants()
    needed = {
        perm
        for emulator in emulators
        for request in list(emulator.request_log)
        if (perm := request_permission(request)) is not None
    }
    assert needed - grants == set(), f"not granted by rbac.yaml: {sorted(needed - grants)}"
    # The check saw the requests that matter (it is not vacuous).
    assert {
        ("", "pods", "create"),
        ("", "pods", "delete"),
        ("", "pods/log", "get"),
        ("", "pods", "watch"),
        ("", "nodes", "list"),
        ("", "services", "create"),
        ("networking.k8s.io", "ingresses", "create"),
    } <= needed, sorted(needed)
