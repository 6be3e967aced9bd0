"""REST views of personal API tokens: list yours, create one (its key is in the answer, and
only there), revoke one. Thin: ``armada.services.tokens`` decides."""

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
from armada.models import ApiToken
from armada.services.errors import FieldError, ValidationFailed
from armada.services.tokens import (
    TokenLifetimes,
    made_with,
    token_create,
    token_expiry,
    token_list,
    token_revoke,
)


class TokenSerializer(serializers.Serializer):
    """A token as listed: never its key."""

    id = serializers.IntegerField()
    name = serializers.CharField()
    prefix = serializers.CharField(help_text="the key's first characters, to tell tokens apart")
    createdAt = serializers.DateTimeField(source="created_at")
    expiresAt = serializers.DateTimeField(source="expires_at", allow_null=True)
    lastUsedAt = serializers.DateTimeField(
        source="last_used_at", allow_null=True, help_text="to within about a minute"
    )
    expired = serializers.SerializerMethodField()
    current = serializers.SerializerMethodField(
        help_text="true for the token that authenticated this request"
    )

    def get_expired(self, token: ApiToken) -> bool:
        return token.expires_at is not None and token.expires_at <= self.context["now"]

    def get_current(self, token: ApiToken) -> bool:
        auth = self.context.get("auth")
        return isinstance(auth, ApiToken) and auth.pk == token.pk


class NewTokenSerializer(TokenSerializer):
    key = serializers.CharField(help_text="the secret: shown this once, never stored")


class TokenInputSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="unique among your tokens, e.g. 'laptop'")
    expiresAt = serializers.DateTimeField(
        required=False, allow_null=True, help_text="when it stops working (with its offset)"
    )
    expiresIn = serializers.CharField(
        required=False, allow_null=True, help_text="or a duration from now: '30d', '12h'"
    )


_ERROR = {
    code: OpenApiResponse(ErrorSerializer, description=text)
    for code, text in (
        (400, "invalid input; `errors` names each field"),
        (403, "the call was made with a token that never expires, which may not make tokens"),
        (404, "you have no token with that id"),
        (409, "you already have a token of that name"),
        (413, "the body is larger than the server accepts"),
    )
}


def _context(request: Request) -> dict[str, Any]:
    return {"now": timezone.now(), "auth": request.auth}


class TokenListView(ApiView):
    @extend_schema(
        responses={200: TokenSerializer(many=True)},
        summary="List your API tokens (not revoked; never their keys)",
    )
    def get(self, request: Request) -> Response:
        tokens = token_list(user=request.user)
        return Response(TokenSerializer(tokens, many=True, context=_context(request)).data)

    @extend_schema(
        request=TokenInputSerializer,
        responses={
            201: NewTokenSerializer,
            **{code: _ERROR[code] for code in (400, 403, 409, 413)},
        },
        examples=[
            OpenApiExample(
                "a token for 90 days",
                value={"name": "laptop", "expiresIn": "90d"},
                request_only=True,
            )
        ],
        summary="Create an API token; the answer holds its key, which is not shown again",
    )
    def post(self, request: Request) -> Response:
        data = request.data if isinstance(request.data, dict) else None
        if data is None:
            raise ValidationFailed.one("", "the body must be a JSON object with a name")
        unknown = sorted(str(key) for key in data if key not in TokenInputSerializer().fields)
        if unknown:
            raise ValidationFailed([FieldError(key, "unknown field") for key in unknown])
        now = timezone.now()
        expires_at = token_expiry(
            expires_at=data.get("expiresAt"),
            expires_in=data.get("expiresIn"),
            now=now,
            lifetimes=TokenLifetimes.configured(),
            made_with=made_with(request.auth),
        )
        new = token_create(user=request.user, name=data.get("name"), expires_at=expires_at, now=now)
        body = TokenSerializer(new.token, context=_context(request)).data
        response = Response({**body, "key": new.key}, status=status.HTTP_201_CREATED)
        response["Cache-Control"] = "no-store"
        return response


class TokenDetailView(ApiView):
    @extend_schema(
        parameters=[OpenApiParameter("token_id", OpenApiTypes.INT, OpenApiParameter.PATH)],
        responses={204: None, 404: _ERROR[404]},
        summary="Revoke one of your API tokens: its key stops working at once",
    )
    def delete(self, request: Request, token_id: str) -> Response:
        token_revoke(user=request.user, token_id=token_id, now=timezone.now())
        return Response(status=status.HTTP_204_NO_CONTENT)
