"""Lookout routes of the jobs grid's grid part (included by lookout.urls)."""

from django.urls import path

from lookout import grid_views, group_views

urlpatterns: list = [
    path("rows", grid_views.rows, name="grid-rows"),
    path("grid/columns", grid_views.grid_columns, name="grid-columns"),
    path("groups", group_views.grid_groups, name="grid-groups"),
]
