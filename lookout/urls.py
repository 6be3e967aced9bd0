from django.urls import include, path

from lookout import (
    account_views,
    backtest_views,
    cost_views,
    metrics_views,
    policy_views,
    queue_permission_views,
    queue_views,
    token_views,
    views,
)

app_name = "lookout"
urlpatterns = [
    path("", views.jobs, name="jobs"),
    path("", include("lookout.grid_urls")),
    path("", include("lookout.bulk_urls")),  # before the panel's jobs/<id>/cancel
    path("", include("lookout.panel_urls")),
    path("", include("lookout.live_urls")),
    path("login", account_views.LoginView.as_view(), name="login"),
    path("logout", account_views.LogoutView.as_view(), name="logout"),
    path("tokens/", token_views.tokens, name="tokens"),
    path("tokens/<str:token_id>/revoke", token_views.token_revoke_view, name="token-revoke"),
    path("queues/", queue_views.queue_list, name="queues"),
    path("queues/<str:name>/", queue_views.queue_detail, name="queue"),
    path("queues/<str:name>/cordon", queue_views.queue_cordon, name="queue-cordon"),
    path(
        "queues/<str:name>/permissions",
        queue_permission_views.queue_permissions,
        name="queue-permissions",
    ),
    path("metrics/decisions", metrics_views.decision_metrics, name="decision-metrics"),
    path("metrics/cost", cost_views.retry_cost, name="retry-cost"),
    path("policies/", policy_views.policy_list, name="policies"),
    path("policies/new", policy_views.policy_new, name="policy-new"),
    path("policies/validate", policy_views.policy_validate, name="policy-validate"),
    path("policies/backtest", backtest_views.policy_backtest, name="policy-backtest"),
    path("policies/<str:name>/", policy_views.policy_detail, name="policy"),
    path("policies/<str:name>/edit", policy_views.policy_edit, name="policy-edit"),
    path("policies/<str:name>/attach", policy_views.policy_attach, name="policy-attach"),
    path("policies/<str:name>/detach", policy_views.policy_detach, name="policy-detach"),
    path("policies/<str:name>/delete", policy_views.policy_delete, name="policy-delete"),
]
