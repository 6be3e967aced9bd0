"""armada.core.submission: parse_job_file validates a whole file and names every field."""

from __future__ import annotations

import copy

import pytest

from armada.core.errors import ValidationFailed
from armada.core.quantity import GPU, Resources
from armada.core.submission import (
    FAIL_FAST,
    GANG_CARDINALITY,
    GANG_ID,
    GANG_UNIFORMITY_LABEL,
    MAX_PRIORITY,
    JobFile,
    parse_job_file,
)

CLASSES = {"armada-default": object(), "armada-preemptible": object()}
DEFAULT_CLASS = "armada-default"
C0 = "jobs[0].podSpec.containers[0]"


def res(cpu: str | None = "1", memory: str | None = "4Gi", **extra: str) -> dict:
    out = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    out.update({(GPU if k == "gpu" else k): v for k, v in extra.items()})
    return out


def container(
    name: str = "main", cpu: str | None = "1", memory: str | None = "4Gi", **fields
) -> dict:
    """A valid container whose requests equal its limits; ``fields`` override any key."""
    extra = {k: fields.pop(k) for k in list(fields) if k == "gpu"}
    requests = res(cpu, memory, **extra)
    c = {
        "name": name,
        "image": "busybox:1.36",
        "resources": {"requests": requests, "limits": dict(requests)},
    }
    c.update(fields)
    return c


def job(
    *containers: dict, init: list[dict] | None = None, pod: dict | None = None, **fields
) -> dict:
    pod_spec = {"containers": list(containers) or [container()]}
    if init is not None:
        pod_spec["initContainers"] = init
    pod_spec.update(pod or {})
    return {"podSpec": pod_spec, **fields}


def container_with(resources) -> dict:
    c = container()
    if resources is _DROP:
        del c["resources"]
    else:
        c["resources"] = resources
    return c


def annotated(annotations: dict) -> dict:
    return job(annotations=annotations)


def job_file(*jobs: dict, queue="q", job_set="set-1", **fields) -> dict:
    out = {"queue": queue, "jobSetId": job_set, "jobs": list(jobs) or [job()]}
    out.update(fields)
    return {k: v for k, v in out.items() if v is not _DROP}


_DROP = object()


def parse(data, *, default_class: str = DEFAULT_CLASS, max_jobs: int = 100) -> JobFile:
    return parse_job_file(
        data, priority_classes=CLASSES, default_priority_class=default_class, max_jobs=max_jobs
    )


def errors_of(data, **kw) -> list[tuple[str, str]]:
    with pytest.raises(ValidationFailed) as info:
        parse(data, **kw)
    assert info.value.errors
    return [(e.field, e.message) for e in info.value.errors]


def fields_of(data, **kw) -> list[str]:
    return [f for f, _ in errors_of(data, **kw)]


def cpu(n: float) -> int:
    return int(n * 1000)


def gi(n: float) -> int:
    return int(n * 1024**3 * 1000)


# --- valid files ------------------------------------------------------------------------------


def test_valid_file():
    data = job_file(
        job(
            container("main", cpu="2", memory="8Gi"),
            priority=3,
            namespace="team-a",
            labels={"app": "x"},
            annotations={"note": "hello"},
            pod={
                "nodeSelector": {"zone": "a"},
                "tolerations": [{"key": "gpu", "operator": "Exists"}],
            },
        ),
        job(),
        queue="analytics",
        job_set="nightly",
    )
    result = parse(data)
    assert (result.queue, result.job_set, len(result.jobs)) == ("analytics", "nightly", 2)
    first, second = result.jobs
    assert first.priority == 3
    assert first.namespace == "team-a"
    assert first.priority_class == DEFAULT_CLASS
    assert first.requests == Resources({"cpu": cpu(2), "memory": gi(8)})
    assert first.labels == {"app": "x"}
    assert first.annotations == {"note": "hello"}
    assert first.pod_spec == data["jobs"][0]["podSpec"]
    assert (
        first.gang_id,
        first.gang_cardinality,
        first.gang_uniformity_label,
        first.fail_fast,
    ) == ("", 1, "", False)
    assert second.priority == 0
    assert second.namespace == "default"
    assert second.labels == {} and second.annotations == {}
    assert second.requests == Resources({"cpu": cpu(1), "memory": gi(4)})


