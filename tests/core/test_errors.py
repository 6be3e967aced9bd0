"""armada.core.errors: errors that name the field."""

from __future__ import annotations

import pytest

from armada.core.errors import FieldError, ValidationFailed


@pytest.mark.parametrize(
    ("error", "text"),
    [
        (FieldError("jobs[0].podSpec", "is required"), "jobs[0].podSpec: is required"),
        (FieldError("", "a job file is a mapping"), "a job file is a mapping"),
    ],
    ids=["with-field", "whole-input"],
)
def test_field_error_str(error, text):
    assert str(error) == text


def test_validation_failed_carries_every_error():
    errors = [
        FieldError("queue", "is required"),
        FieldError("", "top"),
        FieldError("jobs", "too many"),
    ]
    exc = ValidationFailed(errors)
    assert exc.errors == errors
    assert str(exc) == "queue: is required; top; jobs: too many"
    assert exc.args == ("queue: is required; top; jobs: too many",)
    assert isinstance(exc, Exception)


def test_validation_failed_one():
    exc = ValidationFailed.one("priority", "must be a whole number")
    assert exc.errors == [FieldError("priority", "must be a whole number")]
    with pytest.raises(ValidationFailed, match="^priority: must be a whole number$"):
        raise exc


def test_validation_failed_defaults_to_no_errors():
    assert ValidationFailed().errors == []
    assert ValidationFailed().errors is not ValidationFailed().errors
