"""Fault injection: failing requests, an unreachable API server, cut watch streams."""

from __future__ import annotations

import threading
import time


class Faults:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.fail_left = 0
        self.fail_until = 0.0
        self.fail_status = 500
        self.watch_generation = 0  # bumped by cut_watches(): older watch streams drop

    def fail(self, count: int | None, seconds: float | None, status: int) -> None:
        with self.lock:
            self.fail_status = status
            self.fail_left = count or 0
            self.fail_until = time.monotonic() + seconds if seconds else 0.0

    def should_fail(self) -> int:
        """The status to answer this request with, or 0."""
        with self.lock:
            if self.fail_left > 0:
                self.fail_left -= 1
                return self.fail_status
            if time.monotonic() < self.fail_until:
                return self.fail_status
            return 0

    def cut(self) -> None:
        with self.lock:
            self.watch_generation += 1
