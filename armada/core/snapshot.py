"""What a scheduling round works on: nodes, queues, queued and running jobs, the result and
the reasons a job is not placed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from armada.core.quantity import Resources
from armada.core.round_stats import RoundStats

REASON_NO_RESOURCES = "no node has enough free resources"
REASON_TOO_BIG = "the job requests more than any node in the pool can offer"
REASON_NO_MATCH = "no node matches the job's node selector and tolerations"
REASON_CORDONED = "queue is cordoned"
REASON_ROUND_LIMIT = "the round's job limit was reached"
REASON_NO_NODES = (
    "the pool has no schedulable node now (its executors are lost, cordoned or behind on"
    " acknowledging leases, or its nodes are cordoned)"
)

# No floating resources (shared: most jobs ask for none).
NO_FLOATING: Mapping[str, int] = MappingProxyType({})


def reason_gang_incomplete(queued: int, cardinality: int) -> str:
    return f"gang incomplete: {queued} of {cardinality} members queued"


def reason_gang_oversized(queued: int, cardinality: int) -> str:
    return f"gang has {queued} members queued but its cardinality is {cardinality}"


def reason_gang_label_not_indexed(label: str) -> str:
    return f"gang uniformity label {label!r} is not indexed by the scheduler; the gang cannot start"


def reason_gang_no_fit(gang_id: str, member: str, why: str) -> str:
    return f"gang {gang_id} cannot be placed as a whole (member {member}: {why})"


def reason_gang_no_uniform_fit(gang_id: str, label: str) -> str:
    return f"gang {gang_id}: no single value of node label {label!r} has room for every member"


def reason_urgency_preempted(job_id: str, urgency: int) -> str:
    return f"preempted to make room for job {job_id} of higher urgency {urgency}"


def reason_fair_share_preempted(queue: str, job_id: str, for_queue: str) -> str:
    return (
        f"queue {queue} is over its fair share; preempted to make room for job {job_id}"
        f" of queue {for_queue}"
    )


@dataclass(frozen=True)
class Taint:
    key: str
    value: str = ""
    effect: str = "NoSchedule"


@dataclass(frozen=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"  # Equal | Exists
    value: str = ""
    effect: str = ""  # empty tolerates every effect

    def tolerates(self, taint: Taint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if self.operator == "Exists":
            return not self.key or self.key == taint.key
        return self.key == taint.key and self.value == taint.value


@dataclass
class NodeState:
    """A node and what is already allocated on it (mutable during a round)."""

    id: str
    executor: str
    name: str
    allocatable: Resources
    allocated: Resources = field(default_factory=Resources)
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: Sequence[Taint] = ()
    unschedulable: bool = False

    @property
    def free(self) -> Resources:
        return self.allocatable - self.allocated


@dataclass(frozen=True)
class QueueState:
    name: str
    priority_factor: float = 1.0
    cordoned: bool = False
    allocated: Resources = field(default_factory=Resources)
    # Priority class -> what the queue's active jobs of the class hold in the pool, floating
    # resources included (``core.limits``); None: summed from the round's running jobs.
    by_class: Mapping[str, Mapping[str, int]] | None = None


@dataclass(frozen=True, slots=True)
class QueuedJob:
    id: str
    queue: str
    requests: Resources
    priority: int = 0
    urgency: int = 0
    node_selector: Mapping[str, str] = field(default_factory=dict)
    tolerations: Sequence[Toleration] = ()
    avoid_nodes: frozenset[str] = frozenset()
    gang_id: str = ""
    gang_cardinality: int = 1
    gang_uniformity_label: str = ""
    # For the limits (``core.limits``): the job's priority class, and what it asks of the
    # pool's floating resources (milli-units), which ``requests`` (what a node must offer)
    # does not hold.
    priority_class: str = ""
    floating: Mapping[str, int] = field(default_factory=lambda: NO_FLOATING)

    def order_key(self) -> tuple[int, int, str]:
        return (-self.urgency, self.priority, self.id)


@dataclass(frozen=True)
class Lease:
    job_id: str
    queue: str
    executor: str
    node: str
    node_id: str
    priority_class: str = ""  # the job's, for the cycle's metrics


@dataclass(frozen=True)
class RunningJob:
    """A job already on a node; its requests are already in that node's ``allocated`` (and
    in its queue's ``QueueState.allocated``)."""

    id: str
    queue: str
    node_id: str
    requests: Resources
    urgency: int = 0
    preemptible: bool = False
    gang_id: str = ""
    priority_class: str = ""
    floating: Mapping[str, int] = field(default_factory=lambda: NO_FLOATING)


