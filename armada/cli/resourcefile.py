"""Reading the file of ``armadactl create -f FILE``: one or more documents of any kind.

A YAML file may hold several documents separated by ``---``; a ``.json`` file holds one
document (or a list of them). Each document is a mapping whose ``kind`` says what it is:

- ``Queue``: the body of ``POST /api/v1/queues`` (``name``, ``priorityFactor``, ``owners``,
  ``groupOwners``, ``permissions``, ``labels``, ``cordoned``, ``retryPolicies``,
  ``resourceLimitsByPriorityClassName``);
- ``RetryPolicy``: a retry policy, as for ``create retry-policy -f``.

Locally only the shape is checked (a mapping, a known kind, a name, JSON-safe values);
the server checks the rest, and names the fields.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from armada.cli.jobfile import JobFileError, json_problem, load_yaml
from armada.cli.policyfile import SERVER_FIELDS as POLICY_SERVER_FIELDS
from armada.cli.policyfile import check_policy_document

KINDS = ("Queue", "RetryPolicy")
ENVELOPE = ("apiVersion", "kind")
QUEUE_SERVER_FIELDS = ("createdAt", "updatedAt")


@dataclass(frozen=True)
class Resource:
    kind: str
    name: str
    body: dict[str, Any]  # what is sent


def _documents(path: str) -> list[Any]:
    where = "standard input" if path == "-" else path
    if path == "-":
        text = sys.stdin.read()
    else:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except FileNotFoundError:
            raise JobFileError(f"file {path} does not exist") from None
        except IsADirectoryError:
            raise JobFileError(f"file {path} is a directory") from None
        except UnicodeDecodeError:
            raise JobFileError(f"file {path} is not UTF-8 text") from None
        except OSError as exc:
            raise JobFileError(f"cannot read file {path}: {exc.strerror or exc}") from None
    if path.lower().endswith(".json"):
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise JobFileError(f"{where} is not valid JSON: {exc}") from None
        return data if isinstance(data, list) else [data]
    from armada.cli.yamltext import YAMLError

    try:
        return load_yaml(text, many=True)
    except YAMLError as exc:
        raise JobFileError(f"{where} is not valid YAML: {exc}") from None


def _check(index: int, data: Any) -> tuple[Resource | None, list[tuple[str, str]]]:
    at = f"document {index + 1}"
    if not isinstance(data, dict):
        return None, [(at, "must be a mapping with a kind (Queue or RetryPolicy)")]
    kind = data.get("kind")
    if kind not in KINDS:
        return None, [(f"{at}: kind", f"must be Queue or RetryPolicy, not {kind!r}")]
    problem = json_problem(data)
    if problem:
        return None, [(at, problem)]
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        return None, [(f"{at}: name", "is required")]
    if kind == "RetryPolicy":
        errors = check_policy_document(data, need_name=True)
        if errors:
            return None, [(f"{at}: {f}" if f else at, m) for f, m in errors]
        body = {k: v for k, v in data.items() if k not in POLICY_SERVER_FIELDS}
    else:
        body = {k: v for k, v in data.items() if k not in ENVELOPE + QUEUE_SERVER_FIELDS}
    return Resource(kind, name, body), []


def load_resources(path: str) -> list[Resource]:
    """Every document of ``path``, checked; raises ``JobFileError`` listing each problem."""
    documents = _documents(path)
    if not documents:
        raise JobFileError(f"{'standard input' if path == '-' else path} holds no documents")
    resources, errors = [], []
    for index, data in enumerate(documents):
        resource, problems = _check(index, data)
        errors += problems
        if resource is not None:
            resources.append(resource)
    if errors:
        where = "(stdin)" if path == "-" else path
        raise JobFileError(f"file {where} is not valid", errors)
    return resources
