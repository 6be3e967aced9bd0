"""What a job's latest run says, kept on the job.

A job's latest run is its run with the greatest id (ids sort by creation). Lookout filters
and groups jobs by that run's executor, node, pool, exit code, retryable verdict and
decision label; reading them through the runs costs a subquery per job, so they are copied
onto the job's ``latest_*`` columns, in the transaction that changes them:

- a lease (``services.scheduler``) makes the new run the latest: its executor, node and
  pool, and no exit code, verdict or decision yet (``lease_assignments``);
- every later change to a run goes through ``services.runs.Changes``, which copies the run
  onto its job when it writes them (``copy_to_job``): reports, stops, expiry, decisions.

Invariant: for every job with runs, ``job.latest_*`` equal what its latest run says
(``drifted`` finds the jobs where they do not; the tests check it after every kind of
change, and migration 0017 filled the columns in for the jobs that had runs).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from armada.models import Job, Run

# The job's columns.
FIELDS = (
    "latest_run_id",
    "latest_executor",
    "latest_node",
    "latest_pool",
    "latest_exit_code",
    "latest_retryable",
    "latest_decision",
)
# Their values while the job has no run.
NO_RUN = ("", "", "", "", None, None, "")
# What ``drifted`` reads of the runs.
_RUN_FIELDS = ("executor", "node", "pool", "exit_code", "retryable", "decision")


def _decision_label(run: Run) -> str:
    """The label of the run's decision ("" before it is decided)."""
    decision = run.decision if isinstance(run.decision, dict) else {}
    return str(decision.get("decision") or "")


def _values(run: Run) -> tuple[Any, ...]:
    return (
        run.id,
        run.executor,
        run.node,
        run.pool,
        run.exit_code,
        run.retryable,
        _decision_label(run),
    )


def lease_assignments(run: str, executor: str, node: str, pool: str) -> str:
    """SQL setting the job's ``FIELDS`` to a run just leased, given SQL expressions for the
    run's id, executor, node and pool: no exit code, verdict or decision yet."""
    values = (run, executor, node, pool, "NULL", "NULL", "''")
    return ", ".join(f"{name} = {value}" for name, value in zip(FIELDS, values, strict=True))


def copy_to_job(run: Run, job: Job) -> None:
    """Copy ``run`` onto ``job`` (not saved) unless the job has a later run already."""
    if run.id < (job.latest_run_id or ""):
        return
    for name, value in zip(FIELDS, _values(run), strict=True):
        setattr(job, name, value)


def drifted(job_ids: Iterable[str] | None = None) -> list[str]:
    """The jobs (among ``job_ids``; all when None) whose ``latest_*`` columns differ from
    their latest run, or that have runs and no ``latest_run_id``. Reads every run of those
    jobs: for tests and checks, not for requests."""
    jobs = Job.objects.all() if job_ids is None else Job.objects.filter(id__in=list(job_ids))
    runs = Run.objects.filter(job__in=jobs).order_by("job_id", "id")
    latest: dict[str, Run] = {}
    for run in runs.only("id", "job_id", *_RUN_FIELDS):
        latest[run.job_id] = run
    wrong = []
    for job in jobs.only("id", *FIELDS).order_by("id"):
        run = latest.get(job.id)
        want = _values(run) if run is not None else NO_RUN
        if tuple(getattr(job, name) for name in FIELDS) != want:
            wrong.append(job.id)
    return wrong