def test_parse_does_not_modify_its_input():
    data = job_file(job(), job(annotations={GANG_ID: "g", GANG_CARDINALITY: "2"}))
    before = copy.deepcopy(data)
    result = parse(data)
    result.jobs[0].pod_spec["extra"] = 1
    assert data == before


@pytest.mark.parametrize(
    ("pod_class", "default_class", "expected"),
    [
        (None, "armada-default", "armada-default"),
        (None, "armada-preemptible", "armada-preemptible"),
        ("", "armada-preemptible", "armada-preemptible"),
        ("armada-preemptible", "armada-default", "armada-preemptible"),
        ("armada-default", "armada-preemptible", "armada-default"),
    ],
    ids=[
        "default-applied",
        "other-default-applied",
        "empty-means-default",
        "explicit-kept",
        "explicit-over-default",
    ],
)
def test_priority_class(pod_class, default_class, expected):
    pod = {} if pod_class is None else {"priorityClassName": pod_class}
    assert (
        parse(job_file(job(pod=pod)), default_class=default_class).jobs[0].priority_class
        == expected
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [(0, 0), (7, 7), (3.0, 3), (MAX_PRIORITY, MAX_PRIORITY)],
    ids=["zero", "seven", "whole-float", "maximum"],
)
def test_priority_accepted(value, expected):
    assert parse(job_file(job(priority=value))).jobs[0].priority == expected


@pytest.mark.parametrize(
    ("containers", "init", "cpu_", "memory"),
    [
        ([container("a", "1", "4Gi")], None, 1, 4),
        ([container("a", "1", "4Gi"), container("b", "2", "1Gi")], None, 3, 5),
        (
            [container("a", "1", "4Gi"), container("b", "2", "1Gi")],
            [container("i", "4", "1Gi")],
            4,
            5,
        ),
        (
            [container("a", "1", "4Gi"), container("b", "2", "1Gi")],
            [container("i", "1", "8Gi")],
            3,
            8,
        ),
        (
            [container("a", "1", "4Gi"), container("b", "2", "1Gi")],
            [container("i", "2", "2Gi")],
            3,
            5,
        ),
        (
            [container("a", "1", "4Gi"), container("b", "2", "1Gi")],
            [container("i", "4", "1Gi"), container("j", "1", "8Gi")],
            4,
            8,
        ),
        ([container("a", "500m", "512Mi")], [container("i", "250m", "256Mi")], 0.5, 0.5),
        ([container("a", "1", "4Gi")], [], 1, 4),
    ],
    ids=[
        "one-container",
        "containers-sum",
        "init-cpu-larger",
        "init-memory-larger",
        "init-smaller-ignored",
        "max-over-init-containers-per-resource",
        "milli-units",
        "empty-init-list",
    ],
)
def test_pod_requests_sum_of_containers_or_largest_init_container(containers, init, cpu_, memory):
    spec = parse(job_file(job(*containers, init=init))).jobs[0]
    assert spec.requests == Resources({"cpu": cpu(cpu_), "memory": gi(memory)})


def test_requests_and_limits_compare_by_amount_not_spelling():
    c = container_with(
        {"requests": res(cpu="1000m", memory="4Gi"), "limits": res(cpu="1", memory="4096Mi")}
    )
    assert parse(job_file(job(c))).jobs[0].requests == Resources({"cpu": cpu(1), "memory": gi(4)})


def test_extended_resources_are_carried():
    spec = parse(job_file(job(container("a", gpu="2"), init=[container("i", gpu="4")]))).jobs[0]
    assert spec.requests[GPU] == 4000
    spec = parse(job_file(job(container("a", gpu="1"), container("b", gpu="1")))).jobs[0]
    assert spec.requests[GPU] == 2000


