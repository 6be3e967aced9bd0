"""Rules for failures that are not the retry engine's to decide.

Genuine failures (a failed pod, an expired lease) are decided by the scheduler
(``services.decisions``), except those in ``NEVER_RETRIED``, which are final whatever a
policy says: a pod stuck terminating, a pod the executor could not create.

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
