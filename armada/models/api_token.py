from __future__ import annotations

from django.conf import settings
from django.db import models


class ApiToken(models.Model):
    """A personal API token: how people and programs call the API without a password.

    Only the SHA-256 digest of the key is stored, never the key: the key is shown once, when
    the token is created. ``prefix`` (the key's first characters) tells tokens apart in
    lists. Looking a key up is one query on the unique ``digest`` index with the user
    joined (``services.tokens.token_authenticate``).

    A revoked token keeps its row (``revoked_at`` set) so that its name and times stay
    visible to operators; names are unique per user among the tokens not revoked.
    ``last_used_at`` is written at most about once a minute, so that calls do not write.
    """

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100)
    digest = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=16)
    created_at = models.DateTimeField()
    expires_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "API token"
        ordering = ["user", "-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["user", "name"],
                condition=models.Q(revoked_at__isnull=True),
                name="api_token_name_unique_per_user",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"
