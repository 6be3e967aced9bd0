"""Applying a Retry rule's mutation to a job, and the static-fit probe that follows.

- ``resources.memory``: the job's pod spec grows (``core.retry.grow_memory``), requests and
  limits together, compounding across retries; the job keeps one bump kind, and a bump of
  the other kind is skipped with a warning. The next run's pod is created from the grown spec.
- ``affinity.avoidSameNode``: the job avoids every node a previous run of it was on, named by
  the value of ``scheduling.nodeIdLabel`` on those nodes. Where an executor does not track
  that label the avoidance cannot be expressed: it is skipped, with a warning once per executor.
- Then the probe: can any node of the fleet ever take the mutated job (selector, taints,
  avoided nodes, allocatable; occupancy, fair share and whether its executor is up right now
  ignored)? If none can, the retry is refused.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from django.conf import settings

from armada.core.policy import Mutation
from armada.core.retry import grow_memory
from armada.core.scheduling import static_fit
from armada.core.submission import pod_requests
from armada.models import Job, Node, Run
from armada.services.snapshot import node_state, queued_job

log = logging.getLogger(__name__)
_warned_untracked: set[str] = set()


@dataclass
class MutationContext:
    """Per decision batch: the fleet's nodes, loaded once when first needed."""

    _nodes: list[Node] | None = None
    _states: list | None = None

    def nodes(self) -> list[Node]:
        """Every registered node: the fleet, whether or not its executor answers right now."""
        if self._nodes is None:
            self._nodes = list(Node.objects.all())
        return self._nodes

    def node_states(self) -> list:
        """The same nodes as the core's ``NodeState`` objects (for the static-fit probe)."""
        if self._states is None:
            self._states = [node_state(n) for n in self.nodes()]
        return self._states


@dataclass
class MutationOutcome:
    schedulable: bool = True
    reason: str = ""
    trail: dict = field(default_factory=dict)


def node_id(node: Node) -> str | None:
    return node.labels.get(settings.ARMADA.scheduling.node_id_label)


def avoided_node_names(nodes: list[Node], avoid: set[str]) -> frozenset[str]:
    """The names of the nodes whose id label is one of ``avoid``."""
    if not avoid:
        return frozenset()
    return frozenset(n.name for n in nodes if node_id(n) in avoid)


def apply_mutation(
    *, job: Job, run: Run, mutation: Mutation | None, context: MutationContext
) -> MutationOutcome:
    """Apply ``mutation`` to ``job`` (in memory; the caller saves it). A job left unchanged
    needs no probe: it was schedulable before and still is."""
    outcome = MutationOutcome()
    if mutation is None:
        return outcome
    mutations = dict(job.mutations or {})
    if mutation.memory is not None:
        spec, change, warning = grow_memory(
            job.pod_spec, mutation.memory, mutations.get("memoryKind", "")
        )
        if warning:
            log.warning(
                "job %s: %s",
                job.id,
                warning,
                extra={"queue": job.queue_id, "job_id": job.id, "run_id": run.id},
            )
            outcome.trail["memorySkipped"] = warning
        if change is not None:
            job.pod_spec = spec
            job.requests = pod_requests(spec).to_dict()
            mutations["memoryKind"] = change.kind
            outcome.trail["memory"] = {
                "kind": change.kind,
                "before": change.before,
                "after": change.after,
            }
    if mutation.avoid_same_node:
        avoid = set(mutations.get("avoidNodes", []))
        for previous in job.runs.exclude(node=""):
            node = next(
                (
                    n
                    for n in context.nodes()
                    if n.executor_id == previous.executor and n.name == previous.node
                ),
                None,
            )
            value = node_id(node) if node is not None else None
            if value is None:
                if previous.executor not in _warned_untracked:
                    _warned_untracked.add(previous.executor)
                    log.warning(
                        "executor %s does not track the node id label %s: avoidSameNode has no effect on its nodes",
                        previous.executor,
                        settings.ARMADA.scheduling.node_id_label,
                    )
                continue
            avoid.add(value)
        mutations["avoidNodes"] = sorted(avoid)
        outcome.trail["avoidNodes"] = sorted(avoid)
    job.mutations = mutations
    nodes = context.nodes()
    probe = queued_job(
        job, avoid_nodes=avoided_node_names(nodes, set(mutations.get("avoidNodes", [])))
    )
    states = context.node_states()
    if not static_fit(probe, states):
        outcome.schedulable = False
        outcome.reason = "no node could ever take it" + (
            " with the nodes it avoids" if probe.avoid_nodes else ""
        )
    return outcome
