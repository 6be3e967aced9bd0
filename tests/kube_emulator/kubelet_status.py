"""The kubelet's writing of ``pod.status``: conditions, container statuses, phase."""

from __future__ import annotations

from tests.kube_emulator.kubelet_run import Obj, Run
from tests.kube_emulator.objects import timestamp
from tests.kube_emulator.store import Store


class PodStatus:
    """Builds and writes a run's status; mixed into ``Kubelet``, whose store it writes to."""

    store: Store

    def _cond(self, run: Run, type_: str, status: str, reason: str = "", msg: str = "") -> None:
        old = run.conds.get(type_)
        ts = old[3] if old and old[0] == status else timestamp()
        run.conds[type_] = (status, reason, msg, ts)

    def _write(self, run: Run) -> None:
        status: Obj = {"phase": run.phase, "hostIP": run.host_ip, "hostIPs": [{"ip": run.host_ip}]}
        if run.pod_ip:
            status["podIP"] = run.pod_ip
            status["podIPs"] = [{"ip": run.pod_ip}]
        if run.start_time:
            status["startTime"] = run.start_time
        if run.reason:
            status["reason"] = run.reason
        if run.message:
            status["message"] = run.message
        order = ("DisruptionTarget", "PodReadyToStartContainers", "Initialized", "Ready",
                 "ContainersReady", "PodScheduled")  # fmt: skip
        status["conditions"] = [
            {"type": t, "status": c[0], "lastProbeTime": None, "lastTransitionTime": c[3]}
            | ({"reason": c[1]} if c[1] else {})
            | ({"message": c[2]} if c[2] else {})
            for t in order
            if (c := run.conds.get(t))
        ]
        for key, group in (
            ("initContainerStatuses", run.inits()),
            ("containerStatuses", run.mains()),
        ):
            if group:
                status[key] = [self._container_status(run, c) for c in group]

        def put(pod: Obj) -> object:
            if pod["metadata"]["uid"] != run.uid:
                return False
            status["qosClass"] = pod.get("status", {}).get("qosClass", "BestEffort")
            pod["status"] = status
            return True

        self.store.update("pods", run.ns, run.name, put)

    def _container_status(self, run: Run, c: Obj) -> Obj:
        parts = run.cs[c["name"]]
        out = {
            "name": c["name"],
            "image": c["image"],
            "imageID": parts.get("imageID", ""),
            "ready": parts.get("ready", False),
            "started": parts.get("started", False),
            "restartCount": parts.get("restarts", 0),
            "state": parts["state"],
            "lastState": parts.get("last", {}),
        }
        if parts.get("containerID"):
            out["containerID"] = parts["containerID"]
        return out

    def _set(
        self, run: Run, c: Obj, state: Obj, ready: bool = False, started: bool = False
    ) -> None:
        parts = run.cs[c["name"]]
        parts.update(state=state, ready=ready, started=started)

    def _field(self, run: Run, c: Obj) -> str:
        group = "initContainers" if c in run.inits() else "containers"
        return f"spec.{group}{{{c['name']}}}"
