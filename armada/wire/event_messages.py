"""Our event rows as Armada's ``api.EventStreamMessage``: the oneof of ``api.EventMessage``.

Every type we write has a message of the same name (``submitted`` -> ``JobSubmittedEvent``,
``lease_returned`` -> ``JobLeaseReturnedEvent``, ``utilisation`` -> ``JobUtilisationEvent``,
...; the table is in docs/armada-api-events.md). The stream message's ``id`` is our event id
as text: the cursor a client sends back as ``from_message_id``. A type Armada has no message
for is left out of the stream (its id still moves the cursor on).

The payload carries what the messages need (``services.events``, in Armada's spelling), so a
batch is converted without further reads, except:

- ``submitted`` carries the job (``api.Job``): one read of the batch's submitted jobs;
- a ``failed`` event written before failed events named their exit codes is completed from
  its run: one read of those runs for the batch. Never a read per event.

The messages about a pod (pending, running, succeeded, failed, ingress info, utilisation,
lease returned) are in ``wire.event_pod_messages``; the job of ``submitted`` in
``wire.event_job_message``. ``JobPreemptedEvent`` names, when the scheduler preempted the
job to make room for another, that job (``preempting_job_id``) and its run
(``preemptive_run_id``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from armada_client.armada import event_pb2
from armada_client.k8s.io.api.core.v1 import generated_pb2 as core_v1

from armada.models import Event, Job, Run
from armada.services.events import current_payload
from armada.wire import event_pod_messages as pods
from armada.wire.event_job_message import JOB_MESSAGE_FIELDS, job_message, timestamp
from armada.wire.event_pod_messages import CAUSES, common, text

__all__ = ["CAUSES", "CONVERTERS", "event_messages", "job_message", "timestamp"]


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


Converter = Callable[[Event, Mapping[str, Any], _Batch], event_pb2.EventMessage]


def _submitted(event: Event, p: Mapping[str, Any], batch: _Batch) -> event_pb2.EventMessage:
    job = batch.jobs.get(event.job_id)
    return event_pb2.EventMessage(
        submitted=event_pb2.JobSubmittedEvent(
            **common(event), job=job_message(job, batch.pod_specs) if job is not None else None
        )
    )


def _leased(event: Event, p: Mapping[str, Any], batch: _Batch) -> event_pb2.EventMessage:
    return event_pb2.EventMessage(
        leased=event_pb2.JobLeasedEvent(
            **common(event), cluster_id=text(p.get("clusterId")), pool=text(p.get("pool"))
        )
    )


def _requested(field: str, message_class: type, with_priority: bool = False) -> Converter:
    """Cancel, preempt and reprioritize messages: who asked, and why or to what priority."""

    def convert(event: Event, p: Mapping[str, Any], batch: _Batch) -> event_pb2.EventMessage:
        values: dict[str, Any] = {"requestor": text(p.get("requestor"))}
        if with_priority:
            priority = p.get("newPriority")
            values["new_priority"] = float(priority) if isinstance(priority, int | float) else 0.0
        else:
            values["reason"] = text(p.get("reason"))
        return event_pb2.EventMessage(**{field: message_class(**common(event), **values)})

    return convert


def _preempted(event: Event, p: Mapping[str, Any], batch: _Batch) -> event_pb2.EventMessage:
    return event_pb2.EventMessage(
        preempted=event_pb2.JobPreemptedEvent(
            **common(event),
            cluster_id=text(p.get("clusterId")),
            run_id=event.run_id,
            reason=text(p.get("reason")),
            requestor=text(p.get("requestor")),
            preempting_job_id=text(p.get("preemptingJobId")),
            preemptive_run_id=text(p.get("preemptiveRunId")),
        )
    )


def _plain(field: str, message_class: type) -> Converter:
    def convert(event: Event, p: Mapping[str, Any], batch: _Batch) -> event_pb2.EventMessage:
        return event_pb2.EventMessage(**{field: message_class(**common(event))})

    return convert


def _pod(convert: Callable[..., event_pb2.EventMessage]) -> Converter:
    """A pod message's converter, given the runs read for the batch."""

    def with_runs(event: Event, p: Mapping[str, Any], batch: _Batch) -> event_pb2.EventMessage:
        return convert(event, p, batch.runs)

    return with_runs


# Our event type -> how it becomes Armada's message (the oneof field of the same name).
CONVERTERS: dict[str, Converter] = {
    "submitted": _submitted,
    "queued": _plain("queued", event_pb2.JobQueuedEvent),
    "leased": _leased,
    "lease_returned": _pod(pods.lease_returned),
    "lease_expired": _plain("lease_expired", event_pb2.JobLeaseExpiredEvent),
    "pending": _pod(pods.pending),
    "running": _pod(pods.running),
    "succeeded": _pod(pods.succeeded),
    "failed": _pod(pods.failed),
    "reprioritizing": _requested("reprioritizing", event_pb2.JobReprioritizingEvent, True),
    "reprioritized": _requested("reprioritized", event_pb2.JobReprioritizedEvent, True),
    "cancelling": _requested("cancelling", event_pb2.JobCancellingEvent),
    "cancelled": _requested("cancelled", event_pb2.JobCancelledEvent),
    "preempting": _requested("preempting", event_pb2.JobPreemptingEvent),
    "preempted": _preempted,
    "ingress_info": _pod(pods.ingress_info),
    "utilisation": _pod(pods.utilisation),
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
