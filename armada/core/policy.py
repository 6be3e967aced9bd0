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
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from armada.core.errors import FieldError, ValidationFailed
from armada.core.quantity import MEMORY, format_quantity, parse_quantity

API_VERSION = "armadaproject.io/v1beta1"
KIND = "RetryPolicy"
RETRY = "Retry"
FAIL = "Fail"
ACTIONS = (RETRY, FAIL)
FACTOR = "factor"
STATIC = "static"

MAX_NAME_LENGTH = 63
# A budget beyond this is not a budget; it also keeps the value inside a 32-bit column.
MAX_RETRY_LIMIT = 2**31 - 1

_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_TOP_KEYS = ("apiVersion", "kind", "name", "retryLimit", "defaultAction", "rules")
_READ_ONLY_KEYS = ("version", "createdAt", "updatedAt", "updatedBy")
_RULE_KEYS = ("action", "onCategory", "onSubcategory", "mutate")
_MUTATE_KEYS = ("affinity", "resources")
_AFFINITY_KEYS = ("avoidSameNode",)
_RESOURCES_KEYS = ("memory",)
_MEMORY_KEYS = (FACTOR, STATIC)
# Every key of a policy file, in the order the file form writes them.
DOCUMENT_KEY_ORDER = (
    _TOP_KEYS
    + _RULE_KEYS
    + _MUTATE_KEYS[:1]
    + _AFFINITY_KEYS
    + _MUTATE_KEYS[1:]
    + _RESOURCES_KEYS
    + _MEMORY_KEYS
)


@dataclass(frozen=True)
class MemoryBump:
    """Grow a job's memory on retry: multiply by ``factor`` or add ``static`` milli-units.

    Exactly one of the two is set in a parsed policy.
    """

    factor: float | None = None
    static: int | None = None

    @property
    def kind(self) -> str:
        """``"factor"`` or ``"static"``: a job keeps to the kind of its first bump."""
        return FACTOR if self.factor is not None else STATIC


@dataclass(frozen=True)
class Mutation:
    """What a Retry rule changes on the job before its next attempt."""

    avoid_same_node: bool = False
    memory: MemoryBump | None = None


@dataclass(frozen=True)
class Rule:
    """``action`` (``Retry`` or ``Fail``) for failures of ``on_category``, narrowed to
    ``on_subcategory`` when that is non-empty. ``mutate`` is only ever set on Retry rules."""

    action: str
    on_category: str
    on_subcategory: str = ""
    mutate: Mutation | None = None

    def matches(self, category: str, subcategory: str) -> bool:
        """Exact, case-sensitive comparison; an empty ``on_subcategory`` matches any."""
        return self.on_category == category and (
            not self.on_subcategory or self.on_subcategory == subcategory
        )


@dataclass(frozen=True)
class RetryPolicy:
    """A validated policy. ``version`` is the server's revision number (the file form does
    not set it: ``parse_policy`` always returns 1 and the store fills in the real one)."""

    name: str
    retry_limit: int
    default_action: str
    rules: tuple[Rule, ...] = ()
    version: int = 1
    # What the parse accepted but would point out (a ``mutate`` block on a Fail rule, which
    # is dropped), each naming its field; not part of the policy, so not compared.
    warnings: tuple[FieldError, ...] = field(default=(), compare=False)


# --- parsing ----------------------------------------------------------------------------------


def _join(where: str, key: object) -> str:
    return f"{where}.{key}" if where else str(key)


def _unknown_fields(
    data: Mapping[Any, Any],
    where: str,
    allowed: tuple[str, ...],
    errors: list[FieldError],
    ignored: tuple[str, ...] = (),
) -> None:
    for key in sorted((k for k in data if k not in allowed and k not in ignored), key=str):
        errors.append(
            FieldError(_join(where, key), f"unknown field; allowed: {', '.join(allowed)}")
        )


def _mapping(value: Any, where: str, errors: list[FieldError]) -> Mapping[Any, Any] | None:
    """``value`` when it is a mapping; None (and an error) when it is anything else."""
    if isinstance(value, Mapping):
        return value
    errors.append(FieldError(where, "must be a mapping"))
    return None


def _action(value: Any, where: str, errors: list[FieldError]) -> str:
    if value is None:
        errors.append(FieldError(where, "is required: Retry or Fail"))
    elif not isinstance(value, str) or value not in ACTIONS:
        errors.append(FieldError(where, f"must be Retry or Fail (exact case), got {value!r}"))
    else:
        return value
    return ""


def _label(value: Any, where: str, errors: list[FieldError], *, required: bool) -> str:
    if value is None:
        if required:
            errors.append(FieldError(where, "is required"))
        return ""
    if not isinstance(value, str) or not value:
        errors.append(FieldError(where, "must be a non-empty string"))
        return ""
    return value


def _factor(value: Any, where: str, errors: list[FieldError]) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        errors.append(FieldError(where, "must be a number greater than 1.0, such as 1.5"))
        return None
    try:
        factor = float(value)
    except OverflowError:  # an integer beyond any float
        errors.append(
            FieldError(where, "must be a finite number greater than 1.0; it is too large")
        )
        return None
    if not math.isfinite(factor) or factor <= 1.0:
        errors.append(FieldError(where, f"must be a finite number greater than 1.0, got {value}"))
        return None
    return factor


