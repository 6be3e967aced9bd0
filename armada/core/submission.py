"""Validation of a job file (``armadactl submit``) into job specifications.

``parse_job_file`` checks the whole file and reports every problem with the field named
(``jobs[2].podSpec.containers[0].resources``); it returns nothing half-checked, so the
service can write all the jobs of a file or none of them. Annotation and label keys, label
values and the size of a job's annotations follow Kubernetes' rules (``core.labels``).
A job's ``clientId`` (Armada's deduplication key, at most 100 characters) is unique within a
file: two jobs of one file with the same clientId are refused. A job's ``services`` and
``ingress`` items, and the ports its containers declare, are checked by ``core.job_network``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from armada.core.errors import FieldError, ValidationFailed
from armada.core.fakepod import PREFIX as FAKE_PREFIX
from armada.core.fakepod import parse_fake_outcome
from armada.core.job_network import parse_ingress, parse_services, pod_port_problems
from armada.core.labels import annotation_problems, label_problems
from armada.core.quantity import CPU, MAX_MILLI, MEMORY, Resources, parse_quantity

RFC1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
ANNOTATION_PREFIX = "armadaproject.io/"
FAIL_FAST = ANNOTATION_PREFIX + "failFast"
GANG_ID = ANNOTATION_PREFIX + "gangId"
GANG_CARDINALITY = ANNOTATION_PREFIX + "gangCardinality"
GANG_UNIFORMITY_LABEL = ANNOTATION_PREFIX + "gangNodeUniformityLabel"

FILE_KEYS = {"queue", "jobSetId", "jobs"}
JOB_KEYS = {
    "priority",
    "namespace",
    "annotations",
    "labels",
    "podSpec",
    "clientId",
    "services",
    "ingress",
}
MAX_JOB_SET_LENGTH = 1024
# Armada's bound on a clientId (its deduplication key).
MAX_CLIENT_ID_LENGTH = 100
MAX_PRIORITY = 2**32 - 1
# A gang this large could never be scheduled; the bound also keeps it inside a 32-bit column.
MAX_GANG_CARDINALITY = 2**31 - 1
MAX_GANG_ANNOTATION_LENGTH = 255


@dataclass(frozen=True)
class JobSpec:
    """One validated job of a file."""

    priority: int
    namespace: str
    priority_class: str
    pod_spec: dict[str, Any]
    annotations: dict[str, str]
    requests: Resources
    gang_id: str = ""
    gang_cardinality: int = 1
    gang_uniformity_label: str = ""
    fail_fast: bool = False
    labels: dict[str, str] = field(default_factory=dict)
    # The submitter's deduplication key; "" when none was given.
    client_id: str = ""
    # The job's network objects, complete (``core.job_network``); empty for most jobs.
    services: list[dict[str, Any]] = field(default_factory=list)
    ingress: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class JobFile:
    queue: str
    job_set: str
    jobs: list[JobSpec]


def _str_map(value: Any, where: str, errors: list[FieldError]) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        errors.append(FieldError(where, "must be a mapping of strings to strings"))
        return {}
    out = {}
    for k, v in value.items():
        if not isinstance(k, str) or not isinstance(v, str):
            errors.append(
                FieldError(
                    f"{where}[{k}]", "keys and values must be strings (quote numbers and booleans)"
                )
            )
            continue
        out[k] = v
    return out


def _container_requests(container: Any, where: str, errors: list[FieldError]) -> Resources:
    resources = container.get("resources")
    if not isinstance(resources, Mapping):
        errors.append(
            FieldError(
                f"{where}.resources",
                "is required: set requests and limits (equal) for cpu and memory",
            )
        )
        return Resources()
    parsed: dict[str, Resources] = {}
    unreadable: set[str] = set()  # requests already reported as not a quantity
    for kind in ("requests", "limits"):
        values = resources.get(kind)
        if not isinstance(values, Mapping) or not values:
            errors.append(
                FieldError(f"{where}.resources.{kind}", "is required and must not be empty")
            )
            continue
        out: dict[str, int] = {}
        for name, quantity in values.items():
            try:
                amount = parse_quantity(quantity)
            except ValueError as exc:
                errors.append(FieldError(f"{where}.resources.{kind}.{name}", str(exc)))
                if kind == "requests":
                    unreadable.add(str(name))
                continue
            if amount < 0:
                errors.append(
                    FieldError(f"{where}.resources.{kind}.{name}", "must not be negative")
                )
                continue
            out[str(name)] = amount
        parsed[kind] = Resources(out)
    if len(parsed) < 2:
        return Resources()
    requests, limits = parsed["requests"], parsed["limits"]
    if requests != limits:
        errors.append(FieldError(f"{where}.resources", "requests and limits must be equal"))
    for name in (CPU, MEMORY):
        if requests[name] <= 0 and name not in unreadable:
            errors.append(
                FieldError(
                    f"{where}.resources.requests.{name}",
                    "is required and must be greater than zero",
                )
            )
    return requests


def _pod_requests(pod_spec: Mapping[str, Any], where: str, errors: list[FieldError]) -> Resources:
    """Kubernetes' rule: the sum over containers, or the largest init container if larger."""
    containers = pod_spec.get("containers")
    if not isinstance(containers, list) or not containers:
        errors.append(FieldError(f"{where}.containers", "at least one container is required"))
        return Resources()
    total = Resources()
    names: set[str] = set()
    for i, c in enumerate(containers):
        cw = f"{where}.containers[{i}]"
        if not isinstance(c, Mapping):
            errors.append(FieldError(cw, "must be a mapping"))
            continue
        name = c.get("name")
        if not isinstance(name, str) or not RFC1123_LABEL.fullmatch(name) or len(name) > 63:
            errors.append(
                FieldError(f"{cw}.name", "is required and must be a lower-case RFC 1123 label")
            )
        elif name in names:
            errors.append(FieldError(f"{cw}.name", f"duplicate container name {name!r}"))
        else:
            names.add(name)
        image = c.get("image")
        if not isinstance(image, str) or not image.strip():
            errors.append(FieldError(f"{cw}.image", "is required"))
        requests = _container_requests(c, cw, errors)
        # One container (the usual case): its requests are the sum, no new vector needed.
        total = requests if not total else total + requests
    init = pod_spec.get("initContainers") or []
    if not isinstance(init, list):
        errors.append(FieldError(f"{where}.initContainers", "must be a list"))
        init = []
    for i, c in enumerate(init):
        cw = f"{where}.initContainers[{i}]"
        if not isinstance(c, Mapping):
            errors.append(FieldError(cw, "must be a mapping"))
            continue
        total = total.maximum(_container_requests(c, cw, errors))
    for name, amount in total.items():
        if amount > MAX_MILLI:
            errors.append(
                FieldError(
                    f"{where}.containers",
                    f"the containers together ask for more {name} than any quantity can hold",
                )
            )
    return total


