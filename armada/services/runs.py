"""What one transaction changes about runs and jobs: rows, events and counts, written together
(``Changes``). Reports from executors are applied by ``services.run_reports``; expiry,
decisions and stops build their changes here too."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from armada.core.states import EventType, RunState
from armada.models import Job, Run
from armada.services import latest_run, retry_cost
from armada.services.bulk import bulk_update_fields
from armada.services.counters import counters_add_many, tally
from armada.services.events import NewEvent, events_append
from armada.services.job_state_metrics import job_state_changes_count

FAILURE_CATEGORY_COUNTER = "armada_executor_job_failure_category_total"
RUN_FIELDS = [
    "state",
    "pending_at",
    "running_at",
    "finished_at",
    "exit_code",
    "reason",
    "message",
    "failure_category",
    "failure_subcategory",
    "hint",
    "retryable",
    "decision",
    "exit_codes",
    "decided_at",
    "pod_kept_until",
    "kubernetes_id",
    "containers",
    "cause",
]
JOB_FIELDS = [
    "state",
    "last_transition_at",
    "terminal_reason",
    "terminal_message",
    "failure_category",
    "failure_subcategory",
    "failure_count",
    "retry_count",
    "lease_return_count",
    "pod_spec",
    "requests",
    "mutations",
    "retry_not_before",
    *latest_run.FIELDS,
]


@dataclass
class Changes:
    """What one transaction writes: rows, events, counts."""

    runs: dict[str, Run] = field(default_factory=dict)
    jobs: dict[str, Job] = field(default_factory=dict)
    events: list[NewEvent] = field(default_factory=list)
    counters: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    # Each run and its job as first touched, so that ``write`` can tell what ended, was
    # decided or succeeded in this transaction (``services.retry_cost``).
    seen: dict[str, retry_cost.Seen] = field(default_factory=dict)
    # The columns ``write`` writes: every one a transaction may change, unless its caller
    # knows it changes fewer (applying reports never touches a pod spec).
    job_fields: Sequence[str] = tuple(JOB_FIELDS)
    run_fields: Sequence[str] = tuple(RUN_FIELDS)

    def counts(self, name: str, labels: list[dict[str, str]]) -> None:
        """Count one occurrence per label set in counter ``name``."""
        self.counters.setdefault(name, []).extend(labels)

    def event(self, type_: EventType, run: Run, job: Job, at: datetime, **payload) -> None:
        self.events.append(
            NewEvent(
                type_,
                queue=job.queue_id,
                job_set=job.job_set,
                job_id=job.id,
                run_id=run.id,
                created=at,
                payload=payload,
            )
        )

    def failed_event(
        self,
        run: Run,
        job: Job,
        at: datetime,
        *,
        retryable: bool,
        category: str,
        subcategory: str,
        **extra,
    ) -> None:
        """The ``failed`` event: where it ran, whether it will be retried, and why it failed.
        It always names the run's exit codes (empty when no container ended), its pod's UID
        and its ended containers, so that a reader never has to look the run up for them."""
        extra.setdefault("exitCodes", run.exit_codes or {})
        extra.setdefault("kubernetesId", run.kubernetes_id)
        extra.setdefault("containers", run.containers or [])
        if run.cause:
            extra.setdefault("cause", run.cause)
        self.event(
            EventType.FAILED,
            run,
            job,
            at,
            clusterId=run.executor,
            nodeName=run.node,
            podName=run.pod_name,
            podNamespace=job.namespace,
            retryable=retryable,
            failureCategory=category,
            failureSubcategory=subcategory,
            **extra,
        )

    def touch(self, run: Run, job: Job) -> None:
        self.seen.setdefault(run.id, retry_cost.seen(run, job))
        self.runs[run.id] = run
        self.jobs[job.id] = job

    def write_events(self) -> None:
        events_append(events=self.events)

    def write(self) -> None:
        """Rows first (already locked, jobs before runs), then the events, which take the
        event-log lock, then the counters, which are written only under that lock (see
        ``services.locking``). Each run is copied onto its job (``services.latest_run``)."""
        if latest_run.FIELDS[0] in self.job_fields:  # else nothing the copy holds changed
            for run in self.runs.values():
                if (job := self.jobs.get(run.job_id)) is not None:
                    latest_run.copy_to_job(run, job)
        bulk_update_fields(list(self.runs.values()), self.run_fields)
        bulk_update_fields(list(self.jobs.values()), self.job_fields)
        events_append(events=self.events)
        counters_add_many(
            {name: tally(*labels) for name, labels in self.counters.items() if labels}
        )
        retry_cost.record(self)  # what failed runs and retried attempts cost, and the yield
        job_state_changes_count(self)  # Armada's job state metrics


def record_failure(*, run: Run, changes: Changes) -> None:
    """A genuine failure (the run's outcome fields already set): the run is failed and
    counted by category; the scheduler decides later what it means for the job
    (``services.decisions``), and emits the ``failed`` event then."""
    run.state = RunState.FAILED
    run.decided_at = None
    changes.counts(
        FAILURE_CATEGORY_COUNTER,
        [
            {
                "failure_category": run.failure_category,
                "failure_subcategory": run.failure_subcategory,
            }
        ],
    )
