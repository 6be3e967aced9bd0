"""The scheduling cycle: load a snapshot, ask the core where jobs go, write the leases.

First the runs of lost executors are expired (``services.expiry``) and every undecided
failure is decided (``services.decisions``). Then: snapshot ->
``core.scheduling.schedule_round`` (per pool) -> one transaction that creates the runs,
moves the jobs to leased (guarded: only jobs still queued) and appends the ``leased``
events. Only one cycle runs at a time, under the ``scheduler`` leader lease. Last, the
round and the reasons jobs were not leased are recorded (``services.records``).
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F

from armada.core.quantity import Resources
from armada.core.scheduling import (
    NodeState,
    QueueState,
    RunningJob,
    schedule_round,
)
from armada.core.states import EventType, JobState, RunState
from armada.models import Executor, Job, Node, Queue, Run
from armada.services.counters import counters_reset_if_due
from armada.services.decisions import DECISIONS_COUNTER, GANG_SKIPPED_COUNTER, failures_decide
from armada.services.events import NewEvent, events_append
from armada.services.expiry import runs_expire
from armada.services.ids import new_id
from armada.services.leader import leader_acquire
from armada.services.mutations import avoided_node_names
from armada.services.records import records_write
from armada.services.snapshot import node_state, queued_job
from armada.services.stopping import runs_request_preemption

log = logging.getLogger(__name__)

ACTIVE_RUN_STATES = [RunState.LEASED, RunState.PENDING, RunState.RUNNING]
LEADER_NAME = "scheduler"
HOLDER = f"{socket.gethostname()}:{os.getpid()}"


@dataclass
class CycleReport:
    ran: bool = True
    considered: int = 0
    leased: int = 0
    expired: int = 0
    decided: int = 0
    preempted: int = 0
    unschedulable: dict[str, str] = field(default_factory=dict)


def pod_name(job_id: str) -> str:
    return f"armada-{job_id}-0"


def _load_nodes(
    pool: str, now: datetime, classes: dict
) -> tuple[list[NodeState], list[Node], list[RunningJob]]:
    """The pool's live nodes with what is allocated on them, and the jobs running there."""
    timeout = timedelta(seconds=settings.ARMADA.executor_timeout)
    live = Executor.objects.filter(pool=pool, cordoned=False, last_heartbeat__gte=now - timeout)
    rows = list(Node.objects.filter(executor__in=live).order_by("executor_id", "name"))
    nodes = {(n.executor_id, n.name): node_state(n) for n in rows}
    running = []
    active = Run.objects.filter(pool=pool, state__in=ACTIVE_RUN_STATES).values(
        "executor",
        "node",
        "requests",
        "job_id",
        "job__queue",
        "job__priority_class",
        "job__gang_id",
        "stop_requested_at",
    )
    for run in active:
        node = nodes.get((run["executor"], run["node"]))
        if node is None:
            continue
        node.allocated = node.allocated + run["requests"]
        pc = classes.get(run["job__priority_class"])
        running.append(
            RunningJob(
                id=run["job_id"],
                queue=run["job__queue"],
                node_id=node.id,
                requests=Resources(run["requests"]),
                urgency=pc.priority if pc else 0,
                # A run already being stopped is not offered for preemption again.
                preemptible=bool(pc and pc.preemptible) and run["stop_requested_at"] is None,
                gang_id=run["job__gang_id"],
            )
        )
    return list(nodes.values()), rows, running


def _load_queues(pool: str, now: datetime, short_job_penalty: float) -> list[QueueState]:
    """Queues with what they use in the pool. With a ``shortJobPenaltyCutoff``, a run that
    ended sooner than the cutoff after it started is still charged to its queue until then,
    so that many tiny jobs do not take more than their share."""
    used: dict[str, Resources] = defaultdict(Resources)
    for run in Run.objects.filter(pool=pool, state__in=ACTIVE_RUN_STATES).values(
        "job__queue", "requests"
    ):
        used[run["job__queue"]] = used[run["job__queue"]] + run["requests"]
    if short_job_penalty > 0:
        recent = Run.objects.filter(
            pool=pool,
            state__in=[RunState.SUCCEEDED, RunState.FAILED, RunState.CANCELLED, RunState.PREEMPTED],
            running_at__gt=now - timedelta(seconds=short_job_penalty),
        ).values("job__queue", "requests")
        for run in recent:
            used[run["job__queue"]] = used[run["job__queue"]] + run["requests"]
    return [
        QueueState(
            name=q.name,
            priority_factor=q.priority_factor,
            cordoned=q.cordoned,
            allocated=used[q.name],
        )
        for q in Queue.objects.all()
    ]


