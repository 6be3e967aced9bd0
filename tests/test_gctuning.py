"""The web process tunes Python's garbage collector at start-up (``armada.gctuning``): the
first generation's threshold from ARMADA_GC_THRESHOLD (validated, with a clear error), and
what start-up made frozen."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from armada.gctuning import DEFAULT_THRESHOLD, ENV, gc_threshold, tune_gc

ROOT = Path(__file__).resolve().parents[1]
# What a web process reports once armada.asgi (the module uvicorn loads) is imported.
PROBE = (
    "import gc, armada.asgi; "
    "print(gc.get_threshold()[0], gc.get_freeze_count() > 10000, "
    "'armada.api.job_views' in __import__('sys').modules)"
)


def start_web_app(**env: str) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if k != ENV}
    full_env.update({"ARMADA_DEV": "1", **env})
    return subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def restore_gc() -> Iterator[None]:
    before = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*before)


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, DEFAULT_THRESHOLD), ("", DEFAULT_THRESHOLD), (" 700 ", 700), ("100", 100)],
)
def test_the_threshold_is_read_from_the_environment(value, expected):
    environ = {} if value is None else {ENV: value}
    assert gc_threshold(environ) == expected


@pytest.mark.parametrize("value", ["0", "99", "10000001", "-5", "5e4", "50k", "١٠٠٠"])
def test_a_bad_threshold_is_refused_naming_the_variable(value):
    with pytest.raises(ImproperlyConfigured, match=rf"^{ENV} must be a whole number from 100"):
        gc_threshold({ENV: value})


def test_tune_gc_sets_the_first_threshold_keeps_the_others_and_freezes(restore_gc):
    _, older, oldest = gc.get_threshold()
    assert tune_gc({ENV: "12345"}) == 12345
    assert gc.get_threshold() == (12345, older, oldest)
    assert gc.get_freeze_count() > 0


def test_the_web_application_tunes_the_collector_at_start_up():
    default = start_web_app()
    assert default.returncode == 0, default.stderr[-2000:]
    # The views were loaded before the freeze, so they are frozen with the rest.
    assert default.stdout.split() == [str(DEFAULT_THRESHOLD), "True", "True"]
    chosen = start_web_app(**{ENV: "2000"})
    assert chosen.returncode == 0, chosen.stderr[-2000:]
    assert chosen.stdout.split()[0] == "2000"


def test_the_web_application_refuses_to_start_with_a_bad_threshold():
    bad = start_web_app(**{ENV: "lots"})
    assert bad.returncode != 0
    assert f"ImproperlyConfigured: {ENV} must be a whole number" in bad.stderr
    assert "got 'lots'" in bad.stderr


def test_the_grpc_process_tunes_the_collector_before_it_serves(monkeypatch):
    from armada import gctuning, grpcserver
    from armada.wire import server

    order: list[str] = []
    monkeypatch.setattr(gctuning, "tune_gc", lambda: order.append("tuned") or 0)

    async def serve(address: str, **_: object) -> None:
        order.append(f"served {address}")

    monkeypatch.setattr(server, "serve", serve)
    assert grpcserver.main(["--address", "127.0.0.1:1"]) == 0
    assert order == ["tuned", "served 127.0.0.1:1"]


@pytest.mark.parametrize(
    ("counts", "expected"),
    [
        ((0, 0, 0), 0),
        ((60_000, 10, 10), 0),  # at the thresholds, not past them
        ((5, 11, 0), 1),
        ((5, 11, 11), 2),
        ((5, 0, 11), 2),
    ],
)
def test_the_due_generation_is_the_oldest_past_its_threshold(counts, expected):
    from armada.gctuning import due_generation

    assert due_generation(counts, (50_000, 10, 10)) == expected


class _Cyclic:
    """An object in a reference cycle with itself: only the collector frees it."""

    def __init__(self) -> None:
        self.me = self


def test_the_collector_is_paused_for_the_block_and_collects_at_its_end(restore_gc):
    import weakref

    from armada.gctuning import collector_paused

    gc.set_threshold(100, 10, 10)
    with collector_paused():
        assert not gc.isenabled()
        garbage = _Cyclic()
        ref = weakref.ref(garbage)
        del garbage
        # Far past the threshold: a running collector would have freed it.
        kept = [[] for _ in range(1000)]
        assert ref() is not None
        del kept
    assert gc.isenabled()
    assert ref() is None


def test_a_collector_already_off_stays_off(restore_gc):
    from armada.gctuning import collector_paused

    gc.disable()
    try:
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_the_scheduling_cycle_runs_with_the_collector_paused(monkeypatch):
    """``scheduler_cycle`` holds the pause around its work."""
    from armada.services import scheduler

    seen: list[bool] = []
    monkeypatch.setattr(scheduler, "leader_acquire", lambda **_: True)
    monkeypatch.setattr(
        scheduler, "_cycle", lambda *a, **k: seen.append(gc.isenabled()) or scheduler.CycleReport()
    )
    from datetime import UTC, datetime

    scheduler.scheduler_cycle(now=datetime(2026, 1, 1, tzinfo=UTC))
    assert seen == [False]
    assert gc.isenabled()
