"""Rendering tables, YAML and JSON, and error messages.

No Django, no database: the fake server of conftest.py speaks the REST contract.
"""

from __future__ import annotations

import json

import pytest
import yaml

from armada.cli.client import error_from_body
from armada.cli.output import cell, format_error, render_data, render_queues_table

# -- rendering ---------------------------------------------------------------------------

QUEUES = [
    {
        "name": "analytics",
        "priorityFactor": 2.0,
        "owners": ["alice", "bob"],
        "groupOwners": [],
        "permissions": [],
        "labels": {"team": "data"},
        "cordoned": True,
        "retryPolicies": ["oom"],
        "createdAt": "2025-01-01T00:00:00Z",
        "updatedAt": "2025-01-01T00:00:00Z",
    },
    {"name": "b", "priorityFactor": 1.0, "owners": [], "cordoned": False, "labels": {}},
]


def test_queue_table_has_aligned_columns_and_readable_cells() -> None:
    lines = render_queues_table(QUEUES).splitlines()
    assert lines[0].startswith("NAME       PRIORITY FACTOR  CORDONED  OWNERS")
    assert lines[1].split() == ["analytics", "2", "true", "alice,bob", "-", "oom", "team=data"]
    assert lines[2].split() == ["b", "1", "false", "-", "-", "-", "-"]
    # Every row's second column starts at the same offset as the header's.
    offset = lines[0].index("PRIORITY FACTOR")
    assert lines[1][offset] == "2" and lines[2][offset] == "1"
    assert all(line == line.rstrip() for line in lines)


def test_cell_formats() -> None:
    assert cell(None) == "-" and cell([]) == "-" and cell({}) == "-"
    assert cell(1.5) == "1.5" and cell(False) == "false"
    assert cell({"a": "1", "b": "2"}) == "a=1,b=2"


def test_yaml_and_json_output_round_trip_in_server_order() -> None:
    as_yaml = render_data(QUEUES, "yaml")
    assert yaml.safe_load(as_yaml) == QUEUES
    assert as_yaml.index("name: analytics") < as_yaml.index("priorityFactor")
    assert json.loads(render_data(QUEUES[0], "json")) == QUEUES[0]
    with pytest.raises(ValueError, match="unknown output format"):
        render_data(QUEUES, "xml")


# -- error messages ----------------------------------------------------------------------


def test_error_body_with_field_errors_is_formatted_one_per_line() -> None:
    body = json.dumps(
        {
            "message": "the job file is not valid",
            "errors": [
                {"field": "jobs[0].podSpec", "message": "is required"},
                {"field": "", "message": "general trouble"},
            ],
        }
    )
    error = error_from_body(400, "Bad Request", body)
    assert error.status == 400
    assert format_error(error.message, error.errors) == (
        "Error: the job file is not valid\n  jobs[0].podSpec: is required\n  general trouble"
    )


def test_error_bodies_outside_the_contract_still_read_well() -> None:
    assert error_from_body(502, "Bad Gateway", b"<html>upstream down</html>").message == (
        "HTTP 502 Bad Gateway: <html>upstream down</html>"
    )
    assert (
        error_from_body(500, "Internal Server Error", b"").message
        == "HTTP 500 Internal Server Error"
    )
    assert error_from_body(403, "Forbidden", '{"detail": "no"}').message == "no"
