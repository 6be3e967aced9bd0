"""Lookout's own data: what each user chose to see."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class GridPreference(models.Model):
    """A user's column choice for the jobs grid: ``columns`` is
    ``{"visible": [column keys in order], "widths": {column key: pixels}}``
    (see ``lookout.grid.prefs``)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="grid_preference"
    )
    columns = models.JSONField(default=dict)
    updated_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"grid columns of {self.user_id}"
