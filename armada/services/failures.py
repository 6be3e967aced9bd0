"""What happens to a job when one of its runs fails.

Today every genuine failure is final (the legacy behaviour, with retry policies off): the
job ends failed and keeps the run's category. The retry engine plugs in here: it will turn
this verdict into "retry" for failures a queue's policy says are worth another run.
"""

from __future__ import annotations

from dataclasses import dataclass

from armada.core.reports import RunReport
from armada.models import Job


@dataclass(frozen=True)
class Verdict:
    retry: bool
    decision: dict


def failure_verdict(*, job: Job, report: RunReport) -> Verdict:
    """Decide whether a failed run's job is retried. Policies off: never."""
    return Verdict(
        retry=False, decision={"decision": "fail", "reason": "retry policies are not enabled"}
    )
