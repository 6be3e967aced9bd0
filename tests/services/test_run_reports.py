"""Applying executors' report batches (``services.run_reports``): the order a run's reports
are applied in, what each report's outcome is (applied, duplicate, refused, with its reason),
and that a batch sent again, or a report that comes too late, changes and counts nothing."""

from __future__ import annotations

from datetime import datetime

import pytest

from armada.core.reports import RunReport
from armada.core.states import RunState
from armada.models import Event, Executor, Job, MetricCounter, Run, RunLog
from armada.services.decisions import failures_decide
from armada.services.executor_rounds import executor_round
from armada.services.expiry import runs_expire
from armada.services.run_reports import (
    Outcome,
    ReportOutcome,
    in_run_order,
    runs_apply_report_batch,
)
from armada.services.runs import FAILURE_CATEGORY_COUNTER
from armada.services.scheduler import scheduler_cycle
from tests.conftest import at
from tests.services.decision_world import configure, submit

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_policy_cache")]

PENDING, RUNNING, SUCCEEDED, FAILED = (
    RunState.PENDING,
    RunState.RUNNING,
    RunState.SUCCEEDED,
    RunState.FAILED,
)
LEASE_RETURNED = RunState.LEASE_RETURNED
APPLIED, DUPLICATE, REFUSED = Outcome.APPLIED, Outcome.DUPLICATE, Outcome.REFUSED
#: When a pod reached each phase, in the tests' reports.
WHEN = {PENDING: at(2), RUNNING: at(3), SUCCEEDED: at(4), FAILED: at(4), LEASE_RETURNED: at(4)}


def report(run_id: str, state: RunState, when: datetime | None = None, **more) -> RunReport:
    if state == FAILED:
        more = {"exit_code": 3, "exit_codes": {"main": 3}, "failure_category": "flaky"} | more
    if state == SUCCEEDED:
        more = {"exit_code": 0, "exit_codes": {"main": 0}} | more
    return RunReport(run_id, state, when or WHEN[state], **more)


def apply(reports: list[RunReport], now: datetime, executor_id: str = "test") -> list:
    return runs_apply_report_batch(executor_id=executor_id, reports=reports, now=now)


def types_for(job_id: str) -> list[str]:
    return list(Event.objects.filter(job_id=job_id).order_by("id").values_list("type", flat=True))


def snapshot() -> tuple:
    """Everything a report could change."""
    return (
        list(Run.objects.order_by("id").values()),
        list(Job.objects.order_by("id").values()),
        list(Event.objects.order_by("id").values_list("id", "type", "run_id")),
        sorted(MetricCounter.objects.values_list("name", "labels_key", "value")),
        list(RunLog.objects.order_by("run_id").values_list("run_id", "text")),
    )


def failure_counts() -> dict[tuple[str, str], int]:
    return {
        (c.labels["failure_category"], c.labels["failure_subcategory"]): c.value
        for c in MetricCounter.objects.filter(name=FAILURE_CATEGORY_COUNTER)
    }


@pytest.fixture
def runs(settings, with_policy, owner) -> list[str]:
    """Two runs leased at 1 s to executor ``test`` (registered at 0 s, never heard from
    again), of jobs whose ``flaky`` failures a policy retries."""
    agent = configure(settings)
    agent.tick(at(0))
    jobs = [submit(owner), submit(owner)]
    assert scheduler_cycle(now=at(1)).leased == 2
    return [Run.objects.get(job_id=job_id).id for job_id in jobs]


