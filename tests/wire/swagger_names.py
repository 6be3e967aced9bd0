"""Names in Armada's published Swagger files (``pkg/api/api.swagger.json`` and the binoculars
and schedulerobjects ones), written down as a table so that the test of our ``/swagger.json``
needs no copy of them: per path and verb, (operationId, tag, body definition, answer
definition, parameters other than the body)."""

from __future__ import annotations

OPERATIONS: dict[tuple[str, str], tuple[str, str, str | None, str | None, tuple[str, ...]]] = {
    ("POST", "/v1/batched/create_queues"): (
        "CreateQueues", "Submit", "apiQueueList", "apiBatchQueueCreateResponse", ()
    ),
    ("GET", "/v1/batched/queues"): ("GetQueues", "Submit", None, "apiStreamingQueueMessage", ("num",)),
    ("PUT", "/v1/batched/update_queues"): (
        "UpdateQueues", "Submit", "apiQueueList", "apiBatchQueueUpdateResponse", ()
    ),
    ("POST", "/v1/binoculars/cordon"): ("Cordon", "Binoculars", "binocularsCordonRequest", None, ()),
    ("POST", "/v1/binoculars/log"): (
        "Logs", "Binoculars", "binocularsLogRequest", "binocularsLogResponse", ()
    ),
    ("POST", "/v1/job-set/{queue}/{id}"): (
        "GetJobSetEvents", "Event", "apiJobSetRequest", "apiEventStreamMessage", ("queue", "id")
    ),
    ("POST", "/v1/job/cancel"): (
        "CancelJobs", "Submit", "apiJobCancelRequest", "apiCancellationResult", ()
    ),
    ("POST", "/v1/job/details"): (
        "GetJobDetails", "Jobs", "apiJobDetailsRequest", "apiJobDetailsResponse", ()
    ),
    ("POST", "/v1/job/errors"): ("GetJobErrors", "Jobs", "apiJobErrorsRequest", "apiJobErrorsResponse", ()),
    ("POST", "/v1/job/preempt"): ("PreemptJobs", "Submit", "apiJobPreemptRequest", "apiPreemptionResult", ()),
    ("POST", "/v1/job/reprioritize"): (
        "ReprioritizeJobs", "Submit", "apiJobReprioritizeRequest", "apiJobReprioritizeResponse", ()
    ),
    ("POST", "/v1/job/status"): ("GetJobStatus", "Jobs", "apiJobStatusRequest", "apiJobStatusResponse", ()),
    ("POST", "/v1/job/statusUsingExternalJobUri"): (
        "GetJobStatusUsingExternalJobUri",
        "Jobs",
        "apiJobStatusUsingExternalJobUriRequest",
        "apiJobStatusResponse",
        (),
    ),
    ("POST", "/v1/job/submit"): ("SubmitJobs", "Submit", "apiJobSubmitRequest", "apiJobSubmitResponse", ()),
    ("GET", "/v1/job/{jobId}/scheduler-report"): (
        "GetJobReport", "SchedulerReporting", None, "schedulerobjectsJobReport", ("jobId",)
    ),
    ("POST", "/v1/jobset/cancel"): ("CancelJobSet", "Submit", "apiJobSetCancelRequest", None, ()),
    # executor.proto is left out of Armada's published file; these are its generator's names.
    ("DELETE", "/v1/executor_settings/{name}"): (
        "DeleteExecutorSettings", "Executor", "apiExecutorSettingsDeleteRequest", None, ("name",)
    ),
    ("PUT", "/v1/executor_settings/{name}"): (
        "UpsertExecutorSettings", "Executor", "apiExecutorSettingsUpsertRequest", None, ("name",)
    ),
    ("POST", "/v1/executor/cancel/{name}"): (
        "CancelOnExecutor", "Executor", "apiExecutorCancelRequest", None, ("name",)
    ),
    ("POST", "/v1/executor/preempt/{name}"): (
        "PreemptOnExecutor", "Executor", "apiExecutorPreemptRequest", None, ("name",)
    ),
    ("DELETE", "/v1/executors/{name}"): (
        "DeleteExecutor", "Executor", "apiExecutorDeleteRequest", None, ("name",)
    ),
    ("POST", "/v1/node/cancel/{name}"): ("CancelOnNode", "Node", "apiNodeCancelRequest", None, ("name",)),
    ("POST", "/v1/node/preempt/{name}"): (
        "PreemptOnNode", "Node", "apiNodePreemptRequest", None, ("name",)
    ),
    ("POST", "/v1/queue"): ("CreateQueue", "Submit", "apiQueue", None, ()),
    ("DELETE", "/v1/queue/{name}"): ("DeleteQueue", "Submit", None, None, ("name",)),
    ("GET", "/v1/queue/{name}"): ("GetQueue", "Submit", None, "apiQueue", ("name",)),
    ("PUT", "/v1/queue/{name}"): ("UpdateQueue", "Submit", "apiQueue", None, ("name",)),
    ("GET", "/v1/queue/{queueName}/scheduler-report"): (
        "GetQueueReport",
        "SchedulerReporting",
        None,
        "schedulerobjectsQueueReport",
        ("queueName", "verbosity"),
    ),
    ("POST", "/v1/queues/active"): (
        "GetActiveQueues", "Jobs", "apiGetActiveQueuesRequest", "apiGetActiveQueuesResponse", ()
    ),
    ("GET", "/v1/retry-policies"): (
        "GetRetryPolicies", "RetryPolicyService", None, "apiRetryPolicyList", ()
    ),
    ("POST", "/v1/retry-policy"): ("CreateRetryPolicy", "RetryPolicyService", "apiRetryPolicy", None, ()),
    ("DELETE", "/v1/retry-policy/{name}"): (
        "DeleteRetryPolicy", "RetryPolicyService", None, None, ("name",)
    ),
    ("GET", "/v1/retry-policy/{name}"): (
        "GetRetryPolicy", "RetryPolicyService", None, "apiRetryPolicy", ("name",)
    ),
    ("PUT", "/v1/retry-policy/{name}"): (
        "UpdateRetryPolicy", "RetryPolicyService", "apiRetryPolicy", None, ("name",)
    ),
    ("POST", "/v1/run/details"): (
        "GetJobRunDetails", "Jobs", "apiJobRunDetailsRequest", "apiJobRunDetailsResponse", ()
    ),
    ("GET", "/v1/scheduling-report"): (
        "GetSchedulingReport",
        "SchedulerReporting",
        None,
        "schedulerobjectsSchedulingReport",
        ("mostRecentForQueue.queueName", "mostRecentForJob.jobId", "verbosity"),
    ),
}  # fmt: skip