def _load_queued_jobs(lookback: int) -> dict[str, Job]:
    """Each queue's first ``lookback`` waiting jobs (priority, then submission order); the
    core orders them by urgency too. Per queue, so one backlog cannot hide the others."""
    jobs: dict[str, Job] = {}
    queues = (
        Job.objects.filter(state=JobState.QUEUED)
        .values_list("queue", flat=True)
        .distinct()
        .order_by()
    )
    for queue in sorted(set(queues)):
        qs = Job.objects.filter(state=JobState.QUEUED, queue_id=queue).order_by("priority", "id")[
            :lookback
        ]
        jobs.update((j.id, j) for j in qs)
    return jobs


def scheduler_cycle(*, now: datetime) -> CycleReport:
    """Run one cycle if this process holds the scheduler lease; see the module docstring."""
    config = settings.ARMADA
    ttl = timedelta(seconds=max(30.0, config.scheduling.cycle_period * 10))
    if not leader_acquire(name=LEADER_NAME, holder=HOLDER, now=now, ttl=ttl):
        return CycleReport(ran=False)
    started = time.perf_counter()
    counters_reset_if_due(
        names=[DECISIONS_COUNTER, GANG_SKIPPED_COUNTER],
        now=now,
        interval_seconds=config.metrics.job_state_metrics_reset_interval,
    )
    expired = runs_expire(now=now)
    decided = failures_decide(now=now)
    classes = config.scheduling.priority_classes
    max_leases = config.scheduling.maximum_jobs_per_round
    jobs = _load_queued_jobs(lookback=config.scheduling.max_queue_lookback)
    report = CycleReport(considered=len(jobs), expired=expired, decided=decided)
    leases = []
    preempted: dict[str, str] = {}
    remaining = dict(jobs)
    for pool in config.scheduling.pools:
        if not remaining or len(leases) >= max_leases:
            break
        nodes, rows, running = _load_nodes(pool.name, now, classes)
        candidates = [
            queued_job(
                j,
                urgency=classes[j.priority_class].priority if j.priority_class in classes else 0,
                avoid_nodes=avoided_node_names(rows, set(j.mutations.get("avoidNodes", []))),
            )
            for j in remaining.values()
        ]
        result = schedule_round(
            nodes=nodes,
            queues=_load_queues(pool.name, now, pool.short_job_penalty_cutoff),
            jobs=candidates,
            max_leases=max_leases - len(leases),
            indexed_node_labels=frozenset(config.scheduling.indexed_node_labels),
            running=running,
            fair_share_preemption=config.scheduling.fair_share_preemption,
            protected_fraction=config.scheduling.protected_fraction_of_fair_share,
        )
        preempted.update(result.preempted)
        for lease in result.leases:
            leases.append((pool.name, lease))
            remaining.pop(lease.job_id)
        report.unschedulable.update(result.unschedulable)
    for job_id in jobs:
        if job_id not in remaining:
            report.unschedulable.pop(job_id, None)
    leased_ids = _write_leases(jobs, leases, now) if leases else []
    by_reason: dict[str, list[str]] = {}
    for job_id, reason in preempted.items():
        by_reason.setdefault(reason, []).append(job_id)
    for reason, job_ids in sorted(by_reason.items()):
        report.preempted += len(runs_request_preemption(job_ids=job_ids, reason=reason, now=now))
    report.leased = len(leased_ids)
    records_write(
        started_at=now,
        duration_ms=int((time.perf_counter() - started) * 1000),
        considered=report.considered,
        leased_ids=leased_ids,
        expired=expired,
        decided=decided,
        unschedulable=report.unschedulable,
    )
    return report


def _write_leases(jobs: dict[str, Job], leases: list, now: datetime) -> list[str]:
    """Create runs and move jobs to leased; only jobs still queued at commit time are leased."""
    with transaction.atomic():
        ids = [lease.job_id for _, lease in leases]
        still_queued = set(
            Job.objects.select_for_update()
            .filter(id__in=ids, state=JobState.QUEUED)
            .values_list("id", flat=True)
        )
        runs, events = [], []
        for pool, lease in leases:
            if lease.job_id not in still_queued:
                continue
            job = jobs[lease.job_id]
            run = Run(
                id=new_id(),
                job_id=job.id,
                executor=lease.executor,
                node=lease.node,
                pool=pool,
                state=RunState.LEASED,
                requests=job.requests,
                pod_name=pod_name(job.id),
                leased_at=now,
            )
            runs.append(run)
            events.append(
                NewEvent(
                    EventType.LEASED,
                    queue=job.queue_id,
                    job_set=job.job_set,
                    job_id=job.id,
                    run_id=run.id,
                    created=now,
                    payload={"cluster": lease.executor, "node": lease.node, "pool": pool},
                )
            )
        Job.objects.filter(id__in=[r.job_id for r in runs]).update(
            state=JobState.LEASED, last_transition_at=now, run_count=F("run_count") + 1
        )
        Run.objects.bulk_create(runs, batch_size=1000)
        events_append(events=events)
    log.info("scheduling cycle leased %d job(s)", len(runs))
    return [r.job_id for r in runs]
