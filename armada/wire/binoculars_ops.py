"""Armada's Binoculars: ``Logs``, a job's pod log from the log we keep of each run, and
``Cordon``, which cordons the node at the control plane (see :func:`cordon`).

Armada's Binoculars reads the pod ``armada-<jobId>-<podNumber>`` from its cluster; we answer
from the run logs the executors send (``RunLog``, what Lookout's log viewer shows), so a log
stays readable after its pod is gone. Order of checks, each answering with nothing read past
it:

1. the request: ``jobId`` given, ``podNumber`` not negative, ``sinceTime`` an RFC 3339 time,
   and in ``logOptions``: ``tailLines`` not negative, ``limitBytes`` and ``sinceSeconds`` at
   least 1, not both ``sinceSeconds`` and ``sinceTime`` (INVALID_ARGUMENT naming the field);
2. the job exists (NOT_FOUND) and the caller may ``watch`` its queue (PERMISSION_DENIED):
   the same check as Lookout's log view (``services.jobs.job_get``);
3. the pod asked for is the job's: ``podNumber`` 0 (a job has one pod) and ``podNamespace``
   empty (Armada's ``default``) or the job's namespace (NOT_FOUND otherwise, as Armada
   answers for a pod it cannot find); ``logOptions.container``, when given, one of the pod
   spec's containers (INVALID_ARGUMENT);
4. the run: the job's latest (``logOptions.previous``: the one before it); a job that has
   not run yet is NOT_FOUND.

The answer is one ``LogLine`` per line of the run's log, in order (the trailing newline makes
no empty line). A run's log is kept as text without per-line times, so every line carries
the time the executor last sent it (RFC 3339 with nanoseconds, UTC, as Kubernetes writes log
times): no line is newer than that. ``sinceTime``, ``logOptions.sinceTime`` and
``logOptions.sinceSeconds`` keep the lines not older than the time they give (so all of
them or none); then ``tailLines`` keeps the last lines, and at most ``limitBytes`` (never
more than Armada's 2,000,000) of whole lines are sent, each counted as Kubernetes counts
``<timestamp> <line>\\n``. ``follow`` is ignored, as Armada ignores it; ``timestamps`` too
(Armada always asks for them).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from armada_client.armada import binoculars_pb2
from google.protobuf import empty_pb2

from armada.core.errors import FieldError
from armada.models import Job, Run, RunLog
from armada.services.errors import NotFound, ValidationFailed
from armada.services.jobs import job_get
from armada.services.node_cordon import nodes_set_cordoned
from armada.wire.registry import Call, unary

SERVICE = "binoculars.Binoculars"
#: Armada's ceiling on the bytes of one answer (its ``MaxLogBytes``).
MAX_LOG_BYTES = 2_000_000
DEFAULT_NAMESPACE = "default"


@dataclass(frozen=True)
class LogQuery:
    """What a LogRequest asks for, checked."""

    job_id: str
    pod_number: int
    namespace: str
    since: datetime | None
    tail_lines: int | None
    limit_bytes: int
    container: str
    previous: bool


def parse_rfc3339(text: str, field: str) -> datetime:
    """An RFC 3339 time (``2024-05-01T10:00:00.123456789Z``) as an aware datetime; digits
    past microseconds are dropped. ValidationFailed naming ``field`` otherwise."""
    stripped = text.strip().upper()  # RFC 3339 allows "t" and "z"
    problem = f"must be an RFC 3339 time such as 2024-05-01T10:00:00Z, not {text[:60]!r}"
    if "T" not in stripped:
        raise ValidationFailed.one(field, problem)
    head, dot, rest = stripped.partition(".")
    if dot:  # Python reads at most six digits of a fraction
        digits = len(rest) - len(rest.lstrip("0123456789"))
        stripped = f"{head}.{rest[: min(digits, 6)]}{rest[digits:]}"
    try:
        parsed = datetime.fromisoformat(stripped)
    except ValueError:
        raise ValidationFailed.one(field, problem) from None
    if parsed.tzinfo is None:
        raise ValidationFailed.one(field, f"{problem} (it needs a zone: Z or +hh:mm)")
    return parsed


def rfc3339_nano(at: datetime) -> str:
    """``at`` as Kubernetes writes log times: UTC, ``Z``, the fraction without trailing
    zeros (Go's RFC3339Nano)."""
    utc = at.astimezone(UTC)
    fraction = f"{utc.microsecond:06d}000".rstrip("0")
    return utc.strftime("%Y-%m-%dT%H:%M:%S") + (f".{fraction}" if fraction else "") + "Z"


def _since(request: binoculars_pb2.LogRequest, now: datetime) -> datetime | None:
    options = request.log_options
    candidates = []
    if request.since_time.strip():
        candidates.append(parse_rfc3339(request.since_time, "sinceTime"))
    has_time = options.HasField("sinceTime")
    if has_time and options.HasField("sinceSeconds"):
        raise ValidationFailed.one(
            "logOptions.sinceSeconds", "give at most one of sinceSeconds and sinceTime"
        )
    if has_time:
        stamp = options.sinceTime
        try:
            candidates.append(
                datetime.fromtimestamp(stamp.seconds, UTC)
                + timedelta(microseconds=stamp.nanos // 1000)
            )
        except (OverflowError, OSError, ValueError):
            raise ValidationFailed.one("logOptions.sinceTime", "is out of range") from None
    if options.HasField("sinceSeconds"):
        if options.sinceSeconds < 1:
            raise ValidationFailed.one("logOptions.sinceSeconds", "must be at least 1")
        candidates.append(now - timedelta(seconds=min(options.sinceSeconds, 10**10)))
    return max(candidates) if candidates else None


def log_query(request: binoculars_pb2.LogRequest, now: datetime) -> LogQuery:
    """Step 1 of the module's order: the request's fields, checked; every problem named."""
    problems: list[FieldError] = []
    if not request.job_id.strip():
        problems.append(FieldError("jobId", "is required"))
    if request.pod_number < 0:
        problems.append(FieldError("podNumber", "must not be negative"))
    options = request.log_options
    tail = options.tailLines if options.HasField("tailLines") else None
    if tail is not None and tail < 0:
        problems.append(FieldError("logOptions.tailLines", "must not be negative"))
    limit = MAX_LOG_BYTES
    if options.HasField("limitBytes"):
        if options.limitBytes < 1:
            problems.append(FieldError("logOptions.limitBytes", "must be at least 1"))
        limit = min(max(options.limitBytes, 1), MAX_LOG_BYTES)
    if problems:
        raise ValidationFailed(problems)
    return LogQuery(
        job_id=request.job_id.strip(),
        pod_number=request.pod_number,
        namespace=request.pod_namespace.strip(),
        since=_since(request, now),
        tail_lines=tail,
        limit_bytes=limit,
        container=options.container.strip() if options.HasField("container") else "",
        previous=options.previous,
    )


def _containers(job: Job) -> list[str]:
    spec = job.pod_spec if isinstance(job.pod_spec, dict) else {}
    found = [c.get("name", "") for c in spec.get("containers") or [] if isinstance(c, dict)]
    return [name for name in found if name]


def _check_pod(job: Job, query: LogQuery) -> None:
    """Step 3: the pod and container asked for are the job's."""
    if query.pod_number != 0:
        raise NotFound(
            f"job {job.id} has no pod number {query.pod_number}: its only pod is number 0"
        )
    namespace = job.namespace or DEFAULT_NAMESPACE
    asked = query.namespace or DEFAULT_NAMESPACE
    if asked != namespace:
        raise NotFound(
            f"job {job.id} has no pod in namespace {asked!r}: "
            f"its pod is in namespace {namespace!r} (podNamespace)"
        )
    containers = _containers(job)
    if query.container and query.container not in containers:
        raise ValidationFailed.one(
            "logOptions.container",
            f"job {job.id}'s pod has no container {query.container!r}; "
            f"its containers: {', '.join(containers) or '(none)'}",
        )


def _run(job: Job, previous: bool) -> Run:
    """Step 4: the run whose log is read, newest first as Lookout orders them."""
    runs = sorted(
        job.runs.all(),
        key=lambda r: (r.leased_at or datetime.min.replace(tzinfo=UTC), r.id),
        reverse=True,
    )
    if not runs:
        raise NotFound(f"job {job.id} has not run yet: its pod has no log")
    if previous:
        if len(runs) < 2:
            raise NotFound(f"job {job.id} has no run before its latest one (logOptions.previous)")
        return runs[1]
    return runs[0]


def log_lines(text: str, stamp: str, query: LogQuery) -> list[binoculars_pb2.LogLine]:
    """The lines of a log as Armada's LogLines, after ``tailLines`` and ``limitBytes``."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if query.tail_lines is not None:
        lines = lines[len(lines) - query.tail_lines :] if query.tail_lines else []
    kept: list[binoculars_pb2.LogLine] = []
    budget = query.limit_bytes
    overhead = len(stamp) + 2  # "<stamp> " and the newline
    for line in lines:
        size = overhead + len(line.encode("utf-8"))
        if size > budget:
            break
        budget -= size
        kept.append(binoculars_pb2.LogLine(timestamp=stamp, line=line))
    return kept


def job_log(*, actor: Any, request: binoculars_pb2.LogRequest, now: datetime) -> list[Any]:
    """The LogLines a LogRequest asks for (see the module for the order of checks)."""
    query = log_query(request, now)
    job = job_get(actor=actor, job_id=query.job_id)
    _check_pod(job, query)
    run = _run(job, query.previous)
    entry = RunLog.objects.filter(run_id=run.id).first()
    if entry is None or not entry.text:
        return []
    if query.since is not None and entry.updated_at < query.since:
        return []
    return log_lines(entry.text, rfc3339_nano(entry.updated_at), query)


@unary(f"{SERVICE}/Logs")
def logs(call: Call, request: binoculars_pb2.LogRequest) -> binoculars_pb2.LogResponse:
    return binoculars_pb2.LogResponse(log=job_log(actor=call.actor, request=request, now=call.now))


@unary(f"{SERVICE}/Cordon")
def cordon(call: Call, request: binoculars_pb2.CordonRequest) -> empty_pb2.Empty:
    """Armada's Binoculars cordons the node in its Kubernetes cluster; here the node is
    cordoned at the control plane (``services.node_cordon``): no new leases on it until it
    is uncordoned (``POST /api/v1/executors/{id}/nodes/{node}/uncordon``). Binoculars names
    no cluster, so every executor's node of that name is cordoned. ``nodeName`` is required
    (INVALID_ARGUMENT); the caller needs ``update_executor_settings`` (PERMISSION_DENIED);
    an unknown node is NOT_FOUND."""
    name = request.node_name.strip()
    if not name:
        raise ValidationFailed.one("nodeName", "is required")
    nodes_set_cordoned(actor=call.actor, node=name, cordoned=True, reason="cordoned by Binoculars")
    return empty_pb2.Empty()
