"""A system with a little of everything Lookout shows, for the scan of every page
(tests/lookout/test_every_page_for_people): jobs in every state, runs with exit codes,
categories, retries and decision trails (retried, failed by a rule, undecided), events with
flags and empty values, a policy at three versions with a history the backtest can replay,
retry costs from a few millionths of a core-hour to thousands, metrics samples, tokens,
executors with nodes, and queues with labels, limits, grants and a cordon.

Written straight into the database with the Lookout builders (and the services where they
are quick), in well under a second."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import yaml

from armada.core.states import JobState
from armada.models import Event, Executor, Node, Queue, RunLog, SchedulingReason
from armada.services.counters import counters_add, tally
from armada.services.ids import new_id
from armada.services.metric_history import metrics_sample
from armada.services.policies import policy_update
from armada.services.queues import queue_create
from armada.services.submit import job_submit
from armada.services.tokens import token_create, token_revoke
from tests.conftest import job_file
from tests.lookout.backtest_history import STRICTER, record_history
from tests.lookout.builders import make_job, make_live_executor, make_run
from tests.lookout.panel_jobs import retried_job
from tests.lookout.test_retry_cost_page import cost, yielded
from tests.policy_texts import POLICY

GI = 1024**3 * 1000  # milli-units of one GiB
DECISIONS = "armada_scheduler_retry_policy_decisions_total"
CATEGORIES = "armada_executor_job_failure_category_total"


@dataclass
class Seeded:
    """The names and ids the scan fills into the URL patterns."""

    jobs: dict[str, str] = field(default_factory=dict)  # what it shows -> job id
    runs: list[str] = field(default_factory=list)
    queues: list[str] = field(default_factory=list)
    policies: list[str] = field(default_factory=list)
    token_ids: list[int] = field(default_factory=list)


def _events(job_id: str, queue: str, job_set: str, now: datetime) -> None:
    payloads: list[tuple[str, dict[str, Any]]] = [
        ("leased", {"executor": "cluster-a", "node": None, "pool": "default"}),
        ("pending", {"podName": f"armada-{job_id}-0", "node": "node-1"}),
        ("running", {"node": "node-1", "podNumber": 0}),
        (
            "failed",
            {
                "retryable": False,
                "failureCategory": "oom",
                "failureSubcategory": None,
                "reason": "OOMKilled",
                "exitCode": 137,
                "exitCodes": {"main": 137, "sidecar": None},
                "gangSkipped": True,
                "costCoreHours": 7e-05,
            },
        ),
        ("reprioritized", {"priority": 2.5e-07, "previous": None}),
        ("cancelled", {"requestedBy": "root", "reason": ""}),
    ]
    for seconds, (kind, payload) in enumerate(payloads):
        Event.objects.create(
            queue=queue,
            job_set=job_set,
            job_id=job_id,
            type=kind,
            created=now - timedelta(minutes=30) + timedelta(seconds=seconds),
            payload=payload,
        )


def _jobs_in_every_state(seeded: Seeded, now: datetime) -> None:
    """One job per state in queue ``demo`` (and one of each active state in ``research``),
    each run ending as its state says, with the fields a run may leave empty left empty."""
    start = now - timedelta(hours=2)
    for index, state in enumerate(JobState):
        job_id = new_id()
        seeded.jobs[state.value] = job_id
        terminal = state.terminal
        failed = state in (JobState.FAILED, JobState.PREEMPTED, JobState.REJECTED)
        make_job(
            job_id,
            queue="demo" if index % 2 == 0 else "research",
            job_set=f"set-{index % 3}",
            state=state.value,
            priority=index,
            submitted_at=start + timedelta(minutes=index),
            last_transition_at=start + timedelta(minutes=index + 5),
            requests={"cpu": 100 if index % 2 else 2500, "memory": 64 * 1024**2 * 1000},
            annotations={"team": "vision"} if index % 2 else {},
            failure_category="oom" if failed else "",
            terminal_reason="OOMKilled" if failed else "",
            run_count=0 if state == JobState.QUEUED else 1,
            failure_count=1 if failed else 0,
        )
        if state == JobState.QUEUED:
            continue
        run_id = new_id()
        seeded.runs.append(run_id)
        run_state = {
            JobState.LEASED: "leased",
            JobState.PENDING: "pending",
            JobState.RUNNING: "running",
            JobState.SUCCEEDED: "succeeded",
            JobState.CANCELLED: "cancelled",
        }.get(state, "failed")
        leased = start + timedelta(minutes=index + 1)
        make_run(
            run_id,
            job_id,
            state=run_state,
            node=f"node-{index % 4}" if state != JobState.LEASED else "",
            leased_at=leased,
            pending_at=leased + timedelta(seconds=2) if state != JobState.LEASED else None,
            running_at=leased + timedelta(seconds=3) if not terminal or not failed else None,
            finished_at=leased + timedelta(seconds=5) if terminal else None,
            exit_code={JobState.SUCCEEDED: 0, JobState.FAILED: 137}.get(state),
            failure_category="oom" if failed else "",
            reason="OOMKilled" if failed else "",
            retryable=False if failed else None,
            requests={"cpu": 100 if index % 2 else 2500, "memory": 64 * 1024**2 * 1000},
            decision={
                "decision": "fail_policy_limit",
                "retry": False,
                "policy": "ml",
                "policyVersion": 2,
                "ruleIndex": None,
                "retriesUsed": 3,
                "retryLimit": 3,
                "globalUsed": 3,
                "globalCap": None,
                "gangSkipped": False,
                "mutation": {},
                "reason": "the policy's retry limit is reached",
            }
            if state == JobState.FAILED
            else {},
        )
        RunLog.objects.create(run_id=run_id, text="starting\nstep 1 of 2\n", updated_at=leased)
    SchedulingReason.objects.create(
        job_id=seeded.jobs["queued"],
        reason="no node has enough free cpu",
        round=None,
        updated_at=now,
    )
    _events(seeded.jobs["failed"], "demo", "set-0", now)


def _tiny_retried_failure(now: datetime) -> str:
    """An OOM failure of a tenth of a core for three seconds, retried (then succeeded): the
    backtest of a draft that fails OOM saves an attempt of about 0.3 core-seconds."""
    start = now - timedelta(hours=5)
    job = make_job("job-tiny", "research", state="succeeded", submitted_at=start, failure_count=1)
    small = {"cpu": 100, "memory": 16 * 1024**2 * 1000}
    make_run(
        "job-tiny-1",
        job.id,
        state="failed",
        requests=small,
        leased_at=start,
        running_at=start,
        finished_at=start + timedelta(seconds=3),
        decided_at=start + timedelta(seconds=4),
        failure_category="oom",
        reason="OOMKilled",
        exit_code=137,
        retryable=True,
        decision={
            "decision": "retry",
            "retry": True,
            "policy": "ml",
            "policyVersion": 1,
            "ruleIndex": 2,
            "retriesUsed": 0,
            "retryLimit": 3,
            "globalUsed": 0,
            "globalCap": 10,
            "gangSkipped": False,
            "mutation": {},
            "reason": "retry 1 of 3 (rule 3)",
        },
    )
    make_run(
        "job-tiny-2",
        job.id,
        state="succeeded",
        requests=small,
        leased_at=start + timedelta(minutes=1),
        running_at=start + timedelta(minutes=1),
        finished_at=start + timedelta(minutes=2),
    )
    return job.id


def _history(now: datetime) -> None:
    """An hour of decision and category counters, sampled every five minutes."""

    def count(name: str, amount: int, **labels: str) -> None:
        counters_add(name=name, increments={k: amount for k in tally(labels)})

    metrics_sample(now=now - timedelta(minutes=60))
    for minute in range(55, 0, -5):
        count(
            DECISIONS, minute % 3 + 1, queue="demo", pool="default", policy="ml", decision="retry"
        )
        count(
            DECISIONS,
            minute % 2,
            queue="research",
            pool="default",
            policy="ml",
            decision="fail_rule",
        )
        count(CATEGORIES, minute % 4, failure_category="oom", failure_subcategory="memory")
        count("armada_scheduler_retry_policy_gang_skipped_total", minute % 2, policy="ml")
        metrics_sample(now=now - timedelta(minutes=minute))


def _costs() -> None:
    """Retry costs of every size: a few millionths of a core-hour up to thousands."""
    cost("demo", "ml", "oom", "retry", "failed_run", core=0.000002, gib=0.00001, runs=1)
    cost("demo", "ml", "oom", "retry", "retried_attempt", core=0.00007, runs=1, hours_ago=3)
    cost("research", "ml", "user-error", "fail_rule", "failed_run", core=4321.5, gib=12345.6)
    cost("demo", "", "gpu", "not_retried", "failed_run", core=0.5, hours_ago=30)
    yielded("demo", "oom", 3, retried=3)
    yielded("demo", "oom", 3, succeeded=2, retries=1)
    yielded("research", "user-error", 0, retried=1)


def seed_varied_system(settings: Any, *, admin: Any, now: datetime) -> Seeded:
    """Everything of the module's docstring; the ``queue`` fixture's ``demo`` must exist."""
    seeded = Seeded()
    record_history(settings, admin=admin, now=now)  # policy ml, queue other, three jobs
    policy_update(
        actor=admin, name="ml", data=yaml.safe_load(STRICTER), now=now - timedelta(days=1)
    )
    policy_update(actor=admin, name="ml", data=yaml.safe_load(POLICY), now=now - timedelta(hours=1))
    seeded.policies = ["ml"]
    queue_create(
        actor=admin,
        data={
            "name": "research",
            "priorityFactor": 2.5,
            "labels": {"team": "vision"},
            "retryPolicies": ["ml"],
            "permissions": [{"subjects": [{"kind": "User", "name": "otto"}], "verbs": ["watch"]}],
        },
        now=now,
    )
    Queue.objects.filter(name="other").update(cordoned=True)
    Queue.objects.filter(name="research").update(
        resource_limits_by_priority_class_name={
            "armada-preemptible": {
                "maximumResourceFraction": {"cpu": 0.0000001, "memory": 0.25},
                "maximumResourceFractionByPool": {
                    "gpu-pool": {"maximumResourceFraction": {"nvidia.com/gpu": 0.00002}}
                },
            }
        }
    )
    seeded.queues = ["demo", "research", "other"]
    make_live_executor(now=now)
    stale = Executor.objects.create(
        id="cluster-b",
        pool="default",
        backend="fake",
        registered_at=now,
        last_heartbeat=now - timedelta(hours=1),
    )
    Node.objects.create(
        executor=stale,
        name="gpu-1",
        pool="default",
        last_seen=now - timedelta(hours=1),
        allocatable={"cpu": 8000, "memory": 32 * GI, "nvidia.com/gpu": 1000},
        cordoned=True,
        cordon_reason="",
    )
    _jobs_in_every_state(seeded, now)
    seeded.jobs["retried"] = retried_job("01retried", start=now - timedelta(hours=1)).id
    seeded.jobs["backtest"] = "job-oom"
    seeded.jobs["tiny"] = _tiny_retried_failure(now)
    seeded.runs += ["r0", "r3", "job-oom-1"]
    [submitted] = job_submit(actor=admin, data=job_file(job_set="fresh"), now=now)
    seeded.jobs["submitted"] = submitted
    _costs()
    _history(now)
    for name, days in (("laptop", 30), ("ci", 7)):
        made = token_create(user=admin, name=name, expires_at=now + timedelta(days=days), now=now)
        seeded.token_ids.append(made.token.id)
    token_revoke(user=admin, token_id=seeded.token_ids[-1], now=now)
    return seeded
