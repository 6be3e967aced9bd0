"""Output shapes of the API (inputs are validated by the core, which names every field)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from armada.core.policy import MAX_RETRY_LIMIT
from armada.core.quantity import Resources
from armada.core.queues import SUBJECT_KINDS, VERBS
from armada.core.submission import MAX_JOB_SET_LENGTH, MAX_PRIORITY
from armada.models import Job, Queue, Run

# The input serializers below only document the bodies (validation is the core's); their
# patterns and bounds are the core's rules, so that the schema tells a client what passes.
LABEL_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
QUANTITY_PATTERN = r"^[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$"


def _label(**kwargs: Any) -> serializers.RegexField:
    return serializers.RegexField(LABEL_PATTERN, max_length=63, **kwargs)


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

    name = _label()
    priorityFactor = serializers.FloatField(required=False, min_value=1.0)
    owners = serializers.ListField(child=serializers.CharField(), required=False)
    groupOwners = serializers.ListField(child=serializers.CharField(), required=False)
    permissions = PermissionSerializer(many=True, required=False)
    labels = serializers.DictField(child=serializers.CharField(allow_blank=True), required=False)
    cordoned = serializers.BooleanField(required=False)
    retryPolicies = serializers.ListField(child=serializers.CharField(), required=False)


class ResourceListSerializer(serializers.Serializer):
    cpu = serializers.RegexField(QUANTITY_PATTERN)
    memory = serializers.RegexField(QUANTITY_PATTERN)


class ContainerResourcesSerializer(serializers.Serializer):
    requests = ResourceListSerializer()
    limits = ResourceListSerializer(help_text="equal to requests")


class ContainerSerializer(serializers.Serializer):
    name = _label()
    image = serializers.CharField()
    command = serializers.ListField(child=serializers.CharField(), required=False)
    resources = ContainerResourcesSerializer()


class PodSpecSerializer(serializers.Serializer):
    containers = ContainerSerializer(many=True, allow_empty=False)
    initContainers = ContainerSerializer(many=True, required=False)
    priorityClassName = serializers.CharField(required=False)
    nodeSelector = serializers.DictField(child=serializers.CharField(), required=False)


class JobItemSerializer(serializers.Serializer):
    priority = serializers.IntegerField(required=False, min_value=0, max_value=MAX_PRIORITY)
    namespace = _label(required=False)
    annotations = serializers.DictField(child=serializers.CharField(), required=False)
    labels = serializers.DictField(child=serializers.CharField(), required=False)
    podSpec = PodSpecSerializer()


class JobFileSerializer(serializers.Serializer):
    """Documents the job file; validation itself is ``core.submission.parse_job_file``."""

    queue = serializers.CharField()
    jobSetId = serializers.CharField(max_length=MAX_JOB_SET_LENGTH)
    jobs = JobItemSerializer(many=True, allow_empty=False)


class SubmitResultSerializer(serializers.Serializer):
    queue = serializers.CharField()
    jobSetId = serializers.CharField()
    jobIds = serializers.ListField(child=serializers.CharField())


class RunSerializer(serializers.ModelSerializer):
    leasedAt = serializers.DateTimeField(source="leased_at")
    pendingAt = serializers.DateTimeField(source="pending_at", allow_null=True)
    runningAt = serializers.DateTimeField(source="running_at", allow_null=True)
    finishedAt = serializers.DateTimeField(source="finished_at", allow_null=True)
    exitCode = serializers.IntegerField(source="exit_code", allow_null=True)
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
        from armada.services.records import pending_reason

        found = pending_reason(job)
        if found is None:
            return None
        return {**found, "at": found["at"].isoformat()}

    def get_requests(self, job: Job) -> dict[str, Any]:
        return Resources(job.requests).to_strings()


class RunLogSerializer(serializers.Serializer):
    runId = serializers.CharField()
    jobId = serializers.CharField()
    log = serializers.CharField(help_text="the tail of the pod's stdout and stderr")
    truncated = serializers.BooleanField(help_text="true when only the tail is kept")
    updatedAt = serializers.DateTimeField(allow_null=True)


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


class RuleSerializer(serializers.Serializer):
    action = serializers.ChoiceField(choices=["Retry", "Fail"])
    onCategory = serializers.CharField()
    onSubcategory = serializers.CharField(required=False)
    mutate = MutateSerializer(required=False, help_text="Retry rules only")


class RetryPolicySerializer(serializers.Serializer):
    """Documents the policy file; validation itself is ``core.policy.parse_policy``."""

    apiVersion = serializers.ChoiceField(choices=["armadaproject.io/v1beta1"], required=False)
    kind = serializers.ChoiceField(choices=["RetryPolicy"], required=False)
    name = _label()
    retryLimit = serializers.IntegerField(min_value=0, max_value=MAX_RETRY_LIMIT)
    defaultAction = serializers.ChoiceField(choices=["Retry", "Fail"])
    rules = RuleSerializer(many=True, required=False)
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
    priority = serializers.IntegerField(min_value=0, max_value=MAX_PRIORITY)
    jobIds = serializers.ListField(child=serializers.CharField(), required=False)


class ReprioritizeResultSerializer(serializers.Serializer):
    jobIds = serializers.ListField(child=serializers.CharField(), help_text="the jobs changed")


class CancelSerializer(serializers.Serializer):
    queue = serializers.CharField()
    jobSetId = serializers.CharField()
    jobIds = serializers.ListField(child=serializers.CharField(), required=False)
    reason = serializers.CharField(required=False, max_length=255)
