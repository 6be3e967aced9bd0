"""Django admin: everyone's API tokens, which operators may revoke (``armada.admin`` loads
this module)."""

from __future__ import annotations

from django.contrib import admin, messages
from django.utils import timezone
from rest_framework.authtoken.models import TokenProxy

from armada.admin import ReadOnlyAdmin
from armada.models import ApiToken
from armada.services.tokens import tokens_revoke_by_operator

# One kind of token in the admin: the API tokens below. Legacy DRF tokens still authenticate
# (``armada.api.auth``); ``manage.py drf_create_token -r USER`` replaces a user's.
if admin.site.is_registered(TokenProxy):
    admin.site.unregister(TokenProxy)


@admin.register(ApiToken)
class ApiTokenAdmin(ReadOnlyAdmin):
    """Everyone's API tokens (never their keys: only digests are stored); operators may
    revoke them, for a user who left or a key that leaked."""

    list_display = (
        "name",
        "user",
        "prefix",
        "created_at",
        "expires_at",
        "last_used_at",
        "revoked_at",
    )
    list_filter = (("revoked_at", admin.EmptyFieldListFilter),)
    search_fields = ("name", "prefix", "user__username")
    actions = ["revoke"]

    @admin.action(description="Revoke the selected tokens")
    def revoke(self, request, queryset) -> None:
        count = tokens_revoke_by_operator(
            token_ids=list(queryset.values_list("pk", flat=True)), now=timezone.now()
        )
        self.message_user(request, f"Revoked {count} token(s).", messages.SUCCESS)
