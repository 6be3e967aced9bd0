"""The kubelet's part: moves pods bound to a Ready node through the status a real kubelet
writes, driven by the pod's ``fake.armadaproject.io/*`` annotations (parsed with the
project's own ``parse_fake_outcome``) and by real spec fields."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from armada.core.fakepod import parse_fake_outcome
from armada.core.quantity import parse_quantity
from tests.kube_emulator.events import Recorder
from tests.kube_emulator.kubelet_endings import Endings
from tests.kube_emulator.kubelet_run import Obj, Run, Timings, pod_requests
from tests.kube_emulator.objects import new_uid, timestamp
from tests.kube_emulator.store import Store
from tests.kube_emulator.timeline import Timeline


class Kubelet(Endings):
    """Every node's kubelet, run from one timeline thread."""

    def __init__(self, store: Store, timeline: Timeline, events: Recorder) -> None:
        self.store = store
        self.timeline = timeline
        self.events = events
        self.t = Timings()
        self.runs: dict[str, Run] = {}
        self.by_node: dict[str, set[str]] = {}
        self.lock = threading.RLock()
        self.config_objects: set[tuple[str, str, str]] = set()  # (kind, ns, name)
        self.node_ready: Callable[[str], bool] = lambda node: False
        self.on_node_lost: Callable[[str], None] = lambda node: None
        self._ips = 0

    # -- scheduling ------------------------------------------------------------------------
    def _later(self, run: Run, delay: float, step: Callable[[Run], None]) -> None:
        epoch = run.epoch

        def go() -> None:
            with self.lock:
                if self.runs.get(run.uid) is run and run.epoch == epoch:
                    step(run)

        self.timeline.after(delay, go, node=run.node)

    def pod_added(self, pod: Obj) -> None:
        """Called for every pod written with a nodeName the kubelet has not seen."""
        node = pod["spec"].get("nodeName")
        if not node:
            return
        meta = pod["metadata"]
        ns, name, uid = meta["namespace"], meta["name"], meta["uid"]
        self.timeline.after(self.t.admit, lambda: self._admit(ns, name, uid), node=node)

    def node_ready_again(self, node: str) -> None:
        for pod in self.store.items("pods")[0]:
            if pod["spec"].get("nodeName") == node and pod["metadata"]["uid"] not in self.runs:
                self.pod_added(pod)

    def forget(self, uid: str) -> None:
        with self.lock:
            run = self.runs.pop(uid, None)
            if run is not None:
                self.by_node.get(run.node, set()).discard(uid)

    # -- lifecycle -------------------------------------------------------------------------
    def _admit(self, ns: str, name: str, uid: str) -> None:
        pod = self.store.find("pods", ns, name)
        if pod is None or pod["metadata"]["uid"] != uid:
            return
        if uid in self.runs or pod["metadata"].get("deletionTimestamp"):
            return
        node_name = pod["spec"]["nodeName"]
        node = self.store.find("nodes", "", node_name)
        if node is None or not self.node_ready(node_name):
            return  # no kubelet there (yet): node_ready_again picks it up
        meta = pod["metadata"]
        outcome, _ = parse_fake_outcome(meta.get("annotations") or {})
        host_ip = node["status"]["addresses"][0]["address"]
        run = Run(ns, name, uid, node_name, pod["spec"], outcome, host_ip)
        run.annotations = dict(meta.get("annotations") or {})
        with self.lock:
            self.runs[uid] = run
            self.by_node.setdefault(node_name, set()).add(uid)
        run.start_time = timestamp()
        run.started_mono = time.monotonic()
        for c in run.inits() + run.mains():
            reason = "PodInitializing" if run.inits() else "ContainerCreating"
            run.cs[c["name"]] = {"state": {"waiting": {"reason": reason}}}
        self._cond(run, "PodScheduled", "True")
        rejected = self._admission(run, pod, node)
        if rejected:
            run.phase, run.reason, run.message, run.ended = "Failed", rejected[0], rejected[1], True
            self._write(run)
            return
        self._cond(run, "PodReadyToStartContainers", "False")
        if run.inits():
            self._cond(run, "Initialized", "False", "ContainersNotInitialized",
                       f"containers with incomplete status: [{' '.join(c['name'] for c in run.inits())}]")  # fmt: skip
        else:
            self._cond(run, "Initialized", "True")
        names = " ".join(c["name"] for c in run.mains())
        self._cond(
            run,
            "Ready",
            "False",
            "ContainersNotReady",
            f"containers with unready status: [{names}]",
        )
        self._cond(
            run,
            "ContainersReady",
            "False",
            "ContainersNotReady",
            f"containers with unready status: [{names}]",
        )
        self._write(run)
        self._arm_deadline(run)
        self._later(run, self.t.admit, self._mount)

    def _admission(self, run: Run, pod: Obj, node: Obj) -> tuple[str, str] | None:
        """The kubelet's admission: resources against allocatable, node selector."""
        labels = node["metadata"].get("labels") or {}
        for key, value in (pod["spec"].get("nodeSelector") or {}).items():
            if labels.get(key) != value:
                return "NodeAffinity", "Pod was rejected: Predicate NodeAffinity failed"
        used: dict[str, int] = {"pods": 1000}
        for other_uid in self.by_node.get(run.node, ()):
            other = self.runs[other_uid]
            if not other.ended and other.uid != run.uid:
                used["pods"] += 1000
                for name, q in pod_requests(other.spec).items():
                    used[name] = used.get(name, 0) + q
        asked = pod_requests(pod["spec"])
        asked["pods"] = 1000
        for name, q in asked.items():
            cap = parse_quantity((node["status"].get("allocatable") or {}).get(name, "0"))
            have = used.get(name, 0) if name != "pods" else used["pods"] - 1000
            if have + q > cap:
                return (f"OutOf{name}", f"Pod was rejected: Node didn't have enough resource: {name}, "
                        f"requested: {q}, used: {have}, capacity: {cap}")  # fmt: skip
        return None

    def _arm_deadline(self, run: Run) -> None:
        deadline = run.spec.get("activeDeadlineSeconds")
        if deadline:
            self._later(run, float(deadline), lambda r: self._kill(r, "deadline"))

    def _mount(self, run: Run) -> None:
        for vol in run.spec.get("volumes") or []:
            missing = self._missing_source(run.ns, vol)
            if missing:
                self.events.record(run.ref, "Warning", "FailedMount",
                                   f'MountVolume.SetUp failed for volume "{vol["name"]}" : {missing}',
                                   host=run.node)  # fmt: skip
                self._later(run, self.t.mount_retry, self._mount)
                return
        self._ips += 1
        run.pod_ip = f"10.244.{self._ips // 250 % 256}.{self._ips % 250 + 2}"
        self._cond(run, "PodReadyToStartContainers", "True")
        self._write(run)
        if run.inits():
            self._pull(run, [run.inits()[0]])
        else:
            self._pull(run, run.mains())

    def _missing_source(self, ns: str, vol: Obj) -> str:
        sources = [("configmap", vol.get("configMap")), ("secret", vol.get("secret"))]
        for proj in (vol.get("projected") or {}).get("sources") or []:
            sources += [("configmap", proj.get("configMap")), ("secret", proj.get("secret"))]
        for kind, src in sources:
            if not src or src.get("optional"):
                continue
            name = src.get("name") or src.get("secretName") or ""
            if (kind, ns, name) not in self.config_objects:
                return f'{kind} "{name}" not found'
        return ""

    def _pull(self, run: Run, containers: list[Obj]) -> None:
        for c in containers:
            self.events.record(run.ref, "Normal", "Pulling", f'Pulling image "{c["image"]}"',
                               host=run.node, field_path=self._field(run, c))  # fmt: skip
        is_main = containers[0] in run.mains()
        delay = max(self.t.pull, run.outcome.pending_seconds if is_main else 0.0)
        self._later(run, delay, lambda r: self._pulled(r, containers, delay))

    def _pulled(self, run: Run, containers: list[Obj], took: float) -> None:
        error = run.outcome.pod_error if containers[0] in run.mains() else ""
        if error:
            self._pull_failed(run, containers, error)
            return
        for c in containers:
            fp = self._field(run, c)
            self.events.record(run.ref, "Normal", "Pulled",
                               f'Successfully pulled image "{c["image"]}" in {int(took * 1000)}ms '
                               f"({int(took * 1000)}ms including waiting). Image size: 4269 bytes.",
                               host=run.node, field_path=fp)  # fmt: skip
            run.cs[c["name"]]["imageID"] = (
                f"docker.io/library/{c['image']}@sha256:{new_uid().replace('-', '') * 2}"
            )
        self._later(run, self.t.start, lambda r: self._start(r, containers))

    def _pull_failed(self, run: Run, containers: list[Obj], error: str) -> None:
        for c in containers:
            fp = self._field(run, c)
            self.events.record(
                run.ref,
                "Warning",
                "Failed",
                f'Failed to pull image "{c["image"]}": {error}',
                host=run.node,
                field_path=fp,
            )
            self.events.record(
                run.ref, "Warning", "Failed", "Error: ErrImagePull", host=run.node, field_path=fp
            )
            self._set(run, c, {"waiting": {"reason": "ErrImagePull", "message": error}})
        self._write(run)
        self._later(run, self.t.pull_backoff, lambda r: self._back_off(r, containers, error))

    def _back_off(self, run: Run, containers: list[Obj], error: str) -> None:
        for c in containers:
            fp = self._field(run, c)
            self.events.record(run.ref, "Normal", "BackOff", f'Back-off pulling image "{c["image"]}"',
                               host=run.node, field_path=fp)  # fmt: skip
            self.events.record(
                run.ref,
                "Warning",
                "Failed",
                "Error: ImagePullBackOff",
                host=run.node,
                field_path=fp,
            )
            message = f'Back-off pulling image "{c["image"]}": ErrImagePull: {error}'
            self._set(run, c, {"waiting": {"reason": "ImagePullBackOff", "message": message}})
        self._write(run)
        self._later(run, self.t.pull_backoff * 4, lambda r: self._pull(r, containers))

    def _start(self, run: Run, containers: list[Obj]) -> None:
        now = timestamp()
        for c in containers:
            fp = self._field(run, c)
            self.events.record(
                run.ref,
                "Normal",
                "Created",
                f"Created container: {c['name']}",
                host=run.node,
                field_path=fp,
            )
            self.events.record(
                run.ref,
                "Normal",
                "Started",
                f"Started container {c['name']}",
                host=run.node,
                field_path=fp,
            )
            run.cs[c["name"]]["containerID"] = (
                f"containerd://{new_uid().replace('-', '')}{new_uid().replace('-', '')}"
            )
            is_main = c in run.mains()
            run.started_wall[c["name"]] = time.time()
            self._set(run, c, {"running": {"startedAt": now}}, ready=is_main, started=True)
        if containers[0] in run.inits():
            self._write(run)
            self._later(run, self.t.init_run, lambda r: self._init_done(r, containers[0], now))
            return
        for c in run.mains():
            if not run.cs[c["name"]]["state"].get("running") and c not in containers:
                self._set(run, c, {"waiting": {"reason": "ContainerCreating"}})
        run.phase = "Running"
        self._cond(run, "Ready", "True")
        self._cond(run, "ContainersReady", "True")
        self._write(run)
        self._arm_end(run)

    def _init_done(self, run: Run, c: Obj, started: str) -> None:
        self._set(run, c, {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": started,
                                          "finishedAt": timestamp(), "containerID": run.cs[c["name"]]["containerID"]}})  # fmt: skip
        inits = run.inits()
        i = inits.index(c)
        if i + 1 < len(inits):
            self._write(run)
            self._pull(run, [inits[i + 1]])
            return
        self._cond(run, "Initialized", "True")
        for m in run.mains():
            self._set(run, m, {"waiting": {"reason": "ContainerCreating"}})
        self._write(run)
        self._pull(run, run.mains())
