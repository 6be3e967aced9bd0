"""The body of every error response."""

from __future__ import annotations

from rest_framework import serializers


class FieldErrorSerializer(serializers.Serializer):
    field = serializers.CharField(
        help_text="the field at fault, e.g. jobs[0].podSpec; may be empty"
    )
    message = serializers.CharField()


class ErrorSerializer(serializers.Serializer):
    """The body of every error response."""

    message = serializers.CharField(help_text="a sentence a person can act on")
    errors = FieldErrorSerializer(many=True)
