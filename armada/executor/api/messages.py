"""The executor API's messages and the executor's own objects, each way.

Both sides use these: the executor turns its nodes and reports into messages, the server
turns them back (``wire.executor_ops``). Nothing here imports Django: the executor installs
without it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from google.protobuf.timestamp_pb2 import Timestamp

from armada.core.config import Executor as ExecutorConfig
from armada.core.config_kubernetes import HOSTNAME_LABEL
from armada.core.quantity import format_quantity, parse_quantity
from armada.core.reports import ContainerEnd, RunReport, RunUtilisation
from armada.core.runlog import LogPiece
from armada.core.states import RunState
from armada.executor.api import executorapi_pb2 as pb
from armada.executor.backends.base import ClusterNode

PHASE_OF_STATE = {
    RunState.PENDING: pb.PENDING,
    RunState.RUNNING: pb.RUNNING,
    RunState.SUCCEEDED: pb.SUCCEEDED,
    RunState.FAILED: pb.FAILED,
    RunState.CANCELLED: pb.CANCELLED,
    RunState.PREEMPTED: pb.PREEMPTED,
    RunState.LEASE_RETURNED: pb.LEASE_RETURNED,
}
STATE_OF_PHASE = {phase: state for state, phase in PHASE_OF_STATE.items()}


@dataclass(frozen=True)
class Lease:
    """A run the server leased to this executor: everything needed to start its pod."""

    run_id: str
    job_id: str
    node: str
    pod_name: str
    namespace: str
    pod_spec: dict[str, Any]
    annotations: dict[str, str]
    queue: str = ""
    job_set: str = ""
    owner: str = ""
    mutations: dict[str, Any] = field(default_factory=dict)
    # The job's Services and Ingresses, in the job file's shape (``core.job_network``).
    services: list[dict[str, Any]] = field(default_factory=list)
    ingress: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class LeaseAnswer:
    """The server's answer to one round (``LeaseJobRuns``), read to its end marker."""

    leases: list[Lease] = field(default_factory=list)
    cancel: set[str] = field(default_factory=set)
    preempt: set[str] = field(default_factory=set)
    stop: set[str] = field(default_factory=set)


# --- times ---------------------------------------------------------------------------------


def timestamp(at: datetime | None) -> Timestamp | None:
    if at is None:
        return None
    out = Timestamp()
    out.FromDatetime(at.astimezone(UTC))
    return out


def datetime_of(ts: Timestamp, present: bool = True) -> datetime | None:
    """A timezone-aware datetime, or None for a field that was not set."""
    if not present:
        return None
    return ts.ToDatetime(tzinfo=UTC)


# --- nodes ---------------------------------------------------------------------------------


def config_nodes(config: ExecutorConfig) -> list[pb.NodeInfo]:
    """The nodes of a configured (fake or local) cluster, as a round reports them. Each node
    carries ``kubernetes.io/hostname`` (its name) besides its configured labels, but only the
    labels in ``trackedNodeLabels`` are sent: the others stay invisible to the scheduler."""
    tracked = set(config.tracked_node_labels)
    out = []
    for group in config.nodes:
        allocatable = {k: format_quantity(v, k) for k, v in group.allocatable.items()}
        taints = [pb.Taint(key=t.key, value=t.value, effect=t.effect) for t in group.taints]
        for name in group.node_names():
            labels = {HOSTNAME_LABEL: name, **group.labels}
            out.append(
                pb.NodeInfo(
                    name=name,
                    labels={k: v for k, v in labels.items() if k in tracked},
                    taints=taints,
                    allocatable=allocatable,
                )
            )
    return out


def cluster_nodes_info(nodes: Iterable[ClusterNode], tracked: Iterable[str]) -> list[pb.NodeInfo]:
    """The nodes a backend read from its cluster, as a round reports them: only the tracked
    labels are sent (``kubernetes.io/hostname`` too when tracked)."""
    keep = set(tracked)
    return [
        pb.NodeInfo(
            name=node.name,
            labels={k: v for k, v in node.labels.items() if k in keep},
            taints=[pb.Taint(key=k, value=v, effect=e) for k, v, e in node.taints],
            allocatable=node.allocatable,
            unschedulable=node.unschedulable,
            non_armada_allocated=node.non_armada_allocated,
        )
        for node in nodes
    ]


# --- leases --------------------------------------------------------------------------------


def lease_of(message: pb.JobRunLease) -> Lease:
    return Lease(
        run_id=message.run_id,
        job_id=message.job_id,
        node=message.node,
        pod_name=message.pod_name,
        namespace=message.namespace or "default",
        pod_spec=json.loads(message.pod_spec_json or "{}"),
        annotations=dict(message.annotations),
        queue=message.queue,
        job_set=message.job_set,
        owner=message.owner,
        mutations=_object(message.mutations_json),
        services=_array(message.services_json),
        ingress=_array(message.ingress_json),
    )


def _object(text: str) -> dict[str, Any]:
    """A JSON object sent as text; most jobs have no mutations, so "{}" is not parsed."""
    return json.loads(text) if text and text != "{}" else {}


