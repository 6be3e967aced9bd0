"""The retry engine: what one genuine failure of a job means, and how a retry changes the job.

:func:`decide` turns a failure (its category, the retries the job already had, what kind of
job it is) plus the queue's policy into a :class:`Decision`. :func:`grow_memory` applies a
rule's memory bump to a pod spec. Both are pure: the caller loads the policies, counts the
retries, writes the job and its events, and runs the static-fit probe
(:func:`armada.core.scheduling.static_fit`) on a mutated job.

Counting: ``Failure.retries_used`` is the number of retries the job has already been
granted, i.e. its earlier genuine failures (failed runs and expired leases). Returned leases
and preemptions are not failures and are not counted by the caller. The same number is
measured against the policy's ``retryLimit`` and the scheduler-wide ``globalMaxRetries``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal
from typing import Any

from armada.core.categorizer import INTERNAL, LEASE_EXPIRED
from armada.core.duration import format_duration
from armada.core.policy import FAIL, RETRY, MemoryBump, Mutation, RetryPolicy, Rule
from armada.core.quantity import MEMORY, format_quantity, parse_quantity
from armada.core.submission import pod_requests

LABEL_RETRY = "retry"
LABEL_FAIL_RULE = "fail_rule"
LABEL_FAIL_POLICY_LIMIT = "fail_policy_limit"
LABEL_FAIL_GLOBAL_LIMIT = "fail_global_limit"
LABEL_FAIL_DEFAULT = "fail_default"
LABELS = (
    LABEL_RETRY,
    LABEL_FAIL_RULE,
    LABEL_FAIL_POLICY_LIMIT,
    LABEL_FAIL_GLOBAL_LIMIT,
    LABEL_FAIL_DEFAULT,
)
# Decisions a run's trail records besides the engine's: a retry whose mutated job no node
# could ever take (it ends the job), a gang member's failure decided with its gang, and a
# failure the engine did not decide (engine off, no policy, fail-fast, legacy retries).
LABEL_RETRY_UNSCHEDULABLE = "retry_unschedulable"
LABEL_GANG_SKIPPED = "gang_skipped"
LABEL_NOT_RETRIED = "not_retried"
TRAIL_LABELS = (*LABELS, LABEL_RETRY_UNSCHEDULABLE, LABEL_GANG_SKIPPED, LABEL_NOT_RETRIED)


@dataclass(frozen=True)
class RetrySettings:
    """``scheduling.retryPolicy`` of the scheduler configuration, as the engine needs it."""

    enabled: bool
    global_max_retries: int
    default_policy_name: str = ""


@dataclass(frozen=True)
class Failure:
    """One genuine failure of a job's run.

    ``retries_used`` counts the retries the job has already been granted. ``lease_expired``
    marks a lost executor: the engine matches it as ``internal`` / ``lease-expired`` and
    never mutates the job for it.
    """

    category: str
    subcategory: str
    retries_used: int
    gang_cardinality: int = 1
    fail_fast: bool = False
    lease_expired: bool = False


@dataclass(frozen=True)
class Decision:
    """The verdict on one failure, with everything needed to explain and count it.

    ``label`` is empty when the engine did not decide (flag off, gang, failFast, no policy or
    an unavailable one): the caller then applies the legacy behaviour. ``rule_index`` is
    0-based, as in ``rules[0]``; the ``reason`` text numbers rules from 1 for people.
    ``retry_delay_seconds`` is set only on a Retry by a rule with a ``backoff`` (see
    :func:`decide`, step 9); None means the job may be leased again at once.
    """

    retry: bool
    label: str
    policy: str = ""
    policy_version: int = 0
    rule_index: int | None = None
    mutation: Mutation | None = None
    retries_used: int = 0
    retry_limit: int | None = None
    global_used: int = 0
    global_cap: int | None = None
    gang_skipped: bool = False
    reason: str = ""
    retry_delay_seconds: float | None = None


def _lookup(queue_policy_names: Sequence[str], settings: RetrySettings) -> str:
    """The name of the policy that applies (step 4 of :func:`decide`), "" for none."""
    if queue_policy_names:
        return queue_policy_names[0]
    return settings.default_policy_name


def _describe(rule: Rule) -> str:
    if rule.on_subcategory:
        return f"onCategory {rule.on_category}, onSubcategory {rule.on_subcategory}"
    return f"onCategory {rule.on_category}"


def decide(
    *,
    failure: Failure,
    queue_policy_names: Sequence[str],
    policies: Mapping[str, RetryPolicy],
    settings: RetrySettings,
) -> Decision:
    """Retry or fail one failure. The checks run in this order; the first that applies decides:

    1. Engine off (``settings.enabled`` false): legacy behaviour, no label.
    2. Gang of cardinality 2 or more: never retried, no label, ``gang_skipped`` set and
       ``policy`` naming the policy step 4 would have used when that policy is available
       (so the gang-skip metric counts only gangs a policy would really have applied to).
       A gang of 1 is a plain job.
    3. failFast: not retried, no label.
    4. Policy lookup: the first name the queue lists (later names are not consulted), else
       ``settings.default_policy_name`` when set, else legacy behaviour (no label). A name
       that is not in ``policies`` (deleted, or skipped by the cache because it is invalid)
       means legacy behaviour too: the default policy is NOT used in its place, because the
       queue chose a policy and silently applying another one would be a surprise.
    5. Global cap: ``retries_used >= global_max_retries`` fails (``fail_global_limit``).
       With a cap of 0 every failure ends here: the kill switch still labels, never grants.
    6. Rules top to bottom; the first whose ``onCategory`` equals the category and whose
       ``onSubcategory`` is empty or equals the subcategory decides (exact, case-sensitive).
       No match: ``defaultAction`` decides. A lease expiry is matched as ``internal`` /
       ``lease-expired`` whatever category the caller passed.
    7. A Fail verdict fails: ``fail_rule`` from a rule, ``fail_default`` from defaultAction.
    8. ``retries_used >= retryLimit`` fails (``fail_policy_limit``).
    9. Retry (``retry``), carrying the matched rule's mutation; none from defaultAction, and
       none for a lease expiry (a lost executor is not the node's or the job's fault).
       With the matched rule's ``backoff`` (our extension, ``core.backoff``), also
       ``retry_delay_seconds``: ``initial * factor ** retries_used`` capped at ``max``, the
       time the job waits before its next lease. A lease expiry that a rule with a backoff
       matches is delayed too (a delay blames nobody; the rule asked for it). No delay
       (None) from defaultAction, from a rule without backoff, or on any Fail.

    Reasons are short sentences for users; they number rules from 1 and name the policy
    only where the decision does not already say it elsewhere (``policy`` carries it).
    ``retries_used`` and ``global_used`` are always filled and ``global_cap`` whenever the
    engine is on. ``policy``, ``policy_version`` and ``retry_limit`` are filled when the
    policy decided (steps 5 to 9) and on a gang skip; a failFast job reports no policy.
    """
    used = failure.retries_used
    if not settings.enabled:
        return Decision(
            retry=False,
            label="",
            retries_used=used,
            global_used=used,
            reason="Retry policies are disabled; legacy retry behaviour applies",
        )
    cap = settings.global_max_retries
    base: dict[str, Any] = {"retries_used": used, "global_used": used, "global_cap": cap}
    name = _lookup(queue_policy_names, settings)
    policy = policies.get(name) if name else None
    found: dict[str, Any] = {}
    if policy is not None:
        found = {
            "policy": name,
            "policy_version": policy.version,
            "retry_limit": policy.retry_limit,
        }

    if failure.gang_cardinality >= 2:
        size = failure.gang_cardinality
        who = f"Retry policy {name}" if policy is not None else "Retry policies"
        return Decision(
            retry=False,
            label="",
            gang_skipped=True,
            reason=f"{who}: not applied to gang jobs (gang of {size}); not retried",
            **base,
            **found,
        )
    if failure.fail_fast:
        return Decision(
            retry=False,
            label="",
            reason="failFast job: fails on its first failure, not retried",
            **base,
        )
    if not name:
        return Decision(
            retry=False,
            label="",
            reason="No retry policy for this queue; legacy retry behaviour applies",
            **base,
        )
    if policy is None:
        return Decision(
            retry=False,
            label="",
            reason=(
                f"Retry policy {name} is unavailable (missing or invalid); "
                "legacy retry behaviour applies"
            ),
            **base,
        )

    base.update(found)
    if used >= cap:
        return Decision(
            retry=False,
            label=LABEL_FAIL_GLOBAL_LIMIT,
            reason=f"Retry policy: global retry limit reached ({used}/{cap})",
            **base,
        )

    category, subcategory = (
        (INTERNAL, LEASE_EXPIRED)
        if failure.lease_expired
        else (failure.category, failure.subcategory)
    )
    index = next((i for i, r in enumerate(policy.rules) if r.matches(category, subcategory)), None)
    rule = policy.rules[index] if index is not None else None
    action = rule.action if rule is not None else policy.default_action

    if action == FAIL:
        if rule is not None:
            return Decision(
                retry=False,
                label=LABEL_FAIL_RULE,
                rule_index=index,
                reason=f"Retry policy {name}: rule {index + 1} ({_describe(rule)}) says Fail",
                **base,
            )
        return Decision(
            retry=False,
            label=LABEL_FAIL_DEFAULT,
            reason="Retry policy: no rule matched; defaultAction Fail",
            **base,
        )
    assert action == RETRY, action  # parse_policy admits nothing else

    limit = policy.retry_limit
    if used >= limit:
        return Decision(
            retry=False,
            label=LABEL_FAIL_POLICY_LIMIT,
            rule_index=index,
            reason=f"Retry policy: policy retry limit exceeded ({used}/{limit})",
            **base,
        )

    source = f"rule {index + 1}" if index is not None else "defaultAction"
    mutation = rule.mutate if rule is not None else None
    if failure.lease_expired and mutation is not None:
        mutation = None
        source += ", lease expired: no mutation"
    delay = rule.backoff.delay(used) if rule is not None and rule.backoff is not None else None
    reason = f"retry {used + 1} of {limit} ({source})"
    if delay is not None:
        reason += f", after a retry delay of {format_duration(delay)}"
    return Decision(
        retry=True,
        label=LABEL_RETRY,
        rule_index=index,
        mutation=mutation,
        reason=reason,
        retry_delay_seconds=delay,
        **base,
    )


# --- mutations --------------------------------------------------------------------------------


@dataclass(frozen=True)
class MemoryChange:
    """The pod's memory request (milli-units) before and after a bump of ``kind``."""

    before: int
    after: int
    kind: str


