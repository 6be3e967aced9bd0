"""Acting on jobs: cancel (by ids, by job set, by state), preempt and reprioritize, and what
each answers."""

from __future__ import annotations

from rest_framework import serializers

from armada.core.states import JobState
from armada.core.submission import MAX_PRIORITY


class CancelSerializer(serializers.Serializer):
    queue = serializers.CharField()
    jobSetId = serializers.CharField()
    jobIds = serializers.ListField(child=serializers.CharField(), required=False)
    reason = serializers.CharField(required=False, max_length=255)


class CancelByStateSerializer(serializers.Serializer):
    queue = serializers.CharField()
    states = serializers.ListField(
        child=serializers.ChoiceField(choices=[s.value for s in JobState if not s.terminal]),
        allow_empty=False,
        help_text="cancel every job of the queue (any job set) in one of these states",
    )
    reason = serializers.CharField(required=False, max_length=255)


class PreemptSerializer(serializers.Serializer):
    reason = serializers.CharField(required=False, max_length=255)


class PreemptResultSerializer(serializers.Serializer):
    jobId = serializers.CharField()
    runIds = serializers.ListField(
        child=serializers.CharField(), help_text="the runs asked to stop"
    )


class ReprioritizeSerializer(serializers.Serializer):
    queue = serializers.CharField()
    jobSetId = serializers.CharField()
    priority = serializers.IntegerField(min_value=0, max_value=MAX_PRIORITY)
    jobIds = serializers.ListField(child=serializers.CharField(), required=False)


class ReprioritizeResultSerializer(serializers.Serializer):
    jobIds = serializers.ListField(child=serializers.CharField(), help_text="the jobs changed")
