"""Lookout routes of a job: its full page and side panel, its actions, and a run's log
(included by lookout.urls, before its own routes)."""

from django.urls import path

from lookout import job_views, panel_views

urlpatterns: list = [
    path("jobs/<str:job_id>", panel_views.job_page, name="job"),
    path("jobs/<str:job_id>/panel", panel_views.job_panel, name="job-panel"),
    path("jobs/<str:job_id>/panel/<str:tab>", panel_views.job_panel_part, name="job-panel-part"),
    path("jobs/<str:job_id>/cancel", job_views.job_cancel, name="job-cancel"),
    path("jobs/<str:job_id>/reprioritize", job_views.job_reprioritize, name="job-reprioritize"),
    path("jobs/<str:job_id>/preempt", job_views.job_preempt_view, name="job-preempt"),
    path("runs/<str:run_id>/log", panel_views.run_log_text, name="run-log-text"),
    path("runs/<str:run_id>/log.txt", panel_views.run_log_download, name="run-log"),
]
