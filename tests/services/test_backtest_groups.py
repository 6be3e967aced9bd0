"""The database's grouping of recorded failures (``services.backtest_rows``) against the
replay one failure at a time (``core.backtest.Replayer.replay``), on random histories.

The reference reads every run with the ORM, works out each failure's retries, job state and
later runs in Python, in job and run order, and replays it alone; the backtest must report
the same counts, flips, attempts and costs. The histories mix what the grouping must get
right: jobs the draft ends at their first, second or third failure, failures recorded as
retried and not, expired leases, gangs, failFast jobs, failures decided after the job had
ended, memory bumps, runs still going, GPU requests, and runs before the range.
"""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from django.db import connection

from armada.core.backtest import RecordedFailure, Replayer
from armada.core.backtest_report import Report, success_rates
from armada.core.policy import parse_policy
from armada.core.retry import RetrySettings
from armada.models import Run
from armada.services import backtest_rows, side_reads
from armada.services.backtest import backtest, global_cap
from armada.services.failures import NEVER_RETRIED
from armada.services.queues import queue_create
from tests.conftest import T0
from tests.lookout.builders import make_job, make_run

pytestmark = pytest.mark.django_db

GI = 2**30 * 1000
NOW = T0 + timedelta(days=3)
SINCE = NOW - timedelta(days=1)
QUEUES = ("alpha", "beta", "gamma")
CATEGORIES = (("oom", ""), ("user-error", ""), ("gpu", "transient"), ("internal", "node-failure"))
LABELS = ("retry", "fail_rule", "fail_default", "fail_policy_limit", "not_retried", "gang_skipped")
DRAFT = {
    "name": "draft",
    "retryLimit": 2,
    "defaultAction": "Fail",
    "rules": [
        {"action": "Fail", "onCategory": "user-error"},
        {
            "action": "Retry",
            "onCategory": "oom",
            "mutate": {"resources": {"memory": {"factor": 2}}},
        },
        {"action": "Retry", "onCategory": "internal"},
    ],
}


def random_history(actor, rnd: random.Random, jobs: int) -> None:
    """``jobs`` jobs over three queues, each with one to four decided failures (some before
    the range), then sometimes a succeeded or a still running run."""
    for name in QUEUES:
        queue_create(actor=actor, data={"name": name}, now=T0)
    for j in range(jobs):
        job_id = f"job-{j:03d}"
        mutations = {"memoryKind": "factor"} if rnd.random() < 0.2 else {}
        make_job(
            job_id,
            queue=rnd.choice(QUEUES),
            gang_cardinality=rnd.choice((1, 1, 1, 3)),
            fail_fast=rnd.random() < 0.1,
            mutations=mutations,
        )
        start = SINCE - timedelta(hours=rnd.choice((3, 1, 0, 0)))
        for k in range(rnd.randint(1, 4)):
            category, subcategory = rnd.choice(CATEGORIES)
            label = rnd.choice(LABELS)
            lease_expired = rnd.random() < 0.15
            if lease_expired:
                category, subcategory = "internal", "lease-expired"
            decision = {"decision": label, "ruleIndex": rnd.choice((None, 0, 1, 2))}
            if not (label == "not_retried" and rnd.random() < 0.3):  # else: the job had ended
                decision["retriesUsed"] = k
            minutes = rnd.randint(1, 90)
            requests = {"cpu": rnd.choice((500, 2000)), "memory": rnd.choice((1, 4)) * GI}
            if rnd.random() < 0.2:
                requests["nvidia.com/gpu"] = 1000
            make_run(
                f"{job_id}-r{k}",
                job_id,
                state="lease_expired" if lease_expired else "failed",
                requests=requests,
                leased_at=start,
                finished_at=start + timedelta(minutes=minutes),
                decided_at=start + timedelta(minutes=minutes),
                failure_category=category,
                failure_subcategory=subcategory,
                decision=decision,
            )
            start += timedelta(minutes=minutes + 5)
        last = rnd.random()
        if last < 0.5:
            make_run(
                f"{job_id}-r9",
                job_id,
                state="succeeded" if last < 0.35 else "running",
                requests={"cpu": 1000, "memory": 2 * GI},
                leased_at=start,
                finished_at=start + timedelta(minutes=20) if last < 0.35 else None,
            )


