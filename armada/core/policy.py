"""The RetryPolicy resource: its file form, its validation, and the objects the engine reads.

``parse_policy`` takes a loaded YAML/JSON document and returns a frozen :class:`RetryPolicy`,
or raises :class:`~armada.core.errors.ValidationFailed` listing every problem at once, each
with the path of the field it is about (``rules[1].mutate.resources.memory.factor``).
``policy_document`` writes a policy back in the same file form, so that
``parse_policy(policy_document(p)) == p`` for every valid policy (except ``version``, which
the file form does not carry).

Choices the specification leaves open
-------------------------------------
- Unknown fields are errors at every level, so that a misspelt field (``onCategroy``) cannot
  silently turn a rule into something else.
- ``version``, ``createdAt``, ``updatedAt`` and ``updatedBy`` are accepted at the top level
  and ignored: they are what the server adds when it shows a policy, and the output of
  ``get -o yaml`` must be usable as the input of ``update``.
- A ``mutate`` block on a ``Fail`` rule is accepted with a warning and dropped: it can never
  take effect (the specification says so, and Armada accepts it too), but writing it is
  probably a mistake (the wrong action, or a block pasted onto the wrong rule), so the
  warning names the rule. The block is still checked: a malformed one is an error like
  anywhere else. The warnings of a parse are on :attr:`RetryPolicy.warnings`.
- ``onSubcategory`` and ``onCategory`` must be non-empty when given: an empty category would
  match only uncategorised failures, which is not what anybody writing a rule means. Leave
  ``onSubcategory`` out to match every subcategory of the category.
- A memory ``static`` bump must be a positive whole number of bytes (``512Mi``, ``1G``,
  ``1048576``); ``factor`` must be a finite number above 1.0.
- A ``mutate`` block that changes nothing (``affinity: {avoidSameNode: false}``, say) is
  accepted and kept as "no mutation".

Our extension, beyond the specification: a Retry rule may carry ``backoff`` (``initial``,
``factor``, ``max``), a delay before the retried job may be leased again; see
``core.backoff`` and ``docs/retry-backoff.md``. A policy without it is exactly the
specification's. The rules themselves are parsed and written by ``core.policy_rules``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from armada.core.errors import FieldError, ValidationFailed
from armada.core.policy_rules import (
    ACTIONS,
    FACTOR,
    FAIL,
    RETRY,
    RULE_KEY_ORDER,
    STATIC,
    Backoff,
    MemoryBump,
    Mutation,
    Rule,
    parse_action,
    parse_rule,
    rule_document,
    unknown_fields,
)

__all__ = [
    "ACTIONS",
    "API_VERSION",
    "DOCUMENT_KEY_ORDER",
    "FACTOR",
    "FAIL",
    "KIND",
    "MAX_NAME_LENGTH",
    "MAX_RETRY_LIMIT",
    "RETRY",
    "STATIC",
    "Backoff",
    "MemoryBump",
    "Mutation",
    "RetryPolicy",
    "Rule",
    "parse_policy",
    "policy_document",
]

API_VERSION = "armadaproject.io/v1beta1"
KIND = "RetryPolicy"

MAX_NAME_LENGTH = 63
# A budget beyond this is not a budget; it also keeps the value inside a 32-bit column.
MAX_RETRY_LIMIT = 2**31 - 1

_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_TOP_KEYS = ("apiVersion", "kind", "name", "retryLimit", "defaultAction", "rules")
_READ_ONLY_KEYS = ("version", "createdAt", "updatedAt", "updatedBy")
# Every key of a policy file, in the order the file form writes them.
DOCUMENT_KEY_ORDER = _TOP_KEYS + RULE_KEY_ORDER


@dataclass(frozen=True)
class RetryPolicy:
    """A validated policy. ``version`` is the server's revision number (the file form does
    not set it: ``parse_policy`` always returns 1 and the store fills in the real one)."""

    name: str
    retry_limit: int
    default_action: str
    rules: tuple[Rule, ...] = ()
    version: int = 1
    # What the parse accepted but would point out (a ``mutate`` or ``backoff`` block on a
    # Fail rule, which is dropped), each naming its field; not part of the policy, so not
    # compared.
    warnings: tuple[FieldError, ...] = field(default=(), compare=False)


# --- parsing ----------------------------------------------------------------------------------


def parse_policy(data: Any) -> RetryPolicy:
    """Validate one policy in its file form; raises ValidationFailed listing every problem.

    See the module docstring for the fields and the choices made where the specification is
    silent.
    """
    if not isinstance(data, Mapping):
        raise ValidationFailed.one(
            "", "a retry policy is a mapping with name, retryLimit, defaultAction and rules"
        )
    errors: list[FieldError] = []
    unknown_fields(data, "", _TOP_KEYS, errors, ignored=_READ_ONLY_KEYS)
    if "apiVersion" in data and data["apiVersion"] != API_VERSION:
        errors.append(FieldError("apiVersion", f"must be {API_VERSION}"))
    if "kind" in data and data["kind"] != KIND:
        errors.append(FieldError("kind", f"must be {KIND}"))

    name = data.get("name")
    if name is None:
        errors.append(FieldError("name", "is required"))
    elif not isinstance(name, str) or len(name) > MAX_NAME_LENGTH or not _NAME.fullmatch(name):
        errors.append(
            FieldError(
                "name",
                f"must be a lower-case RFC 1123 label (a-z, 0-9 and '-', starting and ending "
                f"with a letter or digit, at most {MAX_NAME_LENGTH} characters)",
            )
        )

    limit = data.get("retryLimit")
    if limit is None:
        errors.append(FieldError("retryLimit", "is required: the number of retries allowed"))
    elif isinstance(limit, bool) or not isinstance(limit, int):
        errors.append(FieldError("retryLimit", "must be a whole number, 0 or more"))
    elif not 0 <= limit <= MAX_RETRY_LIMIT:
        errors.append(FieldError("retryLimit", f"must be from 0 to {MAX_RETRY_LIMIT}"))

    default_action = parse_action(data.get("defaultAction"), "defaultAction", errors)

    rules: list[Rule] = []
    warnings: list[FieldError] = []
    raw_rules = data.get("rules")
    if raw_rules is not None and not isinstance(raw_rules, list):
        errors.append(FieldError("rules", "must be a list of rules"))
    elif raw_rules:
        for i, raw in enumerate(raw_rules):
            rule = parse_rule(raw, f"rules[{i}]", errors, warnings)
            if rule is not None:
                rules.append(rule)

    if errors:
        raise ValidationFailed(errors)
    return RetryPolicy(
        name=name,
        retry_limit=limit,
        default_action=default_action,
        rules=tuple(rules),
        warnings=tuple(warnings),
    )


# --- writing ----------------------------------------------------------------------------------


def policy_document(policy: RetryPolicy) -> dict[str, Any]:
    """The file form of ``policy`` (camelCase keys, empty optional fields left out)."""
    out: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "name": policy.name,
        "retryLimit": policy.retry_limit,
        "defaultAction": policy.default_action,
    }
    if policy.rules:
        out["rules"] = [rule_document(r) for r in policy.rules]
    return out
