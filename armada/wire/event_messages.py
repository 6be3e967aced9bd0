"""Our event rows as Armada's ``api.EventStreamMessage``: the oneof of ``api.EventMessage``.

Every type we write has a message of the same name (``submitted`` -> ``JobSubmittedEvent``,
``lease_returned`` -> ``JobLeaseReturnedEvent``, ...; the table is in
docs/armada-api-events.md). The stream message's ``id`` is our event id as text: the cursor a
client sends back as ``from_message_id``. A type Armada has no message for is left out of the
stream (its id still moves the cursor on).

The payload carries what the messages need (``services.events``, in Armada's spelling), so a
batch is converted without further reads, except:

- ``submitted`` carries the job (``api.Job``): one read of the batch's submitted jobs;
- a ``failed`` event written before failed events named their exit codes is completed from
  its run: one read of those runs for the batch. Never a read per event.

``JobFailedEvent`` carries ``retryable``, ``failure_category``, ``failure_subcategory``, the
run's ``reason``, its exit codes and a ``ContainerStatus`` per container that ended (exit
code, and for the container that failed the run's reason and message), with Armada's
``Cause`` read from the Kubernetes reason (``OOMKilled`` -> ``OOM``, ...).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from armada_client.armada import event_pb2, submit_pb2
from armada_client.k8s.io.api.core.v1 import generated_pb2 as core_v1
from google.protobuf.timestamp_pb2 import Timestamp

from armada.models import Event, Job, Run
from armada.services.events import current_payload
from armada.wire.job_network import ingress_messages, service_messages
from armada.wire.podspec import pod_spec_message

# Kubernetes' reason for a failure -> Armada's Cause (anything else is ``Error``).
CAUSES = {
    "OOMKilled": event_pb2.OOM,
    "Evicted": event_pb2.Evicted,
    "DeadlineExceeded": event_pb2.DeadlineExceeded,
    "Rejected": event_pb2.Rejected,
}


def timestamp(moment: datetime | None) -> Timestamp | None:
    if moment is None:
        return None
    stamp = Timestamp()
    stamp.FromDatetime(moment)
    return stamp


# The columns ``job_message`` reads.
JOB_MESSAGE_FIELDS = (
    "id",
    "client_id",
    "queue",
    "job_set",
    "namespace",
    "owner",
    "priority",
    "annotations",
    "pod_spec",
    "services",
    "ingress",
    "submitted_at",
)


def job_message(job: Job, pod_specs: dict[str, core_v1.PodSpec] | None = None) -> submit_pb2.Job:
    """A job as Armada's ``api.Job``: its identity, owner, priority, annotations, node
    selector (Armada's ``required_node_labels``), pod spec, services and ingress. ``pod_specs`` memoizes the
    pod spec messages of a batch by their JSON: the jobs of one submit mostly share one."""
    pod_spec = job.pod_spec if isinstance(job.pod_spec, dict) else {}
    node_selector = pod_spec.get("nodeSelector")
    if pod_specs is None:
        pod_spec_msg = pod_spec_message(pod_spec)
    else:
        key = json.dumps(pod_spec, sort_keys=True)
        pod_spec_msg = pod_specs.get(key)
        if pod_spec_msg is None:
            pod_spec_msg = pod_specs[key] = pod_spec_message(pod_spec)
    return submit_pb2.Job(
        id=job.id,
        client_id=getattr(job, "client_id", "") or "",
        job_set_id=job.job_set,
        queue=job.queue_id,
        namespace=job.namespace,
        owner=job.owner,
        priority=float(job.priority),
        annotations=_strings(job.annotations),
        required_node_labels=_strings(node_selector),
        pod_spec=pod_spec_msg,
        created=timestamp(job.submitted_at),
        services=service_messages(job.services),
        ingress=ingress_messages(job.ingress),
    )


def _strings(value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping):
        return {}
    return {str(k): str(v) for k, v in value.items()}


def _text(value: Any) -> str:
    return "" if value is None else str(value)


class _Batch:
    """What one batch of events needs besides its payloads, read once for the batch."""

    def __init__(self, events: Sequence[Event]) -> None:
        submitted = {e.job_id for e in events if e.type == "submitted"}
        self.jobs: dict[str, Job] = (
            {j.id: j for j in Job.objects.filter(id__in=submitted).only(*JOB_MESSAGE_FIELDS)}
            if submitted
            else {}
        )
        self.pod_specs: dict[str, core_v1.PodSpec] = {}
        # Failed events from before failed events named their exit codes.
        incomplete = {
            e.run_id
            for e in events
            if e.type == "failed" and e.run_id and "exitCodes" not in (e.payload or {})
        }
        self.runs: dict[str, Run] = (
            {r.id: r for r in Run.objects.filter(id__in=incomplete)} if incomplete else {}
        )


def _common(event: Event) -> dict[str, Any]:
    return {
        "job_id": event.job_id,
        "job_set_id": event.job_set,
        "queue": event.queue,
        "created": timestamp(event.created),
    }


def _pod(p: Mapping[str, Any]) -> dict[str, Any]:
    """Where the pod ran, for the messages that say so."""
    return {
        "cluster_id": _text(p.get("clusterId")),
        "pod_name": _text(p.get("podName")),
        "pod_namespace": _text(p.get("podNamespace")),
    }


def _submitted(event: Event, p: Mapping[str, Any], batch: _Batch) -> event_pb2.EventMessage:
    job = batch.jobs.get(event.job_id)
    return event_pb2.EventMessage(
        submitted=event_pb2.JobSubmittedEvent(
            **_common(event), job=job_message(job, batch.pod_specs) if job is not None else None
        )
    )


def _leased(event: Event, p: Mapping[str, Any], batch: _Batch) -> event_pb2.EventMessage:
    return event_pb2.EventMessage(
        leased=event_pb2.JobLeasedEvent(
            **_common(event), cluster_id=_text(p.get("clusterId")), pool=_text(p.get("pool"))
        )
    )


def _lease_returned(event: Event, p: Mapping[str, Any], batch: _Batch) -> event_pb2.EventMessage:
    reason = p.get("message") or p.get("reason")
    return event_pb2.EventMessage(
        lease_returned=event_pb2.JobLeaseReturnedEvent(
            **_common(event),
            cluster_id=_text(p.get("clusterId")),
            reason=_text(reason),
            run_attempted=False,  # a run whose lease is returned never started
        )
    )


def _pending(event: Event, p: Mapping[str, Any], batch: _Batch) -> event_pb2.EventMessage:
    return event_pb2.EventMessage(
        pending=event_pb2.JobPendingEvent(**_common(event), **_pod(p), pool=_text(p.get("pool")))
    )


def _running(event: Event, p: Mapping[str, Any], batch: _Batch) -> event_pb2.EventMessage:
    return event_pb2.EventMessage(
        running=event_pb2.JobRunningEvent(
            **_common(event),
            **_pod(p),
            node_name=_text(p.get("nodeName")),
            pool=_text(p.get("pool")),
        )
    )


def _succeeded(event: Event, p: Mapping[str, Any], batch: _Batch) -> event_pb2.EventMessage:
    return event_pb2.EventMessage(
        succeeded=event_pb2.JobSucceededEvent(
            **_common(event), **_pod(p), node_name=_text(p.get("nodeName"))
        )
    )


def _failed(event: Event, p: Mapping[str, Any], batch: _Batch) -> event_pb2.EventMessage:
    run = batch.runs.get(event.run_id)
    if run is not None:  # an old event: what it lacks comes from its run
        p = {
            "clusterId": run.executor,
            "nodeName": run.node,
            "podName": run.pod_name,
            "reason": run.reason,
            "message": run.message,
            "exitCode": run.exit_code,
            "exitCodes": run.exit_codes or {},
            "failureCategory": run.failure_category,
            "failureSubcategory": run.failure_subcategory,
            **p,
        }
    reason = _text(p.get("reason"))
    exit_codes = {
        str(name): int(code)
        for name, code in (p.get("exitCodes") or {}).items()
        if isinstance(code, int) and not isinstance(code, bool)
    }
    return event_pb2.EventMessage(
        failed=event_pb2.JobFailedEvent(
            **_common(event),
            **_pod(p),
            node_name=_text(p.get("nodeName")),
            reason=reason,
            exit_codes=exit_codes,
            container_statuses=_container_statuses(exit_codes, p),
            cause=CAUSES.get(reason, event_pb2.Error),
            failure_category=_text(p.get("failureCategory")),
            failure_subcategory=_text(p.get("failureSubcategory")),
            retryable=p.get("retryable") is True,
        )
    )


def _container_statuses(
    exit_codes: Mapping[str, int], p: Mapping[str, Any]
) -> list[event_pb2.ContainerStatus]:
    """One status per container that ended. The run's reason and message are the failing
    container's: the one whose code is the run's exit code (the first non-zero one), or the
    only container."""
    failing = p.get("exitCode")
    reason, message = _text(p.get("reason")), _text(p.get("message"))
    cause = CAUSES.get(reason, event_pb2.Error)
    statuses = []
    for name, code in exit_codes.items():
        if len(exit_codes) == 1 or (code != 0 and code == failing):
            statuses.append(
                event_pb2.ContainerStatus(
                    name=name, exitCode=code, reason=reason, message=message, cause=cause
                )
            )
        else:
            statuses.append(event_pb2.ContainerStatus(name=name, exitCode=code))
    return statuses


def _requested(
    field: str, message_class: type, with_priority: bool = False
) -> Callable[[Event, Mapping[str, Any], _Batch], event_pb2.EventMessage]:
    """Cancel, preempt and reprioritize messages: who asked, and why or to what priority."""

    def convert(event: Event, p: Mapping[str, Any], batch: _Batch) -> event_pb2.EventMessage:
        values: dict[str, Any] = {"requestor": _text(p.get("requestor"))}
        if with_priority:
            priority = p.get("newPriority")
            values["new_priority"] = float(priority) if isinstance(priority, int | float) else 0.0
        else:
            values["reason"] = _text(p.get("reason"))
        return event_pb2.EventMessage(**{field: message_class(**_common(event), **values)})

    return convert


def _preempted(event: Event, p: Mapping[str, Any], batch: _Batch) -> event_pb2.EventMessage:
    return event_pb2.EventMessage(
        preempted=event_pb2.JobPreemptedEvent(
            **_common(event),
            cluster_id=_text(p.get("clusterId")),
            run_id=event.run_id,
            reason=_text(p.get("reason")),
            requestor=_text(p.get("requestor")),
        )
    )


def _ingress_info(event: Event, p: Mapping[str, Any], batch: _Batch) -> event_pb2.EventMessage:
    addresses = {}
    for port, address in (p.get("ingressAddresses") or {}).items():
        if str(port).isdigit() and 0 < int(port) < 2**31:
            addresses[int(port)] = _text(address)
    return event_pb2.EventMessage(
        ingress_info=event_pb2.JobIngressInfoEvent(
            **_common(event),
            **_pod(p),
            node_name=_text(p.get("nodeName")),
            kubernetes_id=event.run_id,  # Armada names the run so here
            pod_number=0,
            ingress_addresses=addresses,
        )
    )


def _plain(field: str, message_class: type) -> Callable[..., event_pb2.EventMessage]:
    def convert(event: Event, p: Mapping[str, Any], batch: _Batch) -> event_pb2.EventMessage:
        return event_pb2.EventMessage(**{field: message_class(**_common(event))})

    return convert


# Our event type -> how it becomes Armada's message (the oneof field of the same name).
CONVERTERS: dict[str, Callable[[Event, Mapping[str, Any], _Batch], event_pb2.EventMessage]] = {
    "submitted": _submitted,
    "queued": _plain("queued", event_pb2.JobQueuedEvent),
    "leased": _leased,
    "lease_returned": _lease_returned,
    "lease_expired": _plain("lease_expired", event_pb2.JobLeaseExpiredEvent),
    "pending": _pending,
    "running": _running,
    "succeeded": _succeeded,
    "failed": _failed,
    "reprioritizing": _requested("reprioritizing", event_pb2.JobReprioritizingEvent, True),
    "reprioritized": _requested("reprioritized", event_pb2.JobReprioritizedEvent, True),
    "cancelling": _requested("cancelling", event_pb2.JobCancellingEvent),
    "cancelled": _requested("cancelled", event_pb2.JobCancelledEvent),
    "preempting": _requested("preempting", event_pb2.JobPreemptingEvent),
    "preempted": _preempted,
    "ingress_info": _ingress_info,
}


def event_messages(events: Iterable[Event]) -> list[event_pb2.EventStreamMessage]:
    """``events`` (one read batch, in order) as stream messages, in the same order; at most
    two reads for the whole batch (see the module docstring)."""
    events = list(events)
    batch = _Batch(events)
    out = []
    for event in events:
        convert = CONVERTERS.get(event.type)
        if convert is None:
            continue
        message = convert(event, current_payload(event.type, event.payload), batch)
        out.append(event_pb2.EventStreamMessage(id=str(event.id), message=message))
    return out
