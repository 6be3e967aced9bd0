"""Fixtures: a started emulator and official clients configured from its kubeconfig."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client, config

from tests.kube_emulator import KubeEmulator
from tests.waiting import wait_until

TOKEN = "emulator-token"


@pytest.fixture
def emu(tmp_path) -> Iterator[KubeEmulator]:
    emulator = KubeEmulator(token=TOKEN, bookmark_interval=0.2)
    emulator.add_node("node-1")
    emulator.start()
    config.load_kube_config(config_file=str(emulator.write_kubeconfig(tmp_path / "kubeconfig")))
    yield emulator
    emulator.stop()


@pytest.fixture
def v1(emu: KubeEmulator) -> client.CoreV1Api:
    return client.CoreV1Api()


def wait_for(check: Callable[[], Any], timeout: float = 20.0, what: str = "condition") -> Any:
    """Poll ``check`` until it returns something truthy (generous timeout, no fixed sleeps)."""
    return wait_until(what, check, timeout=timeout, interval=0.02)


def pod_body(
    name: str, annotations: dict[str, str] | None = None, node: str | None = "node-1", **spec: Any
) -> dict:
    body: dict[str, Any] = {
        "metadata": {"name": name, "annotations": annotations or {}, "labels": {"app": "test"}},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "main",
                    "image": "busybox:1.36",
                    "resources": {"limits": {"cpu": "100m", "memory": "64Mi"}},
                }
            ],
            **spec,
        },
    }
    if node:
        body["spec"]["nodeName"] = node
    return body


def phase(emu: KubeEmulator, name: str, ns: str = "default") -> str:
    pod = emu.pod(ns, name)
    return (pod or {}).get("status", {}).get("phase", "")