@pytest.mark.parametrize(
    ("annotations", "fail_fast"),
    [
        ({}, False),
        ({FAIL_FAST: "false"}, False),
        ({FAIL_FAST: "true"}, True),
        ({GANG_ID: "g", GANG_CARDINALITY: "1"}, False),
        ({GANG_ID: "g", GANG_CARDINALITY: "2"}, True),
        ({GANG_ID: "g", GANG_CARDINALITY: "3", FAIL_FAST: "false"}, True),
    ],
    ids=[
        "absent",
        "false",
        "true",
        "gang-of-one",
        "gang-implies-fail-fast",
        "gang-overrides-false",
    ],
)
def test_fail_fast(annotations, fail_fast):
    assert parse(job_file(annotated(annotations))).jobs[0].fail_fast is fail_fast


def test_gang_annotations_parsed():
    spec = parse(
        job_file(
            annotated({GANG_ID: "train-1", GANG_CARDINALITY: " 4 ", GANG_UNIFORMITY_LABEL: "zone"})
        )
    ).jobs[0]
    assert (spec.gang_id, spec.gang_cardinality, spec.gang_uniformity_label) == (
        "train-1",
        4,
        "zone",
    )


def test_valid_fake_backend_annotations_are_kept():
    annotations = {
        "fake.armadaproject.io/duration": "30s",
        "fake.armadaproject.io/pendingDuration": "500ms",
        "fake.armadaproject.io/exitCode": "3",
        "fake.armadaproject.io/condition": "OOMKilled",
        "fake.armadaproject.io/terminationMessage": "boom",
        "fake.armadaproject.io/podError": "ImagePullBackOff",
    }
    assert parse(job_file(annotated(annotations))).jobs[0].annotations == annotations


def test_other_annotations_are_not_checked():
    annotations = {"example.com/anything": "goes", "armadaproject.io/somethingElse": "x"}
    assert parse(job_file(annotated(annotations))).jobs[0].annotations == annotations


