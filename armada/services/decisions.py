"""Retry decisions: the scheduler decides what each genuine failure means for its job.

Executors report failed runs (with their category) and the scheduler expires the runs of
lost executors; neither decides. Each scheduling cycle then takes the undecided failed and
expired runs, oldest first, and for each one, in one transaction with everything it
changes:
1. internal / stuck-terminating and internal / job-creation-failed are final, whatever any
   policy says;
2. otherwise ``core.retry.decide`` gives the verdict (its docstring has the order of
   checks), with the policies of the scheduler's cache;
3. a Retry applies the matched rule's mutation (``services.mutations``); a retried job that
   no node could ever take fails instead (``retry_unschedulable``);
4. the job is requeued (same job id; its next run comes from a later cycle) or fails for
   good with the decision's reason; the run keeps the decision trail; the ``failed`` event
   says ``retryable``; ``armada_scheduler_retry_policy_decisions_total`` and
   ``armada_scheduler_retry_policy_gang_skipped_total`` are counted, and so is what the
   failed run cost (``services.retry_cost``, from ``Changes.write``).
A run is decided exactly once: ``decided_at`` is set in the same transaction.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction

from armada.core.retry import (
    LABEL_GANG_SKIPPED,
    LABEL_NOT_RETRIED,
    LABEL_RETRY_UNSCHEDULABLE,
    Decision,
    Failure,
    RetrySettings,
    decide,
)
from armada.core.states import JobState, RunState
from armada.models import Run
from armada.services.failures import NEVER_RETRIED
from armada.services.locking import lock_runs_with_jobs
from armada.services.mutations import MutationContext, apply_mutation
from armada.services.policy_cache import policy_cache
from armada.services.runs import Changes

log = logging.getLogger(__name__)

DECISIONS_COUNTER = "armada_scheduler_retry_policy_decisions_total"
GANG_SKIPPED_COUNTER = "armada_scheduler_retry_policy_gang_skipped_total"
BATCH = 10000


def retry_settings() -> RetrySettings:
    config = settings.ARMADA.scheduling.retry_policy
    return RetrySettings(
        enabled=config.enabled,
        global_max_retries=config.global_max_retries or 0,
        default_policy_name=config.default_policy_name,
    )


def _trail(decision: Decision, mutation: dict, label: str, reason: str) -> dict:
    """What the run keeps of its decision. ``decision`` is the label when the retry engine
    decided; otherwise ``gang_skipped`` or ``not_retried`` (flag off, no policy, fail-fast,
    a failure that is never retried), and ``reason`` says which."""
    return {
        "decision": label or (LABEL_GANG_SKIPPED if decision.gang_skipped else LABEL_NOT_RETRIED),
        "retry": decision.retry,
        "policy": decision.policy,
        "policyVersion": decision.policy_version,
        "ruleIndex": decision.rule_index,
        "retriesUsed": decision.retries_used,
        "retryLimit": decision.retry_limit,
        "globalUsed": decision.global_used,
        "globalCap": decision.global_cap,
        "gangSkipped": decision.gang_skipped,
        "mutation": mutation,
        "reason": reason,
    }


def failures_decide(*, now: datetime) -> int:
    """Decide every undecided failed or expired run; returns how many were decided."""
    undecided = Run.objects.filter(
        state__in=[RunState.FAILED, RunState.LEASE_EXPIRED], decided_at__isnull=True
    )
    if not undecided.exists():
        return 0
    policies = policy_cache.policies(now=now)
    config = retry_settings()
    context = MutationContext()
    batch = list(undecided.order_by("finished_at", "id").values_list("id", flat=True)[:BATCH])
    with transaction.atomic():
        # Jobs, then runs, and not their queues (see ``services.locking``); a run decided
        # meanwhile by another scheduler drops out of the filter once its lock is had.
        runs = lock_runs_with_jobs(
            Run.objects.filter(id__any=batch, decided_at__isnull=True), with_queue=True
        )
        runs.sort(key=lambda r: (r.finished_at is None, r.finished_at or now, r.id))
        changes = Changes()
        decisions: list[dict[str, str]] = []
        gang_skips: list[dict[str, str]] = []
        for run in runs:
            job = run.job
            changes.touch(run, job)
            if JobState(job.state).terminal:
                # The job ended meanwhile (cancelled, say): the failure changes nothing.
                run.retryable = False
                run.decided_at = now
                run.decision = {
                    "decision": LABEL_NOT_RETRIED,
                    "reason": f"the job had already ended ({job.state})",
                }
                continue
            if (run.failure_category, run.failure_subcategory) in NEVER_RETRIED:
                decision = Decision(
                    retry=False,
                    label="",
                    reason=f"{run.failure_category} / {run.failure_subcategory} failures are never retried",
                )
            else:
                decision = decide(
                    failure=Failure(
                        category=run.failure_category,
                        subcategory=run.failure_subcategory,
                        retries_used=job.failure_count,
                        gang_cardinality=job.gang_cardinality,
                        fail_fast=job.fail_fast,
                        lease_expired=run.state == RunState.LEASE_EXPIRED,
                    ),
                    queue_policy_names=job.queue.retry_policies or [],
                    policies=policies,
                    settings=config,
                )
            label = decision.label
            mutation: dict = {}
            retry = decision.retry
            reason = decision.reason
            if retry:
                outcome = apply_mutation(
                    job=job, run=run, mutation=decision.mutation, context=context
                )
                mutation = outcome.trail
                if not outcome.schedulable:
                    retry, label = False, LABEL_RETRY_UNSCHEDULABLE
                    reason = f"Retry policy: the retried job fits no node ({outcome.reason})"
            if decision.gang_skipped:
                log.debug(
                    "job %s is a gang of %d: not retried by policy %s",
                    job.id,
                    job.gang_cardinality,
                    decision.policy,
                    extra={"queue": job.queue_id, "job_id": job.id, "run_id": run.id},
                )
                if decision.policy:
                    gang_skips.append({"policy": decision.policy})
            if label:
                decisions.append(
                    {
                        "queue": job.queue_id,
                        "pool": run.pool,
                        "policy": decision.policy,
                        "decision": label,
                    }
                )
            trail = _trail(decision, mutation, label, reason)
            # A rule's backoff (our extension): the retried job is not leased before then.
            delay = decision.retry_delay_seconds if retry else None
            not_before = now + timedelta(seconds=delay) if delay is not None else None
            trail["retryDelaySeconds"] = delay
            trail["retryNotBefore"] = not_before.isoformat() if not_before else None
            _record(
                run,
                job,
                retry=retry,
                trail=trail,
                engine_decided=bool(label),
                now=now,
                changes=changes,
                not_before=not_before,
            )
        changes.counts(DECISIONS_COUNTER, decisions)
        changes.counts(GANG_SKIPPED_COUNTER, gang_skips)
        changes.write()
    return len(runs)


def _record(
    run: Run,
    job,
    *,
    retry: bool,
    trail: dict,
    engine_decided: bool,
    now: datetime,
    changes: Changes,
    not_before: datetime | None = None,
) -> None:
    """The job's next state, the run's trail and the ``failed`` event. A job failed by the
    engine ends with the decision's reason; otherwise with the run's own reason. A retried
    job is not leased before ``not_before`` (None: at once; ``Job.retry_not_before``)."""
    reason = trail["reason"]
    run.retryable = retry
    run.decision = trail
    run.decided_at = now
    job.failure_count = (job.failure_count or 0) + 1
    job.last_transition_at = now
    job.retry_not_before = not_before if retry else None
    if retry:
        job.state = JobState.QUEUED
        job.retry_count = (job.retry_count or 0) + 1
    else:
        job.state = JobState.FAILED
        job.terminal_reason = reason if engine_decided else (run.reason or reason)
        job.terminal_message = run.message
        job.failure_category = run.failure_category
        job.failure_subcategory = run.failure_subcategory
    changes.failed_event(
        run,
        job,
        run.finished_at or now,
        retryable=retry,
        category=run.failure_category,
        subcategory=run.failure_subcategory,
        reason=run.reason,
        message=run.message,
        hint=run.hint,
        exitCode=run.exit_code,
        exitCodes=run.exit_codes,
        decision=trail["decision"],
        decisionReason=reason,
        failFast=bool(job.fail_fast),
        **event_trail(trail),
    )


# The trail's keys that the ``failed`` event carries too (docs/armada-api-events.md), so that
# a watcher can say "retry 2 of 3" or why not without reading the run.
EVENT_TRAIL_KEYS = ("policy", "retriesUsed", "retryLimit", "globalCap", "retryDelaySeconds")


def event_trail(trail: dict) -> dict:
    """What of ``trail`` the ``failed`` event carries: the policy, the matched ``rule``
    numbered from 1 (null when none matched), the budget and the retry delay. Keys the trail
    does not hold are left out (a failure decided before any policy was read)."""
    out = {key: trail[key] for key in EVENT_TRAIL_KEYS if key in trail}
    if "ruleIndex" in trail:
        index = trail["ruleIndex"]
        out["rule"] = index + 1 if isinstance(index, int) else None
    return out
