"""Scheduling records: why a queued job was not leased, and the scheduling rounds."""

from __future__ import annotations

from rest_framework import serializers


class PendingReasonSerializer(serializers.Serializer):
    reason = serializers.CharField()
    roundId = serializers.IntegerField(allow_null=True)
    at = serializers.DateTimeField()


class RoundSummarySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    startedAt = serializers.DateTimeField()
    durationMs = serializers.IntegerField()
    considered = serializers.IntegerField()
    leased = serializers.IntegerField()
    expired = serializers.IntegerField()
    decided = serializers.IntegerField()
    unschedulable = serializers.IntegerField()


class JobSchedulingSerializer(serializers.Serializer):
    jobId = serializers.CharField()
    queue = serializers.CharField()
    jobSetId = serializers.CharField()
    state = serializers.CharField()
    pendingReason = PendingReasonSerializer(
        allow_null=True,
        help_text="why the queued job was not leased; null when it is not queued or no round "
        "has considered it yet",
    )
    latestRounds = RoundSummarySerializer(many=True, help_text="the latest rounds, newest first")
