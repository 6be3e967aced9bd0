"""Armada's ``api.RetryPolicy`` message and our retry-policy documents, both ways.

Our policy file (``core.policy``) and Armada's message carry the same things under the same
names, so the mapping is one to one:

=======================================================  =====================================
message                                                  document
=======================================================  =====================================
``name``, ``retryLimit``                                 ``name``, ``retryLimit``
``defaultAction``, ``rules[].action``:                   ``Fail``, ``Retry``
``RETRY_ACTION_FAIL``, ``RETRY_ACTION_RETRY``
``rules[].onCategory``, ``rules[].onSubcategory``        the same; empty means not given
``rules[].mutate.affinity.avoidSameNode``                the same
``rules[].mutate.resources.memory.static`` / ``factor``  the same (a quantity such as ``512Mi`` /
                                                         a number above 1.0; empty or 0 means
                                                         not given)
=======================================================  =====================================

``RETRY_ACTION_UNSPECIFIED`` (or a number the enum does not know) is refused, as Armada
refuses it, with an error naming the field. What our API shows besides the document
(``version``, ``createdAt``, ``updatedAt``, ``updatedBy``, warnings) has no place in the
message and is not sent. A rule's ``backoff`` (our extension, ``core.backoff``) has no place
in the message either: a policy is read without it, and an update of a policy that has one is
refused (``wire.policy_ops``) rather than dropping it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from armada_client.armada import submit_pb2

from armada.core.errors import FieldError, ValidationFailed
from armada.core.policy import FAIL, RETRY

ACTION_FROM_WIRE = {submit_pb2.RETRY_ACTION_FAIL: FAIL, submit_pb2.RETRY_ACTION_RETRY: RETRY}
ACTION_TO_WIRE = {name: value for value, name in ACTION_FROM_WIRE.items()}
ACTION_WORDS = "must be RETRY_ACTION_FAIL or RETRY_ACTION_RETRY"


def _action(value: int) -> str | None:
    return ACTION_FROM_WIRE.get(value)


def _mutate(mutate: submit_pb2.RetryMutation) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if mutate.HasField("affinity"):
        out["affinity"] = {"avoidSameNode": mutate.affinity.avoid_same_node}
    if mutate.HasField("resources"):
        resources: dict[str, Any] = {}
        if mutate.resources.HasField("memory"):
            bump = mutate.resources.memory
            memory: dict[str, Any] = {}
            if bump.static:
                memory["static"] = bump.static
            if bump.factor:
                memory["factor"] = bump.factor
            resources["memory"] = memory
        out["resources"] = resources
    return out


def policy_body(message: submit_pb2.RetryPolicy) -> dict[str, Any]:
    """The policy document (``core.policy.parse_policy``'s input) of ``message``."""
    document: dict[str, Any] = {
        "name": message.name,
        "retryLimit": message.retry_limit,
        "defaultAction": _action(message.default_action),
    }
    rules = []
    for rule in message.rules:
        item: dict[str, Any] = {"action": _action(rule.action)}
        if rule.on_category:
            item["onCategory"] = rule.on_category
        if rule.on_subcategory:
            item["onSubcategory"] = rule.on_subcategory
        if rule.HasField("mutate"):
            item["mutate"] = _mutate(rule.mutate)
        rules.append(item)
    if rules:
        document["rules"] = rules
    return document


def armada_field_words(errors: list[FieldError]) -> list[FieldError]:
    """``errors`` of our policy validation in Armada's words: an action is one of the enum's
    names (the field names are the same already)."""
    return [
        FieldError(e.field, ACTION_WORDS)
        if e.field == "defaultAction" or e.field.endswith(".action")
        else e
        for e in errors
    ]


@contextmanager
def armada_words() -> Iterator[None]:
    """Re-raise a ValidationFailed of the block in Armada's words."""
    try:
        yield
    except ValidationFailed as exc:
        raise ValidationFailed(armada_field_words(exc.errors)) from None


def policy_message(document: Mapping[str, Any]) -> submit_pb2.RetryPolicy:
    """The ``api.RetryPolicy`` of a policy in its file form (``services.policies.policy_file``:
    the stored fields, not parsed again)."""
    message = submit_pb2.RetryPolicy(
        name=document["name"],
        retry_limit=document["retryLimit"],
        default_action=ACTION_TO_WIRE.get(document["defaultAction"], 0),
    )
    for rule in document.get("rules") or []:
        item = message.rules.add(
            action=ACTION_TO_WIRE.get(rule.get("action"), 0),
            on_category=rule.get("onCategory") or "",
            on_subcategory=rule.get("onSubcategory") or "",
        )
        mutate = rule.get("mutate") or {}
        affinity = mutate.get("affinity") or {}
        if affinity.get("avoidSameNode"):
            item.mutate.affinity.avoid_same_node = True
        memory = (mutate.get("resources") or {}).get("memory") or {}
        if memory.get("static") is not None:
            item.mutate.resources.memory.static = str(memory["static"])
        if memory.get("factor") is not None:
            item.mutate.resources.memory.factor = float(memory["factor"])
    return message
