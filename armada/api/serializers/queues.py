"""Queues: a queue as the API shows it, the queue body, and a queue's job sets."""

from __future__ import annotations

from rest_framework import serializers

from armada.api.serializers.fields import label_field
from armada.core.queues import SUBJECT_KINDS, VERBS
from armada.models import Queue


class QueueSerializer(serializers.ModelSerializer):
    priorityFactor = serializers.FloatField(source="priority_factor")
    groupOwners = serializers.JSONField(source="group_owners")
    retryPolicies = serializers.JSONField(source="retry_policies")
    createdAt = serializers.DateTimeField(source="created_at")
    updatedAt = serializers.DateTimeField(source="updated_at")

    class Meta:
        model = Queue
        fields = [
            "name",
            "priorityFactor",
            "owners",
            "groupOwners",
            "permissions",
            "labels",
            "cordoned",
            "retryPolicies",
            "createdAt",
            "updatedAt",
        ]
        read_only_fields = fields


class SubjectSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=SUBJECT_KINDS)
    name = serializers.CharField()


class PermissionSerializer(serializers.Serializer):
    subjects = SubjectSerializer(many=True, allow_empty=False)
    verbs = serializers.ListField(child=serializers.ChoiceField(choices=VERBS), allow_empty=False)


class QueueInputSerializer(serializers.Serializer):
    """Documents the body; validation itself is ``core.queues.parse_queue``."""

    name = label_field()
    priorityFactor = serializers.FloatField(required=False, min_value=1.0)
    owners = serializers.ListField(child=serializers.CharField(), required=False)
    groupOwners = serializers.ListField(child=serializers.CharField(), required=False)
    permissions = PermissionSerializer(many=True, required=False)
    labels = serializers.DictField(child=serializers.CharField(allow_blank=True), required=False)
    cordoned = serializers.BooleanField(required=False)
    retryPolicies = serializers.ListField(child=serializers.CharField(), required=False)
    resourceLimits = serializers.DictField(
        child=serializers.FloatField(min_value=0, max_value=1),
        required=False,
        help_text="deprecated and ignored (accepted for Armada's queue files); the answer "
        "carries a `Warning` header saying so",
    )


class StateCountsSerializer(serializers.Serializer):
    queued = serializers.IntegerField()
    leased = serializers.IntegerField()
    pending = serializers.IntegerField()
    running = serializers.IntegerField()
    succeeded = serializers.IntegerField()
    failed = serializers.IntegerField()
    cancelled = serializers.IntegerField()
    preempted = serializers.IntegerField()
    rejected = serializers.IntegerField()


class JobSetSerializer(serializers.Serializer):
    queue = serializers.CharField()
    jobSetId = serializers.CharField()
    counts = StateCountsSerializer(help_text="jobs per state")
    total = serializers.IntegerField()
    active = serializers.BooleanField(help_text="true while any job has not finished")
    latestSubmittedAt = serializers.DateTimeField()
