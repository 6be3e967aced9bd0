"""Django admin: operators browse and manage queues, policies, jobs, runs, events, executors.
Executor credentials have a module of their own (``armada.admin_executor_credentials``).

Jobs, runs and events are read-only here: they change only through the services, which
keep state changes and their events together.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.utils import timezone

from armada import admin_executor_credentials  # noqa: F401 (registers its ModelAdmin)
from armada.auth_forms import AdminLoginForm
from armada.core.errors import ValidationFailed
from armada.core.policy import parse_policy
from armada.core.queues import LIMITS
from armada.models import (
    Event,
    Executor,
    Job,
    Node,
    Queue,
    RetryPolicy,
    RetryPolicyVersion,
    Run,
    RunLog,
)
from armada.services import policies as policy_services
from armada.services.errors import Conflict, FailedPrecondition, NotFound
from armada.services.queues import new_queue_event_floor, queue_delete, queue_parse


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


class QueueForm(forms.ModelForm):
    """The same checks as the API (``services.queues.queue_parse``): a valid queue body,
    limits by priority class naming configured classes and pools, and retry policies that
    exist. The limits are saved as the API stores them (normalised)."""

    class Meta:
        model = Queue
        fields = [
            "name",
            "priority_factor",
            "owners",
            "group_owners",
            "permissions",
            "labels",
            "cordoned",
            "retry_policies",
            "resource_limits_by_priority_class_name",
        ]
        labels = {"resource_limits_by_priority_class_name": "Resource limits by priority class"}
        help_texts = {
            "resource_limits_by_priority_class_name": "JSON, as resourceLimitsByPriorityClassName "
            'in a queue file, e.g. {"armada-preemptible": {"maximumResourceFraction": {"cpu": '
            '0.3}, "maximumResourceFractionByPool": {"gpu-pool": {"maximumResourceFraction": '
            '{"cpu": 0.1}}}}}; {} for none (the priority classes\' own limits apply)',
        }

    def clean(self) -> dict:
        cleaned = super().clean()
        if self.errors:
            return cleaned
        body = {
            "name": cleaned.get("name") or (self.instance.name if self.instance.pk else None),
            "priorityFactor": cleaned.get("priority_factor"),
            "owners": cleaned.get("owners") or [],
            "groupOwners": cleaned.get("group_owners") or [],
            "permissions": cleaned.get("permissions") or [],
            "labels": cleaned.get("labels") or {},
            "retryPolicies": cleaned.get("retry_policies") or [],
            LIMITS: cleaned.get("resource_limits_by_priority_class_name") or {},
        }
        fields = {
            "name": "name",
            "priorityFactor": "priority_factor",
            "owners": "owners",
            "groupOwners": "group_owners",
            "permissions": "permissions",
            "labels": "labels",
            "retryPolicies": "retry_policies",
            LIMITS: "resource_limits_by_priority_class_name",
        }
        try:
            parsed = queue_parse(body)
            cleaned["resource_limits_by_priority_class_name"] = parsed[
                "resource_limits_by_priority_class_name"
            ]
            missing = [
                n for n in body["retryPolicies"] if not RetryPolicy.objects.filter(name=n).exists()
            ]
            if missing:
                raise ValidationFailed.one(
                    "retryPolicies", f"unknown retry policies: {', '.join(missing)}"
                )
        except ValidationFailed as exc:
            for error in exc.errors:
                top = error.field.split("[")[0].split(".")[0]
                self.add_error(fields.get(top), str(error))
        return cleaned


@admin.register(Queue)
class QueueAdmin(admin.ModelAdmin):
    form = QueueForm

    def save_model(self, request, obj, form, change) -> None:
        now = timezone.now()
        if not change:
            obj.created_at = now
            obj.event_floor = new_queue_event_floor()
            if not obj.owners and not obj.group_owners:
                obj.owners = [request.user.get_username()]
        obj.updated_at = now
        super().save_model(request, obj, form, change)

    def delete_model(self, request, obj) -> None:
        """Through the service: refused while jobs are unfinished; the events fenced."""
        try:
            queue_delete(actor=request.user, name=obj.name, now=timezone.now())
        except (FailedPrecondition, NotFound) as exc:
            self.message_user(request, str(exc), level=messages.ERROR)

    def delete_queryset(self, request, queryset) -> None:
        for obj in queryset:
            self.delete_model(request, obj)

    def get_deleted_objects(self, objs, request):
        """Only the queues themselves: the service deletes their finished jobs and runs (and
        refuses while one is unfinished), whatever the admin's rights on jobs."""
        queues = [str(obj) for obj in objs]
        return queues, {Queue._meta.verbose_name_plural: len(queues)}, set(), []

    list_display = (
        "name",
        "priority_factor",
        "cordoned",
        "owners",
        "group_owners",
        "retry_policies",
        "updated_at",
    )
    list_filter = ("cordoned",)
    search_fields = ("name",)
    readonly_fields = ("created_at", "updated_at")


class RetryPolicyForm(forms.ModelForm):
    """Validated by the core, exactly as the API validates a policy file."""

    class Meta:
        model = RetryPolicy
        fields = ["name", "retry_limit", "default_action", "rules"]
        help_texts = {
            "rules": 'A JSON list, e.g. [{"action": "Retry", "onCategory": "oom", '
            '"mutate": {"resources": {"memory": {"factor": 1.5}}}}]',
        }

    def document(self) -> dict:
        data = self.cleaned_data
        return {
            "name": data.get("name"),
            "retryLimit": data.get("retry_limit"),
            "defaultAction": data.get("default_action"),
            "rules": data.get("rules") or [],
        }

    def clean(self) -> dict:
        cleaned = super().clean()
        if self.errors:
            return cleaned
        try:
            parse_policy(self.document())
        except ValidationFailed as exc:
            fields = {
                "name": "name",
                "retryLimit": "retry_limit",
                "defaultAction": "default_action",
            }
            for error in exc.errors:
                top = error.field.split("[")[0].split(".")[0]
                self.add_error(fields.get(top, "rules"), str(error))
        return cleaned


