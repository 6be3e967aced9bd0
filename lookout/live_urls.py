"""Lookout routes of the jobs grid's live part (included by lookout.urls)."""

from django.urls import path

from lookout import live_views

urlpatterns: list = [
    path("live", live_views.grid_live, name="grid-live"),
]
