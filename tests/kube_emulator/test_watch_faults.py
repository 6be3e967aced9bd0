"""Watches (resourceVersion, bookmarks, selectors, 410) and the fault hooks."""

from __future__ import annotations

import threading
import time

import pytest
import urllib3
from kubernetes import client, watch

from tests.kube_emulator.conftest import pod_body, wait_for

F = "fake.armadaproject.io/"


def _collect(v1, stop_when, **kw) -> list[dict]:
    seen: list[dict] = []
    w = watch.Watch()
    for ev in w.stream(v1.list_pod_for_all_namespaces, **kw):
        seen.append(ev)
        if stop_when(seen):
            w.stop()
            break
    return seen


def test_watch_from_resource_version_and_bookmarks(emu, v1):
    v1.create_namespaced_pod("default", pod_body("before", node=None))
    rv = v1.list_pod_for_all_namespaces().metadata.resource_version
    v1.create_namespaced_pod("default", pod_body("after", {F + "duration": "0.1s"}))
    events = _collect(v1, lambda s: any(e["type"] == "BOOKMARK" for e in s) and any(
        e["type"] == "MODIFIED" and e["raw_object"]["status"].get("phase") == "Succeeded" for e in s),
        resource_version=rv, allow_watch_bookmarks=True, timeout_seconds=20)  # fmt: skip
    typed = [e for e in events if e["type"] != "BOOKMARK"]
    assert typed[0]["type"] == "ADDED" and typed[0]["object"].metadata.name == "after"
    assert all(e["raw_object"]["metadata"]["name"] == "after" for e in typed)  # strictly after rv
    rvs = [int(e["raw_object"]["metadata"]["resourceVersion"]) for e in typed]
    assert rvs == sorted(rvs) and rvs[0] > int(rv)


def test_watch_initial_state_selector_and_timeout(emu, v1):
    v1.create_namespaced_pod("default", pod_body("w1", node=None))
    started = time.monotonic()
    events = list(watch.Watch().stream(v1.list_pod_for_all_namespaces, timeout_seconds=1))
    assert [e["type"] for e in events] == ["ADDED"] and time.monotonic() - started < 10
    v1.create_namespaced_pod("default", pod_body("w2", {F + "duration": "0.2s"}))
    rv = v1.list_pod_for_all_namespaces().metadata.resource_version
    body = pod_body("w3", {F + "duration": "0.2s"})
    v1.create_namespaced_pod("default", body)
    seen = _collect(v1, lambda s: s[-1]["type"] == "DELETED", resource_version=rv,
                    field_selector="status.phase!=Succeeded,metadata.name=w3", timeout_seconds=20)  # fmt: skip
    assert seen[0]["type"] == "ADDED" and seen[-1]["type"] == "DELETED"  # left the selector


def test_watch_410_after_compact(emu, v1):
    v1.create_namespaced_pod("default", pod_body("c1", node=None))
    old = "2"
    emu.compact()
    w = watch.Watch()
    with pytest.raises(client.ApiException) as e:
        list(w.stream(v1.list_pod_for_all_namespaces, resource_version=old, timeout_seconds=5))
    assert e.value.status == 410 and "too old resource version: 2" in e.value.reason


def test_fail_requests_and_counts(emu, v1):
    emu.fail_requests(count=2)
    for _ in range(2):
        with pytest.raises(client.ApiException) as e:
            v1.list_node()
        assert e.value.status == 500
    assert v1.list_node().items
    counts = emu.request_counts()
    assert counts[("GET", "nodes", False)] == 3
    emu.fail_requests(seconds=0.5, status=503)
    with pytest.raises(client.ApiException):
        v1.list_node()
    wait_for(lambda: _ok(v1.list_node), what="failures over")


def _ok(call) -> bool:
    try:
        call()
        return True
    except (client.ApiException, urllib3.exceptions.HTTPError):
        return False


def test_unreachable_then_back_on_same_port(emu, v1):
    port = emu.port
    emu.unreachable(1.0)
    assert not _ok(lambda: v1.list_node(_request_timeout=2))
    wait_for(lambda: _ok(lambda: v1.list_node(_request_timeout=2)), what="listening again")
    assert emu.port == port


def test_cut_watches_drops_stream(emu, v1):
    errors: list[BaseException] = []
    got_added = threading.Event()

    def run():
        try:
            for _ev in watch.Watch().stream(
                v1.list_pod_for_all_namespaces, resource_version="1", timeout_seconds=30
            ):
                got_added.set()
        except BaseException as exc:  # the connection breaks mid-stream
            errors.append(exc)

    v1.create_namespaced_pod("default", pod_body("cw", node=None))
    t = threading.Thread(target=run, daemon=True)
    t.start()
    wait_for(got_added.is_set, what="watch running")
    emu.cut_watches()
    t.join(20)
    assert not t.is_alive() and errors


def test_pause_kubelet(emu, v1):
    emu.pause_kubelet()
    v1.create_namespaced_pod("default", pod_body("p", {F + "duration": "0.1s"}))
    time.sleep(0.3)  # nothing may happen while paused (a bad node)
    assert emu.pod("default", "p")["status"] == {"phase": "Pending", "qosClass": "Guaranteed"}
    emu.resume_kubelet()
    wait_for(lambda: emu.pod("default", "p")["status"]["phase"] == "Succeeded", what="Succeeded")


def test_image_pull_backoff_hook_and_log_container_choice(emu, v1):
    body = pod_body("two", {F + "pendingDuration": "1s"})
    body["spec"]["containers"].append({"name": "side", "image": "busybox:1.36"})
    v1.create_namespaced_pod("default", body)
    emu.image_pull_backoff("default", "two")
    wait_for(lambda: any((cs["state"].get("waiting") or {}).get("reason") == "ImagePullBackOff"
                         for cs in emu.pod("default", "two")["status"].get("containerStatuses", [])), what="backoff")  # fmt: skip
    with pytest.raises(client.ApiException) as e:
        v1.read_namespaced_pod_log("two", "default")
    assert e.value.status == 400 and "choose one of: [main side]" in e.value.body
