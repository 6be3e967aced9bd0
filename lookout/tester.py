"""The rule tester: what the retry engine would decide for one failure under one policy.

A failure comes from a run (by id: its category, its job's earlier genuine failures, gang
size and failFast) or is typed in: a category and subcategory, or the raw signals (exit
code, condition, termination message, pod error) labelled by an executor's categorizer
exactly as that executor would label them. The verdict is computed by the pure core
(``core.retry.decide``) with the policy as stored now, evaluated as the first policy of the
failure's queue. Nothing is written: no run is decided, no counter moves.

What the tester does not do: the static-fit probe that turns a mutated retry into a
terminal failure when no node could take the grown job (the decision service does that
against the live nodes), and the policy cache's refresh delay.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from armada.core.backoff import describe_backoff
from armada.core.categorizer import (
    Categorization,
    Categorizer,
    ContainerSignal,
    FailureSignals,
)
from armada.core.duration import format_duration
from armada.core.policy import MAX_RETRY_LIMIT, Mutation, Rule
from armada.core.quantity import MEMORY
from armada.core.quantity_text import readable_quantity
from armada.core.retry import (
    LABEL_FAIL_DEFAULT,
    LABEL_FAIL_POLICY_LIMIT,
    LABEL_FAIL_RULE,
    LABEL_RETRY,
    Decision,
    Failure,
    RetrySettings,
    decide,
)
from armada.core.states import RunState
from armada.models import RetryPolicy, Run
from armada.services.errors import ValidationFailed
from armada.services.failures import NEVER_RETRIED
from armada.services.jobs import run_get
from armada.services.policies import policy_spec

CONDITIONS = ("OOMKilled", "Evicted", "DeadlineExceeded")
GENUINE_FAILURES = (RunState.FAILED, RunState.LEASE_EXPIRED)
# Verdicts reached by reading the policy's rules; the global cap decides before any rule.
RULES_READ = (LABEL_RETRY, LABEL_FAIL_RULE, LABEL_FAIL_DEFAULT, LABEL_FAIL_POLICY_LIMIT)


@dataclass(frozen=True)
class Signals:
    """A failure as a pod reports it, for an executor's categorizer to label."""

    executor: str
    exit_code: int | None = None
    condition: str = ""
    termination_message: str = ""
    pod_error: str = ""
    container: str = "main"


@dataclass(frozen=True)
class Outcome:
    """The tester's answer: the failure evaluated, how it was labelled, and the verdict."""

    failure: Failure
    source: str
    decision: Decision
    verdict: str  # "Retry" or "Fail"
    # False when a check before the policy decided (gang, failFast, a never-retried failure).
    by_policy: bool = True
    # True when the policy's rules were read (so "no rule matched" means something).
    rules_read: bool = True
    rule: Rule | None = None
    # Rules are numbered from 1 for people: ``rules[2]`` is rule 3.
    rule_number: int | None = None
    mutation: list[str] = field(default_factory=list)
    # The retry delay of the matched rule's backoff (our extension), for people; "" for none.
    delay: str = ""
    categorization: Categorization | None = None
    recorded: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def recorded_rule(self) -> int | None:
        """The rule the recorded decision matched, numbered from 1 (the stored trail keeps
        the 0-based ``ruleIndex``)."""
        index = (self.recorded or {}).get("ruleIndex")
        return index + 1 if isinstance(index, int) and not isinstance(index, bool) else None


def executor_ids() -> list[str]:
    return [e.id for e in settings.ARMADA.executors]


def categorize(signals: Signals) -> Categorization:
    """Label ``signals`` with the categorizer of executor ``signals.executor``."""
    executors = {e.id: e for e in settings.ARMADA.executors}
    executor = executors.get(signals.executor)
    if executor is None:
        raise ValidationFailed.one("executor", f"no executor {signals.executor!r} is configured")
    reason = "OOMKilled" if signals.condition == "OOMKilled" else "Error"
    container = ContainerSignal(
        name=signals.container or "main",
        exit_code=signals.exit_code,
        reason=reason if signals.exit_code is not None or signals.condition else "",
        termination_message=signals.termination_message,
    )
    pod_signals = FailureSignals(
        containers=(container,),
        conditions=frozenset([signals.condition] if signals.condition else []),
        pod_error=signals.pod_error,
    )
    return Categorizer(executor.error_categories).categorize(pod_signals)


