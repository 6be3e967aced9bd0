"""Waiting for real processes in tests: on a condition, never on a sleep being long enough.

A busy machine makes every answer slow, so a wait treats a refused connection and a slow
answer (``requests.RequestException``, ``ReadTimeout`` included) as "not yet" and keeps
polling until its own deadline, which is generous and explicit. When it gives up it fails
the test with what it waited for, the last error seen and whatever ``details`` returns
(process logs, typically).
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import pytest
import requests

T = TypeVar("T")

#: Seconds one HTTP request of a readiness probe may take before it counts as "not yet".
PROBE_TIMEOUT = 10.0


def wait_until(
    what: str,
    predicate: Callable[[], T],
    *,
    timeout: float = 60.0,
    interval: float = 0.2,
    details: Callable[[], str] = lambda: "",
) -> T:
    """Poll ``predicate`` until it returns something truthy and return that. An HTTP error
    raised by the predicate (refused, reset, timed out) counts as not yet; any other
    exception is a real failure and propagates."""
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while True:
        try:
            value = predicate()
        except requests.RequestException as error:
            value, last_error = None, error
        if value:
            return value
        if time.monotonic() > deadline:
            seen = f" (last error: {last_error!r})" if last_error else ""
            pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}{seen}\n{details()}")
        time.sleep(interval)


def answers(url: str, *, timeout: float = PROBE_TIMEOUT, **kwargs: Any) -> bool:
    """Whether ``GET url`` answers 200 within ``timeout`` seconds (a probe for
    ``wait_until``: refused or slow is False, not an error)."""
    try:
        return requests.get(url, timeout=timeout, **kwargs).status_code == 200
    except requests.RequestException:
        return False


def wait_for_http(
    url: str,
    what: str,
    *,
    processes: Sequence[subprocess.Popen] = (),
    timeout: float = 120.0,
    details: Callable[[], str] = lambda: "",
    **kwargs: Any,
) -> None:
    """Wait until ``GET url`` answers 200; fail at once if one of ``processes`` has exited
    (it will not come up by waiting longer)."""

    def up() -> bool:
        for proc in processes:
            if proc.poll() is not None:
                pytest.fail(f"{what}: a process exited with {proc.returncode}\n{details()}")
        return answers(url, **kwargs)

    wait_until(what, up, timeout=timeout, interval=0.3, details=details)
