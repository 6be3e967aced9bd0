from __future__ import annotations

from django.db import models

from armada.models.queue import POLICY_PERMISSIONS, RFC1123_LABEL


class RetryPolicy(models.Model):
    """A named retry policy; ``rules`` is the ordered rule list as validated by the core."""

    class Action(models.TextChoices):
        RETRY = "Retry"
        FAIL = "Fail"

    name = models.CharField(max_length=63, unique=True, validators=[RFC1123_LABEL])
    retry_limit = models.PositiveIntegerField(default=0)
    default_action = models.CharField(max_length=8, choices=Action.choices, default=Action.FAIL)
    rules = models.JSONField(default=list, blank=True)
    version = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    updated_by = models.CharField(max_length=150, blank=True)

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "retry policies"
        permissions = list(POLICY_PERMISSIONS.items())

    def __str__(self) -> str:
        return self.name
