"""The gauges and histograms the scheduler sets once per cycle, served from the rows the last
cycle stored (``services.metric_gauges``; one query per scrape): the round's statistics
(``services.round_metrics``) and how long queued jobs have waited and active runs have run
(``services.duration_metrics``). Every web process serves the same last cycle."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence

from prometheus_client.core import HistogramMetricFamily, Metric

from armada.metrics.families import INF, gauge
from armada.services import duration_metrics as durations
from armada.services.metric_gauges import gauges_read
from armada.services.round_metrics import ROUND_GAUGES

_HISTOGRAMS = {durations.QUEUED: durations.QUEUED_LABELS, durations.RUN_TIME: durations.RUN_LABELS}
_STAT_GAUGES = {
    f"{name}{s}": labels
    for name, labels in _HISTOGRAMS.items()
    for s in ("_min", "_max", "_median")
}


def describe() -> Iterator[Metric]:
    for name in (*ROUND_GAUGES, *_STAT_GAUGES):
        yield Metric(name, "", "gauge")
    for name in _HISTOGRAMS:
        yield Metric(name, "", "histogram")


def _values(labels: Mapping, names: Sequence[str]) -> tuple[str, ...]:
    return tuple(str(labels.get(k, "")) for k in names)


def _histogram(
    rows: Mapping[str, list[tuple[dict, float]]], name: str, labels: Sequence[str]
) -> HistogramMetricFamily:
    buckets: dict[tuple, list[tuple[str, float]]] = defaultdict(list)
    for ls, v in rows.get(f"{name}_bucket", []):
        buckets[_values(ls, labels)].append((ls.get("le", INF), v))
    sums = {_values(ls, labels): v for ls, v in rows.get(f"{name}_sum", [])}
    family = HistogramMetricFamily(name, durations.HELP[name], labels=list(labels))
    for key in sorted(buckets):
        ordered = sorted(buckets[key], key=lambda b: float(b[0]))
        family.add_metric(list(key), ordered, sum_value=sums.get(key, 0.0))
    return family


def collect() -> Iterator[Metric]:
    rows = gauges_read()
    for name, (help_text, labels) in ROUND_GAUGES.items():
        family = gauge(name, help_text, labels)
        for ls, v in rows.get(name, []):
            family.add_metric(list(_values(ls, labels)), v)
        yield family
    for name, labels in _STAT_GAUGES.items():
        family = gauge(name, durations.HELP[name], labels)
        for ls, v in rows.get(name, []):
            family.add_metric(list(_values(ls, labels)), v)
        yield family
    for name, labels in _HISTOGRAMS.items():
        yield _histogram(rows, name, labels)
