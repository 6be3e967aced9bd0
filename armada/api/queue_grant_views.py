"""API views that grant or revoke a queue's permissions for some users and groups
(``POST /queues/{name}/grant|revoke``): the one-subject change people make, without
reading and rewriting the whole ``permissions`` list (``services.queue_grants``)."""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from armada.api.serializers import QueueSerializer
from armada.api.serializers.queues import SubjectSerializer
from armada.api.views import ERRORS, ApiView
from armada.core.queues import VERBS
from armada.services.queue_grants import queue_permissions_change


class PermissionChangeSerializer(serializers.Serializer):
    """Documents the body; validation itself is ``core.queue_grants.parse_change``."""

    subjects = SubjectSerializer(many=True, allow_empty=False)
    verbs = serializers.ListField(
        child=serializers.ChoiceField(choices=VERBS),
        required=False,
        help_text="the verbs to grant (at least one) or revoke (none: every verb)",
    )


class QueuePermissionChangeView(ApiView):
    action = "grant"

    @extend_schema(
        request=PermissionChangeSerializer,
        responses={200: QueueSerializer, **ERRORS},
        examples=[
            OpenApiExample(
                "let alice and group ml watch",
                value={
                    "subjects": [
                        {"kind": "User", "name": "alice"},
                        {"kind": "Group", "name": "ml"},
                    ],
                    "verbs": ["watch"],
                },
                request_only=True,
            )
        ],
        summary="Grant verbs on a queue to users and groups, or revoke them",
    )
    def post(self, request: Request, name: str) -> Response:
        queue = queue_permissions_change(
            actor=request.user, name=name, action=self.action, data=request.data, now=timezone.now()
        )
        # The caller (who may update queues) reads who may act on it (``QueueSerializer``).
        return Response(QueueSerializer(queue, context={"actor": request.user}).data)
