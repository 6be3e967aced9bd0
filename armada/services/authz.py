"""The one funnel that decides who may do what to a queue.

A user may act on a queue when any of these holds, checked in this order:
1. they are a superuser;
2. they hold the global permission for the verb (``submit_any_jobs`` ...), directly or
   through a Django group;
3. they, or one of their groups, own the queue (owners may use every verb);
4. the queue's own ``permissions`` grant the verb to them or to one of their groups.
Every view and service that touches a queue's jobs goes through :func:`require_queue_verb`.

A caller with no credentials (``services.anonymous.AnonymousCaller``, admitted by
``auth.anonymousAuth``) holds only what ``auth.anonymousGroups`` hold: the groups' global
permissions (2), queues the groups own (3) and grants to the groups (4); never a ``User``
subject's.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from armada.services.errors import PermissionDenied

VERBS = ("submit", "cancel", "preempt", "reprioritize", "watch")
GLOBAL_FOR_VERB = {
    "submit": "submit_any_jobs",
    "cancel": "cancel_any_jobs",
    "preempt": "preempt_any_jobs",
    "reprioritize": "reprioritize_any_jobs",
    "watch": "watch_all_events",
}


def user_groups(user: Any) -> set[str]:
    if not getattr(user, "is_authenticated", False):
        return set(getattr(user, "anonymous_groups", ()))
    cached = getattr(user, "_armada_group_names", None)
    if cached is None:
        cached = set(user.groups.values_list("name", flat=True))
        user._armada_group_names = cached
    return cached


def has_global(user: Any, codename: str) -> bool:
    if not getattr(user, "is_authenticated", False):
        return codename in _anonymous_codenames(user)
    return bool(user.is_superuser or user.has_perm(f"armada.{codename}"))


def _anonymous_codenames(user: Any) -> set[str]:
    """The global permissions an anonymous caller's groups hold (one query, kept on them)."""
    groups = getattr(user, "anonymous_groups", ())
    if not groups:
        return set()
    cached = getattr(user, "_armada_codenames", None)
    if cached is None:
        from django.contrib.auth.models import Permission

        cached = set(
            Permission.objects.filter(
                content_type__app_label="armada", group__name__in=groups
            ).values_list("codename", flat=True)
        )
        user._armada_codenames = cached
    return cached


def _subject_matches(subjects: Iterable[dict], username: str | None, groups: set[str]) -> bool:
    for s in subjects:
        kind, name = s.get("kind"), s.get("name")
        if (kind == "User" and name == username) or (kind == "Group" and name in groups):
            return True
    return False


def can_on_queue(user: Any, queue: Any, verb: str) -> bool:
    if verb not in VERBS:
        raise ValueError(f"unknown verb {verb!r}")
    authenticated = getattr(user, "is_authenticated", False)
    if not authenticated and not getattr(user, "anonymous_groups", ()):
        return False
    if has_global(user, GLOBAL_FOR_VERB[verb]):
        return True
    username = user.get_username() if authenticated else None  # never a User subject
    return queue_grants(queue, username, user_groups(user), verb)


def queue_grants(queue: Any, username: str | None, groups: set[str], verb: str) -> bool:
    """Whether the queue itself lets ``username`` or one of ``groups`` use ``verb``: as an
    owner (3), or by one of its ``permissions`` (4). ``queue`` needs only ``owners``,
    ``group_owners`` and ``permissions``; no query."""
    if username in (queue.owners or []) or groups & set(queue.group_owners or []):
        return True
    for grant in queue.permissions or []:
        if verb in grant.get("verbs", []) and _subject_matches(
            grant.get("subjects", []), username, groups
        ):
            return True
    return False


def may_read_queue_access(user: Any, queue: Any) -> bool:
    """Whether ``user`` may read who may act on ``queue``: its owners, group owners and
    permissions. A queue's name and settings are read by every caller let in (as Armada's
    ``GetQueue`` and ``GetQueues`` have them); who may act on it only by those who may
    watch it, and by those who may change it (``create_queue``, which updates queues and so
    sets these fields anyway: an update that replaces the whole queue must read them)."""
    return has_global(user, "create_queue") or can_on_queue(user, queue, "watch")


def require_queue_verb(user: Any, queue: Any, verb: str) -> None:
    """Raise PermissionDenied naming what is missing unless ``user`` may ``verb`` on ``queue``."""
    if not can_on_queue(user, queue, verb):
        raise PermissionDenied(
            f"user {getattr(user, 'username', '') or 'anonymous'!r} may not {verb} on queue "
            f"{queue.name!r}: needs the {verb!r} permission on the queue or the global "
            f"{GLOBAL_FOR_VERB[verb]!r} permission"
        )


def require_global(user: Any, codename: str, action: str) -> None:
    if not has_global(user, codename):
        raise PermissionDenied(
            f"user {getattr(user, 'username', '') or 'anonymous'!r} may not {action}: "
            f"needs the global {codename!r} permission"
        )


def watchable_queues(user: Any) -> list[str] | None:
    """The names of the queues ``user`` may watch, or None when they may watch every queue
    (the global ``watch_all_events``): callers filter by the list only when there is one."""
    from armada.models import Queue

    if has_global(user, "watch_all_events"):
        return None
    return [q.name for q in Queue.objects.order_by("name") if can_on_queue(user, q, "watch")]
