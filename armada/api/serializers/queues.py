"""Queues: a queue as the API shows it, the queue body, and a queue's job sets."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from armada.api.serializers.fields import label_field
from armada.core.queues import SUBJECT_KINDS, VERBS
from armada.models import Queue
from armada.services.authz import may_read_queue_access


def _fractions(**kwargs: Any) -> serializers.DictField:
    return serializers.DictField(
        child=serializers.FloatField(min_value=0, max_value=1),
        help_text="resource name -> the largest fraction (0 to 1) of the pool's resources",
        **kwargs,
    )


class PoolResourceLimitsSerializer(serializers.Serializer):
    """Armada's ``PriorityClassPoolResourceLimits``."""

    maximumResourceFraction = _fractions()


class PriorityClassResourceLimitsSerializer(serializers.Serializer):
    """Armada's ``PriorityClassResourceLimits``: a queue's limits for one priority class."""

    maximumResourceFraction = _fractions(required=False)
    maximumResourceFractionByPool = serializers.DictField(
        child=PoolResourceLimitsSerializer(),
        required=False,
        help_text="pool name -> limits there, over maximumResourceFraction per resource",
    )


def limits_field(**kwargs: Any) -> serializers.DictField:
    """``resourceLimitsByPriorityClassName``: priority class name -> its limits."""
    return serializers.DictField(
        child=PriorityClassResourceLimitsSerializer(),
        help_text="priority class name -> the largest fractions of a pool the queue's jobs "
        "of that class may hold, over the class's own maximumResourceFractionPerQueue; {} "
        "for none. Classes and pools must be configured ones",
        **kwargs,
    )


ACCESS_HIDDEN = (
    "null when the caller may not read it: only those who may watch the queue (or hold "
    "create_queue) see who may act on it"
)
ACCESS_FIELDS = ("owners", "groupOwners", "permissions")


class QueueSerializer(serializers.ModelSerializer):
    """A queue as the API shows it to ``context["actor"]``: who may act on it (owners,
    group owners, permissions) is null unless ``authz.may_read_queue_access`` lets them
    read it; every caller reads the rest."""

    priorityFactor = serializers.FloatField(source="priority_factor")
    owners = serializers.JSONField(allow_null=True, help_text=f"user names; {ACCESS_HIDDEN}")
    groupOwners = serializers.JSONField(
        source="group_owners", allow_null=True, help_text=f"group names; {ACCESS_HIDDEN}"
    )
    permissions = serializers.JSONField(
        allow_null=True, help_text=f"[{{subjects: [{{kind, name}}], verbs}}]; {ACCESS_HIDDEN}"
    )
    retryPolicies = serializers.JSONField(source="retry_policies")
    resourceLimitsByPriorityClassName = limits_field(
        source="resource_limits_by_priority_class_name"
    )
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
            "resourceLimitsByPriorityClassName",
            "createdAt",
            "updatedAt",
        ]
        read_only_fields = fields

    def to_representation(self, instance: Queue) -> dict[str, Any]:
        data = super().to_representation(instance)
        if not may_read_queue_access(self.context.get("actor"), instance):
            data.update(dict.fromkeys(ACCESS_FIELDS))
        return data


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
    resourceLimitsByPriorityClassName = limits_field(required=False)
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
