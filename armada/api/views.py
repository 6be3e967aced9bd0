"""REST views are thin, one per operation, and every decision is in ``armada.services``;
they are split by resource (``queue_views``, ``policy_views``, ``job_views``,
``executor_views``, ``token_views``). This module holds what they share: the base view with the body checks, the schema's error
responses and examples, and the parsing of the bodies several operations take."""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from armada.api.bodies import check_body_size, check_path_values, check_storable
from armada.api.parsers import SafeJSONParser, YAMLParser
from armada.api.serializers import (
    ErrorSerializer,
)
from armada.services.errors import FieldError, ValidationFailed

EXAMPLE_RESOURCES = {"cpu": "100m", "memory": "64Mi"}


EXAMPLES = {
    "queue": [
        OpenApiExample(
            "a queue",
            value={"name": "team-a", "priorityFactor": 2, "labels": {"team": "a"}},
            request_only=True,
        )
    ],
    "job-file": [
        OpenApiExample(
            "a job file",
            value={
                "queue": "demo",
                "jobSetId": "nightly",
                "jobs": [
                    {
                        "priority": 1,
                        "podSpec": {
                            "containers": [
                                {
                                    "name": "main",
                                    "image": "busybox:latest",
                                    "command": ["sh", "-c", "echo hello"],
                                    "resources": {
                                        "requests": EXAMPLE_RESOURCES,
                                        "limits": EXAMPLE_RESOURCES,
                                    },
                                }
                            ]
                        },
                    }
                ],
            },
            request_only=True,
        )
    ],
    "policy": [
        OpenApiExample(
            "a retry policy",
            value={
                "apiVersion": "armadaproject.io/v1beta1",
                "kind": "RetryPolicy",
                "name": "oom-retries",
                "retryLimit": 3,
                "defaultAction": "Fail",
                "rules": [
                    {
                        "action": "Retry",
                        "onCategory": "oom",
                        "mutate": {"resources": {"memory": {"factor": 1.5}}},
                    }
                ],
            },
            request_only=True,
        )
    ],
    "reprioritize": [
        OpenApiExample(
            "a whole job set",
            value={"queue": "demo", "jobSetId": "set-1", "priority": 5},
            request_only=True,
        )
    ],
    "cancel": [
        OpenApiExample(
            "a whole job set",
            value={"queue": "demo", "jobSetId": "set-1", "reason": "not needed"},
            request_only=True,
        ),
        OpenApiExample(
            "every queued job of a queue",
            value={"queue": "demo", "states": ["queued"], "reason": "draining"},
            request_only=True,
        ),
    ],
}


ERRORS = {
    400: OpenApiResponse(ErrorSerializer, description="invalid input; `errors` names each field"),
    403: OpenApiResponse(
        ErrorSerializer, description="permission denied; the message names the permission"
    ),
    404: OpenApiResponse(ErrorSerializer, description="not found"),
    413: OpenApiResponse(ErrorSerializer, description="the body is larger than the server accepts"),
}


CONFLICT = OpenApiResponse(ErrorSerializer, description="clashes with what is stored")


DRY_RUN = OpenApiParameter(
    "dryRun",
    OpenApiTypes.BOOL,
    description="validate (permission, fields, name free, references exist) and answer 200 "
    "with what would be created; nothing is written",
)


def dry_run(request: Request) -> bool:
    value = request.query_params.get("dryRun", "false").lower()
    if value not in ("true", "false", "1", "0", "yes", "no"):
        raise ValidationFailed.one("dryRun", "must be true or false")
    return value in ("true", "1", "yes")


def object_body(request: Request, keys: tuple[str, ...]) -> dict:
    """The request's body as a JSON object (``{}`` when there is none); a field other than
    ``keys`` is refused by name, and so is a body that is not an object."""
    data = request.data if request.data not in (None, "") else {}
    if not isinstance(data, dict):
        raise ValidationFailed.one("", "the body must be a JSON object")
    unknown = sorted(k for k in data if k not in keys)
    if unknown:
        raise ValidationFailed(
            [FieldError(k, f"unknown field; the body takes {', '.join(keys)}") for k in unknown]
        )
    return data


def with_warnings(response: Response, warnings: list[str]) -> Response:
    """``response`` with one HTTP ``Warning`` header value (code 299) per warning: what the
    request asked for that was accepted but had no effect. The body is left as documented."""
    if warnings:
        response["Warning"] = ", ".join(
            '299 - "{}"'.format(w.replace("\\", "\\\\").replace('"', '\\"')) for w in warnings
        )
    return response


class ApiView(APIView):
    # The base of every API view: the checks of ``armada.api.bodies`` run before the view.
    # Order: the body size (413, before anything is read), then authentication and
    # permissions, then path parameters and the parsed body (400 naming the field).
    # (Comments, not a docstring: the schema would show a docstring on every operation.)

    parser_classes = [SafeJSONParser, YAMLParser]

    def initial(self, request: Request, *args, **kwargs) -> None:
        check_body_size(request)
        super().initial(request, *args, **kwargs)
        check_path_values(kwargs)
        check_storable(request.data)

    def perform_content_negotiation(self, request: Request, force: bool = False):
        # DRF answers an unknown ``?format=`` with a bare 404; say what is wrong instead.
        try:
            return super().perform_content_negotiation(request, force)
        except Http404:
            formats = ", ".join(r.format for r in self.get_renderers())
            raise ValidationFailed.one("format", f"must be one of {formats}") from None


def reason_of(data: dict) -> str:
    reason = data.get("reason", "")
    if not isinstance(reason, str) or len(reason) > 255:
        raise ValidationFailed.one("reason", "must be text of at most 255 characters")
    return reason


def job_set_selection(request: Request) -> tuple[dict, list[str] | None]:
    """The body of a job-set action: ``queue``, ``jobSetId`` and optional ``jobIds``."""
    data = request.data if isinstance(request.data, dict) else {}
    job_ids = data.get("jobIds")
    if job_ids is not None and (
        not isinstance(job_ids, list) or not all(isinstance(j, str) for j in job_ids)
    ):
        raise ValidationFailed.one("jobIds", "must be a list of job ids")
    for name in ("queue", "jobSetId"):
        if not isinstance(data.get(name), str) or not data.get(name):
            raise ValidationFailed.one(name, "is required")
    return data, job_ids
