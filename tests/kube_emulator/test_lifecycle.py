"""The kubelet's part, one annotation outcome at a time, through the official client."""

from __future__ import annotations

import json
import time

import pytest
from kubernetes import client

from tests.kube_emulator.conftest import phase, pod_body, wait_for

F = "fake.armadaproject.io/"


def _main(pod) -> object:
    return pod.status.container_statuses[0]


def _reasons(v1, name: str) -> list[str]:
    events = v1.list_namespaced_event("default", field_selector=f"involvedObject.name={name}").items
    return [e.reason for e in events]


def test_succeeds_with_events_conditions_and_log(emu, v1):
    v1.create_namespaced_pod(
        "default", pod_body("ok", {F + "duration": "0.3s", F + "log": "one\ntwo\nthree"})
    )
    wait_for(lambda: phase(emu, "ok") == "Running", what="Running")
    running = v1.read_namespaced_pod("ok", "default")
    assert running.status.pod_ip and running.status.host_ip and running.status.start_time
    assert {c.type: c.status for c in running.status.conditions}["Ready"] == "True"
    assert v1.read_namespaced_pod_log("ok", "default", tail_lines=2) == "two\nthree\n"
    wait_for(lambda: phase(emu, "ok") == "Succeeded", what="Succeeded")
    term = _main(v1.read_namespaced_pod("ok", "default")).state.terminated
    assert term.exit_code == 0 and term.reason == "Completed" and term.finished_at
    reasons = _reasons(v1, "ok")
    assert reasons == ["Pulling", "Pulled", "Created", "Started"]  # no Scheduled: bound by us
    ev = v1.list_namespaced_event("default").items[0]
    assert (
        ev.source.component == "kubelet"
        and ev.source.host == "node-1"
        and ev.involved_object.kind == "Pod"
    )


def test_exit_code_and_termination_message(emu, v1):
    v1.create_namespaced_pod(
        "default",
        pod_body(
            "bad", {F + "duration": "0.1s", F + "exitCode": "3", F + "terminationMessage": "boom"}
        ),
    )
    wait_for(lambda: phase(emu, "bad") == "Failed", what="Failed")
    term = _main(v1.read_namespaced_pod("bad", "default")).state.terminated
    assert (term.exit_code, term.reason, term.message) == (3, "Error", "boom")


def test_oomkilled_and_memory_needed(emu, v1):
    v1.create_namespaced_pod(
        "default", pod_body("oom", {F + "duration": "0.1s", F + "condition": "OOMKilled"})
    )
    small = pod_body(
        "small", {"emulator.armadaproject.io/memoryNeeded": "100Mi", F + "duration": "0.2s"}
    )
    big = pod_body(
        "big", {"emulator.armadaproject.io/memoryNeeded": "100Mi", F + "duration": "0.2s"}
    )
    big["spec"]["containers"][0]["resources"]["limits"]["memory"] = "128Mi"
    v1.create_namespaced_pod("default", small)
    v1.create_namespaced_pod("default", big)
    for name in ("oom", "small"):
        wait_for(lambda name=name: phase(emu, name) == "Failed", what=f"{name} Failed")
        term = _main(v1.read_namespaced_pod(name, "default")).state.terminated
        assert (term.exit_code, term.reason) == (137, "OOMKilled")
    wait_for(lambda: phase(emu, "big") == "Succeeded", what="big Succeeded")


def test_evicted(emu, v1):
    v1.create_namespaced_pod(
        "default", pod_body("ev", {F + "duration": "0.1s", F + "condition": "Evicted"})
    )
    wait_for(lambda: phase(emu, "ev") == "Failed", what="Failed")
    pod = v1.read_namespaced_pod("ev", "default")
    assert pod.status.reason == "Evicted" and pod.status.message.startswith(
        "The node was low on resource: memory."
    )
    dt = next(c for c in pod.status.conditions if c.type == "DisruptionTarget")
    assert dt.reason == "TerminationByKubelet"
    assert _main(pod).state.terminated.exit_code == 137
    assert "Evicted" in _reasons(v1, "ev")


def test_deadline_exceeded_annotation_and_spec(emu, v1):
    v1.create_namespaced_pod(
        "default", pod_body("dl", {F + "duration": "0.1s", F + "condition": "DeadlineExceeded"})
    )
    v1.create_namespaced_pod(
        "default", pod_body("ads", {F + "duration": "60s"}, activeDeadlineSeconds=1)
    )
    for name in ("dl", "ads"):
        wait_for(lambda name=name: phase(emu, name) == "Failed", what=f"{name} Failed")
        pod = v1.read_namespaced_pod(name, "default")
        assert pod.status.reason == "DeadlineExceeded"
        assert pod.status.message == "Pod was active on the node longer than the specified deadline"


