"""A started emulated API server and a kubernetes backend talking to it over HTTP through
the official client, configured from a kubeconfig as a user's deployment is."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from armada.core.config import parse_config
from armada.executor.backends.kubernetes import KubernetesBackend
from tests.kube_emulator import KubeEmulator
from tests.waiting import wait_until

TOKEN = "executor-token"
SYNC_TIMEOUT = 60.0


def wait_for(check: Callable[[], Any], what: str, timeout: float = 30.0) -> Any:
    """Poll ``check`` until it returns something truthy; generous, explicit timeout."""
    return wait_until(what, check, timeout=timeout, interval=0.05)


def executor_config(kubeconfig: str, executor_id: str = "cluster-a", **extra: Any):
    data = {
        "id": executor_id,
        "backend": "kubernetes",
        "trackedNodeLabels": ["kubernetes.io/hostname"],
        "kubernetes": {"kubeconfig": kubeconfig, "watchTimeout": "30s", **extra},
    }
    return parse_config({"executors": [data]}).executors[0]


@pytest.fixture
def emulator() -> Iterator[KubeEmulator]:
    emu = KubeEmulator(token=TOKEN, bookmark_interval=0.5)
    emu.add_node("node-1")
    emu.add_node("node-2")
    emu.add_namespace("jobs")
    emu.start()
    yield emu
    emu.stop()


@pytest.fixture
def kubeconfig(emulator, tmp_path) -> str:
    return str(emulator.write_kubeconfig(tmp_path / "kubeconfig", token=TOKEN))


@pytest.fixture
def make_backend(kubeconfig) -> Iterator[Callable[..., KubernetesBackend]]:
    made: list[KubernetesBackend] = []

    def make(executor_id: str = "cluster-a", **extra: Any) -> KubernetesBackend:
        backend = KubernetesBackend(executor_config(kubeconfig, executor_id, **extra))
        made.append(backend)
        assert backend.wait_synced(SYNC_TIMEOUT), "the backend's caches were not listed"
        return backend

    yield make
    for backend in made:
        backend.close()


@pytest.fixture
def backend(make_backend) -> KubernetesBackend:
    return make_backend()
