"""What happens to a job when one of its runs fails, or its lease comes back unused.

Genuine failures (a failed pod, an expired lease) ask :func:`failure_verdict`. Today every
genuine failure is final (the legacy behaviour, retry policies off): the job ends failed and
keeps the run's category. The retry engine plugs in here. Some internal failures are final
whatever a policy says: a pod stuck terminating, a pod the executor could not create.

Lease returns (the run never started) follow the legacy attempt limit instead
(:func:`lease_return_verdict`): ``scheduling.maxRetries`` returns are allowed, so the default
3 gives 4 attempts; the next return fails the job with MaxRunsExceeded. Fail-fast jobs (and
gangs, which always fail fast) get no second attempt.
"""

from __future__ import annotations

from dataclasses import dataclass

from armada.core.categorizer import (
    INTERNAL,
    JOB_CREATION_FAILED,
    MAX_RUNS_EXCEEDED,
    STUCK_TERMINATING,
)
from armada.models import Job

NEVER_RETRIED = {(INTERNAL, STUCK_TERMINATING), (INTERNAL, JOB_CREATION_FAILED)}
MAX_RUNS_EXCEEDED_REASON = "MaxRunsExceeded"


@dataclass(frozen=True)
class Verdict:
    retry: bool
    decision: dict


def failure_verdict(*, job: Job, category: str, subcategory: str) -> Verdict:
    """Decide whether a genuinely failed run's job is retried. Policies off: never."""
    if (category, subcategory) in NEVER_RETRIED:
        return Verdict(
            retry=False,
            decision={"decision": "fail", "reason": f"{category}/{subcategory} is never retried"},
        )
    return Verdict(
        retry=False, decision={"decision": "fail", "reason": "retry policies are not enabled"}
    )


@dataclass(frozen=True)
class LeaseReturnVerdict:
    requeue: bool
    reason: str = ""
    message: str = ""
    category: str = ""
    subcategory: str = ""


def lease_return_verdict(*, job: Job, max_retries: int) -> LeaseReturnVerdict:
    """``job.lease_return_count`` already counts this return."""
    if job.fail_fast:
        return LeaseReturnVerdict(
            requeue=False,
            reason=MAX_RUNS_EXCEEDED_REASON,
            message="the job is fail-fast and its run could not start",
            category=INTERNAL,
            subcategory=MAX_RUNS_EXCEEDED,
        )
    if job.lease_return_count > max_retries:
        return LeaseReturnVerdict(
            requeue=False,
            reason=MAX_RUNS_EXCEEDED_REASON,
            message=f"the job was attempted {job.lease_return_count} times, the maximum allowed",
            category=INTERNAL,
            subcategory=MAX_RUNS_EXCEEDED,
        )
    return LeaseReturnVerdict(requeue=True)
