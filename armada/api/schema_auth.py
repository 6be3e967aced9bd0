"""How the OpenAPI schema describes the API's authentication classes (``armada.api.auth``):
a bearer token (personal API tokens) and HTTP Basic. drf-spectacular finds these extensions
by their target class once this module is imported (``ArmadaConfig.ready``); without them
the schema would leave authentication out and `check --deploy` would warn about it."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class ApiTokenScheme(OpenApiAuthenticationExtension):
    target_class = "armada.api.auth.ApiTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "a personal API token (`armadactl login`, or Lookout's Tokens page)",
        }


class BasicScheme(OpenApiAuthenticationExtension):
    target_class = "armada.api.auth.ThrottledBasicAuthentication"
    name = "basicAuth"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "basic"}
