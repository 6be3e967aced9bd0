from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from armada.api import (
    executor_action_views,
    executor_credential_views,
    executor_views,
    job_views,
    node_views,
    policy_views,
    queue_action_views,
    queue_grant_views,
    queue_views,
    report_views,
    streams,
    token_views,
)

urlpatterns = [
    path("queues", queue_views.QueueListView.as_view(), name="queue-list"),
    # Before queues/<name>: POST acts on many queues; other methods reach a queue so named.
    path("queues/cancel", queue_action_views.QueuesCancelView.as_view(), name="queues-cancel"),
    path("queues/preempt", queue_action_views.QueuesPreemptView.as_view(), name="queues-preempt"),
    path(
        "queues/cordon",
        queue_action_views.QueuesCordonView.as_view(),
        name="queues-cordon",
    ),
    path(
        "queues/uncordon",
        queue_action_views.QueuesUncordonView.as_view(),
        name="queues-uncordon",
    ),
    path("queues/<str:name>", queue_views.QueueDetailView.as_view(), name="queue-detail"),
    path(
        "queues/<str:name>/cordon",
        queue_views.QueueCordonView.as_view(cordoned=True),
        name="queue-cordon",
    ),
    path(
        "queues/<str:name>/uncordon",
        queue_views.QueueCordonView.as_view(cordoned=False),
        name="queue-uncordon",
    ),
    path(
        "queues/<str:name>/grant",
        queue_grant_views.QueuePermissionChangeView.as_view(action="grant"),
        name="queue-grant",
    ),
    path(
        "queues/<str:name>/revoke",
        queue_grant_views.QueuePermissionChangeView.as_view(action="revoke"),
        name="queue-revoke",
    ),
    path(
        "queues/<str:name>/job-sets", queue_views.QueueJobSetsView.as_view(), name="queue-job-sets"
    ),
    path("executors", executor_views.ExecutorListView.as_view(), name="executor-list"),
    path(
        "executors/<str:executor_id>",
        executor_views.ExecutorDetailView.as_view(),
        name="executor-detail",
    ),
    path(
        "executors/<str:executor_id>/cordon",
        executor_views.ExecutorCordonView.as_view(cordoned=True),
        name="executor-cordon",
    ),
    path(
        "executors/<str:executor_id>/uncordon",
        executor_views.ExecutorCordonView.as_view(cordoned=False),
        name="executor-uncordon",
    ),
    path(
        "executors/<str:executor_id>/cancel",
        executor_action_views.ExecutorCancelView.as_view(),
        name="executor-cancel",
    ),
    path(
        "executors/<str:executor_id>/preempt",
        executor_action_views.ExecutorPreemptView.as_view(),
        name="executor-preempt",
    ),
    path(
        "executor-credentials",
        executor_credential_views.ExecutorCredentialListView.as_view(),
        name="executor-credential-list",
    ),
    path(
        "executor-credentials/<str:credential_id>/revoke",
        executor_credential_views.ExecutorCredentialRevokeView.as_view(),
        name="executor-credential-revoke",
    ),
    path(
        "executors/<str:executor>/nodes/<str:node>/cancel",
        node_views.NodeCancelView.as_view(),
        name="node-cancel",
    ),
    path(
        "executors/<str:executor>/nodes/<str:node>/preempt",
        node_views.NodePreemptView.as_view(),
        name="node-preempt",
    ),
    path(
        "executors/<str:executor>/nodes/<str:node>/cordon",
        node_views.NodeCordonView.as_view(cordoned=True),
        name="node-cordon",
    ),
    path(
        "executors/<str:executor>/nodes/<str:node>/uncordon",
        node_views.NodeCordonView.as_view(cordoned=False),
        name="node-uncordon",
    ),
    path("retry-policies", policy_views.RetryPolicyListView.as_view(), name="retry-policy-list"),
    path(
        "retry-policies/backtest",
        policy_views.RetryPolicyBacktestView.as_view(),
        name="retry-policy-backtest",
    ),
    path(
        "retry-policies/<str:name>",
        policy_views.RetryPolicyDetailView.as_view(),
        name="retry-policy-detail",
    ),
    path("jobs", job_views.JobSubmitView.as_view(), name="job-submit"),
    path("jobs/reprioritize", job_views.JobReprioritizeView.as_view(), name="job-reprioritize"),
    path("jobs/cancel", job_views.JobCancelView.as_view(), name="job-cancel"),
    path(
        "jobs/cancel-by-state", job_views.JobCancelByStateView.as_view(), name="job-cancel-by-state"
    ),
    path("jobs/<str:job_id>", job_views.JobDetailView.as_view(), name="job-detail"),
    path(
        "jobs/<str:job_id>/scheduling", job_views.JobSchedulingView.as_view(), name="job-scheduling"
    ),
    path("jobs/<str:job_id>/preempt", job_views.JobPreemptView.as_view(), name="job-preempt"),
    path("runs/<str:run_id>/log", job_views.RunLogView.as_view(), name="run-log"),
    path(
        "job-sets/<str:queue>/<path:job_set>/events", streams.job_set_events, name="job-set-events"
    ),
    path("reports/queues/<str:name>", report_views.QueueReportView.as_view(), name="queue-report"),
    path(
        "reports/scheduling", report_views.SchedulingReportView.as_view(), name="scheduling-report"
    ),
    path("tokens", token_views.TokenListView.as_view(), name="token-list"),
    path("tokens/<str:token_id>", token_views.TokenDetailView.as_view(), name="token-detail"),
    path("schema", SpectacularAPIView.as_view(), name="schema"),
    path("docs", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
]
