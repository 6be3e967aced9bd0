from django.urls import path

from lookout import policy_views, views

app_name = "lookout"
urlpatterns = [
    path("", views.jobs, name="jobs"),
    path("jobs/<str:job_id>", views.job_detail, name="job"),
    path("policies/", policy_views.policy_list, name="policies"),
    path("policies/new", policy_views.policy_new, name="policy-new"),
    path("policies/validate", policy_views.policy_validate, name="policy-validate"),
    path("policies/<str:name>/", policy_views.policy_detail, name="policy"),
    path("policies/<str:name>/edit", policy_views.policy_edit, name="policy-edit"),
    path("policies/<str:name>/attach", policy_views.policy_attach, name="policy-attach"),
    path("policies/<str:name>/detach", policy_views.policy_detach, name="policy-detach"),
]
