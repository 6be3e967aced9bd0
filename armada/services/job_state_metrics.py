"""Armada's job state metrics, counted in the transaction that changes the state.

Each run's state change counts once, with the state it left (``priorState``: the latest of
queued, leased, pending and running before the change, Armada's reckoning from the job's
submission and the run's timestamps) and the seconds it spent there:

- ``armada_scheduler_job_state_counter_by_queue{queue,pool,state,priorState}`` and
  ``_by_node{node,pool,cluster,state,priorState}``: state changes;
- ``armada_scheduler_job_state_seconds_by_queue`` / ``_by_node``: seconds in the prior state
  (stored in milliseconds);
- ``armada_scheduler_job_state_resource_seconds_by_queue`` / ``_by_node`` (``resource``):
  those seconds times the run's requests (stored as milli-unit-seconds; bytes for memory and
  storage);
- ``armada_scheduler_job_run_completed_duration_seconds{queue,pool}``: a histogram of the
  seconds a run spent in its last state when it ended (succeeded, failed, cancelled,
  preempted), Armada's buckets ``2 * 2**i``, i in 0..19;
- ``armada_scheduler_job_error_classification_by_queue{queue,pool,category,subcategory}`` and
  ``_by_node``: failed runs by their failure category;
- ``armada_scheduler_job_resource_seconds_lost_to_preemption{queue,pool,checkpoint_interval,
  resource}``: a preempted run's last-state seconds times its requests
  (``checkpoint_interval`` is ``none``: jobs here declare no checkpoints).

The changes are read from the transaction's events (``services.runs.Changes``): ``pending``,
``running``, ``succeeded``, ``failed`` (not a preemption's), ``cancelled`` and ``preempted``;
``leased`` is counted by the scheduler when it writes leases (:func:`job_state_leases_count`).
The counters are reset every ``metrics.jobStateMetricsResetInterval`` with the others.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Protocol

from armada.core.states import EventType, RunState
from armada.services.counters import counters_add_many
from armada.services.metric_buckets import bucket_of, exponential_buckets

_P = "armada_scheduler_"
BY_QUEUE = _P + "job_state_counter_by_queue"
BY_NODE = _P + "job_state_counter_by_node"
SECONDS_BY_QUEUE = _P + "job_state_seconds_by_queue"
SECONDS_BY_NODE = _P + "job_state_seconds_by_node"
RESOURCE_BY_QUEUE = _P + "job_state_resource_seconds_by_queue"
RESOURCE_BY_NODE = _P + "job_state_resource_seconds_by_node"
ERRORS_BY_QUEUE = _P + "job_error_classification_by_queue"
ERRORS_BY_NODE = _P + "job_error_classification_by_node"
LOST_TO_PREEMPTION = _P + "job_resource_seconds_lost_to_preemption"
COMPLETED = _P + "job_run_completed_duration_seconds"
COMPLETED_BUCKETS = exponential_buckets(2, 2, 20)
QUEUE_LABELS = ("queue", "pool", "state", "priorState")
NODE_LABELS = ("node", "pool", "cluster", "state", "priorState")
# name -> (help, labels, factor from the stored whole number to the served value; None: the
# resource's own, see ``resource_factor``)
COUNTERS: dict[str, tuple[str, tuple[str, ...], float | None]] = {
    BY_QUEUE: ("Job states at queue level", QUEUE_LABELS, 1.0),
    BY_NODE: ("Job states at node level", NODE_LABELS, 1.0),
    SECONDS_BY_QUEUE: ("time spent in different states at the queue level", QUEUE_LABELS, 1e-3),
    SECONDS_BY_NODE: ("time spent in different states at the node level", NODE_LABELS, 1e-3),
    RESOURCE_BY_QUEUE: (
        "Resource-seconds spent in different states at the queue level",
        (*QUEUE_LABELS, "resource"),
        None,
    ),
    RESOURCE_BY_NODE: (
        "Resource-seconds spent in different states at the node level",
        (*NODE_LABELS, "resource"),
        None,
    ),
    ERRORS_BY_QUEUE: (
        "Failed jobs by error classification at the queue level",
        ("queue", "pool", "category", "subcategory"),
        1.0,
    ),
    ERRORS_BY_NODE: (
        "Failed jobs by error classification at the node level",
        ("node", "pool", "cluster", "category", "subcategory"),
        1.0,
    ),
    LOST_TO_PREEMPTION: (
        "Resource seconds lost to preemption",
        ("queue", "pool", "checkpoint_interval", "resource"),
        None,
    ),
}
# Every stored name, for the periodic reset.
RESET_NAMES = [*COUNTERS, f"{COMPLETED}_bucket", f"{COMPLETED}_sum"]
_BYTES = ("memory", "ephemeral-storage")


def resource_factor(resource: str) -> float:
    """Stored resource-seconds are bytes for memory and storage (milli-bytes would overflow
    a 64-bit counter within days), milli-units for every other resource."""
    return 1.0 if resource in _BYTES else 1e-3


def whole_resource_seconds(resource: str, milli: int, seconds: float) -> int:
    return _whole(milli, seconds, resource_factor(resource))


def _whole(milli: int, seconds: float, factor: float) -> int:
    """``whole_resource_seconds`` with the resource's factor already looked up."""
    return round(milli * seconds * 1e-3 / factor)


