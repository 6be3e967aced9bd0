"""REST views of executor credentials: list them, create one (its key is in the answer, and
only there), revoke one. All need the global ``manage_executor_credentials`` permission.
Thin: ``armada.services.executor_credentials`` decides."""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from armada.api.serializers import ErrorSerializer
from armada.api.views import ApiView
from armada.services.errors import FieldError, NotFound, ValidationFailed
from armada.services.executor_credentials import (
    DEFAULT_NAME,
    MAX_ID,
    executor_credential_create,
    executor_credential_list,
    executor_credential_revoke,
    require_manage_executor_credentials,
)


class ExecutorCredentialSerializer(serializers.Serializer):
    """A credential as listed: never its key."""

    id = serializers.IntegerField()
    clusterId = serializers.CharField(
        source="cluster_id", help_text="the executor id the credential is good for, and no other"
    )
    name = serializers.CharField()
    prefix = serializers.CharField(help_text="the key's first characters, to tell keys apart")
    createdAt = serializers.DateTimeField(source="created_at")
    createdBy = serializers.CharField(
        source="created_by.username",
        allow_null=True,
        help_text="who made it (null once that user is deleted)",
    )
    lastUsedAt = serializers.DateTimeField(
        source="last_used_at", allow_null=True, help_text="to within about a minute"
    )
    revokedAt = serializers.DateTimeField(
        source="revoked_at",
        allow_null=True,
        help_text="when it was revoked; its key is refused from then on",
    )


class NewExecutorCredentialSerializer(ExecutorCredentialSerializer):
    key = serializers.CharField(help_text="the secret: shown this once, never stored")


class ExecutorCredentialInputSerializer(serializers.Serializer):
    clusterId = serializers.CharField(
        max_length=63, help_text="the executor's id: a lower-case RFC 1123 label"
    )
    name = serializers.CharField(
        required=False,
        allow_null=True,
        max_length=100,
        help_text=f"unique among the cluster's credentials not revoked (default {DEFAULT_NAME!r})",
    )


_ERROR = {
    code: OpenApiResponse(ErrorSerializer, description=text)
    for code, text in (
        (400, "invalid input; `errors` names each field"),
        (403, "permission denied: needs the global `manage_executor_credentials` permission"),
        (404, "no executor credential has that id"),
        (409, "the cluster already has a credential of that name, not revoked"),
        (413, "the body is larger than the server accepts"),
    )
}
CLUSTER_ID = OpenApiParameter(
    "clusterId", OpenApiTypes.STR, description="only the credentials of this executor id"
)
CREDENTIAL_ID = OpenApiParameter("credential_id", OpenApiTypes.INT, OpenApiParameter.PATH)


def _body(data: Any, allowed: set[str], what: str) -> dict[str, Any]:
    """The body as a JSON object with only ``allowed`` fields (unknown ones refused by name);
    no body at all is an empty object."""
    if data in (None, ""):
        return {}
    if not isinstance(data, dict):
        raise ValidationFailed.one("", f"the body must be a JSON object {what}")
    unknown = sorted(str(key) for key in data if key not in allowed)
    if unknown:
        raise ValidationFailed([FieldError(key, "unknown field") for key in unknown])
    return data


def _credential_id(text: str) -> int:
    """The id in the path; text that is not a whole number is an id no credential has."""
    if text.isascii() and text.isdigit() and len(text) <= 19 and 0 < int(text) <= MAX_ID:
        return int(text)
    raise NotFound(f"no executor credential with id {text[:40]!r}")


class ExecutorCredentialListView(ApiView):
    @extend_schema(
        parameters=[CLUSTER_ID],
        responses={
            200: ExecutorCredentialSerializer(many=True),
            400: _ERROR[400],
            403: _ERROR[403],
        },
        summary="List executor credentials (revoked ones too; never their keys)",
        description="Needs the global `manage_executor_credentials` permission.",
    )
    def get(self, request: Request) -> Response:
        require_manage_executor_credentials(request.user)
        cluster_id = request.query_params.get("clusterId") or None
        rows = executor_credential_list(actor=request.user, cluster_id=cluster_id)
        return Response(ExecutorCredentialSerializer(rows, many=True).data)

    @extend_schema(
        request=ExecutorCredentialInputSerializer,
        responses={
            201: NewExecutorCredentialSerializer,
            400: _ERROR[400],
            403: _ERROR[403],
            409: _ERROR[409],
            413: _ERROR[413],
        },
        examples=[
            OpenApiExample(
                "a credential for cluster-1",
                value={"clusterId": "cluster-1", "name": "executor"},
                request_only=True,
            )
        ],
        summary="Create an executor credential; the answer holds its key, which is not shown again",
        description="Needs the global `manage_executor_credentials` permission. The key is "
        "good only for the executor API, and only for the executor of `clusterId`.",
    )
    def post(self, request: Request) -> Response:
        require_manage_executor_credentials(request.user)  # 403 before a bad body
        data = _body(
            request.data,
            set(ExecutorCredentialInputSerializer().fields),
            "with a clusterId and, optionally, a name",
        )
        new = executor_credential_create(
            actor=request.user,
            cluster_id=data.get("clusterId"),
            name=data.get("name"),
            now=timezone.now(),
        )
        body = ExecutorCredentialSerializer(new.credential).data
        response = Response({**body, "key": new.key}, status=status.HTTP_201_CREATED)
        response["Cache-Control"] = "no-store"
        return response


class ExecutorCredentialRevokeView(ApiView):
    @extend_schema(
        operation_id="executor_credentials_revoke",
        request=None,
        parameters=[CREDENTIAL_ID],
        responses={
            200: ExecutorCredentialSerializer,
            400: _ERROR[400],
            403: _ERROR[403],
            404: _ERROR[404],
            413: _ERROR[413],
        },
        summary="Revoke an executor credential: its key is refused from the next call on",
        description="Needs the global `manage_executor_credentials` permission. Idempotent: "
        "revoking a revoked credential changes nothing and answers it, with the time it was "
        "first revoked. Takes no body.",
    )
    def post(self, request: Request, credential_id: str) -> Response:
        require_manage_executor_credentials(request.user)
        _body(request.data, set(), "(or none: this call takes no fields)")
        credential = executor_credential_revoke(
            actor=request.user, credential_id=_credential_id(credential_id), now=timezone.now()
        )
        return Response(ExecutorCredentialSerializer(credential).data)
