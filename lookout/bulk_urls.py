"""Lookout routes of the jobs grid's bulk part (included by lookout.urls)."""

from django.urls import path  # noqa: F401

urlpatterns: list = []