# --- in_run_order ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("batch", "order"),
    [
        pytest.param([], [], id="empty"),
        pytest.param([("a", SUCCEEDED)], [0], id="one"),
        pytest.param([("a", PENDING), ("a", RUNNING), ("a", SUCCEEDED)], [0, 1, 2], id="in-order"),
        pytest.param([("a", SUCCEEDED), ("a", RUNNING), ("a", PENDING)], [2, 1, 0], id="reversed"),
        pytest.param(
            [("a", RUNNING), ("a", FAILED), ("a", PENDING)], [2, 0, 1], id="end-in-the-middle"
        ),
        pytest.param(
            # a: places 0, 2, 4 get its pending (2), running (4), success (0); b: places 1, 3
            # get its pending (3) and running (1).
            [("a", SUCCEEDED), ("b", RUNNING), ("a", PENDING), ("b", PENDING), ("a", RUNNING)],
            [2, 3, 4, 1, 0],
            id="interleaved-runs-keep-their-places",
        ),
        pytest.param(
            [("a", RUNNING), ("b", SUCCEEDED), ("c", PENDING), ("a", PENDING)],
            [3, 1, 2, 0],
            id="other-runs-untouched",
        ),
        pytest.param(
            # Two ends of one run keep the order they came in (the second is a duplicate or
            # refused once the first applies).
            [("a", FAILED), ("a", RUNNING), ("a", SUCCEEDED)],
            [1, 0, 2],
            id="two-ends-keep-their-order",
        ),
        pytest.param([("a", PENDING), ("a", PENDING)], [0, 1], id="same-phase-twice"),
    ],
)
def test_a_runs_reports_are_applied_in_run_order_and_other_runs_keep_their_places(batch, order):
    reports = [report(run_id, state) for run_id, state in batch]
    assert in_run_order(reports) == order


# --- one outcome per report -------------------------------------------------------------------


def _expire(run_id: str) -> None:
    """Expire the runs of executor ``test``, silent since 0 s."""
    assert runs_expire(now=at(61)) >= 1
    assert Run.objects.get(id=run_id).state == RunState.LEASE_EXPIRED


OUTCOME_CASES = [
    # (prior reports of run a, or "expired"; executor of the batch; batch; outcomes)
    pytest.param([], "test", [("a", PENDING)], [(APPLIED, "")], id="pending-of-a-leased-run"),
    pytest.param(
        [],
        "test",
        [("a", SUCCEEDED), ("a", RUNNING), ("a", PENDING)],
        [(APPLIED, ""), (APPLIED, ""), (APPLIED, "")],
        id="a-whole-life-out-of-order",
    ),
    pytest.param(
        [PENDING, RUNNING],
        "test",
        [("a", RUNNING)],
        [(DUPLICATE, "the run is running already")],
        id="the-same-phase-again",
    ),
    pytest.param(
        [PENDING, RUNNING],
        "test",
        [("a", PENDING)],
        [(DUPLICATE, "the run is running already, past pending")],
        id="pending-after-running",
    ),
    pytest.param(
        [],
        "test",
        [("a", PENDING), ("a", PENDING)],
        [(APPLIED, ""), (DUPLICATE, "the run is pending already")],
        id="one-phase-twice-in-a-batch",
    ),
    pytest.param(
        [PENDING, RUNNING, FAILED],
        "test",
        [("a", FAILED)],
        [(DUPLICATE, "the run is failed already")],
        id="the-same-end-again",
    ),
    pytest.param(
        [PENDING, RUNNING, SUCCEEDED],
        "test",
        [("a", PENDING), ("a", RUNNING), ("a", SUCCEEDED)],
        [
            (DUPLICATE, "the run is succeeded already, past pending"),
            (DUPLICATE, "the run is succeeded already, past running"),
            (DUPLICATE, "the run is succeeded already"),
        ],
        id="a-whole-life-sent-again",
    ),
    pytest.param(
        [],
        "other",
        [("a", PENDING)],
        [(REFUSED, "run {a} is not a run of executor other")],
        id="a-run-of-another-executor",
    ),
    pytest.param(
        [],
        "test",
        [("no-such-run", RUNNING)],
        [(REFUSED, "run no-such-run is not a run of executor test")],
        id="an-unknown-run",
    ),
    pytest.param(
        "expired",
        "test",
        [("a", SUCCEEDED)],
        [
            (
                REFUSED,
                "the run ended as lease_expired already; a report of succeeded changes nothing",
            )
        ],
        id="success-after-lease-expired",
    ),
    pytest.param(
        "expired",
        "test",
        [("a", FAILED)],
        [(REFUSED, "the run ended as lease_expired already; a report of failed changes nothing")],
        id="failure-after-lease-expired",
    ),
    pytest.param(
        [PENDING, RUNNING, SUCCEEDED],
        "test",
        [("a", FAILED)],
        [(REFUSED, "the run ended as succeeded already; a report of failed changes nothing")],
        id="failure-after-success",
    ),
    pytest.param(
        [PENDING, RUNNING],
        "test",
        [("a", LEASE_RETURNED)],
        [(REFUSED, "a running run cannot become lease_returned")],
        id="a-running-run-returned",
    ),
    pytest.param(
        [],
        "test",
        [("no-such-run", SUCCEEDED), ("a", RUNNING), ("a", PENDING), ("a", RUNNING)],
        [
            (REFUSED, "run no-such-run is not a run of executor test"),
            (APPLIED, ""),
            (APPLIED, ""),
            (DUPLICATE, "the run is running already"),
        ],
        id="mixed-outcomes-in-the-batch's-order",
    ),
]


