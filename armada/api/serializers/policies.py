"""Retry policies: the policy file (rules and their mutations) and a saved policy."""

from __future__ import annotations

from rest_framework import serializers

from armada.api.serializers.fields import QUANTITY_PATTERN, label_field
from armada.core.policy import MAX_RETRY_LIMIT


class MemoryBumpSerializer(serializers.Serializer):
    factor = serializers.FloatField(required=False, min_value=1.0, help_text="greater than 1.0")
    static = serializers.RegexField(QUANTITY_PATTERN, required=False)


class MutateResourcesSerializer(serializers.Serializer):
    memory = MemoryBumpSerializer(help_text="exactly one of factor or static")


class AffinitySerializer(serializers.Serializer):
    avoidSameNode = serializers.BooleanField()


class MutateSerializer(serializers.Serializer):
    affinity = AffinitySerializer(required=False)
    resources = MutateResourcesSerializer(required=False)


class BackoffSerializer(serializers.Serializer):
    initial = serializers.CharField(
        help_text="the delay before the first retry: a duration such as 500ms, 30s, 5m or 1h30m "
        "(or a number of seconds), at least 1ms"
    )
    factor = serializers.FloatField(
        required=False,
        min_value=1.0,
        help_text="each later retry waits this many times longer "
        "(default 1: the same delay every time)",
    )
    max = serializers.CharField(
        required=False,
        help_text="the longest delay, a duration of at least initial; required when factor > 1",
    )


class RuleSerializer(serializers.Serializer):
    action = serializers.ChoiceField(choices=["Retry", "Fail"])
    onCategory = serializers.CharField()
    onSubcategory = serializers.CharField(required=False)
    mutate = MutateSerializer(
        required=False, help_text="Retry rules only (on a Fail rule: ignored, with a warning)"
    )
    backoff = BackoffSerializer(
        required=False,
        help_text="our extension (not in Armada's format): the retried job is not leased before "
        "min(initial * factor ** retries before, max) has passed; Retry rules only (on a Fail "
        "rule: ignored, with a warning); see docs/retry-backoff.md",
    )


class RetryPolicySerializer(serializers.Serializer):
    """Documents the policy file; validation itself is ``core.policy.parse_policy``."""

    apiVersion = serializers.ChoiceField(choices=["armadaproject.io/v1beta1"], required=False)
    kind = serializers.ChoiceField(choices=["RetryPolicy"], required=False)
    name = label_field()
    retryLimit = serializers.IntegerField(min_value=0, max_value=MAX_RETRY_LIMIT)
    defaultAction = serializers.ChoiceField(choices=["Retry", "Fail"])
    rules = RuleSerializer(many=True, required=False)
    version = serializers.IntegerField(read_only=True)
    createdAt = serializers.DateTimeField(read_only=True)
    updatedAt = serializers.DateTimeField(read_only=True)
    updatedBy = serializers.CharField(read_only=True)


class RetryPolicySavedSerializer(RetryPolicySerializer):
    """A policy just created, replaced or checked: the policy and the warnings of its parse."""

    kind = serializers.CharField(required=False, help_text="RetryPolicy")  # one enum per name

    warnings = serializers.ListField(
        child=serializers.DictField(child=serializers.CharField()),
        read_only=True,
        help_text="what was accepted but has no effect (a mutate or backoff block on a Fail "
        "rule), "
        "as {field, message}",
    )
