"""``manage.py rebuild_retry_yield``: recount the retry-yield rollup from the recorded runs.

Run it once after upgrading a database that recorded retried failures before the rollup
existed (it says so: the rollup's mark is not at the start), so that backtests and the cost
page read that history from the rollup too. Safe while everything runs: changes that count
in the rollup wait for it, and running it again gives the same rows."""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand

from armada.services.retry_yield_rollup import START, covers_since, rebuild_yield_rollup


class Command(BaseCommand):
    help = "Recount the retry-yield rollup from the recorded runs (all history)."

    def handle(self, *args: Any, **options: Any) -> None:
        before = covers_since()
        started = time.monotonic()
        rows = rebuild_yield_rollup()
        was = "the start" if before == START else (before.isoformat() if before else "nothing")
        self.stdout.write(
            f"retry-yield rollup rebuilt: {rows} hourly rows in "
            f"{time.monotonic() - started:.1f} s; it covered {was}, now all history"
        )
