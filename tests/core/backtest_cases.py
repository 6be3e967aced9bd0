"""Shared cases of the backtest's core tests: a draft policy, a recorded failure with
defaults, and a replayer of the draft."""

from __future__ import annotations

from armada.core.backtest import RecordedFailure, Replayer
from armada.core.policy import MemoryBump, Mutation, RetryPolicy, Rule
from armada.core.retry import RetrySettings

GI = 2**30 * 1000  # one GiB in milli-units
HOUR = 3600.0
SETTINGS = RetrySettings(enabled=False, global_max_retries=5)  # the draft turns it on

DRAFT = RetryPolicy(
    name="draft",
    retry_limit=2,
    default_action="Fail",
    rules=(
        Rule("Fail", "user-error"),  # rule 1
        Rule("Retry", "oom", mutate=Mutation(memory=MemoryBump(factor=2.0))),  # rule 2
        Rule("Retry", "flaky"),  # rule 3
        Rule("Retry", "internal", "lease-expired"),  # rule 4
    ),
)


def failure(**fields) -> RecordedFailure:
    """A failure of job ``j1`` in queue ``demo``: 2 cpu, 4Gi, one hour, nothing after it."""
    values = {
        "run_id": "r1",
        "job_id": "j1",
        "queue": "demo",
        "job_set": "set-1",
        "category": "flaky",
        "subcategory": "",
        "lease_expired": False,
        "retries_used": 0,
        "recorded": "fail_default",
        "cpu": 2000.0,
        "memory": 4.0 * GI,
        "seconds": HOUR,
    }
    values.update(fields)
    return RecordedFailure(**values)


def replayer(**kwargs) -> Replayer:
    return Replayer(
        policy=kwargs.pop("policy", DRAFT),
        settings=kwargs.pop("settings", SETTINGS),
        never_retried=kwargs.pop("never_retried", {("internal", "stuck-terminating")}),
        **kwargs,
    )
