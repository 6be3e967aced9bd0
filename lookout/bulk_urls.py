"""Lookout routes of the jobs grid's bulk part (included by lookout.urls)."""

from django.urls import path

from lookout import bulk_views

urlpatterns: list = [
    path("jobs/bulk/<str:action>", bulk_views.jobs_bulk, name="jobs-bulk"),
    path("jobs/bulk/<str:action>/check", bulk_views.jobs_bulk_check, name="jobs-bulk-check"),
]
