"""History of the database counters (``MetricCounter``), for Lookout's charts.

``metrics_sample`` runs every minute (Celery beat, queue ``scheduler``): it writes a
``MetricSample`` for every counter series whose value differs from that series' newest
sample (a series new since the last sampling gets a 0 first, so its first value counts as
an increase), a 0 for a series whose counter row is gone (``counters_reset_if_due`` deletes them),
and removes samples older than ``KEEP`` except the newest of each series (the baseline the
next change is measured from). Writing changes only keeps a quiet installation's history
small; between two samples a series' value is the earlier sample's.

The time of the last sampling is kept apart from the samples (a quiet installation writes
none for hours): ``metrics_sample`` sets the ``expires_at`` of the ``LeaderLease`` row named
``metrics-sampled`` to its ``now`` once its samples are committed, the way
``counters_reset_if_due`` keeps its clock in ``metrics-reset``. Lookout reads it to say how
fresh the charts are and whether the sampler may be stopped (``sampling_status``).

``metric_increases`` turns samples into increases per time bucket, as Prometheus'
``increase()`` does: a drop in value is a counter reset, after which the new value is all
increase; a series' first sample ever is its baseline, not an increase.
``unsampled_increases`` is what the counters gained since their newest samples: what the
charts do not show yet.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.db.models import Max, Min, QuerySet

from armada.celery import METRICS_SAMPLE_PERIOD
from armada.metrics import DB_COUNTERS
from armada.models import LeaderLease, MetricCounter, MetricSample

KEEP = timedelta(days=7)
SAMPLE_PERIOD = timedelta(seconds=METRICS_SAMPLE_PERIOD)
SAMPLED_MARK = "metrics-sampled"


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
    _mark_sampled(now)
    return SampleReport(written=len(rows), pruned=pruned)


def _mark_sampled(now: datetime) -> None:
    """Record ``now`` as the last sampling: after the samples' commit, in a statement of its
    own (the row is locked only for that statement, outside every other lock)."""
    if LeaderLease.objects.filter(name=SAMPLED_MARK).update(expires_at=now):
        return
    try:
        with transaction.atomic():  # a savepoint: another sampler may create it at once
            LeaderLease.objects.create(name=SAMPLED_MARK, expires_at=now)
    except IntegrityError:
        LeaderLease.objects.filter(name=SAMPLED_MARK).update(expires_at=now)


@dataclass(frozen=True)
class SamplingStatus:
    """How far the history of ``names`` reaches, for one chosen period ending now.

    ``last_sampled``: when the sampler last ran (the newest sample's time where no run was
    recorded), None if never. ``first_in_period``: the first sample at or after the period's
    start; ``covers_period``: a sample older than the start exists, so the values at the
    start are known and the whole period can be charted.
    """

    last_sampled: datetime | None
    first_in_period: datetime | None
    covers_period: bool

    def stale(self, now: datetime, *, intervals: int = 3) -> bool:
        """More than ``intervals`` sampling periods since the last sampling."""
        return self.last_sampled is not None and now - self.last_sampled > intervals * SAMPLE_PERIOD


def sampling_status(*, names: Iterable[str], start: datetime) -> SamplingStatus:
    names = list(names)
    mark = LeaderLease.objects.filter(name=SAMPLED_MARK).values_list("expires_at", flat=True)
    samples = MetricSample.objects.filter(name__in=names)
    last = mark.first() or samples.aggregate(last=Max("at"))["last"]
    return SamplingStatus(
        last_sampled=last,
        first_in_period=samples.filter(at__gte=start).aggregate(first=Min("at"))["first"],
        covers_period=samples.filter(at__lt=start).exists(),
    )


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
    per_series = series_increases(name=name, start=start, end=end, buckets=buckets)
    return lines_of(per_series, line_of=line_of, buckets=buckets)


def lines_of(
    per_series: dict[str, tuple[dict, list[int]]],
    *,
    line_of: Callable[[dict], str | None],
    buckets: int,
) -> list[Series]:
    """Series (from ``series_increases``) summed into lines, largest total first."""
    lines: dict[str, list[int]] = defaultdict(lambda: [0] * buckets)
    for labels, values in per_series.values():
        line = line_of(labels)
        if line is None or not any(values):
            continue
        lines[line] = [a + b for a, b in zip(lines[line], values, strict=True)]
    series = [Series(label=label, values=values) for label, values in lines.items()]
    series.sort(key=lambda s: (-s.total, s.label))
    return series


def of_queues(rows: QuerySet, queues: Collection[str] | None) -> QuerySet:
    """Counter or sample ``rows`` whose ``queue`` label is one of ``queues`` (read in SQL;
    a series without that label is none of them); every row when ``queues`` is None."""
    return rows if queues is None else rows.filter(labels__queue__in=list(queues))


def series_increases(
    *,
    name: str,
    start: datetime,
    end: datetime,
    buckets: int,
    queues: Collection[str] | None = None,
) -> dict[str, tuple[dict, list[int]]]:
    """Per series of counter ``name`` (by ``labels_key``; only those of ``queues`` when
    given, :func:`of_queues`): its labels and its increases in ``buckets`` equal buckets of
    [start, end). Series without an increase are left out."""
    step = (end - start) / buckets
    baseline_ids = (
        of_queues(MetricSample.objects.filter(name=name, at__lt=start), queues)
        .values("labels_key")
        .annotate(last=Max("id"))
        .values_list("last", flat=True)
    )
    previous: dict[str, int] = {
        s.labels_key: s.value for s in MetricSample.objects.filter(id__in=list(baseline_ids))
    }
    found: dict[str, tuple[dict, list[int]]] = {}
    samples = of_queues(
        MetricSample.objects.filter(name=name, at__gte=start, at__lt=end), queues
    ).order_by("at", "id")
    for sample in samples:
        before = previous.get(sample.labels_key)
        previous[sample.labels_key] = sample.value
        if before is None:
            continue  # the series' first sample: its baseline
        increase = sample.value - before if sample.value >= before else sample.value
        if not increase:
            continue
        _, values = found.setdefault(sample.labels_key, (sample.labels, [0] * buckets))
        values[min(buckets - 1, int((sample.at - start) / step))] += increase
    return found


def unsampled_increases(
    *, name: str, queues: Collection[str] | None = None
) -> dict[str, tuple[dict, int]]:
    """Per series of counter ``name`` (by ``labels_key``; only those of ``queues`` when
    given): its labels and what it gained
    since its newest sample, as the next sampling will read it (a counter below its sample
    was reset: all of its value is new; a series never sampled starts from 0, unless
    nothing was ever sampled: then every value is a baseline). Series that gained nothing
    are left out."""
    newest = _newest_samples([name])
    if not newest and not MetricSample.objects.exists():
        return {}
    found: dict[str, tuple[dict, int]] = {}
    for counter in of_queues(MetricCounter.objects.filter(name=name), queues):
        sample = newest.get((name, counter.labels_key))
        before = sample.value if sample is not None else 0
        gained = counter.value - before if counter.value >= before else counter.value
        if gained:
            found[counter.labels_key] = (counter.labels, gained)
    return found
