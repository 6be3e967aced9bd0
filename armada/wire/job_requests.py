"""A JobSubmitRequest as our job file (``core.submission``), and our validation's field
names back in the request's spelling.

Each JobSubmitRequestItem becomes a job of the file: ``priority`` (Armada's double) must be a
whole number from 0 to 2^32-1; an empty ``namespace`` is our default one; ``clientId``,
``labels`` and ``annotations`` are kept; the pod spec (``podSpec``, or the one of
``podSpecs``) becomes Kubernetes' JSON (``wire.podspec``); ``requiredNodeLabels`` join its
``nodeSelector``; ``externalJobUri`` is kept as the annotation Armada reads it from
(``armadaproject.io/externalJobUri``); ``services`` and ``ingress`` become the job's items of
the same names (``wire.job_network``), checked by our validation like a job file's, their
problems named in the request's spelling (``jobRequestItems[0].ingress[1].ports[0]``).
What our job files cannot say, and no part of this server would honour, is refused naming
its field rather than dropped: several pod specs, a ``scheduler`` other than the default.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from armada_client.armada import submit_pb2

from armada.core.errors import FieldError, ValidationFailed
from armada.core.submission import MAX_PRIORITY
from armada.services.submit import MAX_JOBS_PER_SUBMIT, job_file_problems
from armada.web.storable import check_storable
from armada.wire.job_network import ingress_of, services_of
from armada.wire.podspec import pod_spec_from_message

EXTERNAL_JOB_URI = "armadaproject.io/externalJobUri"
ITEMS = "jobRequestItems"


class FieldNames:
    """Our job file's field paths -> the request's: ``jobs[3].podSpec.containers`` is
    ``jobRequestItems[3].podSpecs[0].containers`` when that item's pod spec came in
    ``podSpecs``, and an annotation made from a field of the item is named as that field."""

    def __init__(self) -> None:
        self.pod_spec: dict[int, str] = {}
        self.from_fields: dict[tuple[int, str], str] = {}  # (item, our rest of path) -> field

    def __call__(self, field: str) -> str:
        if field == "jobs":
            return ITEMS
        m = re.fullmatch(r"jobs\[(\d+)\](.*)", field, flags=re.DOTALL)
        if m is None:
            return field
        index, rest = int(m.group(1)), m.group(2)
        item = f"{ITEMS}[{index}]"
        if (index, rest) in self.from_fields:
            return f"{item}.{self.from_fields[index, rest]}"
        if re.match(r"\.podSpec(\.|\[|$)", rest):
            return self.pod_spec.get(index, f"{item}.podSpec") + rest[len(".podSpec") :]
        return item + rest

    def all(self, errors: list[FieldError]) -> list[FieldError]:
        return [FieldError(self(e.field), e.message) for e in errors]


@contextmanager
def armada_names(names: FieldNames) -> Iterator[None]:
    """Re-raise a ValidationFailed of the block with the request's field names."""
    try:
        yield
    except ValidationFailed as exc:
        raise ValidationFailed(names.all(exc.errors)) from None


def job_file_of(request: submit_pb2.JobSubmitRequest) -> tuple[dict[str, Any], FieldNames]:
    """Our job file for a JobSubmitRequest, and the way back to the request's field names.

    Raises ValidationFailed for what our job files cannot say (several pod specs, a
    priority with a fraction), together with every problem our own validation finds in the
    rest, so that one answer names every field at fault."""
    count = len(request.job_request_items)
    if count > MAX_JOBS_PER_SUBMIT:  # before any work on them
        raise ValidationFailed.one(
            ITEMS,
            f"{count} jobs in one request; at most {MAX_JOBS_PER_SUBMIT} are accepted, split it",
        )
    names = FieldNames()
    problems: list[FieldError] = []
    specs = _PodSpecs()
    jobs = [
        _job_of(i, item, names, problems, specs) for i, item in enumerate(request.job_request_items)
    ]
    data: dict[str, Any] = {"queue": request.queue, "jobSetId": request.job_set_id, "jobs": jobs}
    try:  # what a pod spec's raw fields hold (NaN, deep nesting) must be storable too
        check_storable(data)
    except ValidationFailed as exc:
        problems += names.all(exc.errors)
    if problems:
        problems += names.all(job_file_problems(data))
        raise ValidationFailed(problems)
    return data, names


