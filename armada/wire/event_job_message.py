"""A job as Armada's ``api.Job`` (the ``submitted`` event's job, and the job queries'), and
our times as protobuf timestamps."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from armada_client.armada import submit_pb2
from armada_client.k8s.io.api.core.v1 import generated_pb2 as core_v1
from google.protobuf.timestamp_pb2 import Timestamp

from armada.models import Job
from armada.wire.job_network import ingress_messages, service_messages
from armada.wire.podspec import pod_spec_message


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
    selector (Armada's ``required_node_labels``), pod spec, services and ingress.
    ``pod_specs`` memoizes the pod spec messages of a batch by their JSON: the jobs of one
    submit mostly share one."""
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
        annotations=strings(job.annotations),
        required_node_labels=strings(node_selector),
        pod_spec=pod_spec_msg,
        created=timestamp(job.submitted_at),
        services=service_messages(job.services),
        ingress=ingress_messages(job.ingress),
    )


def strings(value: Any) -> dict[str, str]:
    """A mapping's keys and values as text; anything else as an empty mapping."""
    if not isinstance(value, Mapping):
        return {}
    return {str(k): str(v) for k, v in value.items()}