def reference(replayer: Replayer) -> Report:
    """Every failure in range, replayed alone in job and run order (see the module doc)."""
    runs = sorted(
        Run.objects.select_related("job").filter(job__queue__in=QUEUES),
        key=lambda r: (r.job_id, r.id),
    )
    report = Report(sample_size=0)
    for i, run in enumerate(runs):
        in_range = (
            run.state in ("failed", "lease_expired")
            and run.decided_at is not None
            and SINCE <= run.finished_at < NOW
        )
        if not in_range:
            continue
        later = [
            r
            for r in runs[i + 1 :]
            if r.job_id == run.job_id and (r.finished_at is None or r.finished_at >= SINCE)
        ]

        def held(r: Run) -> float:
            return ((r.finished_at or NOW) - r.leased_at).total_seconds()

        def asked(r: Run, name: str) -> float:
            return float(r.requests.get(name, 0))

        decision = run.decision
        label = decision.get("decision") or "not_retried"
        failure = RecordedFailure(
            run_id=run.id,
            job_id=run.job_id,
            queue=run.job.queue_id,
            category=run.failure_category,
            subcategory=run.failure_subcategory,
            lease_expired=run.state == "lease_expired",
            retries_used=int(decision.get("retriesUsed") or 0),
            recorded=label,
            recorded_rule=decision.get("ruleIndex"),
            gang_cardinality=run.job.gang_cardinality,
            fail_fast=run.job.fail_fast,
            job_ended="retriesUsed" not in decision and label == "not_retried",
            cpu=asked(run, "cpu"),
            memory=asked(run, "memory"),
            gpu=asked(run, "nvidia.com/gpu"),
            seconds=held(run),
            memory_kind=run.job.mutations.get("memoryKind", ""),
            later_runs=len(later),
            later_cpu=sum(asked(r, "cpu") * held(r) for r in later),
            later_memory=sum(asked(r, "memory") * held(r) for r in later),
            later_gpu=sum(asked(r, "nvidia.com/gpu") * held(r) for r in later),
        )
        report.add(replayer.replay(failure))
    return report


def close(got, want) -> None:
    """Two report documents agree: counts exactly, costs to rounding."""
    if isinstance(want, dict):
        assert set(got) == set(want)
        for key in want:
            close(got[key], want[key])
    elif isinstance(want, list):
        assert len(got) == len(want)
        for a, b in zip(got, want, strict=True):
            close(a, b)
    elif isinstance(want, float):
        assert got == pytest.approx(want, rel=1e-9, abs=1e-5)
    else:
        assert got == want


def check_against_the_reference(actor, seed: int) -> None:
    random_history(actor, random.Random(seed), jobs=70)
    result = backtest(actor=actor, draft=DRAFT, since=SINCE, until=NOW, now=NOW)
    replayer = Replayer(
        policy=parse_policy(DRAFT),
        settings=RetrySettings(enabled=True, global_max_retries=global_cap()),
        never_retried=NEVER_RETRIED,
    )
    want = reference(replayer)
    want.rates, want.default_rate = success_rates(result["yield"])
    expected = want.document()
    assert result["overall"]["examined"] > 100
    assert result["overall"]["retryToFail"] and result["overall"]["failToRetry"]
    assert result["overall"]["savedAttempts"] and result["overall"]["extraAttempts"]
    for part in ("overall", "queues", "flips"):
        close(result[part], expected[part])


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_grouped_backtest_matches_the_replay_one_failure_at_a_time(admin_user, seed):
    check_against_the_reference(admin_user, seed)


@pytest.mark.django_db(transaction=True)
def test_in_shares_over_several_connections_it_matches_too(admin_user):
    """Committed rows and no transaction around the backtest: on PostgreSQL the grouping
    runs in shares on several connections, in one exported snapshot."""
    if connection.vendor != "postgresql":
        pytest.skip("shares are PostgreSQL's")
    seen: list[int] = []
    real = side_reads.in_shares

    def counted(function):
        answers = real(function)
        seen.append(len(answers))
        return answers

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(backtest_rows, "in_shares", counted)
        check_against_the_reference(admin_user, 4)
    assert seen == [side_reads.SHARES] and side_reads.SHARES > 1
