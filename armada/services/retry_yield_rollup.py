"""The retry yield read from its rollup where the rollup is complete, and the rollup rebuilt
from the runs.

``RetryYieldBucket`` (written by ``services.retry_cost`` in the transaction of each decision
and success) holds the same numbers as ``services.retry_yield``'s query over the runs, bucket
by bucket, for every hour from its mark on (``RollupMark`` ``retry-yield``): from the start
on a database that had no retried failure when the mark was made, from the upgrade on one
that had, until :func:`rebuild_yield_rollup` recounts the older history.

:func:`retry_yield_read` answers any range: whole days and hours that the rollup covers from
the rollup (one indexed read of a few thousand rows, however many failures they count), the
edges (a partial hour at each end, and anything before the mark) from the runs. Ranges that
follow each other add up (``services.retry_yield``), so the parts do too.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Count, F, Q, QuerySet, Sum
from django.db.models.functions import TruncHour

from armada.core.states import JobState
from armada.models import RetryYieldBucket, RollupMark
from armada.models.retry_cost import DAY_BUCKET, HOUR_BUCKET
from armada.services.events import lock_event_log
from armada.services.retry_cost import bucket_start, upsert_add
from armada.services.retry_yield import (
    first_retried_failures,
    rule_of_key,
    yield_groups,
    yield_rows,
)

YIELD_MARK = "retry-yield"
START = datetime(1970, 1, 1, tzinfo=UTC)

Group = tuple[str, int | None, int, int, int]


def covers_since() -> datetime | None:
    """From when the yield rollup is complete; None when it is not known to be."""
    mark = RollupMark.objects.filter(name=YIELD_MARK).first()
    return mark.covers_since if mark is not None else None


def _ceil(moment: datetime, hours: int) -> datetime:
    """The start of the first bucket of ``hours`` that begins at or after ``moment``."""
    start = bucket_start(moment, hours)
    return start if start == moment else start + timedelta(hours=hours)


def read_plan(
    *, since: datetime, until: datetime, covered: datetime | None
) -> list[tuple[str, datetime, datetime]]:
    """How to read ``[since, until)``: consecutive parts ``(source, from, to)`` where source
    is ``runs``, ``hours`` or ``days`` (the rollup's buckets of that size, whole and from
    ``covered`` on). Pure arithmetic: the parts cover the range exactly, once."""
    since, until = since.astimezone(UTC), until.astimezone(UTC)
    if covered is None or since >= until:
        return [("runs", since, until)] if since < until else []
    first = max(_ceil(since, HOUR_BUCKET), _ceil(covered.astimezone(UTC), HOUR_BUCKET))
    last = bucket_start(until, HOUR_BUCKET)
    if first >= last:
        return [("runs", since, until)]
    plan: list[tuple[str, datetime, datetime]] = []
    if since < first:
        plan.append(("runs", since, first))
    day_first, day_last = _ceil(first, DAY_BUCKET), bucket_start(last, DAY_BUCKET)
    if day_first < day_last:
        if first < day_first:
            plan.append(("hours", first, day_first))
        plan.append(("days", day_first, day_last))
        if day_last < last:
            plan.append(("hours", day_last, last))
    else:
        plan.append(("hours", first, last))
    if last < until:
        plan.append(("runs", last, until))
    return plan


def rollup_groups(rows: QuerySet) -> list[Group]:
    """The groups :func:`~armada.services.retry_yield.yield_rows` sums, from rollup rows."""
    grouped = (
        rows.values("category", "rule", "retries")
        .annotate(retried=Sum("retried_jobs"), succeeded=Sum("succeeded_jobs"))
        .order_by()
    )
    return [
        (g["category"], g["rule"] or None, g["retries"], g["retried"], g["succeeded"])
        for g in grouped
    ]


def _bucket_groups(
    hours: int, first: datetime, last: datetime, queues: Sequence[str] | None
) -> list[Group]:
    rows = RetryYieldBucket.objects.filter(bucket_hours=hours, start__gte=first, start__lt=last)
    if queues is not None:
        rows = rows.filter(queue__in=list(queues))
    return rollup_groups(rows)


def retry_yield_read(
    *, since: datetime, until: datetime, queues: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """``services.retry_yield.retry_yield`` for ``[since, until)``, the same rows, read from
    the rollup wherever it is complete (:func:`read_plan`). Call it inside one snapshot
    (a transaction at repeatable read, or ``services.side_reads.snapshot``) when the parts
    must agree with each other under concurrent writes."""
    groups: list[Group] = []
    for source, first, last in read_plan(since=since, until=until, covered=covers_since()):
        if source == "runs":
            groups.extend(yield_groups(since=first, until=last, queues=queues))
        else:
            hours = HOUR_BUCKET if source == "hours" else DAY_BUCKET
            groups.extend(_bucket_groups(hours, first, last, queues))
    return yield_rows(groups)


def rebuild_yield_rollup() -> int:
    """Recount the whole yield rollup from the runs (both bucket sizes) and mark it complete
    from the start; returns the number of hourly rows written.

    For history recorded before the rollup existed (or by workers of an older release). It
    holds the event-log lock, under which the rollup is written, for its whole transaction:
    changes that count in the rollup wait for it (seconds per million retried failures) and
    none is counted twice or lost. Running it again gives the same rows."""
    with transaction.atomic():
        lock_event_log()
        RetryYieldBucket.objects.all().delete()
        firsts = first_retried_failures(since=START, until=datetime(9999, 1, 1, tzinfo=UTC))
        grouped = (
            firsts.annotate(hour=TruncHour("finished_at", tzinfo=UTC))
            .values(
                "hour",
                "failure_category",
                "rule_key",
                queue=F("job__queue_id"),
                retries=F("job__retry_count"),
            )
            .annotate(
                retried=Count("id"),
                succeeded=Count("id", filter=Q(job__state=JobState.SUCCEEDED)),
            )
            .order_by()
        )
        rows: dict[tuple, list[int]] = defaultdict(lambda: [0, 0])
        for g in grouped:
            rule = rule_of_key(g["rule_key"]) or 0
            for hours in (HOUR_BUCKET, DAY_BUCKET):
                start = bucket_start(g["hour"], hours)
                labels = (hours, start, g["queue"], g["failure_category"], rule)
                rows[(*labels, 0)][0] += g["retried"]
                if g["succeeded"]:
                    rows[(*labels, g["retries"] or 0)][1] += g["succeeded"]
        hourly = sum(1 for key in rows if key[0] == HOUR_BUCKET)
        upsert_add(
            RetryYieldBucket,
            keys=("bucket_hours", "start", "queue", "category", "rule", "retries"),
            amounts=("retried_jobs", "succeeded_jobs"),
            rows=[(*key, retried, succeeded) for key, (retried, succeeded) in sorted(rows.items())],
        )
        RollupMark.objects.update_or_create(name=YIELD_MARK, defaults={"covers_since": START})
    return hourly
