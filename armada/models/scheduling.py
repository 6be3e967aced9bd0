from __future__ import annotations

from django.db import models


class SchedulingRound(models.Model):
    """One scheduling cycle, kept for the most recent rounds: what it saw and did."""

    started_at = models.DateTimeField()
    duration_ms = models.PositiveIntegerField(default=0)
    considered = models.PositiveIntegerField(default=0)
    leased = models.PositiveIntegerField(default=0)
    expired = models.PositiveIntegerField(default=0)
    decided = models.PositiveIntegerField(default=0)
    unschedulable = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"round {self.id} at {self.started_at:%H:%M:%S}"


class SchedulingReason(models.Model):
    """Why a queued job was not leased, as of the last round that considered it."""

    job = models.OneToOneField(
        "armada.Job", on_delete=models.CASCADE, primary_key=True, related_name="scheduling_reason"
    )
    reason = models.TextField()
    round = models.ForeignKey(
        SchedulingRound, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    updated_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.job_id}: {self.reason}"
