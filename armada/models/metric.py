from __future__ import annotations

from django.db import models


class MetricCounter(models.Model):
    """A Prometheus counter kept in the database, so that every process can add to it (in the
    same transaction as the change it counts) and every web process reports the same value.

    ``labels_key`` is the canonical text of ``labels`` (sorted ``k=v`` pairs), unique per name.
    """

    name = models.CharField(max_length=128)
    labels_key = models.CharField(max_length=512)
    labels = models.JSONField(default=dict)
    value = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["name", "labels_key"], name="metric_counter_unique")
        ]

    def __str__(self) -> str:
        return f"{self.name}{{{self.labels_key}}} {self.value}"