@pytest.mark.parametrize(("prior", "executor_id", "batch", "outcomes"), OUTCOME_CASES)
def test_every_report_has_its_outcome(runs, prior, executor_id, batch, outcomes):
    a = runs[0]
    if prior == "expired":
        _expire(a)
    else:
        assert [o.outcome for o in apply([report(a, s) for s in prior], at(5))] == [APPLIED] * len(
            prior
        )
    before = snapshot()
    ids = {"a": a}
    got = apply(
        [report(ids.get(run_id, run_id), state) for run_id, state in batch], at(10), executor_id
    )
    assert got == [ReportOutcome(o, reason.format(a=a)) for o, reason in outcomes]
    if APPLIED not in [o for o, _ in outcomes]:
        assert snapshot() == before  # nothing changed, nothing counted


def test_a_whole_life_out_of_order_is_applied_in_run_order(runs):
    a = runs[0]
    outcomes = apply([report(a, SUCCEEDED), report(a, PENDING), report(a, RUNNING)], at(10))
    assert [o.outcome for o in outcomes] == [APPLIED] * 3
    run = Run.objects.get(id=a)
    assert (run.state, run.pending_at, run.running_at, run.finished_at, run.exit_code) == (
        "succeeded",
        at(2),
        at(3),
        at(4),
        0,
    )
    assert types_for(run.job_id)[-3:] == ["pending", "running", "succeeded"]
    assert Job.objects.get(id=run.job_id).state == "succeeded"


def test_a_batch_outcome_is_one_per_report_even_for_runs_of_several_jobs(runs):
    a, b = runs
    outcomes = apply(
        [report(b, RUNNING), report(a, PENDING), report(b, PENDING), report(a, FAILED)], at(10)
    )
    assert [o.outcome for o in outcomes] == [APPLIED] * 4
    assert Run.objects.get(id=a).state == "failed" and Run.objects.get(id=b).state == "running"


# --- a batch sent again -----------------------------------------------------------------------


