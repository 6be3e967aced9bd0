from __future__ import annotations

from django.core.validators import MinValueValidator, RegexValidator
from django.db import models

from armada.core.config import PERMISSION_CODENAMES

RFC1123_LABEL = RegexValidator(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
    "must be a lower-case RFC 1123 label: a-z, 0-9 and '-', starting and ending alphanumeric",
)

# Global permissions (DESIGN.md section 4). ``delete_queue`` is Django's own delete
# permission on Queue; the retry-policy ones live on RetryPolicy.
QUEUE_PERMISSIONS = {
    "submit_any_jobs": "Can submit jobs to any queue",
    "cancel_any_jobs": "Can cancel jobs in any queue",
    "preempt_any_jobs": "Can preempt jobs in any queue",
    "reprioritize_any_jobs": "Can reprioritize jobs in any queue",
    "watch_all_events": "Can watch the events of any queue",
    "create_queue": "Can create queues",
    "cordon_queue": "Can cordon and uncordon queues",
}
POLICY_PERMISSIONS = {
    "create_retry_policy": "Can create retry policies",
    "update_retry_policy": "Can update retry policies",
    "delete_retry_policy": "Can delete retry policies",
}
# Armada's name for cordoning executors; it lives on Executor.
EXECUTOR_PERMISSIONS = {
    "update_executor_settings": "Can cordon and uncordon executors",
    "manage_executor_credentials": "Can create, list and revoke executor credentials",
}
assert set(QUEUE_PERMISSIONS) | set(POLICY_PERMISSIONS) | set(EXECUTOR_PERMISSIONS) | {
    "delete_queue"
} == set(PERMISSION_CODENAMES)


class Queue(models.Model):
    """Where jobs wait, and the unit of fair share.

    ``owners``/``group_owners`` are user and group names (identities may come from outside
    Django); ``permissions`` is a list of ``{"subjects": [{"kind": "User"|"Group", "name"}],
    "verbs": [...]}``; ``retry_policies`` is the ordered list of policy names (only the first is
    evaluated, the rest are kept). ``resource_limits_by_priority_class_name`` is Armada's
    ``resourceLimitsByPriorityClassName``, validated and normalised by
    ``core.queues.limits_by_priority_class`` (priority class -> ``{"maximumResourceFraction":
    {resource: fraction}, "maximumResourceFractionByPool": {pool: {"maximumResourceFraction":
    {...}}}}``), always in that shape (``{}`` for none); the scheduler merges a class's entry
    over the priority class's own limits (``core.limits.class_fractions``).

    Events belong to a queue, not to its name: ``event_floor`` fences off the events of an
    earlier queue of the same name (``services.events.events_for_job_set``).
    """

    name = models.CharField(max_length=63, unique=True, validators=[RFC1123_LABEL])
    priority_factor = models.FloatField(default=1.0, validators=[MinValueValidator(1.0)])
    owners = models.JSONField(default=list, blank=True)
    group_owners = models.JSONField(default=list, blank=True)
    permissions = models.JSONField(default=list, blank=True)
    labels = models.JSONField(default=dict, blank=True)
    cordoned = models.BooleanField(default=False)
    retry_policies = models.JSONField(default=list, blank=True)
    resource_limits_by_priority_class_name = models.JSONField(default=dict, blank=True)
    # The newest event id when this queue was made: events of its name up to this id belong
    # to an earlier queue of the same name (deleted), never to this one.
    event_floor = models.BigIntegerField(default=0)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta:
        ordering = ["name"]
        permissions = list(QUEUE_PERMISSIONS.items())

    def __str__(self) -> str:
        return self.name
