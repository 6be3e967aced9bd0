"""Django admin: operators browse and manage queues, policies, jobs, runs, events, executors.

Jobs, runs and events are read-only here: they change only through the services, which
keep state changes and their events together.
"""

from __future__ import annotations

from django.contrib import admin

from armada.models import Event, Executor, Job, Node, Queue, RetryPolicy, Run, RunLog


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Queue)
class QueueAdmin(admin.ModelAdmin):
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


@admin.register(RetryPolicy)
class RetryPolicyAdmin(admin.ModelAdmin):
    list_display = ("name", "retry_limit", "default_action", "version", "updated_at", "updated_by")
    list_filter = ("default_action",)
    search_fields = ("name",)
    readonly_fields = ("version", "created_at", "updated_at", "updated_by")


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
    list_display = ("id", "pool", "backend", "cordoned", "last_heartbeat", "registered_at")
    list_filter = ("pool", "backend", "cordoned")
    search_fields = ("id",)
    readonly_fields = (
        "id",
        "pool",
        "backend",
        "tracked_node_labels",
        "registered_at",
        "last_heartbeat",
    )
    inlines = [NodeInline]

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Node)
class NodeAdmin(admin.ModelAdmin):
    list_display = ("name", "executor", "pool", "unschedulable", "last_seen")
    list_filter = ("executor", "pool", "unschedulable")
    search_fields = ("name",)
    readonly_fields = ("executor", "name", "pool", "labels", "taints", "allocatable", "last_seen")

    def has_add_permission(self, request, obj=None) -> bool:
        return False