def test_a_batch_applied_three_times_changes_and_counts_everything_once(runs, owner):
    a, b = runs
    batch = [
        report(a, FAILED, log="a failed"),
        report(b, PENDING),
        report(a, RUNNING),
        report(b, RUNNING),
        report(a, PENDING),
        report(b, SUCCEEDED, log="b succeeded"),
    ]
    first = apply(batch, at(10))
    assert [o.outcome for o in first] == [APPLIED] * 6
    assert failures_decide(now=at(11)) == 1  # a's flaky failure: retried by the policy
    after_first = snapshot()
    job_a = Job.objects.get(runs__id=a)
    assert (job_a.state, job_a.failure_count, job_a.retry_count) == ("queued", 1, 1)
    assert failure_counts() == {("flaky", ""): 1}

    for replay in (1, 2):
        again = apply(batch, at(20 + replay))
        assert [o.outcome for o in again] == [DUPLICATE] * 6, again
        assert failures_decide(now=at(21 + replay)) == 0
        assert snapshot() == after_first, replay

    job_a.refresh_from_db()
    assert (job_a.failure_count, job_a.retry_count) == (1, 1)
    assert failure_counts() == {("flaky", ""): 1}
    for run_id, ending in ((a, "failed"), (b, "succeeded")):
        job_id = Run.objects.get(id=run_id).job_id
        types = Event.objects.filter(run_id=run_id).values_list("type", flat=True)
        assert sorted(types) == sorted(["leased", "pending", "running", ending]), run_id
        assert types_for(job_id).count(ending) == 1


# --- too late ---------------------------------------------------------------------------------


def _expired_by_the_scheduler(run_id: str) -> None:
    """The executor is silent for longer than executorTimeout: the scheduler expires it."""
    assert runs_expire(now=at(70)) == 2


def _expired_by_rounds(run_id: str) -> None:
    """The executor's rounds stop holding the run: missing from 10 s, expired after 60 s."""
    executor = Executor.objects.get(id="test")
    for t, expired in ((10, []), (69, []), (71, [run_id])):
        answer = executor_round(
            executor=executor,
            pool="default",
            nodes=[],
            nodes_digest=executor.nodes_digest,  # unchanged: the nodes stay as they are
            held=[r for r in Run.objects.filter(state__in=["leased"]).values_list("id", flat=True)],
            now=at(t),
        )
        assert answer.expired == expired, t


@pytest.mark.parametrize("expire", [_expired_by_the_scheduler, _expired_by_rounds])
def test_a_late_success_after_the_run_expired_is_refused_and_counts_nothing(runs, expire):
    a = runs[0]
    assert [o.outcome for o in apply([report(a, PENDING), report(a, RUNNING)], at(5))] == [
        APPLIED
    ] * 2
    expire(a)
    assert failures_decide(now=at(72)) >= 1  # lease-expired: a genuine failure, retried
    job = Job.objects.get(runs__id=a)
    assert (job.state, job.failure_count, job.retry_count) == ("queued", 1, 1)
    before = snapshot()
    counted = failure_counts()

    [outcome] = apply([report(a, SUCCEEDED, when=at(65))], at(80))
    assert outcome == ReportOutcome(
        REFUSED, "the run ended as lease_expired already; a report of succeeded changes nothing"
    )
    assert failures_decide(now=at(81)) == 0
    assert snapshot() == before
    assert failure_counts() == counted
    run = Run.objects.get(id=a)
    assert (run.state, run.failure_subcategory, run.exit_code) == (
        "lease_expired",
        "lease-expired",
        None,
    )
    assert "succeeded" not in types_for(run.job_id)
    assert types_for(run.job_id).count("lease_expired") == 1
    assert types_for(run.job_id).count("failed") == 1


def test_a_refused_or_repeated_report_leaves_the_runs_log_as_it_was(runs):
    a, b = runs
    apply([report(b, SUCCEEDED, when=at(6), log="the first words")], at(7))
    [again] = apply([report(b, SUCCEEDED, when=at(6), log="other words")], at(8))
    assert again.outcome == DUPLICATE
    assert RunLog.objects.get(run_id=b).text == "the first words"
    apply([report(a, PENDING), report(a, RUNNING)], at(5))
    _expire(a)
    [outcome] = apply([report(a, SUCCEEDED, when=at(65), log="late words")], at(80))
    assert outcome.outcome == REFUSED
    assert not RunLog.objects.filter(run_id=a).exists()
