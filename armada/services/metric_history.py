"""History of the database counters (``MetricCounter``), for Lookout's charts.

``metrics_sample`` runs every minute (Celery beat, queue ``scheduler``): it writes a
``MetricSample`` for every counter series whose value differs from that series' newest
sample (a series new since the last sampling gets a 0 first, so its first value counts as
an increase), a 0 for a series whose counter row is gone (``counters_reset_if_due`` deletes them),
and removes samples older than ``KEEP`` except the newest of each series (the baseline the
next change is measured from). Writing changes only keeps a quiet installation's history
small; between two samples a series' value is the earlier sample's.

``metric_increases`` turns samples into increases per time bucket, as Prometheus'
``increase()`` does: a drop in value is a counter reset, after which the new value is all
increase; a series' first sample ever is its baseline, not an increase.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Max

from armada.metrics import DB_COUNTERS
from armada.models import MetricCounter, MetricSample

KEEP = timedelta(days=7)


@dataclass(frozen=True)
class SampleReport:
    written: int
    pruned: int


def _newest_samples(names: Iterable[str] | None = None) -> dict[tuple[str, str], MetricSample]:
    newest = MetricSample.objects.values("name", "labels_key").annotate(last=Max("id"))
    if names is not None:
        newest = newest.filter(name__in=list(names))
    ids = [row["last"] for row in newest]
    return {(s.name, s.labels_key): s for s in MetricSample.objects.filter(id__in=ids)}


def metrics_sample(*, now: datetime, keep: timedelta = KEEP) -> SampleReport:
    """Copy the counters that changed since their last sample; prune old samples."""
    with transaction.atomic():
        last = _newest_samples()
        # Only the counters Lookout charts: the scheduler's cycle counters (Armada's names,
        # ``services.cycle_metrics``) live in the same table but have no history page.
        counters = MetricCounter.objects.filter(name__in=list(DB_COUNTERS))
        current = {(c.name, c.labels_key): c for c in counters}
        rows: list[MetricSample] = []
        for key, c in current.items():
            if key in last and last[key].value == c.value:
                continue
            if key not in last and last:
                # A series born since the last sampling started from 0: write that first
                # (same time, lower id), so that its first value counts as an increase.
                # On the very first sampling every value is only a baseline.
                rows.append(
                    MetricSample(
                        name=c.name, labels_key=c.labels_key, labels=c.labels, value=0, at=now
                    )
                )
            rows.append(
                MetricSample(
                    name=c.name, labels_key=c.labels_key, labels=c.labels, value=c.value, at=now
                )
            )
        rows += [
            MetricSample(name=s.name, labels_key=s.labels_key, labels=s.labels, value=0, at=now)
            for key, s in last.items()
            if key not in current and s.value != 0
        ]
        MetricSample.objects.bulk_create(rows, batch_size=1000)
        keep_ids = [s.id for s in last.values()]
        pruned, _ = MetricSample.objects.filter(at__lt=now - keep).exclude(id__in=keep_ids).delete()
    return SampleReport(written=len(rows), pruned=pruned)


@dataclass
class Series:
    """Increases per bucket of one line of a chart."""

    label: str
    values: list[int]

    @property
    def total(self) -> int:
        return sum(self.values)


def bucket_starts(*, start: datetime, end: datetime, buckets: int) -> list[datetime]:
    step = (end - start) / buckets
    return [start + step * i for i in range(buckets)]


def metric_increases(
    *,
    name: str,
    start: datetime,
    end: datetime,
    buckets: int,
    line_of: Callable[[dict], str | None],
) -> list[Series]:
    """Increases of counter ``name`` in ``buckets`` equal buckets of [start, end), summed into
    lines: ``line_of(labels)`` names the line a series adds to (None leaves it out). Lines
    are in order of their total, largest first."""
    step = (end - start) / buckets
    baseline_ids = (
        MetricSample.objects.filter(name=name, at__lt=start)
        .values("labels_key")
        .annotate(last=Max("id"))
        .values_list("last", flat=True)
    )
    previous: dict[str, int] = {
        s.labels_key: s.value for s in MetricSample.objects.filter(id__in=list(baseline_ids))
    }
    lines: dict[str, list[int]] = defaultdict(lambda: [0] * buckets)
    samples = MetricSample.objects.filter(name=name, at__gte=start, at__lt=end).order_by("at", "id")
    for sample in samples:
        before = previous.get(sample.labels_key)
        previous[sample.labels_key] = sample.value
        if before is None:
            continue  # the series' first sample: its baseline
        increase = sample.value - before if sample.value >= before else sample.value
        line = line_of(sample.labels)
        if not increase or line is None:
            continue
        index = min(buckets - 1, int((sample.at - start) / step))
        lines[line][index] += increase
    series = [Series(label=label, values=values) for label, values in lines.items()]
    series.sort(key=lambda s: (-s.total, s.label))
    return series
