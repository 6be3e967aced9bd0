"""Output shapes of the API (inputs are validated by the core, which names every field)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from armada.core.policy import MAX_RETRY_LIMIT
from armada.core.quantity import Resources
from armada.core.queues import SUBJECT_KINDS, VERBS
from armada.core.states import JobState
from armada.core.submission import MAX_CLIENT_ID_LENGTH, MAX_JOB_SET_LENGTH, MAX_PRIORITY
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
    clientId = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=MAX_CLIENT_ID_LENGTH,
        help_text="deduplication key: a submit whose job has the clientId of a job already in "
        "the queue and job set creates nothing for it and answers with that job's id",
    )
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
    clientId = serializers.CharField(
        source="client_id", help_text="the deduplication key it was submitted with, or empty"
    )
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
            "clientId",
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
    mutate = MutateSerializer(
        required=False, help_text="Retry rules only (on a Fail rule: ignored, with a warning)"
    )


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


class RetryPolicySavedSerializer(RetryPolicySerializer):
    """A policy just created, replaced or checked: the policy and the warnings of its parse."""

    kind = serializers.CharField(required=False, help_text="RetryPolicy")  # one enum per name

    warnings = serializers.ListField(
        child=serializers.DictField(child=serializers.CharField()),
        read_only=True,
        help_text="what was accepted but has no effect (a mutate block on a Fail rule), "
        "as {field, message}",
    )


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


class FieldErrorSerializer(serializers.Serializer):
    field = serializers.CharField(
        help_text="the field at fault, e.g. jobs[0].podSpec; may be empty"
    )
    message = serializers.CharField()


class ErrorSerializer(serializers.Serializer):
    """The body of every error response."""

    message = serializers.CharField(help_text="a sentence a person can act on")
    errors = FieldErrorSerializer(many=True)


class CancelByStateSerializer(serializers.Serializer):
    queue = serializers.CharField()
    states = serializers.ListField(
        child=serializers.ChoiceField(choices=[s.value for s in JobState if not s.terminal]),
        allow_empty=False,
        help_text="cancel every job of the queue (any job set) in one of these states",
    )
    reason = serializers.CharField(required=False, max_length=255)


class JobSummarySerializer(serializers.ModelSerializer):
    """A job in a list (the pod spec and runs are in ``GET /jobs/{id}``)."""

    queue = serializers.CharField(source="queue_id")
    jobSetId = serializers.CharField(source="job_set")
    priorityClass = serializers.CharField(source="priority_class")
    submittedAt = serializers.DateTimeField(source="submitted_at")
    lastTransitionAt = serializers.DateTimeField(source="last_transition_at")
    terminalReason = serializers.CharField(source="terminal_reason")
    failureCategory = serializers.CharField(source="failure_category")

    class Meta:
        model = Job
        fields = [
            "id",
            "queue",
            "jobSetId",
            "owner",
            "priority",
            "priorityClass",
            "state",
            "submittedAt",
            "lastTransitionAt",
            "terminalReason",
            "failureCategory",
        ]
        read_only_fields = fields


class JobPageSerializer(serializers.Serializer):
    items = JobSummarySerializer(many=True)
    next = serializers.CharField(
        allow_null=True, help_text="pass as `after` for the next page; null on the last page"
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


class NodeSerializer(serializers.Serializer):
    name = serializers.CharField()
    pool = serializers.CharField()
    labels = serializers.DictField(child=serializers.CharField(), help_text="tracked labels only")
    taints = serializers.ListField(child=serializers.DictField())
    allocatable = serializers.DictField(
        child=serializers.IntegerField(), help_text="milli-cpu, bytes, device counts"
    )
    unschedulable = serializers.BooleanField()
    lastSeen = serializers.DateTimeField()


class ExecutorSerializer(serializers.Serializer):
    id = serializers.CharField()
    pool = serializers.CharField()
    backend = serializers.CharField()
    cordoned = serializers.BooleanField(help_text="a cordoned executor gets no new leases")
    cordonReason = serializers.CharField(help_text="why it was cordoned; empty when it is not")
    alive = serializers.BooleanField(help_text="heartbeat within executorTimeout")
    registeredAt = serializers.DateTimeField()
    lastHeartbeat = serializers.DateTimeField()
    trackedNodeLabels = serializers.ListField(child=serializers.CharField())
    nodeCount = serializers.IntegerField()


class ExecutorDetailSerializer(ExecutorSerializer):
    nodes = NodeSerializer(many=True)


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