def _parse_job(
    job: Any,
    where: str,
    priority_classes: Mapping[str, object],
    default_priority_class: str,
    errors: list[FieldError],
) -> JobSpec | None:
    if not isinstance(job, Mapping):
        errors.append(FieldError(where, "must be a mapping"))
        return None
    start = len(errors)
    for key in sorted(set(job) - JOB_KEYS, key=str):
        errors.append(
            FieldError(f"{where}.{key}", f"unknown field; allowed: {', '.join(sorted(JOB_KEYS))}")
        )
    priority = job.get("priority", 0)
    if isinstance(priority, float) and priority.is_integer():
        priority = int(priority)
    if (
        isinstance(priority, bool)
        or not isinstance(priority, int)
        or not 0 <= priority <= MAX_PRIORITY
    ):
        errors.append(
            FieldError(f"{where}.priority", f"must be a whole number from 0 to {MAX_PRIORITY}")
        )
        priority = 0
    namespace = job.get("namespace", "default")
    if (
        not isinstance(namespace, str)
        or not RFC1123_LABEL.fullmatch(namespace)
        or len(namespace) > 63
    ):
        errors.append(FieldError(f"{where}.namespace", "must be a lower-case RFC 1123 label"))
    client_id = job.get("clientId", "")
    if client_id is None:
        client_id = ""
    if not isinstance(client_id, str) or len(client_id) > MAX_CLIENT_ID_LENGTH:
        errors.append(
            FieldError(
                f"{where}.clientId", f"must be text of at most {MAX_CLIENT_ID_LENGTH} characters"
            )
        )
        client_id = ""
    annotations = _str_map(job.get("annotations"), f"{where}.annotations", errors)
    errors.extend(annotation_problems(annotations, f"{where}.annotations"))
    labels = _str_map(job.get("labels"), f"{where}.labels", errors)
    errors.extend(label_problems(labels, f"{where}.labels"))
    pod_spec = job.get("podSpec")
    if not isinstance(pod_spec, Mapping):
        errors.append(FieldError(f"{where}.podSpec", "is required and must be a mapping"))
        return None
    requests = _pod_requests(pod_spec, f"{where}.podSpec", errors)
    errors.extend(pod_port_problems(pod_spec, f"{where}.podSpec"))
    services = parse_services(job.get("services"), f"{where}.services", errors)
    ingress = parse_ingress(job.get("ingress"), f"{where}.ingress", errors)
    pc = pod_spec.get("priorityClassName") or default_priority_class
    if not isinstance(pc, str) or pc not in priority_classes:
        errors.append(
            FieldError(
                f"{where}.podSpec.priorityClassName",
                f"unknown priority class {pc!r}; known: {', '.join(sorted(priority_classes))}",
            )
        )
    node_selector = pod_spec.get("nodeSelector")
    if node_selector is not None:
        _str_map(node_selector, f"{where}.podSpec.nodeSelector", errors)
    tolerations = pod_spec.get("tolerations")
    if tolerations is not None and not isinstance(tolerations, list):
        errors.append(FieldError(f"{where}.podSpec.tolerations", "must be a list"))

    fail_fast = annotations.get(FAIL_FAST, "false")
    if fail_fast not in ("true", "false"):
        errors.append(FieldError(f"{where}.annotations[{FAIL_FAST}]", 'must be "true" or "false"'))
    gang_id = annotations.get(GANG_ID, "")
    for key in (GANG_ID, GANG_UNIFORMITY_LABEL):
        if len(annotations.get(key, "")) > MAX_GANG_ANNOTATION_LENGTH:
            errors.append(
                FieldError(
                    f"{where}.annotations[{key}]",
                    f"must be at most {MAX_GANG_ANNOTATION_LENGTH} characters",
                )
            )
    cardinality = 1
    if GANG_CARDINALITY in annotations:
        written = annotations[GANG_CARDINALITY].strip()
        # Plain digits only: int() would also take "+3", "3_000" and other scripts' digits.
        digits = written.isascii() and written.isdigit() and len(written) <= 10
        if digits and 1 <= int(written) <= MAX_GANG_CARDINALITY:
            cardinality = int(written)
        else:
            errors.append(
                FieldError(
                    f"{where}.annotations[{GANG_CARDINALITY}]",
                    f"must be a whole number of at least 1 and at most {MAX_GANG_CARDINALITY}",
                )
            )
        if not gang_id:
            errors.append(
                FieldError(
                    f"{where}.annotations[{GANG_ID}]", f"is required when {GANG_CARDINALITY} is set"
                )
            )
    elif gang_id:
        errors.append(
            FieldError(
                f"{where}.annotations[{GANG_CARDINALITY}]", f"is required when {GANG_ID} is set"
            )
        )
    # Only a job asking the fake backend for an outcome has anything to check there (most
    # have no such annotation: the outcome built for nothing cost microseconds a job).
    if any(key.startswith(FAKE_PREFIX) for key in annotations):
        _, fake_errors = parse_fake_outcome(annotations, f"{where}.annotations")
        errors.extend(fake_errors)
    if len(errors) > start:
        return None
    return JobSpec(
        priority=priority,
        namespace=namespace,
        priority_class=pc,
        pod_spec=dict(pod_spec),
        annotations=annotations,
        labels=labels,
        requests=requests,
        gang_id=gang_id,
        gang_cardinality=cardinality,
        gang_uniformity_label=annotations.get(GANG_UNIFORMITY_LABEL, ""),
        fail_fast=fail_fast == "true" or cardinality > 1,
        client_id=client_id,
        services=services,
        ingress=ingress,
    )


