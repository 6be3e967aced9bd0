"""The executor API's three operations (``executor/api/executorapi.proto``), thin over the
services: who is calling, whether the request is well formed, then one service call.

Every call is checked in this order, each refusal changing nothing:

1. the credential (``authorization: Bearer arme_...``): UNAUTHENTICATED when missing, unknown
   or revoked (``services.executor_credentials``);
2. the message: INVALID_ARGUMENT when garbled or holding a NUL (``wire.inputs``);
3. the executor id: PERMISSION_DENIED unless it is the credential's own cluster id;
4. the session (not for OpenSession): NOT_FOUND when the executor is not registered,
   FAILED_PRECONDITION when a newer session fenced this one (``services.executor_sessions``);
5. the request's own fields: INVALID_ARGUMENT naming the field (``nodes[3].allocatable.cpu``).
   In a report, a malformed event is refused on its own (its result says why) and the
   others are applied; ingress addresses are well formed only on a RUNNING event, with
   ports from 1 to 65535 and addresses of 1 to 2048 characters. A malformed utilisation
   (no run id or time, a quantity that does not parse) is refused on its own likewise, and
   so is a malformed log chunk (no run id, a container name or data too long).

A report's log chunks are stored before its events are applied (``services.run_logs``, in a
transaction of their own that locks only the runs' log rows), so that a run's final log, on
its last event, comes after its last chunk.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from google.protobuf.message import Message

from armada.core.quantity import parse_quantity
from armada.core.reports import RunReport, RunUtilisation
from armada.core.runlog import LogPiece
from armada.executor.api import executorapi_pb2 as pb
from armada.executor.api.messages import (
    STATE_OF_PHASE,
    log_piece,
    run_report,
    run_utilisation,
    timestamp,
)
from armada.services.errors import FieldError, PermissionDenied, ValidationFailed
from armada.services.executor_credentials import (
    CredentialRefused,
    ExecutorIdentity,
    executor_credential_authenticate,
)
from armada.services.executor_nodes import ReportedNode
from armada.services.executor_rounds import executor_round
from armada.services.executor_sessions import (
    check_executor_id,
    check_pool,
    executor_session_check,
    executor_session_open,
)
from armada.services.kept_pods import kept_pods_deleted
from armada.services.report_outcomes import ReportOutcome
from armada.services.run_logs import run_logs_append
from armada.services.run_reports import Outcome, runs_apply_report_batch
from armada.services.run_utilisation import runs_record_utilisation
from armada.wire.errors import Unauthenticated
from armada.wire.grpc_auth import authorization

#: Leases per stream message.
LEASES_PER_MESSAGE = 500
MAX_NODES = 100_000
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
MAX_INGRESS_ADDRESSES = 1000
MAX_INGRESS_ADDRESS_LENGTH = 2048
#: A log chunk's largest data (the executor sends 64 KiB at most) and container name.
MAX_LOG_CHUNK_BYTES = 1024 * 1024
MAX_CONTAINER_NAME = 253
NO_CREDENTIAL = (
    "no executor credential: send the metadata 'authorization: Bearer <credential>' "
    "(armadactl create executor-credential <cluster id> makes one)"
)
_OUTCOMES = {Outcome.APPLIED: pb.APPLIED, Outcome.DUPLICATE: pb.DUPLICATE}


@dataclass(frozen=True)
class ExecutorCall:
    """Who is calling (an executor's credential) and when the call arrived."""

    identity: ExecutorIdentity
    now: datetime
    peer: str = ""


def authenticate_executor(metadata: Any, now: datetime) -> ExecutorIdentity:
    header = authorization(metadata)
    if header is None or not header.strip():
        raise Unauthenticated(NO_CREDENTIAL)
    scheme, _, key = header.strip().partition(" ")
    if scheme.lower() not in ("bearer", "token") or not key.strip():
        raise Unauthenticated(NO_CREDENTIAL)
    try:
        return executor_credential_authenticate(key=key.strip(), now=now)
    except CredentialRefused as exc:
        raise Unauthenticated(f"executor credential refused: {exc}") from None


def _own(call: ExecutorCall, executor_id: str) -> None:
    if executor_id != call.identity.cluster_id:
        raise PermissionDenied(
            f"this credential is for executor {call.identity.cluster_id}; it may not act for "
            f"{executor_id!r}"
        )


# --- OpenSession ---------------------------------------------------------------------------


def open_session(call: ExecutorCall, request: pb.OpenSessionRequest) -> pb.OpenSessionResponse:
    check_executor_id(request.executor_id)
    _own(call, request.executor_id)
    executor = executor_session_open(
        executor_id=request.executor_id,
        pool=request.pool,
        backend=request.backend,
        tracked_node_labels=list(request.tracked_node_labels),
        instance=request.instance,
        now=call.now,
    )
    return pb.OpenSessionResponse(
        session=executor.session, executor_timeout_seconds=settings.ARMADA.executor_timeout
    )


# --- LeaseJobRuns --------------------------------------------------------------------------


def reported_nodes(nodes: Any) -> list[ReportedNode]:
    """The round's nodes, checked; every problem names its field."""
    problems: list[FieldError] = []
    if len(nodes) > MAX_NODES:
        raise ValidationFailed.one("nodes", f"at most {MAX_NODES} nodes in one round")
    out: list[ReportedNode] = []
    seen: set[str] = set()
    for i, node in enumerate(nodes):
        where = f"nodes[{i}]"
        if not node.name or len(node.name) > 253:
            problems.append(FieldError(f"{where}.name", "must be 1 to 253 characters"))
        elif node.name in seen:
            problems.append(FieldError(f"{where}.name", f"duplicate node name {node.name!r}"))
        seen.add(node.name)
        allocatable = _quantities(node.allocatable, f"{where}.allocatable", problems)
        others = _quantities(node.non_armada_allocated, f"{where}.nonArmadaAllocated", problems)
        for j, taint in enumerate(node.taints):
            if taint.effect not in TAINT_EFFECTS:
                problems.append(
                    FieldError(
                        f"{where}.taints[{j}].effect",
                        f"{taint.effect!r} is not one of {', '.join(TAINT_EFFECTS)}",
                    )
                )
        out.append(
            ReportedNode(
                name=node.name,
                labels=dict(sorted(node.labels.items())),
                taints=[{"key": t.key, "value": t.value, "effect": t.effect} for t in node.taints],
                allocatable=allocatable,
                unschedulable=node.unschedulable,
                non_armada_allocated=others,
            )
        )
    if problems:
        raise ValidationFailed(problems)
    return out


def _quantities(values: Any, where: str, problems: list[FieldError]) -> dict[str, int]:
    """Resources by name (sorted: a protobuf map keeps no order), in milli-units."""
    out = {}
    for name, text in sorted(values.items()):
        try:
            out[name] = parse_quantity(text)
        except ValueError as exc:
            problems.append(FieldError(f"{where}.{name}", str(exc)))
    return out


def nodes_digest(request: pb.LeaseRequest) -> str:
    digest = hashlib.sha256()
    for node in request.nodes:
        digest.update(node.SerializeToString(deterministic=True))
    return digest.hexdigest()


def lease_job_runs(call: ExecutorCall, request: pb.LeaseRequest) -> list[pb.LeaseStreamMessage]:
    """The round's whole answer, as the stream's messages (leases in chunks, then cancels,
    preempts, stops, and the end marker)."""
    _own(call, request.executor_id)
    executor = executor_session_check(executor_id=request.executor_id, session=request.session)
    check_pool(request.pool)
    digest = nodes_digest(request)
    # Nodes are checked and stored when they changed; an unchanged list was checked before.
    changed = digest != executor.nodes_digest or request.pool != executor.pool
    answer = executor_round(
        executor=executor,
        pool=request.pool,
        nodes=reported_nodes(request.nodes) if changed else None,
        nodes_digest=digest,
        held=request.run_ids,
        now=call.now,
    )
    out = []
    for start in range(0, len(answer.leases), LEASES_PER_MESSAGE):
        chunk = answer.leases[start : start + LEASES_PER_MESSAGE]
        out.append(pb.LeaseStreamMessage(leases=pb.JobRunLeases(leases=map(job_run_lease, chunk))))
    for field, ids in (
        ("cancel_runs", answer.cancel),
        ("preempt_runs", answer.preempt),
        ("stop_runs", answer.stop),
    ):
        if ids:
            out.append(pb.LeaseStreamMessage(**{field: pb.RunIds(run_ids=ids)}))
    out.append(pb.LeaseStreamMessage(end=pb.EndMarker()))
    return out


def job_run_lease(row: dict[str, Any]) -> pb.JobRunLease:
    return pb.JobRunLease(
        run_id=row["id"],
        job_id=row["job_id"],
        queue=row["job__queue_id"],
        job_set=row["job__job_set"],
        owner=row["job__owner"],
        node=row["node"],
        pod_name=row["pod_name"],
        namespace=row["job__namespace"],
        annotations=row["job__annotations"] or {},
        pod_spec_json=row["pod_spec_json"],
        mutations_json=row["mutations_json"] or "{}",
        priority=row["job__priority"],
        priority_class=row["job__priority_class"],
        leased_at=timestamp(row["leased_at"]),
        services_json=row.get("services_json") or "[]",
        ingress_json=row.get("ingress_json") or "[]",
    )


# --- ReportEvents --------------------------------------------------------------------------


def _event_problem(i: int, event: pb.RunEvent) -> str:
    if not event.run_id:
        return f"events[{i}].runId: missing"
    if event.phase not in STATE_OF_PHASE:
        return f"events[{i}].phase: missing or unknown ({event.phase})"
    if not event.HasField("at"):
        return f"events[{i}].at: missing (when the pod reached the phase)"
    if event.ingress_addresses:
        return _ingress_problem(i, event)
    return ""


def _ingress_problem(i: int, event: pb.RunEvent) -> str:
    where = f"events[{i}].ingressAddresses"
    if event.phase != pb.RUNNING:
        return f"{where}: only a RUNNING event carries ingress addresses"
    if len(event.ingress_addresses) > MAX_INGRESS_ADDRESSES:
        return f"{where}: at most {MAX_INGRESS_ADDRESSES} addresses"
    for port, address in sorted(event.ingress_addresses.items()):
        if not 1 <= port <= 65535:
            return f"{where}[{port}]: not a port (1 to 65535)"
        if not address.strip() or len(address) > MAX_INGRESS_ADDRESS_LENGTH:
            return f"{where}[{port}]: must be 1 to {MAX_INGRESS_ADDRESS_LENGTH} characters"
    return ""


def report_events(call: ExecutorCall, request: pb.ReportRequest) -> pb.ReportResponse:
    _own(call, request.executor_id)
    executor_session_check(executor_id=request.executor_id, session=request.session)
    executor_id = request.executor_id
    chunk_results = _each_checked(
        request.log_chunks,
        _log_piece,
        lambda pieces: run_logs_append(executor_id=executor_id, pieces=pieces, now=call.now),
    )
    results = _each_checked(
        request.events,
        _run_report,
        lambda reports: runs_apply_report_batch(
            executor_id=executor_id, reports=reports, now=call.now
        ),
    )
    utilisation_results = _each_checked(
        request.utilisation,
        _run_utilisation,
        lambda reports: runs_record_utilisation(
            executor_id=executor_id,
            reports=reports,
            period_seconds=request.utilisation_period_seconds,
        ),
    )
    if request.kept_pods_deleted or request.kept_pods_expired:
        kept_pods_deleted(
            executor_id=executor_id,
            pod_names=list(request.kept_pods_deleted),
            expired=min(request.kept_pods_expired, len(request.kept_pods_deleted)),
            now=call.now,
        )
    return pb.ReportResponse(
        results=results,
        utilisation_results=utilisation_results,
        log_chunk_results=chunk_results,
    )


def _each_checked(
    messages: Sequence[Any],
    read: Callable[[int, Any], Any],
    apply: Callable[[list[Any]], list[ReportOutcome]],
) -> list[pb.EventResult]:
    """One result per message, in order: a message ``read`` refuses (``ValueError`` saying
    the problem, its field named) is REFUSED on its own; the others are read and applied
    together, and their outcomes fill their places. No message, no call."""
    results: list[pb.EventResult | None] = []
    valid, places = [], []
    for i, message in enumerate(messages):
        try:
            valid.append(read(i, message))
        except ValueError as problem:
            results.append(
                pb.EventResult(run_id=message.run_id, outcome=pb.REFUSED, reason=str(problem))
            )
            continue
        results.append(None)
        places.append(i)
    outcomes = apply(valid) if valid else []
    for i, outcome in zip(places, outcomes, strict=True):
        results[i] = pb.EventResult(
            run_id=messages[i].run_id,
            outcome=_OUTCOMES.get(outcome.outcome, pb.REFUSED),
            reason=outcome.reason,
        )
    return results


def _run_report(i: int, event: pb.RunEvent) -> RunReport:
    problem = _event_problem(i, event)
    if problem:
        raise ValueError(problem)
    return run_report(event)


def _run_utilisation(i: int, message: pb.RunUtilisation) -> RunUtilisation:
    where = f"utilisation[{i}]"
    if not message.run_id:
        raise ValueError(f"{where}.runId: missing")
    if not message.HasField("at"):
        raise ValueError(f"{where}.at: missing (when the period ended)")
    try:
        return run_utilisation(message)
    except ValueError as exc:
        raise ValueError(f"{where}.{exc}") from None


def _log_piece(i: int, chunk: pb.LogChunk) -> LogPiece:
    where = f"logChunks[{i}]"
    if not chunk.run_id:
        raise ValueError(f"{where}.runId: missing")
    if len(chunk.container) > MAX_CONTAINER_NAME:
        raise ValueError(f"{where}.container: at most {MAX_CONTAINER_NAME} characters")
    if len(chunk.data) > MAX_LOG_CHUNK_BYTES:
        raise ValueError(f"{where}.data: at most {MAX_LOG_CHUNK_BYTES} bytes a chunk")
    return log_piece(chunk)


@dataclass(frozen=True)
class Operation:
    name: str
    request_class: type[Message]
    func: Callable[[ExecutorCall, Any], Any]
    streaming: bool = False

    def responses(self, call: ExecutorCall, request: Message) -> Iterator[Message]:
        result = self.func(call, request)
        return iter(result) if self.streaming else iter([result])


OPERATIONS = {
    op.name: op
    for op in (
        Operation("OpenSession", pb.OpenSessionRequest, open_session),
        Operation("LeaseJobRuns", pb.LeaseRequest, lease_job_runs, streaming=True),
        Operation("ReportEvents", pb.ReportRequest, report_events),
    )
}
SERVICE = "executorapi.ExecutorApi"
