from __future__ import annotations

from django.conf import settings
from django.db import models


class ExecutorCredential(models.Model):
    """A credential an executor process authenticates with: good for one cluster id only.

    As with personal API tokens, only the SHA-256 digest of the key is stored; the key is
    shown once, when the credential is made. ``cluster_id`` is the executor id the holder may
    lease and report for, and nothing else: the user APIs do not take these keys. A revoked
    credential keeps its row (``revoked_at`` set) so that operators still see what it was,
    and is refused from the next call on (``services.executor_credentials``).
    """

    cluster_id = models.CharField(max_length=63, db_index=True)
    name = models.CharField(max_length=100)
    digest = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=16)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="executor_credentials",
    )
    created_at = models.DateTimeField()
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["cluster_id", "-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["cluster_id", "name"],
                condition=models.Q(revoked_at__isnull=True),
                name="executor_credential_name_unique_per_cluster",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.cluster_id}: {self.name} ({self.prefix}…)"
