"""Gauges the scheduler sets once per cycle, kept in the database (``models.MetricGauge``).

Armada's scheduler resets its per-cycle gauges and sets them again after every cycle; here
the cycle rewrites the rows of the names it sets, in the transaction that counts the cycle
(``services.cycle_metrics``), so a scrape in any web process sees one whole cycle's values,
never a mix of two. A histogram kept this way is stored as its cumulative ``{name}_bucket``
rows (with ``le``) plus ``{name}_sum`` and ``{name}_count``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from django.db import connection

from armada.models import MetricGauge
from armada.services.bulk import insert_rows
from armada.services.counters import labels_key

#: name -> [(labels, value)]
GaugeRows = Mapping[str, Sequence[tuple[Mapping[str, str], float]]]


def gauges_replace(*, names: Iterable[str], rows: GaugeRows) -> None:
    """Make the rows of ``names`` exactly ``rows`` (call in the cycle's transaction).

    The stored rows of those names are read once and only the difference is written: a
    value that changed is updated in place, a label set no longer given is deleted, a new
    one inserted. A steady cycle sets most of its gauges (a hundred queues' worth) to the
    values they already have, which then cost no write."""
    names = sorted(set(names) | set(rows))
    wanted: dict[tuple[str, str], tuple[Mapping[str, str], float]] = {}
    for name in names:
        for labels, value in rows.get(name, ()):
            wanted[(name, labels_key(labels))] = (labels, float(value))
    stored = {
        (name, key): (id_, value)
        for id_, name, key, value in MetricGauge.objects.filter(name__in=names).values_list(
            "id", "name", "labels_key", "value"
        )
    }
    gone = sorted(id_ for key, (id_, _) in stored.items() if key not in wanted)
    if gone:
        MetricGauge.objects.filter(id__in=gone).delete()
    changed = sorted(
        (stored[key][0], value)
        for key, (_, value) in wanted.items()
        if key in stored and stored[key][1] != value
    )
    if changed:
        table = connection.ops.quote_name(MetricGauge._meta.db_table)
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                cursor.execute(
                    f"UPDATE {table} AS g SET value = u.v FROM unnest(%s::bigint[],"
                    " %s::double precision[]) AS u(i, v) WHERE g.id = u.i",
                    [[id_ for id_, _ in changed], [value for _, value in changed]],
                )
            else:
                cursor.executemany(
                    f"UPDATE {table} SET value = %s WHERE id = %s",
                    [(value, id_) for id_, value in changed],
                )
    insert_rows(
        MetricGauge,
        [
            {"name": name, "labels_key": key, "labels": dict(labels), "value": value}
            for (name, key), (labels, value) in sorted(wanted.items())
            if (name, key) not in stored
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
