"""A small recorded history for the backtest panel's tests (tests/lookout/test_backtest_views,
tests/browser/test_backtest_panel_browser): retry policy ``ml`` on queue ``demo``, failed
runs with the decision trails the scheduler wrote for them, in the hours before ``now``.

- ``job-oom`` (demo): an OOM failure retried by rule 3, then a run that succeeded;
- ``job-usr`` (demo): a user error failed by rule 1;
- ``job-far`` (other, which ``olive`` may not view): an OOM failure retried by rule 3, then
  a run that succeeded.

Under :data:`STRICTER` (OOM failures fail) the two OOM retries flip from retry to fail and
save one attempt each; the user error stays as it was.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import yaml

from armada.core.config import parse_config
from armada.models import Job, Queue, Run
from armada.services.policies import policy_create
from armada.services.queues import queue_create
from tests.lookout.builders import make_job, make_run
from tests.policy_texts import POLICY

STRICTER = POLICY.replace(
    """- action: Retry
  onCategory: oom
  mutate:
    resources:
      memory:
        factor: 1.5
""",
    """- action: Fail
  onCategory: oom
""",
)
# factor must be above 1.0: the save refuses it on line 17.
INVALID = POLICY.replace("factor: 1.5", "factor: 0.5")
GI = 1024**3 * 1000  # milli-units of one GiB
REQUESTS = {"cpu": 2000, "memory": 4 * GI}


def _trail(label: str, rule_index: int | None, retries_used: int, reason: str) -> dict[str, Any]:
    return {
        "decision": label,
        "retry": label == "retry",
        "policy": "ml",
        "policyVersion": 1,
        "ruleIndex": rule_index,
        "retriesUsed": retries_used,
        "retryLimit": 3,
        "globalUsed": retries_used,
        "globalCap": 10,
        "gangSkipped": False,
        "mutation": {},
        "reason": reason,
    }


def _failed_run(run_id: str, job_id: str, *, start: datetime, category: str, trail: dict) -> Run:
    return make_run(
        run_id,
        job_id,
        state="failed",
        requests=REQUESTS,
        leased_at=start,
        running_at=start + timedelta(minutes=1),
        finished_at=start + timedelta(hours=1),
        decided_at=start + timedelta(hours=1, seconds=1),
        failure_category=category,
        retryable=trail["retry"],
        decision=trail,
        reason="OOMKilled" if category == "oom" else "Error",
    )


def _succeeded_run(run_id: str, job_id: str, *, start: datetime) -> Run:
    return make_run(
        run_id,
        job_id,
        state="succeeded",
        requests=REQUESTS,
        leased_at=start,
        running_at=start + timedelta(minutes=1),
        finished_at=start + timedelta(hours=1),
    )


def record_history(settings: Any, *, admin: Any, now: datetime) -> None:
    """Retry policies on (a global cap of 10), policy ``ml`` (attached to ``demo``, which
    the ``queue`` fixture makes), queue ``other`` and the three jobs of the module
    docstring, recorded in the last day."""
    settings.ARMADA = parse_config(
        {
            "scheduling": {"retryPolicy": {"enabled": True, "globalMaxRetries": 10}},
            "executors": [{"id": "local"}],
        }
    )
    policy_create(actor=admin, data=yaml.safe_load(POLICY), now=now - timedelta(days=2))
    Queue.objects.filter(name="demo").update(retry_policies=["ml"])
    queue_create(actor=admin, data={"name": "other", "retryPolicies": ["ml"]}, now=now)
    start = now - timedelta(hours=10)
    retry_oom = _trail("retry", 2, 0, "retry 1 of 3 (rule 3)")
    for job_id, queue in (("job-oom", "demo"), ("job-far", "other")):
        make_job(job_id, queue, state="succeeded", submitted_at=start, failure_count=1)
        _failed_run(f"{job_id}-1", job_id, start=start, category="oom", trail=retry_oom)
        _succeeded_run(f"{job_id}-2", job_id, start=start + timedelta(hours=2))
    make_job("job-usr", "demo", state="failed", submitted_at=start, failure_count=1)
    _failed_run(
        "job-usr-1",
        "job-usr",
        start=start + timedelta(hours=3),
        category="user-error",
        trail=_trail("fail_rule", 0, 0, "failed by rule 1"),
    )
    assert Job.objects.count() == 3
