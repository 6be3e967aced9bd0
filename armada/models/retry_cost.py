"""Rollups of what retries cost, per hour and per day (``services.retry_cost`` writes them in
the transaction of the change they count; Lookout's cost page reads them).

Each row is one bucket (``bucket_hours`` 1 or 24, from ``start``, UTC) of one label set; the
amounts are whole numbers in the units of the Prometheus counters (docs/retry-cost.md):
millicore-seconds, KiB-seconds of memory and milli-GPU-seconds.
"""

from __future__ import annotations

from django.db import models

HOUR_BUCKET, DAY_BUCKET = 1, 24


class RetryCostBucket(models.Model):
    """What failed runs (``kind`` ``failed_run``) and retried attempts (``retried_attempt``)
    of one queue, policy, failure category and decision label held during one bucket."""

    bucket_hours = models.PositiveSmallIntegerField()
    start = models.DateTimeField()
    queue = models.CharField(max_length=63)
    policy = models.CharField(max_length=63, blank=True)
    category = models.CharField(max_length=63, blank=True)
    decision = models.CharField(max_length=32, blank=True)
    kind = models.CharField(max_length=16)
    runs = models.BigIntegerField(default=0)
    cpu_milli_seconds = models.BigIntegerField(default=0)
    memory_kib_seconds = models.BigIntegerField(default=0)
    gpu_milli_seconds = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            # Also the page's index: a period is a range of ``start`` in one bucket size.
            models.UniqueConstraint(
                fields=["bucket_hours", "start", "queue", "policy", "category", "decision", "kind"],
                name="retry_cost_bucket_uniq",
            )
        ]
        indexes = [
            # The page's reads: a range of ``start`` in one bucket size, summed by kind and
            # labels, from the index alone (old buckets are all-visible; PostgreSQL only).
            models.Index(
                fields=["bucket_hours", "start"],
                include=[
                    "queue",
                    "policy",
                    "category",
                    "decision",
                    "kind",
                    "runs",
                    "cpu_milli_seconds",
                    "memory_kib_seconds",
                    "gpu_milli_seconds",
                ],
                name="retry_cost_bucket_read_idx",
            )
        ]


class RetryYieldBucket(models.Model):
    """Retry yield per bucket: jobs first retried for a failure ``category`` by ``rule``
    (numbered from 1; 0 for the policy's defaultAction) during the bucket (``retried_jobs``,
    on the row of ``retries`` 0), and of those the ones that later succeeded
    (``succeeded_jobs``, on the row of the job's retries in all)."""

    bucket_hours = models.PositiveSmallIntegerField()
    start = models.DateTimeField()
    queue = models.CharField(max_length=63)
    category = models.CharField(max_length=63, blank=True)
    rule = models.PositiveSmallIntegerField(default=0)
    retries = models.PositiveIntegerField(default=0)
    retried_jobs = models.BigIntegerField(default=0)
    succeeded_jobs = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["bucket_hours", "start", "queue", "category", "rule", "retries"],
                name="retry_yield_bucket_uniq",
            )
        ]
        indexes = [
            models.Index(
                fields=["bucket_hours", "start"],
                include=["queue", "category", "rule", "retries", "retried_jobs", "succeeded_jobs"],
                name="retry_yield_bucket_read_idx",
            )
        ]


class RollupMark(models.Model):
    """From when a rollup holds every change it counts (``services.retry_yield_rollup``).

    A rollup is written in the transaction of each change from the release that added it;
    history older than that is in it only once it has been rebuilt from the runs. Readers
    use the rollup for whole buckets from ``covers_since`` on and the runs before that."""

    name = models.CharField(primary_key=True, max_length=63)
    covers_since = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.name} covers {self.covers_since.isoformat()} on"
