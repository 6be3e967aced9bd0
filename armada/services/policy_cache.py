"""The scheduler's cache of retry policies.

Refreshed from the database at most every ``queueRefreshPeriod``; an update to a policy takes
effect for failures decided after the next refresh. It fails open: when a refresh fails the
last good policies keep being served and a warning is logged (and counted in
``armada_scheduler_retry_policy_cache_refresh_failures_total``). A stored policy that no longer
validates is skipped with a warning, so the queues naming it fall back to legacy behaviour.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db import DatabaseError

from armada.core.errors import ValidationFailed
from armada.core.policy import RetryPolicy as PolicySpec
from armada.models import RetryPolicy

log = logging.getLogger(__name__)


class PolicyCache:
    def __init__(self) -> None:
        self._policies: dict[str, PolicySpec] = {}
        self.loaded_at: datetime | None = None
        self.refresh_failures = 0

    def policies(self, *, now: datetime) -> dict[str, PolicySpec]:
        period = timedelta(seconds=settings.ARMADA.queue_refresh_period)
        if self.loaded_at is None or now - self.loaded_at >= period:
            self.refresh(now=now)
        return self._policies

    def refresh(self, *, now: datetime) -> bool:
        from armada.services.policies import policy_spec

        try:
            rows = list(RetryPolicy.objects.all())
        except DatabaseError as exc:
            self.refresh_failures += 1
            log.warning(
                "retry-policy cache refresh failed (%s); still serving the %d policies loaded at %s",
                exc,
                len(self._policies),
                self.loaded_at.isoformat() if self.loaded_at else "never",
            )
            return False
        policies: dict[str, PolicySpec] = {}
        for row in rows:
            try:
                policies[row.name] = policy_spec(row)
            except ValidationFailed as exc:
                log.warning("retry policy %s is invalid and is skipped: %s", row.name, exc)
        self._policies = policies
        self.loaded_at = now
        return True

    def age_seconds(self, *, now: datetime) -> float | None:
        return None if self.loaded_at is None else (now - self.loaded_at).total_seconds()


policy_cache = PolicyCache()
