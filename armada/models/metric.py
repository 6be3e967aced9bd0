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


class MetricGauge(models.Model):
    """A gauge the scheduler sets once per cycle (Armada's per-cycle gauges), kept in the
    database so that every web process serves the last cycle's values. A cycle replaces all
    the rows of the names it sets in one transaction (``services.round_metrics``)."""

    name = models.CharField(max_length=128)
    labels_key = models.CharField(max_length=512)
    labels = models.JSONField(default=dict)
    value = models.FloatField(default=0.0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["name", "labels_key"], name="metric_gauge_unique")
        ]

    def __str__(self) -> str:
        return f"{self.name}{{{self.labels_key}}} {self.value}"


class RunUsage(models.Model):
    """What a run's pod used at its latest ``utilisation`` event, per resource (milli-units,
    as ``core.quantity``), written in the event's transaction (``services.usage_metrics``)."""

    run = models.ForeignKey("armada.Run", on_delete=models.CASCADE, related_name="usage")
    resource = models.CharField(max_length=64)
    value = models.BigIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "resource"], name="run_usage_unique")]