_STATE_OF_EVENT = {
    EventType.PENDING: "pending",
    EventType.RUNNING: "running",
    EventType.SUCCEEDED: "succeeded",
    EventType.FAILED: "failed",
    EventType.CANCELLED: "cancelled",
    EventType.PREEMPTED: "preempted",
}
_ENDED = {"succeeded", "failed", "cancelled", "preempted"}

Labels = tuple[tuple[str, str], ...]


class _Run(Protocol):
    id: str
    state: str
    executor: str
    node: str
    pool: str
    requests: dict
    leased_at: datetime | None
    pending_at: datetime | None
    running_at: datetime | None
    finished_at: datetime | None
    failure_category: str
    failure_subcategory: str


def prior_state(*, at: datetime, submitted: datetime, run: _Run | None) -> tuple[str, float]:
    """The state left at ``at`` and the seconds spent in it (see the module docstring)."""
    prior, since = "queued", submitted
    if run is not None:
        for name, moment in (
            ("leased", run.leased_at),
            ("pending", run.pending_at),
            ("running", run.running_at),
        ):
            if moment is not None and since < moment < at:
                prior, since = name, moment
    return prior, (at - since).total_seconds()


class Tally:
    """The increments of one transaction, by counter and label set."""

    def __init__(self) -> None:
        self.counts: dict[str, Counter[Labels]] = {}

    def add(self, name: str, amount: int, **labels: str) -> None:
        if amount > 0:
            self.counts.setdefault(name, Counter())[tuple(labels.items())] += amount

    def transition(
        self, *, queue: str, run: _Run, state: str, at: datetime, submitted: datetime
    ) -> None:
        prior, seconds = prior_state(at=at, submitted=submitted, run=run)
        if seconds <= 0:
            return
        q = {"queue": queue, "pool": run.pool, "state": state, "priorState": prior}
        n = {"node": run.node, "pool": run.pool, "cluster": run.executor}
        n |= {"state": state, "priorState": prior}
        self.add(BY_QUEUE, 1, **q)
        self.add(BY_NODE, 1, **n)
        self.add(SECONDS_BY_QUEUE, round(seconds * 1000), **q)
        self.add(SECONDS_BY_NODE, round(seconds * 1000), **n)
        for resource, milli in sorted((run.requests or {}).items()):
            amount = whole_resource_seconds(resource, int(milli), seconds)
            self.add(RESOURCE_BY_QUEUE, amount, **q, resource=resource)
            self.add(RESOURCE_BY_NODE, amount, **n, resource=resource)
            if state == "preempted":
                self.add(
                    LOST_TO_PREEMPTION,
                    amount,
                    queue=queue,
                    pool=run.pool,
                    checkpoint_interval="none",
                    resource=resource,
                )
        if state in _ENDED:
            le = bucket_of(COMPLETED_BUCKETS, seconds)
            self.add(f"{COMPLETED}_bucket", 1, queue=queue, pool=run.pool, le=le)
            self.add(f"{COMPLETED}_sum", round(seconds * 1000), queue=queue, pool=run.pool)
        if state == "failed":
            cat, sub = run.failure_category, run.failure_subcategory
            self.add(ERRORS_BY_QUEUE, 1, queue=queue, pool=run.pool, category=cat, subcategory=sub)
            self.add(
                ERRORS_BY_NODE,
                1,
                node=run.node,
                pool=run.pool,
                cluster=run.executor,
                category=cat,
                subcategory=sub,
            )

    def write(self) -> None:
        """Under the event-log lock, which the caller's transaction holds already."""
        counters_add_many(self.counts)


class _Changes(Protocol):
    runs: dict
    jobs: dict
    events: list


