"""One background thread running timed actions from a heap (kubelet steps, controllers).

Delays are multiplied by ``scale`` so tests can run a cluster's minutes in seconds. Actions
tagged with a node name are held while that node's kubelet is paused or the node is lost,
and run when it comes back (a kubelet that cannot reach the API server writes nothing)."""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)


class Timeline:
    def __init__(self, scale: float = 1.0) -> None:
        self.scale = scale
        self._heap: list[tuple[float, int, str, Callable[[], None]]] = []
        self._held: dict[str, list[Callable[[], None]]] = {}
        self.paused: set[str] = set()  # node names, or "*" for every kubelet
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._stop = False
        self._thread = threading.Thread(
            target=self._run, name="kube-emulator-timeline", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        with self._cond:
            self._stop = True
            self._cond.notify_all()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def after(self, delay: float, action: Callable[[], None], node: str = "") -> None:
        """Run ``action`` after ``delay`` seconds (scaled); ``node`` tags a kubelet action."""
        due = time.monotonic() + max(0.0, delay) * self.scale
        with self._cond:
            heapq.heappush(self._heap, (due, next(self._seq), node, action))
            self._cond.notify()

    def pause(self, node: str = "*") -> None:
        with self._cond:
            self.paused.add(node)

    def resume(self, node: str = "*") -> None:
        with self._cond:
            self.paused.discard(node)
            for tag in list(self._held):
                if not self._is_paused(tag):
                    for action in self._held.pop(tag):
                        heapq.heappush(self._heap, (time.monotonic(), next(self._seq), tag, action))
            self._cond.notify()

    def _is_paused(self, node: str) -> bool:
        return bool(node) and ("*" in self.paused or node in self.paused)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._stop:
                    now = time.monotonic()
                    if self._heap and self._heap[0][0] <= now:
                        break
                    timeout = self._heap[0][0] - now if self._heap else None
                    self._cond.wait(timeout)
                if self._stop:
                    return
                _, _, node, action = heapq.heappop(self._heap)
                if self._is_paused(node):
                    self._held.setdefault(node, []).append(action)
                    continue
            try:
                action()
            except Exception:  # an emulator bug must not stop the cluster
                log.exception("kube emulator: timed action failed")