def parse_job_file(
    data: Any,
    *,
    priority_classes: Mapping[str, object],
    default_priority_class: str,
    max_jobs: int,
) -> JobFile:
    """Validate a whole job file; raises ValidationFailed listing every problem."""
    if not isinstance(data, Mapping):
        raise ValidationFailed.one("", "a job file is a mapping with queue, jobSetId and jobs")
    errors: list[FieldError] = []
    for key in sorted(set(data) - FILE_KEYS, key=str):
        errors.append(
            FieldError(str(key), f"unknown field; allowed: {', '.join(sorted(FILE_KEYS))}")
        )
    queue = data.get("queue")
    if not isinstance(queue, str) or not queue:
        errors.append(FieldError("queue", "is required"))
    job_set = data.get("jobSetId")
    if not isinstance(job_set, str) or not job_set.strip():
        errors.append(FieldError("jobSetId", "is required"))
    elif len(job_set) > MAX_JOB_SET_LENGTH:
        errors.append(FieldError("jobSetId", f"must be at most {MAX_JOB_SET_LENGTH} characters"))
    jobs = data.get("jobs")
    specs: list[JobSpec] = []
    if not isinstance(jobs, list) or not jobs:
        errors.append(FieldError("jobs", "at least one job is required"))
    elif len(jobs) > max_jobs:
        errors.append(
            FieldError(
                "jobs",
                f"{len(jobs)} jobs in one request; at most {max_jobs} are accepted, split the file",
            )
        )
    else:
        first_with: dict[str, int] = {}  # clientId -> the first job that gives it
        for i, job in enumerate(jobs):
            spec = _parse_job(job, f"jobs[{i}]", priority_classes, default_priority_class, errors)
            if spec is not None:
                specs.append(spec)
                if spec.client_id and spec.client_id in first_with:
                    errors.append(
                        FieldError(
                            f"jobs[{i}].clientId",
                            f"jobs[{first_with[spec.client_id]}] has the same clientId; a "
                            "clientId names one job of a job set",
                        )
                    )
                elif spec.client_id:
                    first_with[spec.client_id] = i
    if errors:
        raise ValidationFailed(errors)
    return JobFile(queue=queue, job_set=job_set, jobs=specs)  # type: ignore[arg-type]


def pod_requests(pod_spec: Mapping[str, Any]) -> Resources:
    """What a (valid) pod spec asks the scheduler for; raises ValidationFailed otherwise."""
    errors: list[FieldError] = []
    requests = _pod_requests(pod_spec, "podSpec", errors)
    if errors:
        raise ValidationFailed(errors)
    return requests
