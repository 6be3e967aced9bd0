"""How a pod's containers end: their own exit, OOM, deadline, eviction, restarts with
CrashLoopBackOff, graceful deletion, and the test hooks that force an ending."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from armada.core.quantity import parse_quantity
from tests.kube_emulator.events import Recorder
from tests.kube_emulator.kubelet_run import (
    DEADLINE_MESSAGE,
    EVICTED_MESSAGE,
    MEMORY_NEEDED,
    Run,
    Timings,
)
from tests.kube_emulator.kubelet_status import PodStatus
from tests.kube_emulator.objects import timestamp
from tests.kube_emulator.timeline import Timeline


class Endings(PodStatus):
    """The ending half of the kubelet; mixed into ``Kubelet``, whose state it uses and whose
    ``_later``, ``_start`` and ``_pull_failed`` it calls."""

    timeline: Timeline
    events: Recorder
    t: Timings
    runs: dict[str, Run]
    lock: threading.RLock
    on_node_lost: Callable[[str], None]

    # -- endings ---------------------------------------------------------------------------
    def _arm_end(self, run: Run) -> None:
        o = run.outcome
        how, after = "exit", o.duration_seconds
        if o.condition == "OOMKilled":
            how = "oom"
        elif o.condition == "Evicted":
            how = "evict"
        elif o.condition == "DeadlineExceeded":
            how = "deadline"
        elif o.node_lost:
            how = "node-lost"
        needed = run.annotations.get(MEMORY_NEEDED)
        limit = ((run.mains()[0].get("resources") or {}).get("limits") or {}).get("memory")
        if needed and limit and parse_quantity(limit) < parse_quantity(needed):
            how, after = "oom", min(after, self.t.oom_after)
        if how == "node-lost":
            self._later(run, after, lambda r: self.on_node_lost(r.node))
        else:
            self._later(run, after, lambda r: self._kill(r, how))

    def _kill(self, run: Run, how: str, exit_code: int | None = None) -> None:
        """End the pod's main containers: ``exit`` (their own end), ``oom``, ``deadline``,
        ``evict``."""
        if run.ended:
            return
        run.epoch += 1
        now = timestamp()
        code = run.outcome.exit_code if exit_code is None else exit_code
        for c in run.mains():
            parts = run.cs[c["name"]]
            running = parts["state"].get("running")
            if not running:
                continue
            if how == "exit":
                term = {"exitCode": code, "reason": "Completed" if code == 0 else "Error"}
                if run.outcome.termination_message:
                    term["message"] = run.outcome.termination_message
            elif how == "oom":
                term = {"exitCode": 137, "reason": "OOMKilled"}
            else:
                term = {"exitCode": 137, "reason": "Error"}
                self.events.record(run.ref, "Normal", "Killing", f"Stopping container {c['name']}",
                                   host=run.node, field_path=self._field(run, c))  # fmt: skip
            term.update(
                startedAt=running["startedAt"], finishedAt=now, containerID=parts["containerID"]
            )
            self._set(run, c, {"terminated": term})
        policy = run.spec.get("restartPolicy", "Always")
        failed = how != "exit" or code != 0
        if how in ("exit", "oom") and (policy == "Always" or (policy == "OnFailure" and failed)):
            self._write(run)
            self._later(run, self.t.start, self._crash_loop)
            return
        if how == "evict":
            run.reason, run.message = "Evicted", EVICTED_MESSAGE
            self._cond(run, "DisruptionTarget", "True", "TerminationByKubelet", EVICTED_MESSAGE)
            self.events.record(run.ref, "Warning", "Evicted", EVICTED_MESSAGE, host=run.node)
        elif how == "deadline":
            run.reason, run.message = "DeadlineExceeded", DEADLINE_MESSAGE
            self.events.record(
                run.ref, "Warning", "DeadlineExceeded", DEADLINE_MESSAGE, host=run.node
            )
        codes = [
            run.cs[c["name"]]["state"].get("terminated", {}).get("exitCode", 1) for c in run.mains()
        ]
        self._finish(run, "Failed" if failed or any(codes) else "Succeeded")

    def _finish(self, run: Run, phase: str) -> None:
        run.ended, run.phase = True, phase
        why = "PodCompleted" if phase == "Succeeded" else "PodFailed"
        self._cond(run, "PodReadyToStartContainers", "False")
        self._cond(run, "Ready", "False", why)
        self._cond(run, "ContainersReady", "False", why)
        for c in run.mains():
            run.cs[c["name"]].update(ready=False, started=False)
        self._write(run)

    def _crash_loop(self, run: Run) -> None:
        for c in run.mains():
            parts = run.cs[c["name"]]
            if parts["state"].get("terminated"):
                parts["last"] = parts["state"]
                parts["restarts"] = parts.get("restarts", 0) + 1
                pod_id = f"{run.name}_{run.ns}({run.uid})"
                self._set(run, c, {"waiting": {"reason": "CrashLoopBackOff",
                                               "message": f"back-off 10s restarting failed container={c['name']} pod={pod_id}"}})  # fmt: skip
                self.events.record(run.ref, "Warning", "BackOff",
                                   f"Back-off restarting failed container {c['name']} in pod {pod_id}",
                                   host=run.node, field_path=self._field(run, c))  # fmt: skip
        self._cond(run, "Ready", "False", "ContainersNotReady")
        self._cond(run, "ContainersReady", "False", "ContainersNotReady")
        self._write(run)
        self._later(run, self.t.crash_backoff, lambda r: self._start(r, r.mains()))

    # -- deletion and hooks ----------------------------------------------------------------
    def terminate(self, ns: str, name: str, uid: str, node: str, grace: float) -> None:
        """A graceful delete was accepted: stop the containers, then remove the pod."""

        def begin() -> None:
            with self.lock:
                run = self.runs.get(uid)
                if run is None:  # never started here: nothing to stop
                    self._remove(ns, name, uid)
                    return
                run.epoch += 1
                delay = run.outcome.deletion_seconds or min(self.t.stop, grace)
                for c in run.mains() + run.inits():
                    if run.cs[c["name"]]["state"].get("running"):
                        self.events.record(run.ref, "Normal", "Killing", f"Stopping container {c['name']}",
                                           host=run.node, field_path=self._field(run, c))  # fmt: skip
                self._later(run, delay, self._stopped)

        self.timeline.after(0, begin, node=node)

    def _stopped(self, run: Run) -> None:
        now = timestamp()
        for c in run.mains() + run.inits():
            parts = run.cs[c["name"]]
            running = parts["state"].get("running")
            if running:
                self._set(run, c, {"terminated": {"exitCode": 143, "reason": "Error", "startedAt": running["startedAt"],
                                                  "finishedAt": now, "containerID": parts["containerID"]}})  # fmt: skip
        if not run.ended:
            self._finish(run, "Failed" if run.spec.get("restartPolicy") != "Always" else run.phase)
        self._remove(run.ns, run.name, run.uid)

    def _remove(self, ns: str, name: str, uid: str) -> None:
        pod = self.store.find("pods", ns, name)
        if pod is not None and pod["metadata"]["uid"] == uid:
            self.store.delete("pods", ns, name)

    def hook(self, ns: str, name: str, action: str, **kw: Any) -> None:
        """Test hooks (oom, evict, finish, image_pull_backoff), run on the kubelet thread."""
        pod = self.store.get("pods", ns, name)
        uid, node = pod["metadata"]["uid"], pod["spec"].get("nodeName", "")

        tries = [0]

        def go() -> None:
            with self.lock:
                run = self.runs.get(uid)
                if run is None and tries[0] < 400 and self.store.find("pods", ns, name) is not None:
                    tries[0] += 1  # not admitted yet: try again shortly
                    self.timeline.after(self.t.admit, go, node=node)
                    return
                if run is None or run.ended:
                    return
                if action == "image_pull_backoff":
                    run.epoch += 1
                    run.outcome = replace(run.outcome, pod_error=kw["message"])
                    if run.phase == "Running":
                        return  # the image is already there
                    self._pull_failed(run, run.mains(), kw["message"])
                elif action == "finish":
                    self._kill(run, "exit", kw.get("exit_code", 0))
                else:
                    self._kill(run, action)

        self.timeline.after(0, go, node=node)
