"""The core's rules as schema fields, shared by the input serializers.

The input serializers only document the bodies (validation is the core's); their patterns and
bounds are the core's rules, so that the schema tells a client what passes.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

LABEL_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
QUANTITY_PATTERN = r"^[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$"


def label_field(**kwargs: Any) -> serializers.RegexField:
    """A Kubernetes label value (RFC 1123: a queue, policy or container name, a namespace)."""
    return serializers.RegexField(LABEL_PATTERN, max_length=63, **kwargs)