def failure_of_run(*, actor: Any, run_id: str) -> tuple[Failure, Run]:
    """The failure a run's decision was (or will be) about. Reading the run needs the
    ``watch`` verb on its queue. ``retries_used`` is what the decision recorded, else the
    job's genuine failures before this run (what the scheduler counts)."""
    run = run_get(actor=actor, run_id=run_id)
    if run.state not in GENUINE_FAILURES:
        raise ValidationFailed.one(
            "run",
            f"run {run_id} is {run.state}; only failed and lease-expired runs are decided by "
            "a retry policy",
        )
    used = (run.decision or {}).get("retriesUsed")
    if not isinstance(used, int):
        used = (
            Run.objects.filter(job_id=run.job_id, state__in=GENUINE_FAILURES)
            .filter(leased_at__lt=run.leased_at)
            .count()
        )
    job = run.job
    return (
        Failure(
            category=run.failure_category,
            subcategory=run.failure_subcategory,
            retries_used=used,
            gang_cardinality=job.gang_cardinality,
            fail_fast=job.fail_fast,
            lease_expired=run.state == RunState.LEASE_EXPIRED,
        ),
        run,
    )


def describe_mutation(mutation: Mutation | None) -> list[str]:
    """What a retry would change on the job, one short phrase per change."""
    if mutation is None:
        return []
    out = []
    if mutation.avoid_same_node:
        out.append("avoid every node an earlier run of the job used")
    bump = mutation.memory
    if bump is not None and bump.factor is not None:
        out.append(f"memory × {bump.factor:g} (every container)")
    elif bump is not None:
        out.append(f"memory + {readable_quantity(bump.static or 0, MEMORY)} (first container)")
    return out


def describe_delay(decision: Decision, rule: Rule | None) -> str:
    """How long a retried job would wait before its next lease, and by which backoff; ""
    when it would not wait."""
    seconds = decision.retry_delay_seconds
    if seconds is None or rule is None or rule.backoff is None:
        return ""
    return (
        f"{format_duration(seconds)} before the job may be leased again "
        f"(this rule's backoff: {describe_backoff(rule.backoff)}; "
        f"{decision.retries_used} retr{'y' if decision.retries_used == 1 else 'ies'} before)"
    )


def _settings() -> tuple[RetrySettings, list[str]]:
    """The engine settings the tester uses: on, with the configured global cap."""
    config = settings.ARMADA.scheduling.retry_policy
    notes = []
    if not config.enabled:
        notes.append(
            "Retry policies are off in this scheduler's configuration "
            "(scheduling.retryPolicy.enabled: false), so real failures get the legacy "
            "behaviour; shown here is what this policy would decide with them on."
        )
    cap = config.global_max_retries
    if cap is None:
        notes.append("No global retry cap is configured (globalMaxRetries); none is applied.")
        cap = MAX_RETRY_LIMIT
    else:
        notes.append(f"Global retry cap (globalMaxRetries): {cap}.")
    return RetrySettings(enabled=True, global_max_retries=cap), notes


def evaluate(
    *,
    policy: RetryPolicy,
    failure: Failure,
    source: str,
    categorization: Categorization | None = None,
    recorded: dict[str, Any] | None = None,
) -> Outcome:
    """The verdict of ``policy`` (as stored now) on ``failure``, as the scheduler would reach
    it; raises ValidationFailed when the stored policy no longer passes validation."""
    spec = policy_spec(policy)
    engine, notes = _settings()
    if (failure.category, failure.subcategory) in NEVER_RETRIED:
        decision = Decision(
            retry=False,
            label="",
            retries_used=failure.retries_used,
            reason=(
                f"{failure.category} / {failure.subcategory} failures are never retried, "
                "whatever the policy says"
            ),
        )
    else:
        decision = decide(
            failure=failure,
            queue_policy_names=[spec.name],
            policies={spec.name: spec},
            settings=engine,
        )
    rule = spec.rules[decision.rule_index] if decision.rule_index is not None else None
    if decision.retry and decision.mutation is not None:
        notes.append(
            "A retried job whose changed pod fits no node fails instead "
            "(retry_unschedulable); the tester does not check the nodes."
        )
    return Outcome(
        failure=failure,
        source=source,
        decision=decision,
        verdict="Retry" if decision.retry else "Fail",
        by_policy=bool(decision.label),
        rules_read=decision.label in RULES_READ,
        rule=rule,
        rule_number=decision.rule_index + 1 if decision.rule_index is not None else None,
        mutation=describe_mutation(decision.mutation),
        delay=describe_delay(decision, rule),
        categorization=categorization,
        recorded=recorded,
        notes=notes,
    )
