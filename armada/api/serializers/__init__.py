"""Output shapes of the API (inputs are validated by the core, which names every field), one
module per resource: ``queues``, ``jobs`` (submit, jobs and runs), ``trails`` (a run's
decision trail), ``job_actions`` (cancel, preempt, reprioritize), ``scheduling``,
``policies`` (retry policies), ``executors``, and the ``errors`` every response may carry;
``fields`` holds the core's patterns they share. The names are importable from here;
component names in the schema are the class names.
"""

from __future__ import annotations

from armada.api.serializers.errors import (
    ErrorSerializer,
    FieldErrorSerializer,
)
from armada.api.serializers.executors import (
    ExecutorDetailSerializer,
    ExecutorSerializer,
    NodeSerializer,
)
from armada.api.serializers.fields import (
    LABEL_PATTERN,
    QUANTITY_PATTERN,
)
from armada.api.serializers.job_actions import (
    CancelByStateSerializer,
    CancelSerializer,
    PreemptResultSerializer,
    PreemptSerializer,
    ReprioritizeResultSerializer,
    ReprioritizeSerializer,
)
from armada.api.serializers.jobs import (
    ContainerResourcesSerializer,
    ContainerSerializer,
    JobFileSerializer,
    JobItemSerializer,
    JobPageSerializer,
    JobSerializer,
    JobSummarySerializer,
    PodSpecSerializer,
    ResourceListSerializer,
    RunLogSerializer,
    RunSerializer,
    SubmitResultSerializer,
)
from armada.api.serializers.policies import (
    AffinitySerializer,
    MemoryBumpSerializer,
    MutateResourcesSerializer,
    MutateSerializer,
    RetryPolicySavedSerializer,
    RetryPolicySerializer,
    RuleSerializer,
)
from armada.api.serializers.queues import (
    JobSetSerializer,
    PermissionSerializer,
    QueueInputSerializer,
    QueueSerializer,
    StateCountsSerializer,
    SubjectSerializer,
)
from armada.api.serializers.scheduling import (
    JobSchedulingSerializer,
    PendingReasonSerializer,
    RoundSummarySerializer,
)
from armada.api.serializers.trails import (
    DecisionTrailSerializer,
    MemoryChangeSerializer,
    TrailMutationSerializer,
)

__all__ = [
    "AffinitySerializer",
    "CancelByStateSerializer",
    "CancelSerializer",
    "ContainerResourcesSerializer",
    "ContainerSerializer",
    "DecisionTrailSerializer",
    "ErrorSerializer",
    "ExecutorDetailSerializer",
    "ExecutorSerializer",
    "FieldErrorSerializer",
    "JobFileSerializer",
    "JobItemSerializer",
    "JobPageSerializer",
    "JobSchedulingSerializer",
    "JobSerializer",
    "JobSetSerializer",
    "JobSummarySerializer",
    "LABEL_PATTERN",
    "MemoryBumpSerializer",
    "MemoryChangeSerializer",
    "MutateResourcesSerializer",
    "MutateSerializer",
    "NodeSerializer",
    "PendingReasonSerializer",
    "PermissionSerializer",
    "PodSpecSerializer",
    "PreemptResultSerializer",
    "PreemptSerializer",
    "QUANTITY_PATTERN",
    "QueueInputSerializer",
    "QueueSerializer",
    "ReprioritizeResultSerializer",
    "ReprioritizeSerializer",
    "ResourceListSerializer",
    "RetryPolicySavedSerializer",
    "RetryPolicySerializer",
    "RoundSummarySerializer",
    "RuleSerializer",
    "RunLogSerializer",
    "RunSerializer",
    "StateCountsSerializer",
    "SubjectSerializer",
    "SubmitResultSerializer",
    "TrailMutationSerializer",
]
