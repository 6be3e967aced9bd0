"""A recorded history for the backtest's service tests: policy ``ml`` (two versions) on
queues ``demo`` and ``other``, and decided failures written straight into the tables with
the decision trails the scheduler writes (see :func:`history`), the retry-yield rollup
recounted from them."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.apps import apps

from armada.services.backtest import backtest
from armada.services.policies import policy_create, policy_update
from armada.services.queues import queue_create, queue_update
from armada.services.retry_yield_rollup import rebuild_yield_rollup
from tests.conftest import T0
from tests.lookout.builders import make_job, make_run

GI = 2**30 * 1000
NOW = T0 + timedelta(days=3)
SINCE = NOW - timedelta(days=1)
REQUESTS = {"cpu": 2000, "memory": 4 * GI}
HALF_HOUR = timedelta(minutes=30)

POLICY_V1 = {
    "name": "ml",
    "retryLimit": 3,
    "defaultAction": "Fail",
    "rules": [
        {"action": "Fail", "onCategory": "user-error"},
        {"action": "Retry", "onCategory": "flaky"},
        {
            "action": "Retry",
            "onCategory": "oom",
            "mutate": {"resources": {"memory": {"factor": 1.5}}},
        },
    ],
}
# Version 2 fails flaky failures (rule 1), the rest moves down.
POLICY_V2 = {**POLICY_V1, "rules": [{"action": "Fail", "onCategory": "flaky"}, *POLICY_V1["rules"]]}
# The draft under test: OOMs fail; flaky failures retry (rule 3).
STRICTER = {
    "apiVersion": "armadaproject.io/v1beta1",
    "kind": "RetryPolicy",
    "name": "ml-strict",
    "retryLimit": 3,
    "defaultAction": "Fail",
    "rules": [
        {"action": "Fail", "onCategory": "user-error"},
        {"action": "Fail", "onCategory": "oom"},
        {"action": "Retry", "onCategory": "flaky"},
    ],
}


def trail(label: str, used: int, rule: int | None = None, version: int = 1, **extra) -> dict:
    """A decision trail as ``services.decisions`` writes it."""
    return {
        "decision": label,
        "retry": label == "retry",
        "policy": "ml",
        "policyVersion": version,
        "ruleIndex": rule,
        "retriesUsed": used,
        "retryLimit": 3,
        "mutation": {},
        "reason": extra.pop("reason", f"recorded {label}"),
        **extra,
    }


def failed(run_id: str, job_id: str, start, category: str, decision: dict, **fields):
    """A decided failed run of half an hour starting at ``start``."""
    values = {
        "state": "failed",
        "requests": REQUESTS,
        "leased_at": start,
        "finished_at": start + HALF_HOUR,
        "failure_category": category,
        "decision": decision,
        "decided_at": start + HALF_HOUR,
        "retryable": decision["decision"] == "retry",
        "exit_code": 1,
    }
    values.update(fields)
    return make_run(run_id, job_id, **values)


def succeeded(run_id: str, job_id: str, start, hours: float = 1.0):
    return make_run(
        run_id,
        job_id,
        state="succeeded",
        requests=REQUESTS,
        leased_at=start,
        finished_at=start + timedelta(hours=hours),
    )


@pytest.fixture
def history(admin_user, queue):
    """Policy ``ml`` (versions 1 and 2) on queue ``demo`` (owned by ``olive``) and on queue
    ``other`` (which ``olive`` may not view), and their recorded failures; see the module
    docstring of each job below."""
    policy_create(actor=admin_user, data=POLICY_V1, now=T0)
    policy_update(actor=admin_user, name="ml", data=POLICY_V2, now=T0)
    queue_update(actor=admin_user, name="demo", data={"retryPolicies": ["ml"]}, now=T0)
    queue_create(actor=admin_user, data={"name": "other", "retryPolicies": ["ml"]}, now=T0)
    t = SINCE + timedelta(hours=1)
    # OOM retried twice by rule 3, then succeeded (v1).
    make_job("job-oom", state="succeeded", requests=REQUESTS)
    failed("r-oom-1", "job-oom", t, "oom", trail("retry", 0, 2))
    failed("r-oom-2", "job-oom", t + timedelta(hours=1), "oom", trail("retry", 1, 2))
    succeeded("r-oom-3", "job-oom", t + timedelta(hours=2))
    # A user error failed by rule 1.
    make_job("job-usr", state="failed")
    failed("r-usr-1", "job-usr", t, "user-error", trail("fail_rule", 0, 0))
    # Decided with the engine off: not retried, no policy.
    make_job("job-off", state="failed", job_set="set-2")
    failed(
        "r-off-1",
        "job-off",
        t,
        "flaky",
        {
            **trail("not_retried", 0),
            "policy": "",
            "policyVersion": 0,
            "reason": "Retry policies are disabled; legacy retry behaviour applies",
        },
    )
    # Version 1 retried a flaky failure (rule 2); version 2, saved meanwhile, failed the next
    # one (rule 1).
    make_job("job-ver", state="failed")
    failed("r-ver-1", "job-ver", t, "flaky", trail("retry", 0, 1, version=1))
    failed("r-ver-2", "job-ver", t + timedelta(hours=1), "flaky", trail("fail_rule", 1, 0, 2))
    # A flaky failure retried, then success: the yield of flaky retries is 1 in 2.
    make_job("job-flaky", state="succeeded")
    failed("r-flaky-1", "job-flaky", t, "flaky", trail("retry", 0, 1))
    succeeded("r-flaky-2", "job-flaky", t + timedelta(hours=1))
    # In queue other: an OOM retried, then success.
    make_job("job-far", queue="other", state="succeeded")
    failed("r-far-1", "job-far", t, "oom", trail("retry", 0, 2))
    succeeded("r-far-2", "job-far", t + timedelta(hours=1), hours=0.5)
    # Outside the range: never read.
    make_job("job-old", state="failed")
    failed("r-old-1", "job-old", SINCE - timedelta(hours=2), "flaky", trail("fail_rule", 0, 0))
    rebuild_yield_rollup()  # the retry-yield rollup, as the scheduler keeps it


def run(actor, **kwargs):
    kwargs.setdefault("draft", STRICTER)
    return backtest(actor=actor, since=SINCE, until=NOW, now=NOW, **kwargs)


def snapshot() -> dict[str, list]:
    """Every row of every table of the project (and auth's), as values."""
    return {
        model._meta.label: sorted(map(repr, model.objects.values_list()))
        for model in apps.get_models()
        if model._meta.app_label in ("armada", "auth", "contenttypes")
    }
