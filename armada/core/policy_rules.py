"""The rules of a RetryPolicy: their objects, their parsing and their file form.

:func:`parse_rule` validates one entry of a policy's ``rules`` list; :func:`rule_document`
writes a rule back. Both are used by :mod:`armada.core.policy`, which owns the policy as a
whole and re-exports the names here that other modules use.

Choices the specification leaves open (for rules)
-------------------------------------------------
- A ``mutate`` block on a ``Fail`` rule is accepted with a warning and dropped: it can never
  take effect, but writing it is probably a mistake, so the warning names the rule. The
  block is still checked: a malformed one is an error like anywhere else.
- ``onSubcategory`` and ``onCategory`` must be non-empty when given.
- A memory ``static`` bump must be a positive whole number of bytes (``512Mi``, ``1G``,
  ``1048576``); ``factor`` must be a finite number above 1.0.
- A ``mutate`` block that changes nothing (``affinity: {avoidSameNode: false}``, say) is
  accepted and kept as "no mutation".

Our extension: a Retry rule may carry ``backoff`` (``armada.core.backoff``): the job it
retries waits before its next lease. Like ``mutate``, a ``backoff`` block on a Fail rule is
checked, then dropped with a warning.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from armada.core.backoff import INITIAL, MAX, Backoff, backoff_document, parse_backoff
from armada.core.errors import FieldError
from armada.core.quantity import MEMORY, format_quantity, parse_quantity

RETRY = "Retry"
FAIL = "Fail"
ACTIONS = (RETRY, FAIL)
FACTOR = "factor"
STATIC = "static"

RULE_KEYS = ("action", "onCategory", "onSubcategory", "mutate", "backoff")
MUTATE_KEYS = ("affinity", "resources")
AFFINITY_KEYS = ("avoidSameNode",)
RESOURCES_KEYS = ("memory",)
MEMORY_KEYS = (FACTOR, STATIC)
# The keys of a rule, in the order the file form writes them (a key's place only matters
# among the keys of the same mapping, so ``initial`` comes before the shared ``factor``).
RULE_KEY_ORDER = (
    RULE_KEYS
    + MUTATE_KEYS[:1]
    + AFFINITY_KEYS
    + MUTATE_KEYS[1:]
    + RESOURCES_KEYS
    + (INITIAL,)
    + MEMORY_KEYS
    + (MAX,)
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
    ``on_subcategory`` when that is non-empty. ``mutate`` and ``backoff`` are only ever set
    on Retry rules."""

    action: str
    on_category: str
    on_subcategory: str = ""
    mutate: Mutation | None = None
    backoff: Backoff | None = None

    def matches(self, category: str, subcategory: str) -> bool:
        """Exact, case-sensitive comparison; an empty ``on_subcategory`` matches any."""
        return self.on_category == category and (
            not self.on_subcategory or self.on_subcategory == subcategory
        )


# --- field helpers (shared with core.policy) ---------------------------------------------------


def join_path(where: str, key: object) -> str:
    return f"{where}.{key}" if where else str(key)


def unknown_fields(
    data: Mapping[Any, Any],
    where: str,
    allowed: tuple[str, ...],
    errors: list[FieldError],
    ignored: tuple[str, ...] = (),
) -> None:
    for key in sorted((k for k in data if k not in allowed and k not in ignored), key=str):
        errors.append(
            FieldError(join_path(where, key), f"unknown field; allowed: {', '.join(allowed)}")
        )


def as_mapping(value: Any, where: str, errors: list[FieldError]) -> Mapping[Any, Any] | None:
    """``value`` when it is a mapping; None (and an error) when it is anything else."""
    if isinstance(value, Mapping):
        return value
    errors.append(FieldError(where, "must be a mapping"))
    return None


def parse_action(value: Any, where: str, errors: list[FieldError]) -> str:
    if value is None:
        errors.append(FieldError(where, "is required: Retry or Fail"))
    elif not isinstance(value, str) or value not in ACTIONS:
        errors.append(FieldError(where, f"must be Retry or Fail (exact case), got {value!r}"))
    else:
        return value
    return ""


# --- parsing ----------------------------------------------------------------------------------


def _label(value: Any, where: str, errors: list[FieldError], *, required: bool) -> str:
    if value is None:
        if required:
            errors.append(FieldError(where, "is required"))
        return ""
    if not isinstance(value, str) or not value:
        errors.append(FieldError(where, "must be a non-empty string"))
        return ""
    return value


