"""Django admin for executor credentials: list them, add one (cluster id and name only; its
key is shown once, in a message after saving), revoke selected ones. Imported by
``armada.admin``, which registers everything else.

Nothing is edited or deleted here: a credential is revoked, and keeps its row so that
operators still see what it was. Every operation needs the global
``manage_executor_credentials`` permission; ``armada.services.executor_credentials``
decides and writes.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.http import HttpResponseRedirect
from django.utils import timezone

from armada.models import ExecutorCredential
from armada.services.authz import has_global
from armada.services.errors import AlreadyExists, PermissionDenied, ValidationFailed
from armada.services.executor_credentials import (
    DEFAULT_NAME,
    PERMISSION,
    executor_credential_create,
    executor_credential_input,
    executor_credential_name_taken,
    executor_credentials_revoke,
)

# The service's field names, as the form calls them.
FORM_FIELDS = {"clusterId": "cluster_id", "name": "name"}
SHOWN_FIELDS = (
    "cluster_id",
    "name",
    "prefix",
    "created_by",
    "created_at",
    "last_used_at",
    "revoked_at",
)


class ExecutorCredentialAddForm(forms.ModelForm):
    """The cluster id and a name; the same checks as the API."""

    class Meta:
        model = ExecutorCredential
        fields = ["cluster_id", "name"]
        labels = {"cluster_id": "Cluster id"}
        help_texts = {
            "cluster_id": "The executor's id (its id in the executor config); the credential "
            "is good for this cluster only.",
            "name": "Unique among the cluster's credentials that are not revoked.",
        }

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["name"].required = False
        self.fields["name"].initial = DEFAULT_NAME

    def clean(self) -> dict:
        cleaned = super().clean()
        if self.errors:
            return cleaned
        try:
            cluster_id, name = executor_credential_input(
                cluster_id=cleaned.get("cluster_id"), name=cleaned.get("name") or None
            )
        except ValidationFailed as exc:
            for error in exc.errors:
                self.add_error(FORM_FIELDS.get(error.field), error.message)
            return cleaned
        if executor_credential_name_taken(cluster_id=cluster_id, name=name):
            self.add_error(
                "name", f"cluster {cluster_id!r} already has a credential named {name!r}"
            )
        cleaned.update(cluster_id=cluster_id, name=name)
        return cleaned

    def validate_unique(self) -> None:
        # The service decides (AlreadyExists, from the database's partial unique index).
        return None


@admin.register(ExecutorCredential)
class ExecutorCredentialAdmin(admin.ModelAdmin):
    add_form = ExecutorCredentialAddForm
    list_display = SHOWN_FIELDS
    list_filter = (("revoked_at", admin.EmptyFieldListFilter), "cluster_id")
    search_fields = ("cluster_id", "name", "prefix")
    list_select_related = ("created_by",)
    readonly_fields = SHOWN_FIELDS
    actions = ["revoke"]

    # -- who may do what: the one permission, for everything -----------------------------

    def has_manage_permission(self, request) -> bool:
        return has_global(request.user, PERMISSION)

    def has_view_permission(self, request, obj=None) -> bool:
        return self.has_manage_permission(request)

    def has_add_permission(self, request) -> bool:
        return self.has_manage_permission(request)

    def has_change_permission(self, request, obj=None) -> bool:
        return False  # nothing is edited: revoke, then add another

    def has_delete_permission(self, request, obj=None) -> bool:
        return False  # a revoked credential keeps its row

    # -- adding: the service makes the key; the message shows it once ---------------------

    def get_fields(self, request, obj=None):
        return ("cluster_id", "name") if obj is None else SHOWN_FIELDS

    def get_readonly_fields(self, request, obj=None):
        return () if obj is None else SHOWN_FIELDS

    def get_form(self, request, obj=None, change=False, **kwargs):
        if obj is None:
            kwargs["form"] = self.add_form
        return super().get_form(request, obj, change=change, **kwargs)

    def save_model(self, request, obj, form, change) -> None:
        try:
            new = executor_credential_create(
                actor=request.user,
                cluster_id=form.cleaned_data["cluster_id"],
                name=form.cleaned_data["name"],
                now=timezone.now(),
            )
        except (AlreadyExists, PermissionDenied, ValidationFailed) as exc:
            # Another operator took the name since the form was checked: nothing was made.
            self.message_user(request, f"No credential was created: {exc}", messages.ERROR)
            return
        obj.pk = new.credential.pk
        obj.refresh_from_db()
        self.message_user(
            request,
            f"The key of executor credential {obj.name!r} for cluster {obj.cluster_id!r} is "
            f"{new.key} — it is shown only now and cannot be shown again. Put it in the file "
            "the executor's api.tokenFile names (or in ARMADA_EXECUTOR_TOKEN).",
            messages.WARNING,
        )

    def log_addition(self, request, obj, message):
        if obj.pk is None:
            return None  # nothing was added (see save_model)
        return super().log_addition(request, obj, message)

    def response_add(self, request, obj, post_url_continue=None):
        if obj.pk is None:
            return HttpResponseRedirect(request.path)  # back to the form; the message says why
        return super().response_add(request, obj, post_url_continue)

    # -- revoking ------------------------------------------------------------------------

    @admin.action(description="Revoke the selected executor credentials", permissions=["manage"])
    def revoke(self, request, queryset) -> None:
        count = executor_credentials_revoke(
            actor=request.user,
            credential_ids=list(queryset.values_list("pk", flat=True)),
            now=timezone.now(),
        )
        self.message_user(
            request,
            f"Revoked {count} executor credential(s); their keys are refused from the next call.",
            messages.SUCCESS,
        )
