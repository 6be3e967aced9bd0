"""Jobs and runs: the job file a submit takes (pod spec, job items) and its answer, a job
with its runs, a run's log, and the job list's page."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from armada.api.serializers.fields import QUANTITY_PATTERN, label_field
from armada.api.serializers.trails import DecisionTrailSerializer, trail_data
from armada.core.quantity_text import readable_resources
from armada.core.submission import MAX_CLIENT_ID_LENGTH, MAX_JOB_SET_LENGTH, MAX_PRIORITY
from armada.models import Job, Run


class ResourceListSerializer(serializers.Serializer):
    cpu = serializers.RegexField(QUANTITY_PATTERN)
    memory = serializers.RegexField(QUANTITY_PATTERN)


class ContainerResourcesSerializer(serializers.Serializer):
    requests = ResourceListSerializer()
    limits = ResourceListSerializer(help_text="equal to requests")


class ContainerSerializer(serializers.Serializer):
    name = label_field()
    image = serializers.CharField()
    command = serializers.ListField(child=serializers.CharField(), required=False)
    resources = ContainerResourcesSerializer()


class PodSpecSerializer(serializers.Serializer):
    containers = ContainerSerializer(many=True, allow_empty=False)
    initContainers = ContainerSerializer(many=True, required=False)
    priorityClassName = serializers.CharField(required=False)
    nodeSelector = serializers.DictField(child=serializers.CharField(), required=False)


def _ports(help_text: str) -> serializers.ListField:
    return serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=65535),
        allow_empty=False,
        help_text=help_text,
    )


class ServiceConfigSerializer(serializers.Serializer):
    """A Service made with the job's pod (Armada's ServiceConfig)."""

    type = serializers.ChoiceField(["NodePort", "Headless"], required=False)
    ports = _ports("container ports to expose, each once")
    name = serializers.CharField(
        required=False, allow_blank=True, help_text="a DNS-1123 label; empty: one is made up"
    )


class IngressConfigSerializer(serializers.Serializer):
    """An Ingress made with the job's pod (Armada's IngressConfig)."""

    ports = _ports("container ports to expose; a port is in at most one ingress item")
    annotations = serializers.DictField(child=serializers.CharField(), required=False)
    tlsEnabled = serializers.BooleanField(required=False)
    certName = serializers.CharField(
        required=False, allow_blank=True, help_text="the TLS certificate's Secret"
    )
    useClusterIP = serializers.BooleanField(required=False)


class JobItemSerializer(serializers.Serializer):
    priority = serializers.IntegerField(required=False, min_value=0, max_value=MAX_PRIORITY)
    namespace = label_field(required=False)
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
    services = ServiceConfigSerializer(many=True, required=False)
    ingress = IngressConfigSerializer(many=True, required=False)


class JobFileSerializer(serializers.Serializer):
    """Documents the job file; validation itself is ``core.submission.parse_job_file``."""

    queue = serializers.CharField()
    jobSetId = serializers.CharField(max_length=MAX_JOB_SET_LENGTH)
    jobs = JobItemSerializer(many=True, allow_empty=False)


class SubmitResultSerializer(serializers.Serializer):
    queue = serializers.CharField()
    jobSetId = serializers.CharField()
    jobIds = serializers.ListField(child=serializers.CharField())


REQUESTS = serializers.DictField(
    child=serializers.CharField(),
    help_text="per resource, a Kubernetes quantity such as 500m (cpu) or 1.5Gi (memory)",
)


class RunSerializer(serializers.ModelSerializer):
    leasedAt = serializers.DateTimeField(source="leased_at")
    pendingAt = serializers.DateTimeField(source="pending_at", allow_null=True)
    runningAt = serializers.DateTimeField(source="running_at", allow_null=True)
    finishedAt = serializers.DateTimeField(source="finished_at", allow_null=True)
    exitCode = serializers.IntegerField(source="exit_code", allow_null=True)
    podName = serializers.CharField(source="pod_name")
    failureCategory = serializers.CharField(source="failure_category")
    failureSubcategory = serializers.CharField(source="failure_subcategory")
    requests = serializers.SerializerMethodField(
        help_text="what this attempt's pod asked for (a memory bump shows here)"
    )
    decision = serializers.SerializerMethodField()
    podKeptUntil = serializers.DateTimeField(
        source="pod_kept_until",
        allow_null=True,
        help_text="a failed run whose pod its executor keeps (a Retain category): until when "
        "(keptPodRetention after the pod ended); a time already past once the pod is deleted; "
        "null when the pod was not kept",
    )
    awayNodeType = serializers.CharField(
        source="away_node_type",
        help_text="the node type(s) the run was placed on away from its priority class's home"
        " (awayNodeTypes); empty for a run at home",
    )
    scheduledAtPriority = serializers.IntegerField(
        source="scheduled_priority",
        allow_null=True,
        help_text="the priority an away run runs at (it is preempted as a job of that"
        " priority); null for a run at home, which runs at its priority class's",
    )
    ingressAddresses = serializers.JSONField(
        source="ingress_addresses",
        help_text="the job's ingress addresses by container port, once the pod ran "
        '({"8080": "host:port"}); empty otherwise',
    )

    class Meta:
        model = Run
        fields = [
            "id",
            "executor",
            "node",
            "pool",
            "state",
            "podName",
            "requests",
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
            "podKeptUntil",
            "ingressAddresses",
            "awayNodeType",
            "scheduledAtPriority",
        ]
        read_only_fields = fields

    @extend_schema_field(REQUESTS)
    def get_requests(self, run: Run) -> dict[str, str]:
        return readable_resources(run.requests or {})

    @extend_schema_field(DecisionTrailSerializer)
    def get_decision(self, run: Run) -> dict[str, Any]:
        return trail_data(run.decision)


class RetryCostAmountsSerializer(serializers.Serializer):
    coreHours = serializers.FloatField()
    memoryGibHours = serializers.FloatField()
    gpuHours = serializers.FloatField()


class JobRetryCostSerializer(serializers.Serializer):
    """What a job's retried attempts (its runs after its first retried failure) cost: their
    requests held from lease to end, a running one up to now (docs/retry-cost.md)."""

    retries = serializers.IntegerField(help_text="failures that were retried")
    retriedAttempts = serializers.IntegerField(help_text="runs that exist because of a retry")
    cost = RetryCostAmountsSerializer()
    lastAttempt = serializers.CharField(help_text="the latest retried attempt's run state")


class JobSerializer(serializers.ModelSerializer):
    jobSetId = serializers.CharField(source="job_set")
    clientId = serializers.CharField(
        source="client_id", help_text="the deduplication key it was submitted with, or empty"
    )
    priorityClass = serializers.CharField(source="priority_class")
    podSpec = serializers.JSONField(source="pod_spec")
    services = ServiceConfigSerializer(many=True, help_text="Services made with the pod")
    ingress = IngressConfigSerializer(many=True, help_text="Ingresses made with the pod")
    requests = serializers.SerializerMethodField()
    submittedAt = serializers.DateTimeField(source="submitted_at")
    lastTransitionAt = serializers.DateTimeField(source="last_transition_at")
    failureCount = serializers.IntegerField(
        source="failure_count", help_text="decided failures, the last one included"
    )
    retryCount = serializers.IntegerField(
        source="retry_count", help_text="failures that were retried (runs = retries + 1 or more)"
    )
    terminalReason = serializers.CharField(source="terminal_reason")
    failureCategory = serializers.CharField(source="failure_category")
    failureSubcategory = serializers.CharField(source="failure_subcategory")
    runs = RunSerializer(many=True)
    schedulingReason = serializers.SerializerMethodField(
        help_text="why the job was not leased in the last round that considered it (queued jobs)"
    )
    retryCost = serializers.SerializerMethodField(
        help_text="what the job's retried attempts cost (null for a job never retried)"
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
            "services",
            "ingress",
            "requests",
            "submittedAt",
            "lastTransitionAt",
            "failureCount",
            "retryCount",
            "terminalReason",
            "failureCategory",
            "failureSubcategory",
            "schedulingReason",
            "retryCost",
            "runs",
        ]
        read_only_fields = fields

    @extend_schema_field(JobRetryCostSerializer(allow_null=True))
    def get_retryCost(self, job: Job) -> dict[str, Any] | None:  # noqa: N802 (API field name)
        from django.utils import timezone

        from armada.services.retry_cost_reads import job_retry_cost

        if not job.retry_count:
            return None
        return job_retry_cost(job=job, now=timezone.now(), runs=list(job.runs.all())).as_dict()

    def to_representation(self, job: Job) -> dict[str, Any]:
        """The job; a queued retry's latest run trail also says what the retry waits for
        (``waitingFor``: ``services.records.retry_waiting``)."""
        from armada.services.records import retry_waiting

        data = super().to_representation(job)
        runs = data.get("runs") or []
        if job.state == "queued" and runs:
            latest = max(job.runs.all(), key=lambda r: (r.leased_at, r.id))
            waiting = retry_waiting(job, latest)
            if waiting is not None:
                shown = next(r for r in runs if r["id"] == latest.id)
                shown["decision"] = {
                    **shown["decision"],
                    "waitingFor": {**waiting, "at": waiting["at"].isoformat()},
                }
        return data

    def get_schedulingReason(self, job: Job) -> dict[str, Any] | None:  # noqa: N802 (API field name)
        from armada.services.records import pending_reason

        found = pending_reason(job)
        if found is None:
            return None
        return {**found, "at": found["at"].isoformat()}

    @extend_schema_field(REQUESTS)
    def get_requests(self, job: Job) -> dict[str, str]:
        return readable_resources(job.requests or {})


class RunLogSerializer(serializers.Serializer):
    """A run's log as stored: while the run runs, the lines its executor has sent so far
    (about once a second); once it ended, the tail it ended with. At most the last
    ``ARMADA_RUN_LOG_KIB`` KiB are kept; the text then starts with a line saying how many
    bytes were dropped."""

    runId = serializers.CharField()
    jobId = serializers.CharField()
    log = serializers.CharField(help_text="the tail of the pod's stdout and stderr")
    truncated = serializers.BooleanField(
        help_text="true when the start of the log was not kept (the first line says so)"
    )
    updatedAt = serializers.DateTimeField(
        allow_null=True, help_text="when the executor last added to the log (null: never)"
    )
    dropped = serializers.IntegerField(
        help_text="how many bytes of the log's start were not kept (0: none, or not known)"
    )
    runState = serializers.CharField(
        help_text="the run's state: the log grows while it is leased, pending or running"
    )


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
