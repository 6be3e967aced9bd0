"""What retries cost, counted by the real services: executor ticks (fake backend) report
failures, scheduler cycles decide them, and ``services.retry_cost`` counts failed runs and
retried attempts (counters and rollups) in the same transactions; the rollups agree with a
direct computation from the runs, and ``retry_yield`` with the rollup."""

from __future__ import annotations

from datetime import timedelta

import pytest

from armada.metrics import DatabaseCollector
from armada.models import Job, MetricCounter, RetryCostBucket, RetryYieldBucket
from armada.services.retry_cost import Amounts, cost_of
from armada.services.retry_cost_metrics import CORE_COUNTER, MEMORY_COUNTER, RUNS_COUNTER
from armada.services.retry_cost_reads import Window, cost_report, job_retry_cost, yield_report
from armada.services.retry_yield import retry_yield
from tests.conftest import at
from tests.services.decision_world import configure, runs, submit
from tests.services.retry_cost_world import OOM_THEN_OK, drive_until, retried_then_succeeds
from tests.services.test_metrics_armada_names import scrape, value

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_policy_cache")]


def _counter(name: str) -> dict[tuple, int]:
    return {
        (
            c.labels["queue"],
            c.labels["policy"],
            c.labels["category"],
            c.labels["decision"],
            c.labels["kind"],
        ): c.value
        for c in MetricCounter.objects.filter(name=name)
    }


def test_failed_runs_and_retried_attempts_are_counted_per_kind_and_label(
    settings, with_policy, owner
):
    job_id, _ = retried_then_succeeds(settings, owner)
    first, second, third = runs(job_id)
    assert [r.state for r in (first, second, third)] == ["failed", "failed", "succeeded"]
    # Failed runs: both failures, labelled by their own decision; retried attempts: the
    # second and third runs, labelled by the failure whose retry they are.
    failed = Amounts.of_cost(cost_of(first)) + Amounts.of_cost(cost_of(second))
    attempts = Amounts.of_cost(cost_of(second)) + Amounts.of_cost(cost_of(third))
    assert failed.cpu_milli_seconds > 0 and attempts.cpu_milli_seconds > 0
    labels = ("demo", "training", "oom", "retry")
    assert _counter(CORE_COUNTER) == {
        (*labels, "failed_run"): failed.cpu_milli_seconds,
        (*labels, "retried_attempt"): attempts.cpu_milli_seconds,
    }
    assert _counter(MEMORY_COUNTER)[(*labels, "failed_run")] == failed.memory_kib_seconds
    assert _counter(RUNS_COUNTER) == {(*labels, "failed_run"): 2, (*labels, "retried_attempt"): 2}
    # One cpu held for the run's lease to its end: 1000 millicores times its seconds.
    held = (first.finished_at - first.leased_at).total_seconds()
    assert Amounts.of_cost(cost_of(first)).cpu_milli_seconds == round(1000 * held)


def test_a_failure_failed_by_a_rule_is_a_failed_run_and_nothing_else(settings, with_policy, owner):
    agent = configure(settings)
    agent.tick(at(0))
    job_id = submit(owner, {"exitCode": "1"})  # user-error: rule 1 fails it
    drive_until(agent, 1, lambda: Job.objects.get(id=job_id).state == "failed")
    assert _counter(RUNS_COUNTER) == {
        ("demo", "training", "user-error", "fail_rule", "failed_run"): 1
    }
    assert not RetryYieldBucket.objects.exists()
    assert job_retry_cost(job=Job.objects.get(id=job_id), now=at(100)).attempts == 0


def test_rollup_matches_a_direct_computation_and_the_counters(settings, with_policy, owner):
    job_id, t = retried_then_succeeds(settings, owner)
    other_id = submit(owner, {"exitCode": "1"})
    agent = configure(settings)
    drive_until(agent, t, lambda: Job.objects.get(id=other_id).state == "failed")
    window = Window(since=at(-3600), until=at(7200), bucket_hours=1)
    report = cost_report(window=window, queues=None)
    direct = {"failed_run": Amounts(), "retried_attempt": Amounts()}
    for job in (job_id, other_id):
        all_runs = runs(job)
        for i, run in enumerate(all_runs):
            if run.state == "failed":
                direct["failed_run"] += Amounts.of_cost(cost_of(run))
            if any(r.retryable for r in all_runs[:i]):
                direct["retried_attempt"] += Amounts.of_cost(cost_of(run))
    assert report.totals == direct
    assert sum(report.series["failed_run"], Amounts()) == direct["failed_run"]
    by_queue = {row.key: row for row in report.tables["queue"]}
    assert by_queue["demo"].retried_attempt == direct["retried_attempt"]
    by_decision = {row.key: row.failed_run.runs for row in report.tables["decision"]}
    assert by_decision == {"retry": 2, "fail_rule": 1}
    # The day rollup holds the same totals as the hours.
    days = cost_report(window=Window(at(-3600), at(7200), 24), queues=None)
    assert days.totals == report.totals
    # Only the queues asked for.
    assert cost_report(window=window, queues=["elsewhere"]).totals == {
        "failed_run": Amounts(),
        "retried_attempt": Amounts(),
    }
    counted = sum((c.value for c in MetricCounter.objects.filter(name=CORE_COUNTER)), 0)
    assert (
        counted
        == direct["failed_run"].cpu_milli_seconds + direct["retried_attempt"].cpu_milli_seconds
    )
    assert RetryCostBucket.objects.filter(bucket_hours=24).count() == 2 + 1  # 2 kinds + fail_rule


