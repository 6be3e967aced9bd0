"""Output shapes of the API (inputs are validated by the core, which names every field)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from armada.core.quantity import Resources
from armada.models import Job, Queue, Run


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


class QueueInputSerializer(serializers.Serializer):
    """Documents the body; validation itself is ``core.queues.parse_queue``."""

    name = serializers.CharField()
    priorityFactor = serializers.FloatField(required=False)
    owners = serializers.ListField(child=serializers.CharField(), required=False)
    groupOwners = serializers.ListField(child=serializers.CharField(), required=False)
    permissions = serializers.JSONField(required=False)
    labels = serializers.DictField(child=serializers.CharField(), required=False)
    cordoned = serializers.BooleanField(required=False)
    retryPolicies = serializers.ListField(child=serializers.CharField(), required=False)


class JobFileSerializer(serializers.Serializer):
    """Documents the job file; validation itself is ``core.submission.parse_job_file``."""

    queue = serializers.CharField()
    jobSetId = serializers.CharField()
    jobs = serializers.ListField(child=serializers.JSONField())


class SubmitResultSerializer(serializers.Serializer):
    queue = serializers.CharField()
    jobSetId = serializers.CharField()
    jobIds = serializers.ListField(child=serializers.CharField())


class RunSerializer(serializers.ModelSerializer):
    leasedAt = serializers.DateTimeField(source="leased_at")
    pendingAt = serializers.DateTimeField(source="pending_at")
    runningAt = serializers.DateTimeField(source="running_at")
    finishedAt = serializers.DateTimeField(source="finished_at")
    exitCode = serializers.IntegerField(source="exit_code")
    podName = serializers.CharField(source="pod_name")
    failureCategory = serializers.CharField(source="failure_category")
    failureSubcategory = serializers.CharField(source="failure_subcategory")

    class Meta:
        model = Run
        fields = [
            "id",
            "executor",
            "node",
            "pool",
            "state",
            "podName",
            "leasedAt",
            "pendingAt",
            "runningAt",
            "finishedAt",
            "exitCode",
            "reason",
            "message",
            "failureCategory",
            "failureSubcategory",
            "hint",
            "retryable",
            "decision",
        ]
        read_only_fields = fields


class JobSerializer(serializers.ModelSerializer):
    jobSetId = serializers.CharField(source="job_set")
    priorityClass = serializers.CharField(source="priority_class")
    podSpec = serializers.JSONField(source="pod_spec")
    requests = serializers.SerializerMethodField()
    submittedAt = serializers.DateTimeField(source="submitted_at")
    lastTransitionAt = serializers.DateTimeField(source="last_transition_at")
    failureCount = serializers.IntegerField(source="failure_count")
    terminalReason = serializers.CharField(source="terminal_reason")
    failureCategory = serializers.CharField(source="failure_category")
    failureSubcategory = serializers.CharField(source="failure_subcategory")
    runs = RunSerializer(many=True)
    schedulingReason = serializers.SerializerMethodField(
        help_text="why the job was not leased in the last round that considered it (queued jobs)"
    )

    class Meta:
        model = Job
        fields = [
            "id",
            "queue",
            "jobSetId",
            "owner",
            "namespace",
            "priority",
            "priorityClass",
            "state",
            "annotations",
            "podSpec",
            "requests",
            "submittedAt",
            "lastTransitionAt",
            "failureCount",
            "terminalReason",
            "failureCategory",
            "failureSubcategory",
            "schedulingReason",
            "runs",
        ]
        read_only_fields = fields

    def get_schedulingReason(self, job: Job) -> dict[str, Any] | None:  # noqa: N802 (API field name)
        from armada.models import SchedulingReason

        if job.state != "queued":
            return None
        record = SchedulingReason.objects.filter(job=job).first()
        if record is None:
            return None
        return {
            "reason": record.reason,
            "roundId": record.round_id,
            "at": record.updated_at.isoformat(),
        }

    def get_requests(self, job: Job) -> dict[str, Any]:
        return Resources(job.requests).to_strings()


class RunLogSerializer(serializers.Serializer):
    runId = serializers.CharField()
    jobId = serializers.CharField()
    log = serializers.CharField(help_text="the tail of the pod's stdout and stderr")
    truncated = serializers.BooleanField(help_text="true when only the tail is kept")
    updatedAt = serializers.DateTimeField(allow_null=True)


class RetryPolicySerializer(serializers.Serializer):
    """Documents the policy file; validation itself is ``core.policy.parse_policy``."""

    apiVersion = serializers.CharField(default="armadaproject.io/v1beta1")
    kind = serializers.CharField(default="RetryPolicy")
    name = serializers.CharField()
    retryLimit = serializers.IntegerField(min_value=0)
    defaultAction = serializers.ChoiceField(choices=["Retry", "Fail"])
    rules = serializers.ListField(child=serializers.JSONField(), required=False)
    version = serializers.IntegerField(read_only=True)
    createdAt = serializers.DateTimeField(read_only=True)
    updatedAt = serializers.DateTimeField(read_only=True)
    updatedBy = serializers.CharField(read_only=True)


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
    priority = serializers.IntegerField(min_value=0)
    jobIds = serializers.ListField(child=serializers.CharField(), required=False)


class ReprioritizeResultSerializer(serializers.Serializer):
    jobIds = serializers.ListField(child=serializers.CharField(), help_text="the jobs changed")


class CancelSerializer(serializers.Serializer):
    queue = serializers.CharField()
    jobSetId = serializers.CharField()
    jobIds = serializers.ListField(child=serializers.CharField(), required=False)
    reason = serializers.CharField(required=False, max_length=255)
