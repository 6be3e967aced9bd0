"""The fake and local backends' ingress addresses (``PodStatus.ingress_addresses``): none
before the pod runs, then one per ingress port; services are accepted and make no
address."""

from __future__ import annotations

import socket
from datetime import timedelta
from pathlib import Path

from armada.executor.backends.base import PodRequest
from armada.executor.backends.fake import FakeBackend
from tests.executor.test_local_backend import NOW, backend, sh, wait_for  # noqa: F401

INGRESS = ({"ports": [8080, 9090, 7000]},)
SERVICES = ({"type": "NodePort", "ports": [8080], "name": ""},)
FAKE = "fake.armadaproject.io/"


def fake_pod(name: str = "armada-01job-0", **more) -> PodRequest:
    spec = {
        "containers": [
            {"name": "web", "ports": [{"containerPort": 8080}]},
            {"name": "side", "ports": [{"containerPort": 9090}]},
        ]
    }
    fields = {
        "namespace": "team-a",
        "services": SERVICES,
        "ingress": INGRESS,
    } | more
    annotations = {FAKE + "pendingDuration": "2s", FAKE + "duration": "10s"}
    return PodRequest(name, "run-1", "01job", "n-0", spec, annotations, **fields)


def test_a_fake_pod_has_addresses_for_its_ingress_ports_once_it_runs():
    cluster = FakeBackend(namespaces=("team-a",))
    cluster.create_pod(fake_pod(), NOW)
    [pending] = cluster.poll(NOW + timedelta(seconds=1))
    assert pending.running_at is None and pending.ingress_addresses == {}
    [running] = cluster.poll(NOW + timedelta(seconds=3))
    assert running.ingress_addresses == {
        port: f"armada-01job-0.team-a.ingress.fake.invalid:{port}" for port in (8080, 9090, 7000)
    }
    [ended] = cluster.poll(NOW + timedelta(seconds=20))
    assert ended.finished_at is not None and ended.ingress_addresses == running.ingress_addresses


def test_a_fake_pod_without_ingress_has_no_addresses():
    cluster = FakeBackend(namespaces=("team-a",))
    cluster.create_pod(fake_pod(ingress=()), NOW)
    [running] = cluster.poll(NOW + timedelta(seconds=3))
    assert running.running_at is not None and running.ingress_addresses == {}


def test_a_local_pod_has_this_machines_addresses_once_it_runs(backend, tmp_path: Path):  # noqa: F811
    gate = tmp_path / "go"
    spec = {
        "containers": [
            sh(f"while [ ! -e {gate} ]; do sleep 0.05; done", ports=[{"containerPort": 8080}])
        ]
    }
    pod = PodRequest(
        "ingress-pod", "run-i", "job-i", "localhost", spec, {}, services=SERVICES, ingress=INGRESS
    )
    backend.create_pod(pod, NOW)
    running = wait_for(backend, "ingress-pod", lambda s: s.running_at is not None)
    host = socket.gethostname()
    expected = {port: f"{host}:{port}" for port in (7000, 8080, 9090)}
    assert running.ingress_addresses == expected
    gate.touch()
    ended = wait_for(backend, "ingress-pod")
    assert ended.succeeded and ended.ingress_addresses == expected


def test_a_local_pod_without_ingress_has_no_addresses(backend):  # noqa: F811
    spec = {"containers": [sh("true", ports=[{"containerPort": 8080}])]}
    backend.create_pod(PodRequest("plain-pod", "run-p", "job-p", "localhost", spec, {}), NOW)
    ended = wait_for(backend, "plain-pod")
    assert ended.running_at is not None and ended.ingress_addresses == {}