# Definitions of Armada's files that a client generated from them refers to by name, with
# some of their properties.
DEFINITIONS: dict[str, set[str]] = {
    "apiJobSubmitRequestItem": {"priority", "namespace", "podSpec", "podSpecs", "ingress"},
    "apiQueue": {"name", "priorityFactor", "userOwners", "groupOwners", "permissions"},
    "QueuePermissions": {"subjects", "verbs"},
    "PermissionsSubject": {"kind", "name"},
    "apiEventMessage": {"submitted", "failed", "succeeded", "cancelled"},
    "apiJobFailedEvent": {"jobId", "podNumber", "containerStatuses", "cause"},
    "apiIngressConfig": {"ports", "annotations"},
    "apiServiceConfig": {"type", "ports"},
    "apiJobRunDetails": {"runId", "jobId", "state", "leasedTs"},
    "v1PodSpec": {"containers", "tolerations", "affinity", "volumes", "overhead"},
    "v1Container": {"name", "image", "resources", "env"},
    "v1ResourceRequirements": {"limits", "requests"},
    "v1Volume": {"name", "emptyDir", "configMap", "hostPath"},
    "v1Probe": {"exec", "httpGet", "tcpSocket", "periodSeconds"},
    "v1Toleration": {"key", "operator", "effect", "tolerationSeconds"},
    "v1ObjectMeta": {"name", "labels", "creationTimestamp"},
    "binocularsLogRequest": {"jobId", "podNumber", "podNamespace", "sinceTime", "logOptions"},
    "binocularsLogLine": {"timestamp", "line"},
    "v1PodLogOptions": {"tailLines", "limitBytes", "previous", "sinceSeconds"},
    "schedulerobjectsQueueReport": {"report"},
    "apiNodeCancelRequest": {"name", "executor", "queues", "priorityClasses"},
    "apiNodePreemptRequest": {"name", "executor", "queues", "priorityClasses"},
    "apiExecutorSettingsUpsertRequest": {"name", "cordoned", "cordonReason"},
    "apiExecutorSettingsDeleteRequest": {"name"},
    "apiExecutorDeleteRequest": {"name"},
    "apiExecutorCancelRequest": {"name", "queues", "priorityClasses", "pools"},
    "apiExecutorPreemptRequest": {"name", "queues", "priorityClasses", "pools"},
    "protobufAny": {"typeUrl", "value"},
    "runtimeError": {"code", "message", "error", "details"},
}
# Enums by name, with their first (default) value.
ENUMS = {
    "apiJobState": "QUEUED",
    "apiJobRunState": "RUN_STATE_UNKNOWN",
    "apiIngressType": "Ingress",
    "apiServiceType": "NodePort",
}
# Names of types whose JSON is not their message: present, and not objects of fields.
SCALAR_DEFINITIONS = {"resourceQuantity": "string", "v1Time": "string", "v1ResourceList": "object"}
