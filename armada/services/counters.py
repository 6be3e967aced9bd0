"""Counters kept in the database (see ``models.MetricCounter``).

``counters_add`` runs in the caller's transaction, so a counted change and its count commit
together: a crash loses neither alone. Counters are written after the transaction's events,
under the event-log lock, which keeps their row locks out of the way of every other lock
(``services.locking``).
"""

from __future__ import annotations

from collections import Counter as _Tally
from collections.abc import Mapping

from django.db import IntegrityError, transaction
from django.db.models import F

from armada.models import MetricCounter


def labels_key(labels: Mapping[str, str]) -> str:
    return ",".join(f"{k}={labels[k]}" for k in sorted(labels))


def counters_add(*, name: str, increments: Mapping[tuple[tuple[str, str], ...], int]) -> None:
    """Add to counter ``name``; ``increments`` maps label tuples ``(("k", "v"), ...)`` to amounts."""
    for label_items, amount in sorted(increments.items()):
        if not amount:
            continue
        labels = dict(label_items)
        key = labels_key(labels)
        with transaction.atomic():
            updated = MetricCounter.objects.filter(name=name, labels_key=key).update(
                value=F("value") + amount
            )
            if not updated:
                _, created = MetricCounter.objects.get_or_create(
                    name=name, labels_key=key, defaults={"labels": labels, "value": amount}
                )
                if not created:
                    MetricCounter.objects.filter(name=name, labels_key=key).update(
                        value=F("value") + amount
                    )


def tally(*label_dicts: Mapping[str, str]) -> dict[tuple[tuple[str, str], ...], int]:
    """Count identical label sets: ``tally({"a": "x"}, {"a": "x"}) == {(("a", "x"),): 2}``."""
    return dict(_Tally(tuple(sorted(d.items())) for d in label_dicts))


def counter_values(*, name: str) -> list[tuple[dict[str, str], int]]:
    return [
        (c.labels, c.value) for c in MetricCounter.objects.filter(name=name).order_by("labels_key")
    ]


def counters_reset_if_due(*, names: list[str], now, interval_seconds: float) -> bool:
    """Zero the counters ``names`` every ``interval_seconds`` (0: never), like Armada's
    queue-level state metrics, so that series of idle queues and retired policies go away.
    The next reset time is kept in a ``LeaderLease`` row, so all schedulers share one clock."""
    from datetime import timedelta

    from armada.models import LeaderLease
    from armada.services.events import lock_event_log

    if interval_seconds <= 0:
        return False
    with transaction.atomic():
        mark = LeaderLease.objects.select_for_update().filter(name="metrics-reset").first()
        if mark is None:
            try:
                with transaction.atomic():  # a savepoint: another process may create it too
                    LeaderLease.objects.create(
                        name="metrics-reset", expires_at=now + timedelta(seconds=interval_seconds)
                    )
            except IntegrityError:
                pass  # it did, at the same moment: its clock is as good as ours
            return False
        if now < mark.expires_at:
            return False
        # Counters are written only under the event-log lock (``services.locking``), so
        # the reset takes it too rather than racing the writers for the counter rows.
        lock_event_log()
        MetricCounter.objects.filter(name__in=names).delete()
        mark.expires_at = now + timedelta(seconds=interval_seconds)
        mark.save(update_fields=["expires_at"])
    return True