def _static(value: Any, where: str, errors: list[FieldError]) -> int | None:
    try:
        milli = parse_quantity(value)
    except ValueError as exc:
        errors.append(FieldError(where, str(exc)))
        return None
    if milli <= 0:
        errors.append(FieldError(where, "must be a positive quantity, such as 512Mi"))
        return None
    if milli % 1000:
        errors.append(FieldError(where, "must be a whole number of bytes, such as 512Mi"))
        return None
    return milli


def _memory(value: Any, where: str, errors: list[FieldError]) -> MemoryBump | None:
    memory = _mapping(value, where, errors)
    if memory is None:
        return None
    _unknown_fields(memory, where, _MEMORY_KEYS, errors)
    given = [k for k in _MEMORY_KEYS if memory.get(k) is not None]
    if len(given) != 1:
        errors.append(
            FieldError(where, "set exactly one of factor (multiply) or static (add a quantity)")
        )
        return None
    if given == [FACTOR]:
        factor = _factor(memory[FACTOR], _join(where, FACTOR), errors)
        return None if factor is None else MemoryBump(factor=factor)
    static = _static(memory[STATIC], _join(where, STATIC), errors)
    return None if static is None else MemoryBump(static=static)


def _mutation(value: Any, where: str, errors: list[FieldError]) -> Mutation | None:
    mutate = _mapping(value, where, errors)
    if mutate is None:
        return None
    _unknown_fields(mutate, where, _MUTATE_KEYS, errors)
    avoid = False
    if mutate.get("affinity") is not None:
        aw = _join(where, "affinity")
        affinity = _mapping(mutate["affinity"], aw, errors)
        if affinity is not None:
            _unknown_fields(affinity, aw, _AFFINITY_KEYS, errors)
            value = affinity.get("avoidSameNode", False)
            if isinstance(value, bool):
                avoid = value
            else:
                errors.append(FieldError(_join(aw, "avoidSameNode"), "must be true or false"))
    bump = None
    if mutate.get("resources") is not None:
        rw = _join(where, "resources")
        resources = _mapping(mutate["resources"], rw, errors)
        if resources is not None:
            _unknown_fields(resources, rw, _RESOURCES_KEYS, errors)
            if resources.get("memory") is not None:
                bump = _memory(resources["memory"], _join(rw, "memory"), errors)
    if not avoid and bump is None:
        return None  # a block that changes nothing is the same as no block
    return Mutation(avoid_same_node=avoid, memory=bump)


def _rule(
    value: Any, where: str, errors: list[FieldError], warnings: list[FieldError]
) -> Rule | None:
    rule = _mapping(value, where, errors)
    if rule is None:
        return None
    start = len(errors)
    _unknown_fields(rule, where, _RULE_KEYS, errors)
    action = _action(rule.get("action"), _join(where, "action"), errors)
    category = _label(rule.get("onCategory"), _join(where, "onCategory"), errors, required=True)
    subcategory = _label(
        rule.get("onSubcategory"), _join(where, "onSubcategory"), errors, required=False
    )
    if subcategory and rule.get("onCategory") is None:
        errors.append(
            FieldError(_join(where, "onSubcategory"), "is only valid together with onCategory")
        )
    mutate = None
    if rule.get("mutate") is not None:
        mw = _join(where, "mutate")
        mutate = _mutation(rule["mutate"], mw, errors)
        if action == FAIL:
            mutate = None
            warnings.append(
                FieldError(
                    mw,
                    "has no effect on a Fail rule and is ignored; remove it, or make the rule "
                    "a Retry rule",
                )
            )
    if len(errors) > start:
        return None
    return Rule(action=action, on_category=category, on_subcategory=subcategory, mutate=mutate)


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
    _unknown_fields(data, "", _TOP_KEYS, errors, ignored=_READ_ONLY_KEYS)
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

    default_action = _action(data.get("defaultAction"), "defaultAction", errors)

    rules: list[Rule] = []
    warnings: list[FieldError] = []
    raw_rules = data.get("rules")
    if raw_rules is not None and not isinstance(raw_rules, list):
        errors.append(FieldError("rules", "must be a list of rules"))
    elif raw_rules:
        for i, raw in enumerate(raw_rules):
            rule = _rule(raw, f"rules[{i}]", errors, warnings)
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


def _mutation_document(mutation: Mutation) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if mutation.avoid_same_node:
        out["affinity"] = {"avoidSameNode": True}
    bump = mutation.memory
    if bump is not None:
        memory: dict[str, Any] = (
            {FACTOR: bump.factor}
            if bump.factor is not None
            else {STATIC: format_quantity(bump.static or 0, MEMORY)}
        )
        out["resources"] = {"memory": memory}
    return out


def _rule_document(rule: Rule) -> dict[str, Any]:
    out: dict[str, Any] = {"action": rule.action, "onCategory": rule.on_category}
    if rule.on_subcategory:
        out["onSubcategory"] = rule.on_subcategory
    if rule.mutate is not None:
        mutate = _mutation_document(rule.mutate)
        if mutate:
            out["mutate"] = mutate
    return out


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
        out["rules"] = [_rule_document(r) for r in policy.rules]
    return out
