"""The messages about a run's pod: lease returned, pending, running, ingress info,
utilisation, succeeded and failed, filled as Armada's executor fills them.

Each names the cluster (``cluster_id``: the executor id), the pod (``pod_name``
``armada-<jobId>-0``, ``pod_namespace``, and ``kubernetes_id``: the pod's UID as the
executor reported it, empty for an event written before it did or for a pod never made),
``pod_number`` (0: every job is one pod) and, once placed, ``node_name``.

``JobFailedEvent``: ``cause`` is the one the executor's report gave (``core.reports``:
evicted, past its deadline, OOM-killed, else an error) and ``container_statuses`` one per
container that ended, with its own exit code, reason, message and cause. An event written
before reports carried containers falls back on its exit codes, giving the run's reason and
message to the failing container, and reads its cause from the run's reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from armada_client.armada import event_pb2

from armada.models import Event, Run
from armada.wire.event_job_message import timestamp

# Armada's cause by name (``core.reports``), and a Kubernetes reason read as a cause.
CAUSE_NAMES = {
    "Error": event_pb2.Error,
    "Evicted": event_pb2.Evicted,
    "OOM": event_pb2.OOM,
    "DeadlineExceeded": event_pb2.DeadlineExceeded,
    "Rejected": event_pb2.Rejected,
}
CAUSES = {
    "OOMKilled": event_pb2.OOM,
    "Evicted": event_pb2.Evicted,
    "DeadlineExceeded": event_pb2.DeadlineExceeded,
    "Rejected": event_pb2.Rejected,
}


def text(value: Any) -> str:
    return "" if value is None else str(value)


def common(event: Event) -> dict[str, Any]:
    return {
        "job_id": event.job_id,
        "job_set_id": event.job_set,
        "queue": event.queue,
        "created": timestamp(event.created),
    }


def pod(p: Mapping[str, Any]) -> dict[str, Any]:
    """Where the pod ran, for the messages that say so."""
    return {
        "cluster_id": text(p.get("clusterId")),
        "kubernetes_id": text(p.get("kubernetesId")),
        "pod_number": _int(p.get("podNumber")),
        "pod_name": text(p.get("podName")),
        "pod_namespace": text(p.get("podNamespace")),
    }


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def lease_returned(event: Event, p: Mapping[str, Any], runs: Mapping[str, Run]):
    reason = p.get("message") or p.get("reason")
    return event_pb2.EventMessage(
        lease_returned=event_pb2.JobLeaseReturnedEvent(
            **common(event),
            cluster_id=text(p.get("clusterId")),
            reason=text(reason),
            kubernetes_id=text(p.get("kubernetesId")),
            pod_number=_int(p.get("podNumber")),
            run_attempted=p.get("runAttempted") is True,
        )
    )


def pending(event: Event, p: Mapping[str, Any], runs: Mapping[str, Run]):
    return event_pb2.EventMessage(
        pending=event_pb2.JobPendingEvent(**common(event), **pod(p), pool=text(p.get("pool")))
    )


def running(event: Event, p: Mapping[str, Any], runs: Mapping[str, Run]):
    return event_pb2.EventMessage(
        running=event_pb2.JobRunningEvent(
            **common(event),
            **pod(p),
            node_name=text(p.get("nodeName")),
            pool=text(p.get("pool")),
        )
    )


def succeeded(event: Event, p: Mapping[str, Any], runs: Mapping[str, Run]):
    return event_pb2.EventMessage(
        succeeded=event_pb2.JobSucceededEvent(
            **common(event), **pod(p), node_name=text(p.get("nodeName"))
        )
    )


def ingress_info(event: Event, p: Mapping[str, Any], runs: Mapping[str, Run]):
    addresses = {}
    for port, address in (p.get("ingressAddresses") or {}).items():
        if str(port).isdigit() and 0 < int(port) < 2**31:
            addresses[int(port)] = text(address)
    return event_pb2.EventMessage(
        ingress_info=event_pb2.JobIngressInfoEvent(
            **common(event),
            **pod(p),
            node_name=text(p.get("nodeName")),
            ingress_addresses=addresses,
        )
    )


def utilisation(event: Event, p: Mapping[str, Any], runs: Mapping[str, Run]):
    message = event_pb2.JobUtilisationEvent(
        **common(event), **pod(p), node_name=text(p.get("nodeName"))
    )
    for field, key in (
        ("MaxResourcesForPeriod", "maxResourcesForPeriod"),
        ("AvgResourcesForPeriod", "avgResourcesForPeriod"),
        ("total_cumulative_usage", "totalCumulativeUsage"),
    ):
        target = getattr(message, field)
        for name, quantity in (p.get(key) or {}).items():
            target[str(name)].string = text(quantity)
    return event_pb2.EventMessage(utilisation=message)


def failed(event: Event, p: Mapping[str, Any], runs: Mapping[str, Run]):
    run = runs.get(event.run_id)
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
            "kubernetesId": run.kubernetes_id,
            "containers": run.containers,
            "cause": run.cause,
            **p,
        }
    reason = text(p.get("reason"))
    exit_codes = {
        str(name): int(code)
        for name, code in (p.get("exitCodes") or {}).items()
        if isinstance(code, int) and not isinstance(code, bool)
    }
    cause = CAUSE_NAMES.get(text(p.get("cause")), CAUSES.get(reason, event_pb2.Error))
    containers = p.get("containers")
    statuses = (
        _reported_statuses(containers) if containers else _statuses_from_exit_codes(exit_codes, p)
    )
    return event_pb2.EventMessage(
        failed=event_pb2.JobFailedEvent(
            **common(event),
            **pod(p),
            node_name=text(p.get("nodeName")),
            reason=reason,
            exit_codes=exit_codes,
            container_statuses=statuses,
            cause=cause,
            failure_category=text(p.get("failureCategory")),
            failure_subcategory=text(p.get("failureSubcategory")),
            retryable=p.get("retryable") is True,
        )
    )


def _reported_statuses(containers: Any) -> list[event_pb2.ContainerStatus]:
    """The containers the executor reported, each with its own outcome (Armada's cause of a
    container: OOM when it was OOM-killed, else an error)."""
    out = []
    for c in containers if isinstance(containers, list) else []:
        if not isinstance(c, Mapping):
            continue
        reason = text(c.get("reason"))
        out.append(
            event_pb2.ContainerStatus(
                name=text(c.get("name")),
                exitCode=_int(c.get("exitCode")),
                reason=reason,
                message=text(c.get("message")),
                cause=event_pb2.OOM if reason == "OOMKilled" else event_pb2.Error,
            )
        )
    return out


def _statuses_from_exit_codes(
    exit_codes: Mapping[str, int], p: Mapping[str, Any]
) -> list[event_pb2.ContainerStatus]:
    """For an event from before reports named containers: one status per exit code. The
    run's reason and message are the failing container's: the one whose code is the run's
    exit code (the first non-zero one), or the only container."""
    failing = p.get("exitCode")
    reason, message = text(p.get("reason")), text(p.get("message"))
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
