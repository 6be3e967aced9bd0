"""What a pool's scheduling round is given, read for the cycle (``services.scheduler``): the
pool's schedulable nodes, its active runs as the core sees them with what each queue uses,
the queues' states, and the retry's node avoidance rewritten to node names."""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Count

from armada.core.quantity import Resources
from armada.core.scheduling import NodeState, QueuedJob, QueueState, RunningJob
from armada.core.states import RunState
from armada.models import Executor, Node, Queue, Run
from armada.services.jobdb import JobDb
from armada.services.mutations import avoided_node_names
from armada.services.snapshot import node_state

log = logging.getLogger("armada.services.scheduler")


def load_nodes(pool: str, now: datetime) -> tuple[list[NodeState], list[Node]]:
    """The pool's schedulable nodes: those of live, uncordoned executors that have not
    fallen behind (``maxUnacknowledgedJobsPerExecutor``: more leased runs they have not
    acknowledged than that, and their nodes sit out the round; their runs still count)."""
    timeout = timedelta(seconds=settings.ARMADA.executor_timeout)
    live = Executor.objects.filter(pool=pool, cordoned=False, last_heartbeat__gte=now - timeout)
    behind = settings.ARMADA.scheduling.max_unacknowledged_jobs_per_executor
    if behind:
        lagging = [
            row["executor"]
            for row in Run.objects.filter(state=RunState.LEASED, pool=pool)
            .values("executor")
            .annotate(n=Count("id"))
            .filter(n__gt=behind)
        ]
        if lagging:
            log.info("executors with too many unacknowledged leases sit out: %s", lagging)
            live = live.exclude(id__in=lagging)
    rows = list(Node.objects.filter(executor__in=live).order_by("executor_id", "name"))
    return [node_state(n) for n in rows], rows


def running_in_pool(
    db: JobDb,
    pool: str,
    nodes: list[NodeState],
    classes: Mapping,
    by_class: defaultdict[str, dict[str, dict[str, int]]],
) -> tuple[list[RunningJob], dict[str, Resources]]:
    """The pool's active runs as the core sees them (their requests added to their nodes'
    ``allocated``), and what each queue uses in the pool; ``by_class`` gets what each
    queue's runs hold per priority class, floating resources included. A run on a node
    that is not schedulable now (its executor is lost or cordoned) still counts for its
    queue."""
    by_id = {n.id: n for n in nodes}
    running: list[RunningJob] = []
    used: dict[str, Resources] = defaultdict(Resources)
    for run in db.runs_in_pool(pool):
        used[run.queue] = used[run.queue] + run.requests
        held = by_class[run.queue].setdefault(run.priority_class, {})
        for amounts in (run.requests.to_dict(), run.floating):
            for r, v in amounts.items():
                held[r] = held.get(r, 0) + v
        node_id = f"{run.executor}/{run.node}"
        node = by_id.get(node_id)
        if node is None:
            continue
        node.allocated = node.allocated + run.requests
        pc = classes.get(run.priority_class)
        running.append(
            RunningJob(
                id=run.job_id,
                queue=run.queue,
                node_id=node_id,
                requests=run.requests,
                # A run placed away from home runs at its away priority (``core.away``).
                urgency=(
                    run.scheduled_priority
                    if run.scheduled_priority is not None
                    else pc.priority
                    if pc
                    else 0
                ),
                # A run already being stopped is not offered for preemption again.
                preemptible=bool(pc and pc.preemptible) and not run.stopping,
                gang_id=run.gang_id,
                priority_class=run.priority_class,
                floating=run.floating,
            )
        )
    return running, used


def queue_states_of(
    queues: list[Queue],
    used: Mapping[str, Resources],
    by_class: Mapping[str, Mapping[str, Mapping[str, int]]],
    pool: str,
    now: datetime,
    cutoff: float,
) -> list[QueueState]:
    """Queues with what they use in the pool. With a ``shortJobPenaltyCutoff``, a run that
    ended sooner than the cutoff after it started is still charged to its queue until then,
    so that many tiny jobs do not take more than their share."""
    charged: dict[str, Resources] = defaultdict(Resources, used)
    if cutoff > 0:
        recent = Run.objects.filter(
            pool=pool,
            state__in=[RunState.SUCCEEDED, RunState.FAILED, RunState.CANCELLED, RunState.PREEMPTED],
            running_at__gt=now - timedelta(seconds=cutoff),
        ).values("job__queue", "requests")
        for run in recent:
            charged[run["job__queue"]] = charged[run["job__queue"]] + run["requests"]
    return [
        QueueState(
            name=q.name,
            priority_factor=q.priority_factor,
            cordoned=q.cordoned,
            allocated=charged[q.name],
            by_class=by_class.get(q.name, {}),
        )
        for q in queues
    ]


def avoidance(db: JobDb, rows: list[Node]) -> Callable[[Iterator[QueuedJob]], Iterator[QueuedJob]]:
    """A filter giving each job that a retry told to avoid some nodes those nodes' names in
    this pool (the job database keeps the nodes' ids, which outlive their names)."""
    if not db.avoid:
        return lambda jobs: jobs

    def rewrite(jobs: Iterator[QueuedJob]) -> Iterator[QueuedJob]:
        for job in jobs:
            ids = db.avoid.get(job.id)
            if ids:
                job = replace(job, avoid_nodes=avoided_node_names(rows, set(ids)))
            yield job

    return rewrite
