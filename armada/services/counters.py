"""Counters kept in the database (see ``models.MetricCounter``).

``counters_add`` runs in the caller's transaction, so a counted change and its count commit
together: a crash loses neither alone. Counters are written after the transaction's events,
under the event-log lock, which keeps their row locks out of the way of every other lock
(``services.locking``).
"""

from __future__ import annotations

import functools
import json
from collections import Counter as _Tally
from collections.abc import Mapping
from datetime import datetime, timedelta

from django.db import IntegrityError, connection, transaction

from armada.models import MetricCounter
from armada.services.bulk import array_literal


def labels_key(labels: Mapping[str, str]) -> str:
    return ",".join(f"{k}={labels[k]}" for k in sorted(labels))


Labels = tuple[tuple[str, str], ...]


@functools.lru_cache(maxsize=1 << 15)
def _key_of(label_items: Labels) -> str:
    """``labels_key`` of a label tuple, remembered: a scheduler adds to the same few
    thousand per-node label sets every cycle."""
    return labels_key(dict(label_items))


def counters_add(*, name: str, increments: Mapping[Labels, int]) -> None:
    """Add to counter ``name``; ``increments`` maps label tuples ``(("k", "v"), ...)`` to
    amounts (see :func:`counters_add_many`)."""
    counters_add_many({name: increments})


def counters_add_many(increments: Mapping[str, Mapping[Labels, int]]) -> None:
    """Add to several counters at once: ``increments`` maps a counter's name to its label
    tuples' amounts. A missing row is created with the amount, an existing one has it added.

    On PostgreSQL the rows that exist are added to by one ``UPDATE`` over arrays, whatever
    the number of counters and label sets, without their labels (a steady scheduler adds to
    the same few thousand per-node counters every cycle); only the label sets it did not
    find are then inserted, with ``INSERT ... ON CONFLICT DO UPDATE`` (a row another
    transaction created meanwhile is added to). On SQLite, an upsert per few hundred label
    sets. Callers hold the event-log lock (see the module docstring), so the order in which
    the rows are locked cannot deadlock two counter writers."""
    amounts: dict[tuple[str, str], tuple[Labels, int]] = {}
    for name, per_labels in increments.items():
        for label_items, amount in per_labels.items():
            if not amount:
                continue
            key = (name, _key_of(label_items))
            _, before = amounts.get(key, (label_items, 0))
            amounts[key] = (label_items, before + amount)
    if not amounts:
        return
    table = connection.ops.quote_name(MetricCounter._meta.db_table)
    ordered = sorted(amounts.items())
    upsert = (
        f"INSERT INTO {table} (name, labels_key, labels, value) {{rows}}"
        f" ON CONFLICT (name, labels_key) DO UPDATE SET value = {table}.value + excluded.value"
    )
    with transaction.atomic(), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                f"UPDATE {table} AS t SET value = t.value + u.v"
                " FROM unnest(%s::text[], %s::text[], %s::bigint[]) AS u(n, k, v)"
                " WHERE t.name = u.n AND t.labels_key = u.k RETURNING t.name, t.labels_key",
                [
                    array_literal([name for (name, _), _ in ordered]),
                    array_literal([key for (_, key), _ in ordered]),
                    array_literal([amount for _, (_, amount) in ordered]),
                ],
            )
            found = set(cursor.fetchall())
            missing = [item for item in ordered if item[0] not in found]
            if missing:
                cursor.execute(
                    upsert.format(
                        rows="SELECT n, k, l::jsonb, v FROM unnest(%s::text[], %s::text[],"
                        " %s::text[], %s::bigint[]) AS u(n, k, l, v) ORDER BY n, k"
                    ),
                    [
                        array_literal([name for (name, _), _ in missing]),
                        array_literal([key for (_, key), _ in missing]),
                        array_literal([json.dumps(dict(labels)) for _, (labels, _) in missing]),
                        array_literal([amount for _, (_, amount) in missing]),
                    ],
                )
            return
        for start in range(0, len(ordered), _UPSERT_BATCH):
            batch = ordered[start : start + _UPSERT_BATCH]
            params: list = []
            for (name, key), (labels, amount) in batch:
                params += [name, key, json.dumps(dict(labels)), amount]
            values = ", ".join(["(%s, %s, %s, %s)"] * len(batch))
            cursor.execute(upsert.format(rows=f"VALUES {values}"), params)


