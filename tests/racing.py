"""Racing work against the database in threads, for the PostgreSQL lock-order tests, and
the small world those tests race in (a retry policy, exit-code categories, fake jobs).

``Race`` runs named steps, each in its own thread and over and over, until a time is up or
a step fails; each step ends by closing its thread's database connection (back to the
pool, as after a request), so every step is its own connection. ``deadlocks()`` reads
PostgreSQL's count of deadlocks in the current database, to compare before and after.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping

from django.db import connection

from tests.conftest import container

#: Seconds a thread gets to finish its step once the race is stopped.
JOIN_TIMEOUT = 120.0
#: Seconds a race with ``until`` may go on past its time to reach the counts it needs.
UNTIL_TIMEOUT = 120.0
FAKE = "fake.armadaproject.io/"


def flaky_policy(name: str) -> dict:
    """A policy ``name``: user errors fail at once, flaky failures are retried, twice."""
    return {
        "apiVersion": "armadaproject.io/v1beta1",
        "kind": "RetryPolicy",
        "name": name,
        "retryLimit": 2,
        "defaultAction": "Fail",
        "rules": [
            {"action": "Fail", "onCategory": "user-error"},
            {"action": "Retry", "onCategory": "flaky"},
        ],
    }


def exit_code_categories(action: str) -> dict:
    """Exit code 3 is ``flaky``, 1 is ``user-error``; both with the pod ``action``."""
    return {
        "enabled": True,
        "categories": [
            {
                "name": name,
                "action": action,
                "rules": [{"onExitCodes": {"operator": "In", "values": [code]}}],
            }
            for name, code in (("flaky", 3), ("user-error", 1))
        ],
    }


def fake_jobs(n: int, outcomes: list[dict], count: int = 6) -> list[dict]:
    """``count`` jobs of the fake backend, the i-th ending as ``outcomes[(n + i) % len]``
    says (its annotations), at once."""
    return [
        {
            "annotations": {FAKE + k: v for k, v in outcomes[(n + i) % len(outcomes)].items()}
            | {FAKE + "duration": "0s"},
            "podSpec": {"containers": [container("100m", "64Mi")]},
        }
        for i in range(count)
    ]


def each_more_than(count: int, names: Iterable[str]) -> Callable[[Counter[str]], bool]:
    """A race's ``until``: every step in ``names`` has run more than ``count`` times."""
    names = list(names)
    return lambda counts: all(counts[name] > count for name in names)


def deadlocks() -> int:
    """How many deadlocks PostgreSQL has detected in the current database so far."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()")
        return cursor.fetchone()[0]


class Race:
    """Steps racing each other. Create it first so that steps can pause on ``stop`` and read
    ``counts``; then ``run`` them.

    - ``stop``: set when the time is up or a step failed (a step may ``stop.wait`` to pause);
    - ``counts``: per step name, the steps done so far (one that raised a ``tolerated``
      exception counts as done);
    - ``errors``: ``"<name>: <type>: <message>"`` for a step that raised anything else; the
      first one stops the race.
    """

    def __init__(self, *, tolerated: tuple[type[BaseException], ...] = ()) -> None:
        self.tolerated = tolerated
        self.stop = threading.Event()
        self.counts: Counter[str] = Counter()
        self.errors: list[str] = []

    def _loop(self, name: str, step: Callable[[int], None]) -> None:
        n = 0
        try:
            while not self.stop.is_set():
                try:
                    step(n)
                except self.tolerated:
                    pass
                finally:
                    connection.close()
                n += 1
                self.counts[name] = n
        except Exception as exc:  # noqa: BLE001 - reported in errors, with the step's name
            self.errors.append(f"{name}: {type(exc).__name__}: {exc}")
            self.stop.set()

    def run(
        self,
        steps: Mapping[str, Callable[[int], None]],
        seconds: float,
        *,
        until: Callable[[Counter[str]], bool] | None = None,
    ) -> None:
        """Run every step (``step(n)``, n counting that step's runs from 0) in its own thread
        for ``seconds`` or until one fails; returns once every thread has ended (and fails
        the test if one has not within ``JOIN_TIMEOUT``).

        With ``until``, the race goes on past ``seconds`` until ``until(counts)`` holds (or
        ``UNTIL_TIMEOUT`` has passed), so that a slow machine still races as many steps as
        the test needs; the test then asserts the counts it relies on."""
        threads = [
            threading.Thread(target=self._loop, args=(name, step), name=name)
            for name, step in steps.items()
        ]
        for thread in threads:
            thread.start()
        self.stop.wait(seconds)
        if until is not None:
            deadline = time.monotonic() + UNTIL_TIMEOUT
            while not until(self.counts) and time.monotonic() < deadline:
                if self.stop.wait(0.05):
                    break
        self.stop.set()
        for thread in threads:
            thread.join(timeout=JOIN_TIMEOUT)
        assert not any(t.is_alive() for t in threads)
