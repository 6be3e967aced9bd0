"""Asking real Celery workers for work from a test."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def call_scheduler_cycle(env: dict[str, str]) -> None:
    """Queue one ``armada.scheduler.cycle`` task for the worker on queue ``scheduler``."""
    subprocess.run(
        [sys.executable, "-m", "celery", "-A", "armada.celery", "call", "armada.scheduler.cycle"]
        + ["--queue", "scheduler"],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        timeout=120,
    )
