"""A run's decision trail as the API hands it out.

The scheduler stores the trail as it decides (``services.decisions``): the matched rule as a
0-based ``ruleIndex`` (``rules[0]`` is the first rule) and memory in milli-units, the exact
integers the scheduler computes with. What a reader gets is what a person reads:

- ``rule``: the matched rule numbered from 1, as everywhere a person reads a rule (Lookout,
  the decision's ``reason``, armadactl); null when no rule matched (``defaultAction``
  decided). It replaces ``ruleIndex``, which the API no longer returns.
- ``mutation.memory.before`` / ``after``: Kubernetes quantity strings (``256Mi``,
  ``1.5Gi``) that parse back to exactly the stored amount.

Keys a trail does not hold are left out (a run that was not decided by a policy has only
``decision`` and ``reason``); keys unknown here are passed through unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rest_framework import serializers

from armada.api.serializers.scheduling import PendingReasonSerializer
from armada.core.quantity import MEMORY
from armada.core.quantity_text import readable_quantity


def rule_number(trail: Mapping[str, Any]) -> int | None:
    """The trail's matched rule numbered from 1 (``ruleIndex`` 4 is rule 5), or None."""
    index = trail.get("ruleIndex")
    if isinstance(index, bool) or not isinstance(index, int):
        return None
    return index + 1


def _quantity(value: Any) -> Any:
    """A stored memory amount (milli-units) as a quantity string; anything else as it is."""
    if isinstance(value, int) and not isinstance(value, bool):
        return readable_quantity(value, MEMORY)
    return value


def _mutation(stored: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(stored)
    memory = stored.get("memory")
    if isinstance(memory, Mapping):
        out["memory"] = {
            **memory,
            **{k: _quantity(memory[k]) for k in ("before", "after") if k in memory},
        }
    return out


def trail_data(stored: Mapping[str, Any] | None) -> dict[str, Any]:
    """The API's form of a stored trail (see the module's doc); ``{}`` for an undecided run."""
    out: dict[str, Any] = {}
    for key, value in (stored or {}).items():
        if key == "ruleIndex":
            out["rule"] = rule_number(stored)
        elif key == "mutation" and isinstance(value, Mapping):
            out["mutation"] = _mutation(value)
        else:
            out[key] = value
    return out


class MemoryChangeSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["factor", "static"], help_text="the rule's bump")
    before = serializers.CharField(help_text="the pod's memory before the bump, e.g. 256Mi")
    after = serializers.CharField(help_text="the pod's memory after it, e.g. 384Mi")


class TrailMutationSerializer(serializers.Serializer):
    memory = MemoryChangeSerializer(required=False)
    memorySkipped = serializers.CharField(
        required=False, help_text="why a memory bump was not applied"
    )
    avoidNodes = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="the node ids the retry avoids (values of scheduling.nodeIdLabel)",
    )


class DecisionTrailSerializer(serializers.Serializer):
    """What the scheduler decided about a failed run and why; empty while undecided."""

    decision = serializers.CharField(
        required=False,
        help_text="retry, fail_rule, fail_default, fail_policy_limit, fail_global_limit, "
        "retry_unschedulable, gang_skipped or not_retried",
    )
    retry = serializers.BooleanField(required=False)
    policy = serializers.CharField(required=False, allow_blank=True)
    policyVersion = serializers.IntegerField(required=False)
    rule = serializers.IntegerField(
        required=False,
        allow_null=True,
        min_value=1,
        help_text="the matched rule, numbered from 1; null when defaultAction decided",
    )
    retriesUsed = serializers.IntegerField(required=False)
    retryLimit = serializers.IntegerField(required=False, allow_null=True)
    globalUsed = serializers.IntegerField(required=False)
    globalCap = serializers.IntegerField(required=False, allow_null=True)
    gangSkipped = serializers.BooleanField(required=False)
    mutation = TrailMutationSerializer(required=False)
    reason = serializers.CharField(required=False, allow_blank=True)
    retryDelaySeconds = serializers.FloatField(
        required=False,
        allow_null=True,
        help_text="the retry delay of the matched rule's backoff (our extension), in seconds; "
        "null when the job could be leased again at once",
    )
    retryNotBefore = serializers.DateTimeField(
        required=False,
        allow_null=True,
        help_text="the job was not leased again before this time (decision time + delay)",
    )
    waitingFor = PendingReasonSerializer(
        required=False,
        help_text="on the latest run of a job queued again by this retry: why it is not leased"
        " yet (a scheduler limit, room, its retry delay). A retry waits for these; it is never"
        " failed for waiting",
    )
