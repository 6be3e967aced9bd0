"""Job and run states and the transitions between them.

A job moves queued -> leased -> pending -> running -> succeeded | failed | cancelled.
A run (one attempt) follows the same path and may also end as ``lease_returned`` (it never
started: the job goes back to queued), ``lease_expired`` (its executor was lost) or
``preempted``. Terminal states never change again; that invariant is what makes every
report from an executor idempotent: a report for a run that already ended is ignored.
"""

from __future__ import annotations

from enum import StrEnum


class JobState(StrEnum):
    QUEUED = "queued"
    LEASED = "leased"
    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    # Kinds of failure that Lookout shows as states of their own.
    PREEMPTED = "preempted"
    REJECTED = "rejected"

    @property
    def terminal(self) -> bool:
        return self in JOB_TERMINAL

    @property
    def active(self) -> bool:
        """Leased to an executor: it holds resources on a node."""
        return self in (JobState.LEASED, JobState.PENDING, JobState.RUNNING)


JOB_TERMINAL = frozenset(
    {JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED, JobState.PREEMPTED, JobState.REJECTED}
)


class RunState(StrEnum):
    LEASED = "leased"
    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    PREEMPTED = "preempted"
    LEASE_RETURNED = "lease_returned"
    LEASE_EXPIRED = "lease_expired"

    @property
    def terminal(self) -> bool:
        return self in RUN_TERMINAL


RUN_TERMINAL = frozenset(
    {
        RunState.SUCCEEDED,
        RunState.FAILED,
        RunState.CANCELLED,
        RunState.PREEMPTED,
        RunState.LEASE_RETURNED,
        RunState.LEASE_EXPIRED,
    }
)

_RUN_NEXT: dict[RunState, frozenset[RunState]] = {
    RunState.LEASED: frozenset(
        {
            RunState.PENDING,
            RunState.RUNNING,
            RunState.SUCCEEDED,
            RunState.FAILED,
            RunState.CANCELLED,
            RunState.PREEMPTED,
            RunState.LEASE_RETURNED,
            RunState.LEASE_EXPIRED,
        }
    ),
    RunState.PENDING: frozenset(
        {
            RunState.RUNNING,
            RunState.SUCCEEDED,
            RunState.FAILED,
            RunState.CANCELLED,
            RunState.PREEMPTED,
            RunState.LEASE_RETURNED,
            RunState.LEASE_EXPIRED,
        }
    ),
    RunState.RUNNING: frozenset(
        {
            RunState.SUCCEEDED,
            RunState.FAILED,
            RunState.CANCELLED,
            RunState.PREEMPTED,
            RunState.LEASE_EXPIRED,
        }
    ),
}


def run_can_move(current: RunState, target: RunState) -> bool:
    """True when a run in ``current`` may move to ``target``; terminal runs never move."""
    return target in _RUN_NEXT.get(current, frozenset())


# The job state that mirrors a run's state while that run is the job's current attempt.
JOB_STATE_FOR_RUN = {
    RunState.LEASED: JobState.LEASED,
    RunState.PENDING: JobState.PENDING,
    RunState.RUNNING: JobState.RUNNING,
    RunState.SUCCEEDED: JobState.SUCCEEDED,
    RunState.FAILED: JobState.FAILED,
    RunState.CANCELLED: JobState.CANCELLED,
    RunState.PREEMPTED: JobState.PREEMPTED,
}


class EventType(StrEnum):
    """Event names, as Armada spells them."""

    SUBMITTED = "submitted"
    QUEUED = "queued"
    LEASED = "leased"
    LEASE_RETURNED = "lease_returned"
    LEASE_EXPIRED = "lease_expired"
    PENDING = "pending"
    RUNNING = "running"
    FAILED = "failed"
    SUCCEEDED = "succeeded"
    REPRIORITIZING = "reprioritizing"
    REPRIORITIZED = "reprioritized"
    CANCELLING = "cancelling"
    CANCELLED = "cancelled"
    PREEMPTING = "preempting"
    PREEMPTED = "preempted"
    # The addresses of a running job's ingresses (once a run).
    INGRESS_INFO = "ingress_info"
    # What a running pod used over its executor's utilisation period (at most one a period).
    UTILISATION = "utilisation"
