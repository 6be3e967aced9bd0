"""Executor credentials: create, list, revoke, and authenticate a key.

An executor process authenticates to the executor API with a credential bound to one
cluster id; it is good for nothing else (the user APIs refuse its key, and the executor API
lets it act only for its own cluster). Creating, listing and revoking credentials needs the
global ``manage_executor_credentials`` permission (superusers hold every permission).

A key is ``arme_`` followed by 40 random URL-safe characters (240 bits). As with personal
API tokens (``services.tokens``), it is shown once, when it is made, and only its SHA-256
digest is stored; ``prefix`` (``arme_`` and the next 8 characters) tells credentials apart.
The ``arme_`` keys never pass for personal tokens: those start with ``arm_`` and
``"arme_".startswith("arm_")`` is false, so the user APIs send them to the legacy-token
lookup, which knows no such key (401).

Order of the checks in :func:`executor_credential_authenticate`: the key's shape, the row
found by its digest, revoked. Each refusal says which. Nothing is cached: a revoked
credential is refused from the next call on.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Q

from armada.core.config_types import RFC1123_LABEL
from armada.models import ExecutorCredential
from armada.services.authz import require_global
from armada.services.errors import AlreadyExists, FieldError, NotFound, ValidationFailed
from armada.services.tokens import KEY_PREFIX as USER_TOKEN_PREFIX
from armada.services.tokens import KEY_RANDOM_CHARS, LAST_USED_EVERY, key_digest, new_key

__all__ = [
    "DEFAULT_NAME",
    "KEY_PREFIX",
    "LAST_USED_EVERY",
    "MAX_ID",
    "PERMISSION",
    "CredentialRefused",
    "ExecutorIdentity",
    "NewExecutorCredential",
    "executor_credential_authenticate",
    "executor_credential_create",
    "executor_credential_input",
    "executor_credential_issue",
    "executor_credential_list",
    "executor_credential_name_taken",
    "executor_credential_revoke",
    "executor_credentials_revoke",
    "is_executor_key",
    "require_manage_executor_credentials",
]

KEY_PREFIX = "arme_"
PREFIX_CHARS = len(KEY_PREFIX) + 8
KEY_SHAPE = re.compile(rf"{KEY_PREFIX}[A-Za-z0-9_-]{{{KEY_RANDOM_CHARS}}}")
NAME_MAX_CHARS = 100
CLUSTER_ID_MAX_CHARS = 63
DEFAULT_NAME = "executor"
PERMISSION = "manage_executor_credentials"
# Ids are 64-bit: a larger number names no credential (and must not reach the database).
MAX_ID = 2**63 - 1


class CredentialRefused(Exception):
    """The key authenticates no executor; the message says why (unknown key, revoked at
    <time>, not an executor key)."""


@dataclass(frozen=True)
class ExecutorIdentity:
    """Who a call of the executor API comes from: the cluster its credential is for."""

    cluster_id: str
    credential_id: int


@dataclass(frozen=True)
class NewExecutorCredential:
    """A credential just made, with its key: the only time the key is known."""

    credential: ExecutorCredential
    key: str


def is_executor_key(key: str) -> bool:
    """Whether ``key`` has the shape of an executor key (``arme_`` and 40 characters)."""
    return KEY_SHAPE.fullmatch(key) is not None


def require_manage_executor_credentials(actor: Any) -> None:
    """PermissionDenied naming ``manage_executor_credentials`` unless ``actor`` holds it."""
    require_global(actor, PERMISSION, "create, list or revoke executor credentials")


def _cluster_id_problem(cluster_id: Any) -> str | None:
    if cluster_id is None or cluster_id == "":
        return "is required: the id of the executor's cluster (its id in the executor config)"
    if not isinstance(cluster_id, str):
        return "must be text"
    if len(cluster_id) > CLUSTER_ID_MAX_CHARS:
        return f"must be at most {CLUSTER_ID_MAX_CHARS} characters"
    if not RFC1123_LABEL.fullmatch(cluster_id):
        return (
            "must be a lower-case RFC 1123 label: letters a-z, digits and '-', starting and "
            "ending with a letter or digit"
        )
    return None


def _name_problem(name: str) -> str | None:
    if not name:
        return f"must be 1 to {NAME_MAX_CHARS} characters"
    if len(name) > NAME_MAX_CHARS:
        return f"must be at most {NAME_MAX_CHARS} characters"
    if any(unicodedata.category(c) == "Cc" for c in name):
        return "must not contain control characters"
    return None


def executor_credential_input(*, cluster_id: Any, name: Any = None) -> tuple[str, str]:
    """The cluster id and name of a new credential, checked: ``(cluster_id, name)``.

    ``cluster_id`` must be a lower-case RFC 1123 label of at most 63 characters, as an
    executor's id is. ``name`` is trimmed and must then be 1 to 100 characters without
    control characters; None gives ``DEFAULT_NAME``. Raises ValidationFailed naming every
    field at fault (``clusterId``, ``name``)."""
    problems: list[FieldError] = []
    problem = _cluster_id_problem(cluster_id)
    if problem:
        problems.append(FieldError("clusterId", problem))
    text = DEFAULT_NAME
    if name is not None:
        if isinstance(name, str):
            text = name.strip()
            problem = _name_problem(text)
        else:
            problem = "must be text"
        if problem:
            problems.append(FieldError("name", problem))
    if problems:
        raise ValidationFailed(problems)
    return cluster_id, text


def executor_credential_name_taken(*, cluster_id: str, name: str) -> bool:
    """Whether ``cluster_id`` has a credential named ``name`` that is not revoked (for a
    form's early word; :func:`executor_credential_create` decides)."""
    return ExecutorCredential.objects.filter(
        cluster_id=cluster_id, name=name, revoked_at__isnull=True
    ).exists()


def executor_credential_create(
    *, actor: Any, cluster_id: str, name: str | None = None, now: datetime
) -> NewExecutorCredential:
    """Make a credential for ``cluster_id`` on behalf of ``actor``; the returned key is never
    stored and cannot be shown again. The cluster need not have registered yet (a
    credential is made before its executor first starts).

    Order: the permission (PermissionDenied), then the input (ValidationFailed naming each
    field), then the write. A second credential of the same name for the same cluster, not
    revoked, is AlreadyExists: the database's partial unique index decides, so of two
    creates racing with one name exactly one wins."""
    require_manage_executor_credentials(actor)
    return executor_credential_issue(cluster_id=cluster_id, name=name, now=now, created_by=actor)


def executor_credential_issue(
    *,
    cluster_id: str,
    name: str | None = None,
    now: datetime,
    replace: bool = False,
    created_by: Any = None,
) -> NewExecutorCredential:
    """Make a credential without asking whose call it is: for the control plane's own
    processes (``runall`` makes one for each executor it starts) and for
    :func:`executor_credential_create` once it has checked its caller. The same input checks
    and the same AlreadyExists.

    With ``replace``, the cluster's credential of that name that is not revoked (if any) is
    revoked at ``now`` first, in the same transaction as the new one is made: a key that was
    lost is replaced without a name clash."""
    clean_cluster, clean_name = executor_credential_input(cluster_id=cluster_id, name=name)
    key = new_key(KEY_PREFIX)
    try:
        with transaction.atomic():
            if replace:
                ExecutorCredential.objects.filter(
                    cluster_id=clean_cluster, name=clean_name, revoked_at__isnull=True
                ).update(revoked_at=now)
            credential = ExecutorCredential.objects.create(
                cluster_id=clean_cluster,
                name=clean_name,
                digest=key_digest(key),
                prefix=key[:PREFIX_CHARS],
                created_by=created_by,
                created_at=now,
            )
    except IntegrityError:
        raise AlreadyExists(
            f"cluster {clean_cluster!r} already has an executor credential named "
            f"{clean_name!r}; choose another name or revoke that one"
        ) from None
    return NewExecutorCredential(credential=credential, key=key)


def executor_credential_list(
    *, actor: Any, cluster_id: str | None = None
) -> list[ExecutorCredential]:
    """Every credential, revoked ones included (operators see what they were), by cluster
    id and then newest first; only those of ``cluster_id`` when it is given. A
    ``cluster_id`` that no executor could have is ValidationFailed naming ``clusterId``."""
    require_manage_executor_credentials(actor)
    rows = ExecutorCredential.objects.select_related("created_by")
    if cluster_id is not None:
        problem = _cluster_id_problem(cluster_id)
        if problem:
            raise ValidationFailed.one("clusterId", problem)
        rows = rows.filter(cluster_id=cluster_id)
    return list(rows.order_by("cluster_id", "-created_at", "-id"))


def _valid_id(credential_id: Any) -> int | None:
    if isinstance(credential_id, bool) or not isinstance(credential_id, int):
        return None
    return credential_id if 0 < credential_id <= MAX_ID else None


def executor_credential_revoke(
    *, actor: Any, credential_id: int, now: datetime
) -> ExecutorCredential:
    """Revoke a credential: from its next call on, its key is refused. Idempotent: a
    credential already revoked keeps its first ``revoked_at`` and is returned as it is (a
    guarded UPDATE, so of two revocations at once one writes). NotFound for an id no
    credential has."""
    require_manage_executor_credentials(actor)
    pk = _valid_id(credential_id)
    if pk is not None:
        ExecutorCredential.objects.filter(pk=pk, revoked_at__isnull=True).update(revoked_at=now)
    credential = (
        ExecutorCredential.objects.select_related("created_by").filter(pk=pk).first()
        if pk is not None
        else None
    )
    if credential is None:
        raise NotFound(f"no executor credential with id {str(credential_id)[:40]!r}")
    return credential


def executor_credentials_revoke(*, actor: Any, credential_ids: list[int], now: datetime) -> int:
    """Revoke several credentials at once (the admin's action); returns how many were still
    live. Those already revoked keep their time."""
    require_manage_executor_credentials(actor)
    ids = [pk for pk in map(_valid_id, credential_ids) if pk is not None]
    return ExecutorCredential.objects.filter(pk__in=ids, revoked_at__isnull=True).update(
        revoked_at=now
    )


def executor_credential_authenticate(*, key: str, now: datetime) -> ExecutorIdentity:
    """The cluster a key may act for; raises CredentialRefused saying why not.

    One indexed query (the unique digest) per call, and no cache, so a revoked credential is
    refused from the next call on. ``last_used_at`` is written only when it is older than
    ``LAST_USED_EVERY``, by a guarded UPDATE, so that concurrent calls write it once and a
    busy executor does not write on every call."""
    if not isinstance(key, str) or not is_executor_key(key):
        if isinstance(key, str) and key.startswith(USER_TOKEN_PREFIX):
            raise CredentialRefused(
                "not an executor key: this is a personal API token, which the executor API "
                f"does not take; create an executor credential (its key starts with "
                f"{KEY_PREFIX!r})"
            )
        raise CredentialRefused(
            f"not an executor key: executor keys are {KEY_PREFIX!r} and "
            f"{KEY_RANDOM_CHARS} characters"
        )
    try:
        # get(), not first(): no ORDER BY on a lookup by a unique key.
        credential = ExecutorCredential.objects.get(digest=key_digest(key))
    except ExecutorCredential.DoesNotExist:
        raise CredentialRefused(
            "unknown executor key: no such credential (mistyped, or made by another server)"
        ) from None
    if credential.revoked_at is not None:
        raise CredentialRefused(
            f"executor credential {credential.name!r} of cluster {credential.cluster_id!r} was "
            f"revoked at {credential.revoked_at.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC; "
            "create a new one"
        )
    stale = now - LAST_USED_EVERY
    if credential.last_used_at is None or credential.last_used_at <= stale:
        ExecutorCredential.objects.filter(pk=credential.pk).filter(
            Q(last_used_at__isnull=True) | Q(last_used_at__lte=stale)
        ).update(last_used_at=now)
    return ExecutorIdentity(cluster_id=credential.cluster_id, credential_id=credential.pk)
