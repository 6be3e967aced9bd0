"""The kubernetes backend when the API server misbehaves: watches cut, history gone (410),
500s, a server unreachable for a while. The caches keep their last view meanwhile and catch
up afterwards; nothing is missed and no object is seen twice."""

from __future__ import annotations

from datetime import datetime

import pytest
from django.utils import timezone

from armada.executor.backends.base import BackendUnavailable
from armada.executor.backends.kubernetes import KubernetesBackend
from tests.executor.backends.kubernetes.conftest import executor_config, wait_for
from tests.executor.backends.kubernetes.test_backend import FAKE, finished, request, status_of


def now() -> datetime:
    return timezone.now()


def start_pods(backend, count, duration="2s"):
    names = []
    for i in range(count):
        pod = request(job=f"01job{i}", run=f"01run{i}", annotations={f"{FAKE}duration": duration})
        backend.create_pod(pod, now())
        names.append(pod.name)
    return names


def test_cut_watches_are_renewed_from_where_they_were(backend, emulator):
    names = start_pods(backend, 5)
    watches = backend.pods.watches
    emulator.cut_watches()
    for name in names:
        assert wait_for(lambda n=name: finished(backend, n), f"{name} to end").succeeded
    assert backend.pods.watches > watches
    assert backend.pods.relists == 0  # the history was still there: no new list


def test_410_gone_lists_again_and_misses_nothing(backend, emulator):
    names = start_pods(backend, 5)
    emulator.compact()
    emulator.cut_watches()
    for name in names:
        assert wait_for(lambda n=name: finished(backend, n), f"{name} to end").succeeded
    wait_for(lambda: backend.pods.relists >= 1, "a new list after 410")
    # A pod deleted while the watch was away disappears with the new list.
    emulator.vanish("jobs", names[0])
    wait_for(lambda: status_of(backend, names[0]) is None, "the vanished pod to go")
    assert len(backend.poll(now())) == 4


def test_500s_and_an_unreachable_server_leave_the_last_view_then_catch_up(backend, emulator):
    names = start_pods(backend, 3, duration="3s")
    emulator.fail_requests(seconds=2.0, status=500)
    emulator.cut_watches()
    # Meanwhile the backend answers from its cache: the pods are still there.
    assert {s.name for s in backend.poll(now())} == set(names)
    emulator.unreachable(3.0)
    assert {s.name for s in backend.poll(now())} == set(names)
    for name in names:
        assert wait_for(lambda n=name: finished(backend, n), f"{name} to end", 60).succeeded
    assert backend.pods.failures >= 1
    # Every pod once, no duplicates.
    assert sorted(s.name for s in backend.poll(now())) == sorted(names)


def test_a_backend_that_has_not_read_the_cluster_refuses_to_answer(kubeconfig, emulator):
    emulator.unreachable(5.0)
    backend = KubernetesBackend(executor_config(kubeconfig))
    try:
        with pytest.raises(BackendUnavailable):
            backend.poll(now())
        assert backend.nodes() is None
        assert backend.wait_synced(60.0)
        assert backend.poll(now()) == []
        assert {n.name for n in backend.nodes()} == {"node-1", "node-2"}
    finally:
        backend.close()


def test_a_deletion_refused_by_a_failing_server_is_asked_again(backend, emulator):
    (name,) = start_pods(backend, 1, duration="60s")
    wait_for(lambda: (s := status_of(backend, name)) and s.running_at, "running")
    emulator.fail_requests(count=1, status=500)
    backend.delete_pod(name, now(), 1.0)  # refused: logged, not remembered as asked
    backend.delete_pod(name, now(), 1.0)
    wait_for(lambda: status_of(backend, name) is None, "the pod to go")
