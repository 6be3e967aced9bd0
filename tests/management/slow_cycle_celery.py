"""The Celery application of the scheduler-shutdown test: ``armada.celery``'s, with the
scheduling cycle paused inside its lease transaction (``services.scheduler_leases``: after the
runs are inserted, before their ``leased`` events, on either database's path) until the file
``go`` appears beside ``SLOW_CYCLE_MARKS``.

    celery -A tests.management.slow_cycle_celery worker -Q scheduler --pool=solo
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import django

from armada.celery import app

django.setup()  # before the services' models are imported

from armada.core.states import EventType  # noqa: E402
from armada.services import scheduler_leases  # noqa: E402

__all__ = ["app"]

_events_append = scheduler_leases.events_append
_events_append_columns = scheduler_leases.events_append_columns


def _pause() -> None:
    marks = Path(os.environ["SLOW_CYCLE_MARKS"])
    with marks.open("a") as f:
        f.write("in cycle\n")
    go = marks.with_name("go")
    deadline = time.monotonic() + 120
    while not go.exists() and time.monotonic() < deadline:
        time.sleep(0.05)


def _paused_events_append(*, events, **kwargs):
    if events and events[0].type == EventType.LEASED:
        _pause()
    return _events_append(events=events, **kwargs)


def _paused_events_append_columns(**kwargs):
    """PostgreSQL's lease write appends its events column by column."""
    if kwargs.get("type_") == EventType.LEASED and kwargs.get("job_ids"):
        _pause()
    return _events_append_columns(**kwargs)


scheduler_leases.events_append = _paused_events_append
scheduler_leases.events_append_columns = _paused_events_append_columns