@admin.register(RetryPolicy)
class RetryPolicyAdmin(admin.ModelAdmin):
    form = RetryPolicyForm
    list_display = ("name", "retry_limit", "default_action", "version", "updated_at", "updated_by")
    list_filter = ("default_action",)
    search_fields = ("name",)
    readonly_fields = ("version", "created_at", "updated_at", "updated_by")

    def get_readonly_fields(self, request, obj=None):
        return (*self.readonly_fields, "name") if obj else self.readonly_fields

    def save_model(self, request, obj, form, change) -> None:
        document = form.document()
        if change:
            document["name"] = obj.name
            saved = policy_services.policy_update(
                actor=request.user, name=obj.name, data=document, now=timezone.now()
            )
        else:
            saved = policy_services.policy_create(
                actor=request.user, data=document, now=timezone.now()
            )
        obj.pk = saved.pk
        obj.refresh_from_db()

    def delete_model(self, request, obj) -> None:
        try:
            policy_services.policy_delete(actor=request.user, name=obj.name)
        except Conflict as exc:
            self.message_user(request, str(exc), level=messages.ERROR)

    def delete_queryset(self, request, queryset) -> None:
        for obj in queryset:
            self.delete_model(request, obj)


@admin.register(RetryPolicyVersion)
class RetryPolicyVersionAdmin(ReadOnlyAdmin):
    """The policies' history, deleted policies' included (their ``policy`` is empty)."""

    list_display = ("policy_name", "version", "saved_by", "saved_at", "policy")
    list_filter = ("saved_by",)
    search_fields = ("policy_name",)
    date_hierarchy = "saved_at"
    list_select_related = ("policy",)


class RunInline(admin.TabularInline):
    model = Run
    extra = 0
    can_delete = False
    fields = (
        "id",
        "state",
        "executor",
        "node",
        "leased_at",
        "finished_at",
        "exit_code",
        "reason",
        "failure_category",
        "retryable",
    )
    readonly_fields = fields
    show_change_link = True

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Job)
class JobAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "queue",
        "job_set",
        "state",
        "owner",
        "priority",
        "priority_class",
        "submitted_at",
        "run_count",
        "failure_category",
    )
    list_filter = ("state", "priority_class", "failure_category", "queue")
    search_fields = ("id", "job_set", "owner")
    date_hierarchy = "submitted_at"
    inlines = [RunInline]
    list_select_related = ("queue",)
    show_full_result_count = False


class RunLogInline(admin.StackedInline):
    model = RunLog
    extra = 0
    can_delete = False
    fields = ("text", "truncated", "updated_at")
    readonly_fields = fields

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Run)
class RunAdmin(ReadOnlyAdmin):
    inlines = [RunLogInline]
    list_display = (
        "id",
        "job",
        "state",
        "executor",
        "node",
        "leased_at",
        "finished_at",
        "exit_code",
        "reason",
        "failure_category",
        "failure_subcategory",
        "retryable",
    )
    list_filter = ("state", "executor", "failure_category", "retryable")
    search_fields = ("id", "job__id", "node", "reason")
    show_full_result_count = False


@admin.register(Event)
class EventAdmin(ReadOnlyAdmin):
    list_display = ("id", "created", "type", "queue", "job_set", "job_id", "run_id")
    list_filter = ("type",)
    search_fields = ("job_id", "job_set", "queue")
    show_full_result_count = False


class NodeInline(admin.TabularInline):
    model = Node
    extra = 0
    fields = ("name", "pool", "labels", "allocatable", "unschedulable", "last_seen")
    readonly_fields = ("name", "pool", "labels", "allocatable", "last_seen")
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Executor)
class ExecutorAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "pool",
        "backend",
        "cordoned",
        "cordon_reason",
        "last_heartbeat",
        "instance",
        "registered_at",
    )
    list_filter = ("pool", "backend", "cordoned")
    search_fields = ("id",)
    readonly_fields = (
        "id",
        "pool",
        "backend",
        "tracked_node_labels",
        "registered_at",
        "last_heartbeat",
        "instance",
        "session_opened_at",
    )
    exclude = ("session", "nodes_digest")  # the session id is a fencing token: never shown
    inlines = [NodeInline]

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        # Cordoning is the one change an executor takes here: the API's permission.
        return request.user.has_perm("armada.update_executor_settings")


@admin.register(Node)
class NodeAdmin(admin.ModelAdmin):
    list_display = ("name", "executor", "pool", "unschedulable", "last_seen")
    list_filter = ("executor", "pool", "unschedulable")
    search_fields = ("name",)
    readonly_fields = ("executor", "name", "pool", "labels", "taints", "allocatable", "last_seen")

    def has_add_permission(self, request, obj=None) -> bool:
        return False


# The admin's login takes staff only, as before, and counts failures with the API and
# Lookout (armada.services.login_throttle).
admin.site.login_form = AdminLoginForm


# API tokens have a module of their own; it builds on ReadOnlyAdmin, above.
from armada import admin_tokens  # noqa: E402,F401 (registers its ModelAdmin)