def job_state_changes_count(changes: _Changes) -> None:
    """Count the run state changes of one ``services.runs.Changes`` (called by its
    ``write``, after the events, in the same transaction)."""
    tally = Tally()
    for event in changes.events:
        state = _STATE_OF_EVENT.get(event.type)
        run = changes.runs.get(event.run_id) if event.run_id else None
        job = changes.jobs.get(event.job_id)
        if state is None or run is None or job is None:
            continue
        if state == "failed" and run.state == RunState.PREEMPTED:
            continue  # a preemption's failed event: counted as preempted
        at = run.finished_at if state in _ENDED and run.finished_at else event.created
        tally.transition(
            queue=job.queue_id, run=run, state=state, at=at, submitted=job.submitted_at
        )
    tally.write()


def job_state_leases_count(
    *, runs: Iterable[Mapping], jobs: Mapping[str, tuple[str, datetime]] | None = None
) -> None:
    """Count the leases the scheduler writes (``runs`` as it inserts them), in its
    transaction, after its events. ``jobs`` gives each job's queue and submission time (as
    the lease's claim returned them); without it they are read (one query).

    The same increments as :meth:`Tally.transition` of each run from ``queued`` to
    ``leased`` (a new run has no earlier moment, so the prior state is always ``queued``,
    since the submission), summed per label set as they are made: a cycle writes ten
    thousand leases, and a call per run cost half a second."""
    rows = list(runs)
    if jobs is None:
        from armada.models import Job

        jobs = {
            id_: (queue, submitted)
            for id_, queue, submitted in Job.objects.filter(
                id__any=[r["job_id"] for r in rows]
            ).values_list("id", "queue", "submitted_at")
        }
    per_queue: dict[tuple[str, str], int] = {}
    per_node: dict[tuple[str, str, str], int] = {}
    ms_queue: dict[tuple[str, str], int] = {}
    ms_node: dict[tuple[str, str, str], int] = {}
    res_queue: dict[tuple[tuple[str, str], str], int] = {}
    res_node: dict[tuple[tuple[str, str, str], str], int] = {}
    # Each requests object's (resource, milli-units, stored unit) once: the rows of one
    # shape share one object (``scheduler_leases._leased_runs``).
    shapes: dict[int, list[tuple[str, int, float]]] = {}
    for row in rows:
        queue, submitted = jobs[row["job_id"]]
        seconds = (row["leased_at"] - submitted).total_seconds()
        if seconds <= 0:
            continue
        q = (queue, row["pool"])
        n = (row["node"], row["pool"], row["executor"])
        per_queue[q] = per_queue.get(q, 0) + 1
        per_node[n] = per_node.get(n, 0) + 1
        ms = round(seconds * 1000)
        if ms > 0:
            ms_queue[q] = ms_queue.get(q, 0) + ms
            ms_node[n] = ms_node.get(n, 0) + ms
        requests = row["requests"] or {}
        shape = shapes.get(id(requests))
        if shape is None:
            shape = shapes[id(requests)] = [
                (resource, int(milli), resource_factor(resource))
                for resource, milli in requests.items()
            ]
        for resource, milli, factor in shape:
            amount = _whole(milli, seconds, factor)
            if amount > 0:
                key_q = (q, resource)
                key_n = (n, resource)
                res_queue[key_q] = res_queue.get(key_q, 0) + amount
                res_node[key_n] = res_node.get(key_n, 0) + amount
    moved = (("state", "leased"), ("priorState", "queued"))

    def queue_labels(q: tuple[str, str]) -> Labels:
        return (("queue", q[0]), ("pool", q[1]), *moved)

    def node_labels(n: tuple[str, str, str]) -> Labels:
        return (("node", n[0]), ("pool", n[1]), ("cluster", n[2]), *moved)

    tally = Tally()
    for name, counts, labels in (
        (BY_QUEUE, per_queue, queue_labels),
        (BY_NODE, per_node, node_labels),
        (SECONDS_BY_QUEUE, ms_queue, queue_labels),
        (SECONDS_BY_NODE, ms_node, node_labels),
    ):
        if counts:
            tally.counts[name] = Counter({labels(k): v for k, v in counts.items()})
    for name, counts, labels in (
        (RESOURCE_BY_QUEUE, res_queue, queue_labels),
        (RESOURCE_BY_NODE, res_node, node_labels),
    ):
        if counts:
            tally.counts[name] = Counter(
                {(*labels(k), ("resource", r)): v for (k, r), v in counts.items()}
            )
    tally.write()
