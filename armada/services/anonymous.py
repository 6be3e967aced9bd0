"""The caller who sends no credentials, when ``auth.anonymousAuth`` admits them.

Such a caller is an :class:`AnonymousCaller`: Django's ``AnonymousUser`` named
``anonymous`` (the name Armada gives them, which is what their jobs' owner and requestor
say), counted as a member of ``auth.anonymousGroups``. ``services.authz`` gives them what
those groups hold: the groups' global permissions and what queues grant the groups. They
never match a queue's ``User`` subjects or owners: a real account may be called
``anonymous`` too.
"""

from __future__ import annotations

import logging
from functools import cache

from django.conf import settings
from django.contrib.auth.models import AnonymousUser

log = logging.getLogger("armada")

ANONYMOUS_NAME = "anonymous"


class AnonymousCaller(AnonymousUser):
    username = ANONYMOUS_NAME

    def __init__(self, groups: frozenset[str] = frozenset()) -> None:
        self.anonymous_groups = groups

    def get_username(self) -> str:
        return ANONYMOUS_NAME

    def __str__(self) -> str:
        return ANONYMOUS_NAME


def anonymous_caller() -> AnonymousCaller:
    """The anonymous caller, with the configured groups while ``anonymousAuth`` is on."""
    auth = settings.ARMADA.auth
    return AnonymousCaller(frozenset(auth.anonymous_groups) if auth.anonymous_auth else frozenset())


@cache
def warn_if_anonymous_groups() -> None:
    """Once per process: a loud warning while callers with no credentials get groups."""
    auth = settings.ARMADA.auth
    if auth.anonymous_auth and auth.anonymous_groups:
        log.warning(
            "SECURITY: auth.anonymousGroups is set: anyone who can reach the gRPC or /v1 ports "
            "without credentials acts as a member of %s, with every permission those groups "
            "hold. Use this only on a development machine.",
            ", ".join(sorted(auth.anonymous_groups)),
        )