@dataclass
class RoundResult:
    """What a round decided.

    ``unschedulable`` holds a reason for every queued job the round examined and did not
    lease; jobs it never reached because ``max_leases`` was reached are not in it:
    ``limit_reached`` says that some were left. ``considered`` counts the distinct queued
    jobs the round examined (gang members included)."""

    leases: list[Lease] = field(default_factory=list)
    unschedulable: dict[str, str] = field(default_factory=dict)
    preempted: dict[str, str] = field(default_factory=dict)
    # For each preempted job, the queued job the room was made for.
    preempted_for: dict[str, str] = field(default_factory=dict)
    limit_reached: bool = False
    # Jobs leased on another node type than their own (``core.away``): job id -> the option
    # used (its tolerations and the priority the job runs at there).
    away: dict[str, Any] = field(default_factory=dict)
    # Why the round stopped taking new jobs before its queues ran out, when a limit of
    # ``core.limits`` did (the job limit is ``limit_reached``).
    stopped_by: str = ""
    considered: int = 0
    # Per queue and node, for Armada's per-cycle gauges (``core.round_stats``).
    stats: RoundStats = field(default_factory=RoundStats)


def node_matches(job: QueuedJob, node: NodeState) -> bool:
    """Selector, taints and the nodes a retry asked to avoid (resources aside)."""
    if node.unschedulable or node.name in job.avoid_nodes:
        return False
    for key, value in job.node_selector.items():
        if node.labels.get(key) != value:
            return False
    for taint in node.taints:
        if taint.effect == "PreferNoSchedule":
            continue
        if not any(t.tolerates(taint) for t in job.tolerations):
            return False
    return True


def _shape(job: QueuedJob) -> tuple:
    """Jobs of one shape can use the same nodes."""
    return (
        tuple(sorted(job.requests.to_dict().items())),
        tuple(sorted(job.node_selector.items())) if job.node_selector else (),
        tuple(job.tolerations),
        job.avoid_nodes,
    )


_EPS = 1e-9


def static_fit(job: QueuedJob, nodes: Sequence[NodeState]) -> bool:
    """Whether any node could ever take ``job``: it matches the node (:func:`node_matches`)
    and the job's requests fit the node's allocatable. What is already allocated on the
    nodes, and fair share, are ignored: this is the probe for "could never schedule"."""
    return any(node_matches(job, n) and job.requests.fits_in(n.allocatable) for n in nodes)


# Reasons that say a job cannot use a pool at all, whatever happens in its round.
_STATIC_REASONS = frozenset({REASON_NO_MATCH, REASON_TOO_BIG, REASON_NO_NODES})


def is_static_reason(reason: str) -> bool:
    """Whether ``reason`` says the job cannot use the pool at all (no node matches it, none
    is big enough, none is schedulable, the pool has none of a floating resource it asks),
    rather than that it waits in the pool (room, a limit, its gang, the round's end)."""
    return reason in _STATIC_REASONS or (
        reason.startswith("floating resource ") and "the pool has none of it" in reason
    )


def merge_pool_reasons(per_pool: Sequence[Mapping[str, str]]) -> dict[str, str]:
    """One reason per job from the rounds of every pool a cycle ran (in order): a reason of
    waiting in a pool wins over one of not being able to use a pool (the last pool's, when
    several say it waits); a job that no pool can use keeps the last pool's reason, but only
    if every round reached it: one that a round never reached (its limit stopped first) has
    no reason, and so is told it was not reached."""
    waiting: dict[str, str] = {}
    static: dict[str, str] = {}
    seen: dict[str, int] = {}
    for reasons in per_pool:
        for job_id, reason in reasons.items():
            seen[job_id] = seen.get(job_id, 0) + 1
            if is_static_reason(reason):
                static[job_id] = reason
            else:
                waiting[job_id] = reason
    out = dict(waiting)
    for job_id, reason in static.items():
        if job_id not in out and seen[job_id] == len(per_pool):
            out[job_id] = reason
    return out