def _number(value: Any) -> float | None:
    """``value`` as a float when it is a real number (not a bool), else None; an integer
    beyond any float is infinity."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return float(value)
    except OverflowError:
        return math.inf


def _factor(value: Any, where: str, errors: list[FieldError]) -> float | None:
    factor = _number(value)
    if factor is None:
        errors.append(FieldError(where, "must be a number greater than 1.0, such as 1.5"))
        return None
    if factor == math.inf and not isinstance(value, float):
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
    memory = as_mapping(value, where, errors)
    if memory is None:
        return None
    unknown_fields(memory, where, MEMORY_KEYS, errors)
    given = [k for k in MEMORY_KEYS if memory.get(k) is not None]
    if len(given) != 1:
        errors.append(
            FieldError(where, "set exactly one of factor (multiply) or static (add a quantity)")
        )
        return None
    if given == [FACTOR]:
        factor = _factor(memory[FACTOR], join_path(where, FACTOR), errors)
        return None if factor is None else MemoryBump(factor=factor)
    static = _static(memory[STATIC], join_path(where, STATIC), errors)
    return None if static is None else MemoryBump(static=static)


def _mutation(value: Any, where: str, errors: list[FieldError]) -> Mutation | None:
    mutate = as_mapping(value, where, errors)
    if mutate is None:
        return None
    unknown_fields(mutate, where, MUTATE_KEYS, errors)
    avoid = False
    if mutate.get("affinity") is not None:
        aw = join_path(where, "affinity")
        affinity = as_mapping(mutate["affinity"], aw, errors)
        if affinity is not None:
            unknown_fields(affinity, aw, AFFINITY_KEYS, errors)
            value = affinity.get("avoidSameNode", False)
            if isinstance(value, bool):
                avoid = value
            else:
                errors.append(FieldError(join_path(aw, "avoidSameNode"), "must be true or false"))
    bump = None
    if mutate.get("resources") is not None:
        rw = join_path(where, "resources")
        resources = as_mapping(mutate["resources"], rw, errors)
        if resources is not None:
            unknown_fields(resources, rw, RESOURCES_KEYS, errors)
            if resources.get("memory") is not None:
                bump = _memory(resources["memory"], join_path(rw, "memory"), errors)
    if not avoid and bump is None:
        return None  # a block that changes nothing is the same as no block
    return Mutation(avoid_same_node=avoid, memory=bump)


def _dropped_on_fail(where: str, block: str) -> FieldError:
    return FieldError(
        where,
        f"has no effect on a Fail rule and is ignored; remove it, or make the rule a Retry "
        f"rule ({block} applies only to retries)",
    )


def parse_rule(
    value: Any, where: str, errors: list[FieldError], warnings: list[FieldError]
) -> Rule | None:
    """One rule at path ``where`` (``rules[0]``); its problems are added to ``errors`` and
    what it drops to ``warnings``. None when it has any error."""
    rule = as_mapping(value, where, errors)
    if rule is None:
        return None
    start = len(errors)
    unknown_fields(rule, where, RULE_KEYS, errors)
    action = parse_action(rule.get("action"), join_path(where, "action"), errors)
    category = _label(rule.get("onCategory"), join_path(where, "onCategory"), errors, required=True)
    subcategory = _label(
        rule.get("onSubcategory"), join_path(where, "onSubcategory"), errors, required=False
    )
    if subcategory and rule.get("onCategory") is None:
        errors.append(
            FieldError(join_path(where, "onSubcategory"), "is only valid together with onCategory")
        )
    mutate = None
    if rule.get("mutate") is not None:
        mw = join_path(where, "mutate")
        mutate = _mutation(rule["mutate"], mw, errors)
        if action == FAIL:
            mutate = None
            warnings.append(_dropped_on_fail(mw, "a mutation"))
    backoff = None
    if rule.get("backoff") is not None:
        bw = join_path(where, "backoff")
        backoff = parse_backoff(rule["backoff"], bw, errors)
        if action == FAIL:
            backoff = None
            warnings.append(_dropped_on_fail(bw, "a retry delay"))
    if len(errors) > start:
        return None
    return Rule(
        action=action,
        on_category=category,
        on_subcategory=subcategory,
        mutate=mutate,
        backoff=backoff,
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


def rule_document(rule: Rule) -> dict[str, Any]:
    """The file form of ``rule`` (empty optional fields left out)."""
    out: dict[str, Any] = {"action": rule.action, "onCategory": rule.on_category}
    if rule.on_subcategory:
        out["onSubcategory"] = rule.on_subcategory
    if rule.mutate is not None:
        mutate = _mutation_document(rule.mutate)
        if mutate:
            out["mutate"] = mutate
    if rule.backoff is not None:
        out["backoff"] = backoff_document(rule.backoff)
    return out