_UPSERT_BATCH = 500


def tally(*label_dicts: Mapping[str, str]) -> dict[tuple[tuple[str, str], ...], int]:
    """Count identical label sets: ``tally({"a": "x"}, {"a": "x"}) == {(("a", "x"),): 2}``."""
    return dict(_Tally(tuple(sorted(d.items())) for d in label_dicts))


def counter_values(*, name: str) -> list[tuple[dict[str, str], int]]:
    return [
        (c.labels, c.value) for c in MetricCounter.objects.filter(name=name).order_by("labels_key")
    ]


RESET_MARK = "metrics-reset"


def _interval_tag(interval_seconds: float) -> str:
    return f"interval={float(interval_seconds)!r}"


def _tagged_interval(holder: str) -> float | None:
    """The interval a reset mark was made with (from ``_interval_tag``), None if unknown."""
    key, _, value = holder.partition("=")
    if key != "interval":
        return None
    try:
        return float(value)
    except ValueError:
        return None


def next_reset_at(
    *, marked: datetime, made_with: float | None, interval_seconds: float, now: datetime
) -> datetime:
    """When the next reset is due once the interval has changed from ``made_with`` (None:
    not recorded) to ``interval_seconds`` (more than 0), for a mark that said ``marked``.

    The last reset was ``marked - made_with``; the next one is that plus the new interval,
    whether that is sooner (a shorter interval: perhaps at once) or later (a longer one).
    A mark that does not say its interval (made before it was recorded) does not tell when
    the last reset was: its time is kept, but no later than one new interval from ``now``."""
    if made_with is None:
        return min(marked, now + timedelta(seconds=interval_seconds))
    return marked - timedelta(seconds=made_with) + timedelta(seconds=interval_seconds)


def counters_reset_if_due(*, names: list[str], now: datetime, interval_seconds: float) -> bool:
    """Zero the counters ``names`` every ``interval_seconds`` (0: never), like Armada's
    queue-level state metrics, so that series of idle queues and retired policies go away.

    The next reset time is kept in the ``LeaderLease`` row ``metrics-reset`` (its
    ``expires_at``), so all schedulers share one clock; its ``holder`` records the interval
    that time was reckoned with. A changed interval therefore applies from the next start:
    the next reset is recomputed from the last one and the new interval (``next_reset_at``).
    While the interval is 0 the mark is left as it is, so turning the resets on again goes
    on from the last reset."""
    from armada.models import LeaderLease
    from armada.services.events import lock_event_log

    if interval_seconds <= 0:
        return False
    tag = _interval_tag(interval_seconds)
    with transaction.atomic():
        mark = LeaderLease.objects.select_for_update().filter(name=RESET_MARK).first()
        if mark is None:
            try:
                with transaction.atomic():  # a savepoint: another process may create it too
                    LeaderLease.objects.create(
                        name=RESET_MARK,
                        holder=tag,
                        expires_at=now + timedelta(seconds=interval_seconds),
                    )
            except IntegrityError:
                pass  # it did, at the same moment: its clock is as good as ours
            return False
        if mark.holder != tag:
            mark.expires_at = next_reset_at(
                marked=mark.expires_at,
                made_with=_tagged_interval(mark.holder),
                interval_seconds=interval_seconds,
                now=now,
            )
            mark.holder = tag
            if now < mark.expires_at:
                mark.save(update_fields=["expires_at", "holder"])
        if now < mark.expires_at:
            return False
        # Counters are written only under the event-log lock (``services.locking``), so
        # the reset takes it too rather than racing the writers for the counter rows.
        lock_event_log()
        MetricCounter.objects.filter(name__in=names).delete()
        mark.expires_at = now + timedelta(seconds=interval_seconds)
        mark.save(update_fields=["expires_at", "holder"])
    return True