def _array(text: str) -> list[dict[str, Any]]:
    """A JSON array of objects sent as text; most jobs have none, so "[]" is not parsed."""
    if not text or text == "[]":
        return []
    items = json.loads(text)
    return [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []


def lease_answer(messages: Iterable[pb.LeaseStreamMessage]) -> LeaseAnswer | None:
    """The answer of a round's messages; None when the stream ended before its end marker
    (the answer is incomplete: the executor acts on none of it and asks again)."""
    answer = LeaseAnswer()
    for message in messages:
        kind = message.WhichOneof("event")
        if kind == "leases":
            answer.leases.extend(lease_of(m) for m in message.leases.leases)
        elif kind == "cancel_runs":
            answer.cancel.update(message.cancel_runs.run_ids)
        elif kind == "preempt_runs":
            answer.preempt.update(message.preempt_runs.run_ids)
        elif kind == "stop_runs":
            answer.stop.update(message.stop_runs.run_ids)
        elif kind == "end":
            return answer
    return None


# --- reports -------------------------------------------------------------------------------


def run_event(report: RunReport) -> pb.RunEvent:
    message = pb.RunEvent(
        run_id=report.run_id,
        phase=PHASE_OF_STATE[report.state],
        at=timestamp(report.at),
        exit_codes=report.exit_codes,
        reason=report.reason,
        message=report.message,
        failure_category=report.failure_category,
        failure_subcategory=report.failure_subcategory,
        hint=report.hint,
        kubernetes_id=report.kubernetes_id,
        containers=[_container_end(c) for c in report.containers],
        conditions=report.conditions,
    )
    if report.exit_code is not None:
        message.exit_code = report.exit_code
    if report.log is not None:
        message.log = report.log
    if report.pod_kept_until is not None:
        message.pod_kept_until.CopyFrom(timestamp(report.pod_kept_until))
    if report.ingress_addresses:
        message.ingress_addresses.update(report.ingress_addresses)
    return message


def run_report(message: pb.RunEvent) -> RunReport:
    """The report of an event the server received (its phase checked already)."""
    return RunReport(
        run_id=message.run_id,
        state=STATE_OF_PHASE[message.phase],
        at=datetime_of(message.at),
        exit_code=message.exit_code if message.HasField("exit_code") else None,
        exit_codes=dict(message.exit_codes),
        reason=message.reason,
        message=message.message,
        failure_category=message.failure_category,
        failure_subcategory=message.failure_subcategory,
        hint=message.hint,
        log=message.log if message.HasField("log") else None,
        pod_kept_until=datetime_of(message.pod_kept_until, message.HasField("pod_kept_until")),
        # A map cannot say "none" apart from "empty": no address is no ingress info.
        ingress_addresses=dict(sorted(message.ingress_addresses.items())) or None,
        kubernetes_id=message.kubernetes_id,
        containers=tuple(
            ContainerEnd(
                c.name,
                c.exit_code if c.HasField("exit_code") else None,
                c.reason,
                c.message,
            )
            for c in message.containers
        ),
        conditions=tuple(message.conditions),
    )


def _container_end(container: ContainerEnd) -> pb.ContainerEnd:
    out = pb.ContainerEnd(name=container.name, reason=container.reason, message=container.message)
    if container.exit_code is not None:
        out.exit_code = container.exit_code
    return out


# --- utilisation ---------------------------------------------------------------------------


def _texts(values: dict[str, int]) -> dict[str, str]:
    return {name: format_quantity(value, name) for name, value in sorted(values.items())}


def run_utilisation_message(usage: RunUtilisation) -> pb.RunUtilisation:
    return pb.RunUtilisation(
        run_id=usage.run_id,
        at=timestamp(usage.at),
        kubernetes_id=usage.kubernetes_id,
        max_resources_for_period=_texts(usage.max_usage),
        avg_resources_for_period=_texts(usage.avg_usage),
        total_cumulative_usage=_texts(usage.cumulative),
    )


def run_utilisation(message: pb.RunUtilisation) -> RunUtilisation:
    """The utilisation the server received; raises ValueError naming the bad quantity."""
    maps = {}
    for field_name in (
        "max_resources_for_period",
        "avg_resources_for_period",
        "total_cumulative_usage",
    ):
        values = {}
        for name, text in sorted(getattr(message, field_name).items()):
            try:
                values[name] = parse_quantity(text)
            except ValueError as exc:
                raise ValueError(f"{field_name}.{name}: {exc}") from None
        maps[field_name] = values
    return RunUtilisation(
        run_id=message.run_id,
        at=datetime_of(message.at),
        kubernetes_id=message.kubernetes_id,
        max_usage=maps["max_resources_for_period"],
        avg_usage=maps["avg_resources_for_period"],
        cumulative=maps["total_cumulative_usage"],
    )


def log_chunk_message(piece: LogPiece) -> pb.LogChunk:
    return pb.LogChunk(
        run_id=piece.run_id, container=piece.container, offset=piece.offset, data=piece.data
    )


def log_piece(message: pb.LogChunk) -> LogPiece:
    """The piece of a log chunk the server received (checked already)."""
    return LogPiece(message.run_id, message.container, message.offset, bytes(message.data))
