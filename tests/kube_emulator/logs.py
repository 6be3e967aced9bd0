"""``GET .../pods/{name}/log``: the container's log (the ``log`` annotation), with the API
server's and kubelet's refusals."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from armada.core.fakepod import parse_fake_outcome
from tests.kube_emulator.objects import RESOURCES, ApiError, bad_request

if TYPE_CHECKING:
    from tests.kube_emulator.emulator import KubeEmulator
    from tests.kube_emulator.http import Handler


def _state(pod: dict[str, Any], container: str) -> dict[str, Any]:
    status = pod.get("status") or {}
    for group in ("containerStatuses", "initContainerStatuses"):
        for cs in status.get(group) or []:
            if cs["name"] == container:
                return cs
    return {}


def serve(h: Handler, emu: KubeEmulator, ns: str, name: str, params: dict[str, str]) -> None:
    pod = emu.store.get("pods", ns, name)
    spec = pod["spec"]
    mains = [c["name"] for c in spec["containers"]]
    inits = [c["name"] for c in spec.get("initContainers") or []]
    container = params.get("container", "")
    if not container:
        if len(mains) != 1:
            msg = f"a container name must be specified for pod {name}, choose one of: [{' '.join(mains)}]"
            if inits:
                msg += f" or one of the init containers: [{' '.join(inits)}]"
            raise bad_request(msg)
        container = mains[0]
    if container not in mains + inits:
        raise bad_request(f"container {container} is not valid for pod {name}")
    node = spec.get("nodeName")
    if not node:
        raise bad_request(f"pod {name} does not have a host assigned")
    if emu.store.find("nodes", "", node) is None:
        raise ApiError(
            404, "NotFound", f'nodes "{node}" not found', {"name": node, "kind": "nodes"}
        )
    if node in emu.cluster.lost:
        raise ApiError(
            500,
            "InternalError",
            f'Get "https://{node}:10250/containerLogs/{ns}/{name}/{container}": dial tcp: i/o timeout',
        )
    cs = _state(pod, container)
    if params.get("previous") in ("true", "1") and not (cs.get("lastState") or {}).get(
        "terminated"
    ):
        raise bad_request(f'previous terminated container "{container}" in pod "{name}" not found')
    state = cs.get("state") or {"waiting": {"reason": "ContainerCreating"}}
    if "waiting" in state and not (cs.get("lastState") or {}).get("terminated"):
        reason = state["waiting"].get("reason", "ContainerCreating")
        if reason in ("ErrImagePull", "ImagePullBackOff"):
            reason = "trying and failing to pull image"
        raise bad_request(f'container "{container}" in pod "{name}" is waiting to start: {reason}')
    outcome, _ = parse_fake_outcome(pod["metadata"].get("annotations") or {})
    text = outcome.log if container == mains[0] else ""
    started = (state.get("running") or state.get("terminated") or {}).get("startedAt") or ""
    lines = text.splitlines(keepends=True)
    if text and not text.endswith("\n"):
        lines[-1] += "\n"
    if params.get("timestamps") in ("true", "1"):
        stamp = started.replace("Z", ".000000000Z")
        lines = [f"{stamp} {line}" for line in lines]
    if "tailLines" in params:
        tail = int(params["tailLines"])
        lines = lines[-tail:] if tail > 0 else []
    body = "".join(lines)
    if "limitBytes" in params:
        body = body.encode()[: int(params["limitBytes"])].decode(errors="ignore")
    if params.get("follow") not in ("true", "1"):
        h._send_text(200, body)
        return
    h.start_chunked("text/plain")
    h.chunk(body.encode())
    while not emu.stopping:
        current = emu.store.find("pods", ns, name)
        if current is None or current["metadata"]["uid"] != pod["metadata"]["uid"]:
            break
        if "running" not in (_state(current, container).get("state") or {}):
            break
        time.sleep(0.05)
    h.end_chunked()


__all__ = ["RESOURCES", "serve"]