def test_retry_yield_counts_the_job_once_after_its_retries_in_all(settings, with_policy, owner):
    job_id, _ = retried_then_succeeds(settings, owner)
    expected = [
        {
            "category": "oom",
            "rule": 4,
            "retriedJobs": 1,
            "succeededJobs": 1,
            "succeededAfter": {"2": 1},
        }
    ]
    assert retry_yield(since=at(-60), until=at(3600)) == expected
    assert retry_yield(since=at(-60), until=at(3600), queues=["other"]) == []
    # Both retries fell in the range; a range holding only the second counts the job in
    # no row (it belongs where its first retry of that category and rule is).
    first, second, _ = runs(job_id)
    assert retry_yield(since=second.finished_at, until=at(3600)) == []
    assert retry_yield(since=first.finished_at, until=second.finished_at) == expected
    # The rollup, for whole hours, says the same.
    assert yield_report(window=Window(at(-60), at(3600), 1), queues=None) == expected
    assert yield_report(window=Window(at(-60), at(3600), 24), queues=["demo"]) == expected


def test_a_retried_job_still_running_is_retried_and_not_succeeded(settings, with_policy, owner):
    agent = configure(settings)
    agent.tick(at(0))
    job_id = submit(owner, OOM_THEN_OK)
    t = drive_until(agent, 1, lambda: Job.objects.get(id=job_id).retry_count >= 1)
    Job.objects.filter(id=job_id).update(annotations={"fake.armadaproject.io/duration": "1000s"})
    drive_until(agent, t, lambda: runs(job_id)[-1].state == "running")
    row = retry_yield(since=at(-60), until=at(3600))
    assert row == [
        {"category": "oom", "rule": 4, "retriedJobs": 1, "succeededJobs": 0, "succeededAfter": {}}
    ]
    assert yield_report(window=Window(at(-60), at(3600), 1), queues=None) == row
    job = Job.objects.get(id=job_id)
    now = runs(job_id)[-1].leased_at + timedelta(hours=1)
    line = job_retry_cost(job=job, now=now)
    assert (line.retries, line.attempts, line.last_state) == (1, 1, "running")
    assert line.cost.core_hours == pytest.approx(1.0)


def test_counters_survive_a_restart_and_are_served_in_seconds(settings, with_policy, owner):
    retried_then_succeeds(settings, owner)
    stored = _counter(CORE_COUNTER)
    # A new collector is what a restarted web process has: it reads the rows.
    families = {f.name: f for f in DatabaseCollector().collect()}
    served = {
        (
            s.labels["queue"],
            s.labels["policy"],
            s.labels["category"],
            s.labels["decision"],
            s.labels["kind"],
        ): s.value
        for s in families["armada_scheduler_retry_cost_core_seconds"].samples
        if s.name.endswith("_total")
    }
    assert served == {key: value / 1000 for key, value in stored.items()}
    memory = families["armada_scheduler_retry_cost_memory_byte_seconds"].samples
    assert all(s.value > 2**30 for s in memory if s.name.endswith("_total"))


def test_metrics_endpoint_serves_the_cost_counters_with_their_types(
    settings, client, with_policy, owner
):
    _retried_job, _ = retried_then_succeeds(settings, owner)
    values, types = scrape(client)
    for family in (
        "armada_scheduler_retry_cost_core_seconds",
        "armada_scheduler_retry_cost_memory_byte_seconds",
        "armada_scheduler_retry_cost_gpu_seconds",
        "armada_scheduler_retry_cost_runs",
    ):
        assert types[family] == "counter", family
    labels = {"queue": "demo", "policy": "training", "category": "oom", "decision": "retry"}
    runs_total = "armada_scheduler_retry_cost_runs_total"
    assert value(values, runs_total, **labels, kind="failed_run") == 2
    assert value(values, runs_total, **labels, kind="retried_attempt") == 2
    stored = _counter(CORE_COUNTER)[(*labels.values(), "failed_run")]
    served = value(
        values, "armada_scheduler_retry_cost_core_seconds_total", **labels, kind="failed_run"
    )
    assert served == pytest.approx(stored / 1000)
