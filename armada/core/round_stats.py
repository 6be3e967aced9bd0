"""What one scheduling round did, per queue and per node, as data for Armada's per-cycle
gauges (``services.round_metrics`` stores them with the cycle).

The round's loop takes one *unit* at a time from the queue whose turn it is: a gang, or a
single job (a gang of one, as Armada counts it). For every unit the round notes, in the
unit's queue's :class:`QueueRoundStats`: the jobs in it (``considered``), one gang considered,
one gang scheduled if all its jobs were leased, the loop's position when the queue's first
unit was considered and when its last leased unit was, and the time the unit took (by the
clock the caller passes in; none, no time). ``RoundStats.loops`` is the number of units the
loop took in all. The fair-share pass after the loop retries waiting units but considers no
new ones, so it adds to none of these; its evictions, and the urgency evictions of the loop,
add to the evicted queue's ``evicted_jobs`` and ``evicted`` (requests, milli-units).

``node_preemptibility`` says of each node whether every job on it may be preempted, with
Armada's reasons: ``all_jobs_preemptible``; ``node_empty`` (nothing to preempt, counted as
preemptible); ``job_not_preemptible`` and ``node_unschedulable`` (not preemptible; both when
both hold, sorted and comma-joined).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the snapshot's round result holds these stats
    from armada.core.snapshot import NodeState, RunningJob

ALL_PREEMPTIBLE = "all_jobs_preemptible"
NODE_EMPTY = "node_empty"
JOB_NOT_PREEMPTIBLE = "job_not_preemptible"
NODE_UNSCHEDULABLE = "node_unschedulable"

# Armada's termination reasons of a pool's round (``pool_scheduling_outcome``).
COMPLETED = "completed"
RATE_LIMIT = "rate_limit"
MAX_RESOURCES = "maximum_resources_scheduled"  # maximumResourceFractionToSchedule


@dataclass
class QueueRoundStats:
    considered: int = 0
    gangs_considered: int = 0
    gangs_scheduled: int = 0
    first_gang_position: int = 0
    last_gang_position: int = 0
    seconds: float = 0.0
    evicted_jobs: int = 0
    evicted: dict[str, int] = field(default_factory=dict)

    def note_unit(self, *, position: int, size: int, scheduled: bool, seconds: float) -> None:
        if not self.gangs_considered:
            self.first_gang_position = position
        self.gangs_considered += 1
        self.considered += size
        if scheduled:
            self.gangs_scheduled += 1
            self.last_gang_position = position
        self.seconds += seconds

    def note_evicted(self, requests: Mapping[str, int]) -> None:
        self.evicted_jobs += 1
        for r, v in requests.items():
            self.evicted[r] = self.evicted.get(r, 0) + v


@dataclass(frozen=True)
class NodePreemptibility:
    node: str
    cluster: str
    preemptible: bool
    reason: str


@dataclass
class RoundStats:
    queues: dict[str, QueueRoundStats] = field(default_factory=dict)
    loops: int = 0
    nodes: list[NodePreemptibility] = field(default_factory=list)

    def queue(self, name: str) -> QueueRoundStats:
        found = self.queues.get(name)
        if found is None:
            found = self.queues[name] = QueueRoundStats()
        return found


def node_preemptibility(
    nodes: Iterable[NodeState], running: Iterable[RunningJob]
) -> list[NodePreemptibility]:
    """Whether each node could be cleared by preempting the jobs on it (see the module)."""
    on_node: dict[str, list[RunningJob]] = {}
    for job in running:
        on_node.setdefault(job.node_id, []).append(job)
    out = []
    for node in nodes:
        jobs = on_node.get(node.id, [])
        reasons = set()
        if any(not j.preemptible for j in jobs):
            reasons.add(JOB_NOT_PREEMPTIBLE)
        if node.unschedulable:
            reasons.add(NODE_UNSCHEDULABLE)
        if reasons:
            out.append(
                NodePreemptibility(node.name, node.executor, False, ",".join(sorted(reasons)))
            )
        else:
            reason = ALL_PREEMPTIBLE if jobs else NODE_EMPTY
            out.append(NodePreemptibility(node.name, node.executor, True, reason))
    return out
