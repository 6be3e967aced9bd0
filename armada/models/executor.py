from __future__ import annotations

from django.db import models

from armada.models.queue import EXECUTOR_PERMISSIONS


class Executor(models.Model):
    """A cluster that runs jobs; ``last_heartbeat`` drives lease expiry."""

    id = models.CharField(primary_key=True, max_length=63)
    pool = models.CharField(max_length=63)
    backend = models.CharField(max_length=32)
    tracked_node_labels = models.JSONField(default=list, blank=True)
    cordoned = models.BooleanField(default=False)
    cordon_reason = models.CharField(max_length=255, blank=True, default="")
    registered_at = models.DateTimeField()
    last_heartbeat = models.DateTimeField()

    class Meta:
        ordering = ["id"]
        permissions = list(EXECUTOR_PERMISSIONS.items())

    def __str__(self) -> str:
        return self.id


class Node(models.Model):
    """A machine of an executor; ``allocatable`` is in milli-units (``core.quantity``)."""

    executor = models.ForeignKey(Executor, on_delete=models.CASCADE, related_name="nodes")
    name = models.CharField(max_length=253)
    pool = models.CharField(max_length=63)
    labels = models.JSONField(default=dict, blank=True)
    taints = models.JSONField(default=list, blank=True)
    allocatable = models.JSONField(default=dict)
    unschedulable = models.BooleanField(default=False)
    last_seen = models.DateTimeField()

    class Meta:
        ordering = ["executor_id", "name"]
        constraints = [
            models.UniqueConstraint(fields=["executor", "name"], name="node_unique_per_executor")
        ]

    def __str__(self) -> str:
        return f"{self.executor_id}/{self.name}"
