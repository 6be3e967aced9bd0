from __future__ import annotations

from django.db import models


class MetricSample(models.Model):
    """A past value of a ``MetricCounter`` series, kept for Lookout's charts.

    The sampler (``services.metric_history``) writes a row only when a series' value differs
    from its newest sample (a counter that was reset and is gone is written as 0), so a quiet
    series costs nothing; between two samples the value is the earlier one.
    """

    id = models.BigAutoField(primary_key=True)
    name = models.CharField(max_length=128)
    labels_key = models.CharField(max_length=512)
    labels = models.JSONField(default=dict)
    value = models.BigIntegerField()
    at = models.DateTimeField()

    class Meta:
        ordering = ["at", "id"]
        indexes = [
            models.Index(fields=["name", "at"], name="metric_sample_name_at_idx"),
            models.Index(fields=["name", "labels_key", "at"], name="metric_sample_series_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.name}{{{self.labels_key}}} {self.value} at {self.at:%H:%M:%S}"
