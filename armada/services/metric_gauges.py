"""Gauges the scheduler sets once per cycle, kept in the database (``models.MetricGauge``).

Armada's scheduler resets its per-cycle gauges and sets them again after every cycle; here
the cycle replaces every row of the names it sets in the transaction that counts the cycle
(``services.cycle_metrics``), so a scrape in any web process sees one whole cycle's values,
never a mix of two. A histogram kept this way is stored as its cumulative ``{name}_bucket``
rows (with ``le``) plus ``{name}_sum`` and ``{name}_count``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from armada.models import MetricGauge
from armada.services.bulk import insert_rows
from armada.services.counters import labels_key

#: name -> [(labels, value)]
GaugeRows = Mapping[str, Sequence[tuple[Mapping[str, str], float]]]


def gauges_replace(*, names: Iterable[str], rows: GaugeRows) -> None:
    """Delete every row of ``names`` and write ``rows`` (call in the cycle's transaction)."""
    names = sorted(set(names) | set(rows))
    MetricGauge.objects.filter(name__in=names).delete()
    insert_rows(
        MetricGauge,
        [
            {
                "name": name,
                "labels_key": labels_key(labels),
                "labels": dict(labels),
                "value": float(value),
            }
            for name in names
            for labels, value in rows.get(name, ())
        ],
    )


def gauges_read() -> dict[str, list[tuple[dict, float]]]:
    """Every stored gauge row, by name (one query)."""
    out: dict[str, list[tuple[dict, float]]] = {}
    for name, labels, value in MetricGauge.objects.order_by("name", "labels_key").values_list(
        "name", "labels", "value"
    ):
        out.setdefault(name, []).append((labels or {}, value))
    return out
