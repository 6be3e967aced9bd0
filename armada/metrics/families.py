"""Building blocks of the families served at ``/metrics``: Armada's counters under their exact
names, histograms from per-bucket stored counts, and the stored counters read in one query."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily, Metric

from armada.services.metric_buckets import INF, bucket_label, bucket_of, exponential_buckets

__all__ = [
    "INF",
    "Stored",
    "add_counter",
    "armada_counter",
    "bucket_label",
    "bucket_of",
    "exponential_buckets",
    "gauge",
    "weighted_median",
]


class _ExactName(str):
    """A family name the text exposition does not suffix: it writes a counter's ``# TYPE``
    line as ``name + "_total"``, and Armada's counters (written by Go's client) carry no
    ``_total`` unless their name has one. Adding ``"_total"`` to this name gives the name."""

    def __add__(self, other: str) -> str:
        return str(self) if other == "_total" else str.__add__(self, other)


def armada_counter(name: str, help_text: str) -> Metric:
    """A counter family whose ``# TYPE`` line and samples carry ``name`` exactly."""
    metric = Metric(name, help_text, "counter")
    metric.name = _ExactName(name)
    return metric


def add_counter(metric: Metric, labels: Sequence[str], values: Sequence[str], value: float) -> None:
    metric.add_sample(str(metric.name), dict(zip(labels, values, strict=True)), value)


def gauge(name: str, help_text: str, labels: Sequence[str]) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, help_text, labels=list(labels))


class Stored:
    """The ``MetricCounter`` rows of the served names, read in one query per scrape."""

    def __init__(self, names: Iterable[str]) -> None:
        from armada.models import MetricCounter

        self.rows: dict[str, list[tuple[dict, int]]] = defaultdict(list)
        for name, labels, value in (
            MetricCounter.objects.filter(name__in=list(names))
            .order_by("name", "labels_key")
            .values_list("name", "labels", "value")
        ):
            self.rows[name].append((labels or {}, value))

    def series(self, name: str, labels: Sequence[str]) -> list[tuple[list[str], int]]:
        return [([str(ls.get(k, "")) for k in labels], v) for ls, v in self.rows.get(name, [])]

    def histogram(
        self,
        name: str,
        help_text: str,
        labels: Sequence[str],
        bounds: Sequence[float],
        sum_factor: float,
    ) -> HistogramMetricFamily:
        """``name`` from its stored per-bucket counts (``{name}_bucket``, labels plus ``le``
        of the bucket an observation fell in) and ``{name}_sum`` (times ``sum_factor``), made
        cumulative; the count is the ``+Inf`` bucket's."""
        per: dict[tuple[str, ...], dict[str, int]] = defaultdict(dict)
        sums: dict[tuple[str, ...], float] = defaultdict(float)
        for ls, v in self.rows.get(f"{name}_bucket", []):
            key = tuple(str(ls.get(k, "")) for k in labels)
            per[key][ls.get("le", "")] = per[key].get(ls.get("le", ""), 0) + v
        for ls, v in self.rows.get(f"{name}_sum", []):
            sums[tuple(str(ls.get(k, "")) for k in labels)] += v * sum_factor
        family = HistogramMetricFamily(name, help_text, labels=list(labels))
        if not labels:
            per.setdefault((), {})
        for key in sorted(per):
            seen, buckets = 0, []
            for bound in bounds:
                seen += per[key].get(bucket_label(bound), 0)
                buckets.append((bucket_label(bound), seen))
            buckets.append((INF, seen + per[key].get(INF, 0)))
            family.add_metric(list(key), buckets, sum_value=sums.get(key, 0.0))
        return family


def weighted_median(values: Mapping[float, int]) -> float:
    """The median of values given with their counts (the lower middle of an even count)."""
    total = sum(values.values())
    if not total:
        return 0.0
    half, seen = (total + 1) // 2, 0
    for v in sorted(values):
        seen += values[v]
        if seen >= half:
            return v
    return 0.0