def test_image_pull_backoff(emu, v1):
    v1.create_namespaced_pod("default", pod_body("pull", {F + "podError": "manifest unknown"}))

    def backoff():
        pod = v1.read_namespaced_pod("pull", "default")
        cs = pod.status.container_statuses
        return (
            cs and cs[0].state.waiting and cs[0].state.waiting.reason == "ImagePullBackOff" and pod
        )

    pod = wait_for(backoff, what="ImagePullBackOff")
    assert pod.status.phase == "Pending" and "manifest unknown" in _main(pod).state.waiting.message
    events = v1.list_namespaced_event(
        "default", field_selector="involvedObject.name=pull,reason=Failed"
    ).items
    assert any(
        e.message == 'Failed to pull image "busybox:1.36": manifest unknown' and e.type == "Warning"
        for e in events
    )
    with pytest.raises(client.ApiException) as e:
        v1.read_namespaced_pod_log("pull", "default")
    assert e.value.status == 400 and "is waiting to start" in e.value.body


def test_failed_mount_then_config_map_added(emu, v1):
    vol = [{"name": "cfg", "configMap": {"name": "settings"}}]
    v1.create_namespaced_pod("default", pod_body("mnt", {F + "duration": "0.1s"}, volumes=vol))
    wait_for(lambda: "FailedMount" in _reasons(v1, "mnt"), what="FailedMount")
    ev = v1.list_namespaced_event("default", field_selector="reason=FailedMount").items[0]
    assert (
        ev.message == 'MountVolume.SetUp failed for volume "cfg" : configmap "settings" not found'
    )
    assert (
        _main(v1.read_namespaced_pod("mnt", "default")).state.waiting.reason == "ContainerCreating"
    )
    with pytest.raises(client.ApiException) as e:
        v1.read_namespaced_pod_log("mnt", "default")
    message = json.loads(e.value.body)["message"]
    assert message == 'container "main" in pod "mnt" is waiting to start: ContainerCreating'
    emu.add_config_map("default", "settings")
    wait_for(
        lambda: phase(emu, "mnt") == "Succeeded", what="Succeeded after the config map appears"
    )


def test_init_containers_run_first(emu, v1):
    body = pod_body("init", {F + "duration": "0.1s"})
    body["spec"]["initContainers"] = [
        {"name": "setup", "image": "busybox:1.36"},
        {"name": "setup2", "image": "busybox:1.36"},
    ]
    v1.create_namespaced_pod("default", body)
    wait_for(lambda: phase(emu, "init") == "Succeeded", what="Succeeded")
    pod = v1.read_namespaced_pod("init", "default")
    inits = pod.status.init_container_statuses
    assert [s.state.terminated.reason for s in inits] == ["Completed", "Completed"]
    assert inits[1].state.terminated.finished_at <= _main(pod).state.terminated.started_at


def test_graceful_deletion(emu, v1):
    v1.create_namespaced_pod(
        "default", pod_body("g", {F + "duration": "60s", F + "deletionDuration": "0.5s"})
    )
    wait_for(lambda: phase(emu, "g") == "Running", what="Running")
    started = time.monotonic()
    pod = v1.delete_namespaced_pod("g", "default", grace_period_seconds=20)
    assert pod.metadata.deletion_timestamp and pod.metadata.deletion_grace_period_seconds == 20
    assert emu.pod("default", "g") is not None  # terminating, not gone
    wait_for(lambda: emu.pod("default", "g") is None, what="pod removed")
    assert time.monotonic() - started >= 0.5
    assert "Killing" in [e["reason"] for e in emu.events_for("default", "g")]


def test_node_lost(emu, v1):
    emu.add_node("node-2")
    v1.create_namespaced_pod(
        "default", pod_body("lost", {F + "duration": "0.2s", F + "nodeLost": "true"}, node="node-2")
    )
    wait_for(
        lambda: (emu.pod("default", "lost") or {}).get("metadata", {}).get("deletionTimestamp"),
        what="marked",
    )
    conds = emu.pod("default", "lost")["status"]["conditions"]
    assert any(
        c["type"] == "DisruptionTarget" and c["reason"] == "DeletionByTaintManager" for c in conds
    )
    wait_for(lambda: emu.pod("default", "lost") is None, what="removed")
    node = v1.read_node("node-2")
    assert {c.type: c.status for c in node.status.conditions}["Ready"] == "Unknown"


def test_hooks_oom_evict_finish_vanish_and_admission(emu, v1):
    for name in ("h1", "h2", "h3", "h4"):
        v1.create_namespaced_pod("default", pod_body(name, {F + "duration": "60s"}))
    for name in ("h1", "h2", "h3", "h4"):
        wait_for(lambda name=name: phase(emu, name) == "Running", what=f"{name} Running")
    emu.oom("default", "h1")
    emu.evict("default", "h2")
    emu.finish("default", "h3", exit_code=0)
    emu.vanish("default", "h4")
    assert emu.pod("default", "h4") is None
    wait_for(
        lambda: (
            phase(emu, "h1") == "Failed"
            and phase(emu, "h2") == "Failed"
            and phase(emu, "h3") == "Succeeded"
        ),
        what="hooks",
    )
    huge = pod_body("huge")
    huge["spec"]["containers"][0]["resources"]["limits"]["cpu"] = "64"
    v1.create_namespaced_pod("default", huge)
    wait_for(lambda: phase(emu, "huge") == "Failed", what="rejected")
    assert emu.pod("default", "huge")["status"]["reason"] == "OutOfcpu"