class _PodSpecs:
    """The pod specs of one request, each distinct one converted once: the items of a batch
    mostly carry the same spec, and converting a message costs several times more than
    serializing it to look it up. Every item still gets a dict of its own (parsed from the
    converted JSON), so changing one (its ``nodeSelector``) changes no other."""

    def __init__(self) -> None:
        self.converted: dict[bytes, str] = {}

    def convert(self, message: Any, where: str) -> dict[str, Any]:
        key = message.SerializeToString(deterministic=True)
        known = self.converted.get(key)
        if known is not None:
            return json.loads(known)
        pod_spec = pod_spec_from_message(message, where=where)  # errors name this item
        self.converted[key] = json.dumps(pod_spec)
        return pod_spec


def _job_of(
    index: int,
    item: submit_pb2.JobSubmitRequestItem,
    names: FieldNames,
    problems: list[FieldError],
    specs: _PodSpecs,
) -> dict[str, Any]:
    where = f"{ITEMS}[{index}]"
    job: dict[str, Any] = {}
    priority = whole_priority(item.priority, f"{where}.priority", problems)
    if priority is not None:
        job["priority"] = priority
    if item.namespace:
        job["namespace"] = item.namespace
    if item.client_id:
        job["clientId"] = item.client_id
    if item.labels:
        job["labels"] = dict(item.labels)
    annotations = dict(item.annotations)
    if item.external_job_uri:
        annotations[EXTERNAL_JOB_URI] = item.external_job_uri
        names.from_fields[index, f".annotations[{EXTERNAL_JOB_URI}]"] = "externalJobUri"
    if annotations:
        job["annotations"] = annotations

    if item.HasField("pod_spec") and len(item.pod_specs):
        problems.append(FieldError(f"{where}.podSpecs", "give podSpec or podSpecs, not both"))
    elif len(item.pod_specs) > 1:
        problems.append(
            FieldError(
                f"{where}.podSpecs",
                f"{len(item.pod_specs)} pod specs: a job has one pod (jobs with several pods "
                "are not supported)",
            )
        )
    # The pod spec our validation checks (the first of several, to name its problems too).
    spec_message = item.pod_spec if item.HasField("pod_spec") else None
    names.pod_spec[index] = f"{where}.podSpec"
    if spec_message is None and len(item.pod_specs):
        spec_message = item.pod_specs[0]
        names.pod_spec[index] = f"{where}.podSpecs[0]"
    if spec_message is not None:
        try:
            pod_spec = specs.convert(spec_message, names.pod_spec[index])
        except ValidationFailed as exc:
            problems.extend(exc.errors)
            pod_spec = {}
        _merge_required_node_labels(item, pod_spec, where, problems)
        job["podSpec"] = pod_spec
    elif item.required_node_labels:
        problems.append(
            FieldError(f"{where}.requiredNodeLabels", "needs a pod spec to add its nodeSelector to")
        )

    if len(item.services):
        job["services"] = services_of(item.services)
    if len(item.ingress):
        job["ingress"] = ingress_of(item.ingress)
    if item.scheduler:
        problems.append(
            FieldError(
                f"{where}.scheduler",
                f"unknown scheduler {item.scheduler!r}: only the default (leave it empty) runs here",
            )
        )
    return job


def _merge_required_node_labels(
    item: submit_pb2.JobSubmitRequestItem,
    pod_spec: dict[str, Any],
    where: str,
    problems: list[FieldError],
) -> None:
    """Armada's deprecated ``requiredNodeLabels`` are node selector terms: they join the
    pod's ``nodeSelector``; one that contradicts it is refused rather than overriding it."""
    if not item.required_node_labels:
        return
    selector = dict(pod_spec.get("nodeSelector") or {})
    for key, value in sorted(item.required_node_labels.items()):
        if key in selector and selector[key] != value:
            problems.append(
                FieldError(
                    f"{where}.requiredNodeLabels[{key}]",
                    f"is {value!r} but the pod spec's nodeSelector asks for {selector[key]!r}",
                )
            )
        selector[key] = value
    pod_spec["nodeSelector"] = selector


def whole_priority(value: float, field: str, problems: list[FieldError]) -> int | None:
    """Armada's priority (a double) as ours (a whole number from 0 to 2^32-1), or None with
    the problem added."""
    if not math.isfinite(value) or not value.is_integer() or not 0 <= value <= MAX_PRIORITY:
        problems.append(
            FieldError(field, f"must be a whole number from 0 to {MAX_PRIORITY}, not {value!r}")
        )
        return None
    return int(value)