def test_annotations_up_to_256_kib_are_kept():
    """A fake-backend log may be long: up to the cap, keys and values together."""
    key = "fake.armadaproject.io/log"
    annotations = {key: "line\n" * ((256 * 1024 - len(key)) // 5)}
    assert parse(job_file(annotated(annotations))).jobs[0].annotations == annotations


def test_valid_labels_are_kept():
    labels = {"app": "train", "example.com/team": "", "Tier_2": "v1.2-rc_3"}
    assert parse(job_file(job(labels=labels))).jobs[0].labels == labels


def test_exactly_max_jobs_is_accepted():
    assert len(parse(job_file(*[job()] * 3), max_jobs=3).jobs) == 3


# --- errors, each with its exact field -------------------------------------------------------


FIELD_CASES = [
    # (id, data, fields, fragment of the first message)
    ("missing-queue", job_file(queue=_DROP), ["queue"], "is required"),
    ("empty-queue", job_file(queue=""), ["queue"], "is required"),
    ("queue-not-a-string", job_file(queue=5), ["queue"], "is required"),
    ("missing-job-set", job_file(job_set=_DROP), ["jobSetId"], "is required"),
    ("blank-job-set", job_file(job_set="   "), ["jobSetId"], "is required"),
    ("job-set-too-long", job_file(job_set="x" * 1025), ["jobSetId"], "at most 1024 characters"),
    ("missing-jobs", {"queue": "q", "jobSetId": "s"}, ["jobs"], "at least one job is required"),
    ("empty-jobs", job_file() | {"jobs": []}, ["jobs"], "at least one job is required"),
    (
        "jobs-not-a-list",
        job_file() | {"jobs": {"podSpec": {}}},
        ["jobs"],
        "at least one job is required",
    ),
    ("missing-everything", {}, ["queue", "jobSetId", "jobs"], "is required"),
    (
        "unknown-file-field",
        job_file(priority=1),
        ["priority"],
        "unknown field; allowed: jobSetId, jobs, queue",
    ),
    (
        "unknown-file-fields-sorted",
        job_file(zeta=1, alpha=2),
        ["alpha", "zeta"],
        "unknown field",
    ),
    (
        "unknown-keys-of-mixed-types",
        job_file() | {1: "x", "extra": "y"},
        ["1", "extra"],
        "unknown field",
    ),
    ("job-not-a-mapping", job_file("not a job"), ["jobs[0]"], "must be a mapping"),
    (
        "unknown-job-field",
        job_file(job(image="busybox")),
        ["jobs[0].image"],
        "unknown field; allowed: annotations, clientId, ingress, labels, namespace, podSpec, priority, services",
    ),
    (
        "misspelt-pod-spec",
        job_file({"podspec": {"containers": [container()]}}),
        ["jobs[0].podspec", "jobs[0].podSpec"],
        "unknown field",
    ),
    (
        "missing-pod-spec",
        job_file({"priority": 1}),
        ["jobs[0].podSpec"],
        "is required and must be a mapping",
    ),
    (
        "pod-spec-not-a-mapping",
        job_file({"podSpec": []}),
        ["jobs[0].podSpec"],
        "is required and must be a mapping",
    ),
    (
        "no-containers",
        job_file({"podSpec": {}}),
        ["jobs[0].podSpec.containers"],
        "at least one container",
    ),
    (
        "empty-containers",
        job_file({"podSpec": {"containers": []}}),
        ["jobs[0].podSpec.containers"],
        "at least one",
    ),
    ("container-not-a-mapping", job_file(job("main")), [C0], "must be a mapping"),
    ("container-without-name", job_file(job(container(name=None))), [f"{C0}.name"], "RFC 1123"),
    ("container-bad-name", job_file(job(container(name="Main_1"))), [f"{C0}.name"], "RFC 1123"),
    (
        "duplicate-container-names",
        job_file(job(container("a"), container("a"))),
        ["jobs[0].podSpec.containers[1].name"],
        "duplicate container name 'a'",
    ),
    ("container-without-image", job_file(job(container(image=""))), [f"{C0}.image"], "is required"),
    (
        "container-without-resources",
        job_file(job(container_with(_DROP))),
        [f"{C0}.resources"],
        "is required: set requests and limits (equal) for cpu and memory",
    ),
    (
        "resources-not-a-mapping",
        job_file(job(container_with("1 cpu"))),
        [f"{C0}.resources"],
        "is required",
    ),
    (
        "resources-without-limits",
        job_file(job(container_with({"requests": res()}))),
        [f"{C0}.resources.limits"],
        "is required and must not be empty",
    ),
    (
        "resources-with-empty-requests",
        job_file(job(container_with({"requests": {}, "limits": res()}))),
        [f"{C0}.resources.requests"],
        "is required and must not be empty",
    ),
    (
        "requests-differ-from-limits",
        job_file(job(container_with({"requests": res(cpu="1"), "limits": res(cpu="2")}))),
        [f"{C0}.resources"],
        "requests and limits must be equal",
    ),
    (
        "limits-have-an-extra-resource",
        job_file(job(container_with({"requests": res(), "limits": res(gpu="1")}))),
        [f"{C0}.resources"],
        "requests and limits must be equal",
    ),
    (
        "missing-cpu",
        job_file(job(container(cpu=None))),
        [f"{C0}.resources.requests.cpu"],
        "is required and must be greater than zero",
    ),
    (
        "missing-memory",
        job_file(job(container(memory=None))),
        [f"{C0}.resources.requests.memory"],
        "is required and must be greater than zero",
    ),
    (
        "zero-cpu",
        job_file(job(container(cpu="0"))),
        [f"{C0}.resources.requests.cpu"],
        "greater than zero",
    ),
    (
        "init-container-missing-memory",
        job_file(job(init=[container("init", memory=None)])),
        ["jobs[0].podSpec.initContainers[0].resources.requests.memory"],
        "greater than zero",
    ),
    (
        "init-container-without-resources",
        job_file(job(init=[{"name": "init", "image": "x"}])),
        ["jobs[0].podSpec.initContainers[0].resources"],
        "is required",
    ),
    (
        "init-containers-not-a-list",
        job_file(job(pod={"initContainers": "x"})),
        ["jobs[0].podSpec.initContainers"],
        "must be a list",
    ),
    (
        "init-container-not-a-mapping",
        job_file(job(init=["x"])),
        ["jobs[0].podSpec.initContainers[0]"],
        "must be a mapping",
    ),
    (
        "negative-priority",
        job_file(job(priority=-1)),
        ["jobs[0].priority"],
        "whole number from 0 to 4294967295",
    ),
    ("fractional-priority", job_file(job(priority=1.5)), ["jobs[0].priority"], "whole number"),
    ("string-priority", job_file(job(priority="1")), ["jobs[0].priority"], "whole number"),
    ("bool-priority", job_file(job(priority=True)), ["jobs[0].priority"], "whole number"),
    (
        "priority-too-large",
        job_file(job(priority=MAX_PRIORITY + 1)),
        ["jobs[0].priority"],
        "whole number",
    ),
    ("bad-namespace", job_file(job(namespace="Team_A")), ["jobs[0].namespace"], "RFC 1123"),
    (
        "annotations-not-a-mapping",
        job_file(job(annotations=["a"])),
        ["jobs[0].annotations"],
        "mapping of strings",
    ),
    (
        "annotation-value-not-a-string",
        job_file(annotated({GANG_ID: "g", GANG_CARDINALITY: 2})),
        [f"jobs[0].annotations[{GANG_CARDINALITY}]", f"jobs[0].annotations[{GANG_CARDINALITY}]"],
        "quote numbers and booleans",
    ),
    (
        "label-value-not-a-string",
        job_file(job(labels={"on": True})),
        ["jobs[0].labels[on]"],
        "quote numbers",
    ),
    (
        "annotation-key-not-a-qualified-name",
        job_file(annotated({"my note": "x", "example.com/ok": "y"})),
        ["jobs[0].annotations[my note]"],
        "(the key) the name 'my note' must be letters, digits",
    ),
    (
        "annotation-key-prefix-not-a-subdomain",
        job_file(annotated({"Example.com/note": "x"})),
        ["jobs[0].annotations[Example.com/note]"],
        "must be a DNS subdomain",
    ),
    (
        "annotations-over-256-kib",
        job_file(annotated({"fake.armadaproject.io/log": "x" * (256 * 1024)})),
        ["jobs[0].annotations"],
        "at most 262144 (256 KiB) are accepted",
    ),
    (
        "label-key-not-a-qualified-name",
        job_file(job(labels={"-app": "x"})),
        ["jobs[0].labels[-app]"],
        "starting and ending with a letter or digit",
    ),
    (
        "label-value-too-long",
        job_file(job(labels={"app": "x" * 64})),
        ["jobs[0].labels[app]"],
        "at most 63 characters",
    ),
    (
        "unknown-priority-class",
        job_file(job(pod={"priorityClassName": "urgent"})),
        ["jobs[0].podSpec.priorityClassName"],
        "unknown priority class 'urgent'; known: armada-default, armada-preemptible",
    ),
    (
        "priority-class-not-a-string",
        job_file(job(pod={"priorityClassName": ["armada-default"]})),
        ["jobs[0].podSpec.priorityClassName"],
        "unknown priority class",
    ),
    (
        "node-selector-value-not-a-string",
        job_file(job(pod={"nodeSelector": {"gpu": True}})),
        ["jobs[0].podSpec.nodeSelector[gpu]"],
        "quote numbers",
    ),
    (
        "node-selector-not-a-mapping",
        job_file(job(pod={"nodeSelector": "zone=a"})),
        ["jobs[0].podSpec.nodeSelector"],
        "mapping",
    ),
    (
        "tolerations-not-a-list",
        job_file(job(pod={"tolerations": {"key": "x"}})),
        ["jobs[0].podSpec.tolerations"],
        "must be a list",
    ),
    (
        "fail-fast-yes",
        job_file(annotated({FAIL_FAST: "yes"})),
        [f"jobs[0].annotations[{FAIL_FAST}]"],
        '"true" or "false"',
    ),
    (
        "fail-fast-capitalised",
        job_file(annotated({FAIL_FAST: "True"})),
        [f"jobs[0].annotations[{FAIL_FAST}]"],
        '"true"',
    ),
    (
        "fail-fast-empty",
        job_file(annotated({FAIL_FAST: ""})),
        [f"jobs[0].annotations[{FAIL_FAST}]"],
        '"true"',
    ),
    (
        "gang-cardinality-without-id",
        job_file(annotated({GANG_CARDINALITY: "2"})),
        [f"jobs[0].annotations[{GANG_ID}]"],
        f"is required when {GANG_CARDINALITY} is set",
    ),
    (
        "gang-id-without-cardinality",
        job_file(annotated({GANG_ID: "g"})),
        [f"jobs[0].annotations[{GANG_CARDINALITY}]"],
        f"is required when {GANG_ID} is set",
    ),
    (
        "gang-cardinality-zero",
        job_file(annotated({GANG_ID: "g", GANG_CARDINALITY: "0"})),
        [f"jobs[0].annotations[{GANG_CARDINALITY}]"],
        "whole number of at least 1",
    ),
    (
        "gang-cardinality-not-a-number",
        job_file(annotated({GANG_ID: "g", GANG_CARDINALITY: "two"})),
        [f"jobs[0].annotations[{GANG_CARDINALITY}]"],
        "whole number of at least 1",
    ),
    (
        "gang-cardinality-fractional",
        job_file(annotated({GANG_ID: "g", GANG_CARDINALITY: "1.5"})),
        [f"jobs[0].annotations[{GANG_CARDINALITY}]"],
        "whole number",
    ),
    (
        "gang-cardinality-bad-and-no-id",
        job_file(annotated({GANG_CARDINALITY: "-3"})),
        [f"jobs[0].annotations[{GANG_CARDINALITY}]", f"jobs[0].annotations[{GANG_ID}]"],
        "whole number",
    ),
    (
        "gang-cardinality-beyond-32-bits",
        job_file(annotated({GANG_ID: "g", GANG_CARDINALITY: "2147483648"})),
        [f"jobs[0].annotations[{GANG_CARDINALITY}]"],
        "whole number of at least 1 and at most 2147483647",
    ),
    (
        "gang-cardinality-sign",
        job_file(annotated({GANG_ID: "g", GANG_CARDINALITY: "+3"})),
        [f"jobs[0].annotations[{GANG_CARDINALITY}]"],
        "whole number",
    ),
    (
        "gang-cardinality-underscore",
        job_file(annotated({GANG_ID: "g", GANG_CARDINALITY: "3_000"})),
        [f"jobs[0].annotations[{GANG_CARDINALITY}]"],
        "whole number",
    ),
    (
        "gang-cardinality-other-digits",
        job_file(annotated({GANG_ID: "g", GANG_CARDINALITY: "\u0663"})),
        [f"jobs[0].annotations[{GANG_CARDINALITY}]"],
        "whole number",
    ),
    (
        "gang-id-too-long",
        job_file(annotated({GANG_ID: "g" * 256, GANG_CARDINALITY: "2"})),
        [f"jobs[0].annotations[{GANG_ID}]"],
        "at most 255 characters",
    ),
    (
        "gang-uniformity-label-too-long",
        job_file(
            annotated({GANG_ID: "g", GANG_CARDINALITY: "2", GANG_UNIFORMITY_LABEL: "z" * 256})
        ),
        [f"jobs[0].annotations[{GANG_UNIFORMITY_LABEL}]"],
        "at most 255 characters",
    ),
    (
        "namespace-trailing-newline",
        job_file(job(namespace="team\n")),
        ["jobs[0].namespace"],
        "RFC 1123",
    ),
    (
        "container-name-trailing-newline",
        job_file(job(container(name="main\n"))),
        [f"{C0}.name"],
        "RFC 1123",
    ),
    (
        "bad-quantity-reported-once",
        job_file(job(container(memory="lots"))),
        [f"{C0}.resources.requests.memory", f"{C0}.resources.limits.memory"],
        "'lots' is not a quantity",
    ),
    (
        "containers-together-beyond-any-quantity",
        job_file(
            job(
                container("a", memory=str(2**62 // 1000 + 1)),
                container("b", memory=str(2**62 // 1000 + 1)),
            )
        ),
        ["jobs[0].podSpec.containers"],
        "the containers together ask for more memory than any quantity can hold",
    ),
    (
        "fake-duration-beyond-100-years",
        job_file(annotated({"fake.armadaproject.io/duration": "9" * 400 + "s"})),
        ["jobs[0].annotations[fake.armadaproject.io/duration]"],
        "at most 100 years",
    ),
    (
        "fake-unknown-annotation",
        job_file(annotated({"fake.armadaproject.io/exitcode": "1"})),
        ["jobs[0].annotations[fake.armadaproject.io/exitcode]"],
        "unknown fake-backend annotation",
    ),
    (
        "fake-bad-duration",
        job_file(annotated({"fake.armadaproject.io/duration": "forever"})),
        ["jobs[0].annotations[fake.armadaproject.io/duration]"],
        "is not a duration",
    ),
    (
        "fake-exit-code-out-of-range",
        job_file(annotated({"fake.armadaproject.io/exitCode": "256"})),
        ["jobs[0].annotations[fake.armadaproject.io/exitCode]"],
        "between 0 and 255",
    ),
    (
        "fake-bad-condition",
        job_file(annotated({"fake.armadaproject.io/condition": "Crashed"})),
        ["jobs[0].annotations[fake.armadaproject.io/condition]"],
        "must be one of OOMKilled, Evicted, DeadlineExceeded",
    ),
    (
        "error-in-a-later-job",
        job_file(
            job(),
            job(),
            job(
                container(name="x", cpu="2", memory="1Gi")
                | {"resources": {"requests": res(), "limits": res(cpu="2")}}
            ),
        ),
        ["jobs[2].podSpec.containers[0].resources"],
        "requests and limits must be equal",
    ),
]


@pytest.mark.parametrize(
    ("data", "fields", "fragment"),
    [case[1:] for case in FIELD_CASES],
    ids=[case[0] for case in FIELD_CASES],
)
def test_error_fields(data, fields, fragment):
    errors = errors_of(data)
    assert [f for f, _ in errors] == fields, errors
    assert fragment in errors[0][1]


def test_too_many_jobs():
    errors = errors_of(job_file(*[job()] * 4), max_jobs=3)
    assert errors == [("jobs", "4 jobs in one request; at most 3 are accepted, split the file")]


def test_too_many_jobs_skips_checking_each_job():
    assert fields_of(job_file(*[{"bad": 1}] * 4), max_jobs=3) == ["jobs"]


@pytest.mark.parametrize(
    "data", [None, [], "queue: q", 3], ids=["none", "list", "string", "number"]
)
def test_file_must_be_a_mapping(data):
    assert errors_of(data) == [("", "a job file is a mapping with queue, jobSetId and jobs")]


@pytest.mark.parametrize(
    ("quantity", "fragment"),
    [
        ("lots", "'lots' is not a quantity"),
        ("-1", "'-1' is not a quantity"),
        ("1Kb", "is not a quantity"),
    ],
    ids=["word", "negative", "bad-suffix"],
)
def test_bad_quantity_names_requests_and_limits(quantity, fragment):
    errors = errors_of(job_file(job(container(cpu=quantity))))
    assert {f for f, _ in errors} == {f"{C0}.resources.requests.cpu", f"{C0}.resources.limits.cpu"}
    assert errors[0] == (f"{C0}.resources.requests.cpu", errors[0][1])
    assert fragment in errors[0][1]
    assert errors[1][0] == f"{C0}.resources.limits.cpu" and fragment in errors[1][1]


def test_every_problem_of_every_job_is_reported():
    data = job_file(
        job(container(cpu="0"), priority=-1),
        job(),
        job(annotations={FAIL_FAST: "maybe"}, namespace="UPPER"),
        queue="",
    )
    assert fields_of(data) == [
        "queue",
        "jobs[0].priority",
        f"{C0}.resources.requests.cpu",
        "jobs[2].namespace",
        f"jobs[2].annotations[{FAIL_FAST}]",
    ]


def test_validation_failed_str_lists_every_error():
    with pytest.raises(ValidationFailed) as info:
        parse(job_file(queue="", job_set=""))
    assert str(info.value) == "queue: is required; jobSetId: is required"
