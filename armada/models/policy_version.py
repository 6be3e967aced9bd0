from __future__ import annotations

from django.db import models


class RetryPolicyVersion(models.Model):
    """One saved state of a retry policy: the document as it was saved, by whom and when.

    ``services.policies`` writes a row in the same transaction as every create and update, so
    ``RetryPolicy.version`` always has a matching row here. Rows are never changed.

    The history outlives its policy: deleting a policy sets ``policy`` to NULL and keeps
    ``policy_name``, so an operator can still see what a deleted policy said and who changed
    it (in the admin). A policy created later under the same name starts a history of its
    own at version 1; its pages show only its own rows.
    """

    policy = models.ForeignKey(
        "armada.RetryPolicy",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="versions",
    )
    policy_name = models.CharField(max_length=63, db_index=True)
    version = models.PositiveIntegerField()
    # The policy's file form (``core.policy.policy_document``): apiVersion, kind, name,
    # retryLimit, defaultAction and rules, exactly as validated and stored.
    document = models.JSONField()
    saved_by = models.CharField(max_length=150, blank=True)
    saved_at = models.DateTimeField()

    class Meta:
        ordering = ["policy_name", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["policy", "version"], name="policy_version_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.policy_name} v{self.version}"