def _memory_entries(container: Any) -> list[dict[str, Any]]:
    """The ``requests`` and ``limits`` mappings of a container that set memory."""
    resources = container.get("resources") if isinstance(container, dict) else None
    if not isinstance(resources, dict):
        return []
    return [
        values
        for kind in ("requests", "limits")
        if isinstance(values := resources.get(kind), dict) and MEMORY in values
    ]


def _write(milli: int) -> str:
    return format_quantity(milli, MEMORY)


def grow_memory(
    pod_spec: Mapping[str, Any], bump: MemoryBump, previous_kind: str
) -> tuple[dict[str, Any], MemoryChange | None, str]:
    """A copy of ``pod_spec`` with its memory grown by ``bump``; the input is left untouched.

    - ``factor``: the memory of every container (init containers included) is multiplied,
      rounded up to whole bytes.
    - ``static``: the amount is added to the first container.
    Each container's ``requests.memory`` and ``limits.memory`` grow the same way, so a pod
    whose requests equal its limits keeps them equal. Bumps compound: this one applies to
    the spec as it is now, already grown by earlier retries.

    A job keeps the kind of its first bump: when ``previous_kind`` is set and differs from
    ``bump.kind``, the spec comes back unchanged with no change and a warning to record.
    Returns ``(spec, change, warning)``; ``change.before``/``after`` are the pod's memory
    request (``submission.pod_requests``) in milli-units. ``pod_spec`` must be a spec that
    submission accepted (every container sets memory); anything else raises
    ValidationFailed.
    """
    spec = copy.deepcopy(dict(pod_spec))
    kind = bump.kind
    if previous_kind and previous_kind != kind:
        return (
            spec,
            None,
            f"memory bump skipped: this job already grew by {previous_kind} and keeps one "
            f"kind of bump (the rule asks for {kind})",
        )
    before = pod_requests(spec)[MEMORY]
    if bump.factor is not None:
        factor = Decimal(repr(bump.factor))
        for key in ("containers", "initContainers"):
            for container in spec.get(key) or ():
                for values in _memory_entries(container):
                    milli = parse_quantity(values[MEMORY]) * factor
                    whole_bytes = (milli / 1000).to_integral_value(rounding=ROUND_CEILING)
                    values[MEMORY] = _write(int(whole_bytes) * 1000)
    else:
        for values in _memory_entries(spec["containers"][0]):
            values[MEMORY] = _write(parse_quantity(values[MEMORY]) + (bump.static or 0))
    after = pod_requests(spec)[MEMORY]
    return spec, MemoryChange(before=before, after=after, kind=kind), ""
