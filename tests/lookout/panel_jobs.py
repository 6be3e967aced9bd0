"""A job as the side panel and the job page tests read it: retried with its memory grown."""

from __future__ import annotations

from datetime import datetime, timedelta

from armada.models import Job
from tests.conftest import T0
from tests.lookout.builders import make_job, make_run

MI = 1024 * 1024 * 1000  # one Mi in milli-units


def retried_job(job_id: str = "01m", *, runs: int = 4, start: datetime = T0) -> Job:
    """A job killed for memory ``runs - 1`` times and retried each time with its memory
    grown by a factor of 1.5 (256Mi -> 384Mi -> 576Mi -> 864Mi) under a policy allowing 5
    retries; its last run then failed with a user error, which the policy does not retry.
    Submitted at ``start``, each run a minute after the previous one."""

    def at(seconds: float) -> datetime:
        return start + timedelta(seconds=seconds)

    job = make_job(
        job_id,
        state="failed",
        run_count=runs,
        failure_count=runs,
        retry_count=runs - 1,
        requests={"cpu": 1000, "memory": 864 * MI},
        mutations={"memoryKind": "factor"},
        failure_category="user-error",
        failure_subcategory="exit-1",
        terminal_reason="Error",
        terminal_message="ValueError: no rows in input",
        submitted_at=start,
        last_transition_at=at(60 * runs - 10),
    )
    memory = [256, 384, 576, 864]
    for i in range(runs):
        last = i == runs - 1
        oom = {
            "exit_code": 137,
            "reason": "OOMKilled",
            "failure_category": "oom",
            "failure_subcategory": "memory",
            "hint": "Ask for more memory.",
            "retryable": True,
        }
        error = {
            "exit_code": 1,
            "reason": "Error",
            "message": "ValueError: no rows in input",
            "failure_category": "user-error",
            "failure_subcategory": "exit-1",
            "retryable": False,
        }
        make_run(
            f"r{i}",
            job_id,
            state="failed",
            node=f"node-{i + 1}",
            leased_at=at(60 * i),
            running_at=at(60 * i + 5),
            finished_at=at(60 * i + 50),
            requests={"cpu": 1000, "memory": memory[i] * MI},
            decision={
                "decision": "fail_rule" if last else "retry",
                "policy": "ml",
                "policyVersion": 2,
                "ruleIndex": 0 if last else 1,
                "retriesUsed": i,
                "retryLimit": 5,
                "mutation": {}
                if last
                else {
                    "memory": {
                        "kind": "factor",
                        "before": memory[i] * MI,
                        "after": memory[i + 1] * MI,
                    }
                },
            },
            **(error if last else oom),
        )
    return job
