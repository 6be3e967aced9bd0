"""ORM models, one module per aggregate."""

from armada.models.api_token import ApiToken
from armada.models.event import Event, EventPurge
from armada.models.executor import Executor, Node
from armada.models.executor_credential import ExecutorCredential
from armada.models.job import Job, Run
from armada.models.lease import LeaderLease
from armada.models.log import RunLog
from armada.models.metric import MetricCounter, MetricGauge, RunUsage
from armada.models.metric_sample import MetricSample
from armada.models.policy import RetryPolicy
from armada.models.policy_version import RetryPolicyVersion
from armada.models.queue import Queue
from armada.models.retry_cost import RetryCostBucket, RetryYieldBucket, RollupMark
from armada.models.scheduling import SchedulingReason, SchedulingRound

__all__ = [
    "ApiToken",
    "Event",
    "EventPurge",
    "Executor",
    "ExecutorCredential",
    "Job",
    "LeaderLease",
    "MetricCounter",
    "MetricGauge",
    "MetricSample",
    "Node",
    "Queue",
    "RetryCostBucket",
    "RetryPolicy",
    "RetryPolicyVersion",
    "RetryYieldBucket",
    "RollupMark",
    "Run",
    "RunUsage",
    "RunLog",
    "SchedulingReason",
    "SchedulingRound",
]
