from __future__ import annotations

from django.db import models

from armada.models.queue import EXECUTOR_PERMISSIONS


class Executor(models.Model):
    """A cluster that runs jobs; ``last_heartbeat`` drives lease expiry.

    An executor registers itself through the executor API (``services.executor_sessions``):
    ``session`` is the id of its newest process's session, and a call that carries any other
    session is refused (the older process is fenced). ``nodes_digest`` is the digest of the
    nodes it last reported, so that an unchanged report writes no node row."""

    id = models.CharField(primary_key=True, max_length=63)
    pool = models.CharField(max_length=63)
    backend = models.CharField(max_length=32)
    tracked_node_labels = models.JSONField(default=list, blank=True)
    cordoned = models.BooleanField(default=False)
    cordon_reason = models.CharField(max_length=255, blank=True, default="")
    registered_at = models.DateTimeField()
    last_heartbeat = models.DateTimeField()
    session = models.CharField(max_length=64, blank=True, default="")
    session_opened_at = models.DateTimeField(null=True, blank=True)
    instance = models.CharField(max_length=255, blank=True, default="")
    nodes_digest = models.CharField(max_length=64, blank=True, default="")

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
    unschedulable = models.BooleanField(default=False)  # as the executor reports it
    # Cordoned at the control plane (Binoculars' Cordon, the API): no new leases, whatever
    # the executor reports; kept across the executor's reports of the node.
    cordoned = models.BooleanField(default=False)
    cordon_reason = models.CharField(max_length=255, blank=True, default="")
    # What pods Armada did not start use on the node (milli-units): left free by the scheduler.
    non_armada_allocated = models.JSONField(default=dict, blank=True)
    last_seen = models.DateTimeField()

    class Meta:
        ordering = ["executor_id", "name"]
        constraints = [
            models.UniqueConstraint(fields=["executor", "name"], name="node_unique_per_executor")
        ]

    def __str__(self) -> str:
        return f"{self.executor_id}/{self.name}"
