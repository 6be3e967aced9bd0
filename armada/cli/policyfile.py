"""Reading a retry-policy document for ``armadactl create|update retry-policy -f FILE``.

A policy document is YAML or JSON, one mapping::

    apiVersion: armadaproject.io/v1beta1
    kind: RetryPolicy
    name: ml-training-retries
    retryLimit: 3
    defaultAction: Fail
    rules:
      - action: Retry
        onCategory: oom

Locally only what the command itself depends on is checked: the document is a mapping,
its ``kind`` (when given) is ``RetryPolicy``, it can travel as JSON, and for an update it
has a ``name`` (the policy to replace is taken from it). The server owns every other rule.

The fields the server adds when it answers (``version``, ``createdAt``, ``updatedAt``,
``updatedBy``) are dropped before sending, so the output of ``get retry-policy NAME`` can
be edited and sent back with ``update retry-policy -f``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from armada.cli.jobfile import JobFileError, json_problem, load_data_file

KIND = "RetryPolicy"
WHAT = "retry policy file"
# Set by the server, never by the author of a document.
SERVER_FIELDS = ("version", "createdAt", "updatedAt", "updatedBy")


def check_policy_document(data: Any, *, need_name: bool) -> list[tuple[str, str]]:
    """The problems of a parsed policy document as ``(field, message)``; empty when fine."""
    if not isinstance(data, Mapping):
        return [("", "a retry policy file holds one mapping (kind: RetryPolicy, name, rules, ...)")]
    errors: list[tuple[str, str]] = []
    if "kind" in data and data["kind"] != KIND:
        errors.append(("kind", f"must be {KIND}, not {data['kind']!r}"))
    name = data.get("name")
    if need_name and (not isinstance(name, str) or not name.strip()):
        errors.append(("name", "is required: it names the policy to update"))
    problem = json_problem(data)
    if problem:
        errors.append(("", problem))
    return errors


def load_policy_file(path: str, *, need_name: bool = False) -> dict[str, Any]:
    """Read, check and return the document to send; raises ``JobFileError`` on a problem."""
    data = load_data_file(path, WHAT)
    errors = check_policy_document(data, need_name=need_name)
    if errors:
        where = "(stdin)" if path == "-" else path
        raise JobFileError(f"{WHAT} {where} is not valid", errors)
    return {key: value for key, value in data.items() if key not in SERVER_FIELDS}
