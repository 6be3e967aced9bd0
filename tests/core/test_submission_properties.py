"""Properties of armada.core.submission, checked on generated job files.

- Any input is accepted or refused with ValidationFailed, never another exception, and every
  error names a field path of the input (or a known field the input lacks).
- Generated valid files are accepted with the values written (priorities, namespaces, the
  pod's requests as Kubernetes adds them up), and the parsed form parses to itself.
- Absurd resources (beyond the largest quantity, negative, not a number) are refused naming
  the resource of the container they are in.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from armada.core.errors import ValidationFailed
from armada.core.labels import key_problem, label_value_problem
from armada.core.quantity import CPU, GPU, MAX_MILLI, MEMORY, Resources
from armada.core.submission import (
    FAIL_FAST,
    GANG_CARDINALITY,
    GANG_ID,
    GANG_UNIFORMITY_LABEL,
    MAX_PRIORITY,
    JobFile,
    parse_job_file,
)
from tests.core.test_policy_properties import (
    FIELD_SETTINGS,
    HUGE_NUMBERS,
    NASTY_STRINGS,
    PROPERTY_SETTINGS,
    check_any_input,
    corrupted,
    junk,
    very_long,
)

CLASSES = {"armada-default": object(), "armada-preemptible": object()}
DEFAULT_CLASS = "armada-default"
MAX_JOBS = 20

FILE_KEYS = [
    "queue",
    "jobSetId",
    "jobs",
    "priority",
    "namespace",
    "annotations",
    "labels",
    "podSpec",
    "containers",
    "initContainers",
    "priorityClassName",
    "nodeSelector",
    "tolerations",
    "name",
    "image",
    "resources",
    "requests",
    "limits",
    CPU,
    MEMORY,
    GPU,
    GANG_ID,
    GANG_CARDINALITY,
    FAIL_FAST,
]
KNOWN_FIELDS = frozenset(FILE_KEYS)


def parse(data: Any, max_jobs: int = MAX_JOBS) -> JobFile:
    return parse_job_file(
        data, priority_classes=CLASSES, default_priority_class=DEFAULT_CLASS, max_jobs=max_jobs
    )


# --- strategies -------------------------------------------------------------------------------

_ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789"
# RFC 1123 labels, built directly (quicker to draw than from a regular expression).
labels_ = st.builds(
    lambda first, middle, last: first + middle + last,
    st.sampled_from(_ALNUM),
    st.text(alphabet=_ALNUM + "-", max_size=12),
    st.sampled_from(["", *_ALNUM]),
).map(lambda s: s if not s.endswith("-") else s + "x")
_CPU_SPELLINGS = [("m", 1), ("", 1000)]
_MEMORY_SPELLINGS = [("", 1000), ("Ki", 2**10 * 1000), ("Mi", 2**20 * 1000), ("Gi", 2**30 * 1000)]


# Strategies are built once, here: building them inside the draws costs more than drawing.


@st.composite
def quantities(draw, spellings: list[tuple[str, int]], low: int = 1) -> tuple[Any, int]:
    """(how it is written, milli-units)."""
    suffix, scale = draw(st.sampled_from(spellings))
    n = draw(st.integers(low, 4096))
    written: Any = f"{n}{suffix}" if suffix or draw(st.booleans()) else n
    return written, n * scale


cpu_quantities = quantities(_CPU_SPELLINGS)
memory_quantities = quantities(_MEMORY_SPELLINGS)
gpu_quantities = st.none() | quantities([("", 1000)], low=0)
images = st.sampled_from(["busybox", "busybox:1.36", "ghcr.io/x/y@sha256:ab"])
commands = st.none() | st.lists(st.text(max_size=8), max_size=3)


@st.composite
def containers(draw) -> tuple[dict[str, Any], Resources]:
    """A container without its name, and what it asks for."""
    cpu_w, cpu_m = draw(cpu_quantities)
    mem_w, mem_m = draw(memory_quantities)
    written = {CPU: cpu_w, MEMORY: mem_w}
    amounts = {CPU: cpu_m, MEMORY: mem_m}
    gpu = draw(gpu_quantities)
    if gpu is not None:
        written[GPU], amounts[GPU] = gpu
    container = {
        "image": draw(images),
        "resources": {"requests": written, "limits": dict(written)},
    }
    command = draw(commands)
    if command is not None:
        container["command"] = command
    return container, Resources(amounts)


main_containers = st.lists(containers(), min_size=1, max_size=2)
init_containers = st.none() | st.lists(containers(), max_size=2)
container_names = st.lists(labels_, min_size=4, max_size=4, unique=True)
priority_classes = st.none() | st.sampled_from(sorted(CLASSES))
node_selectors = st.none() | st.dictionaries(st.text(max_size=8), st.text(max_size=8))


@st.composite
def pod_specs(draw) -> tuple[dict[str, Any], Resources, str]:
    """A valid pod spec, what it asks for, and its priority class."""
    names = iter(draw(container_names))
    main = draw(main_containers)
    total = Resources()
    for c, r in main:
        c["name"] = next(names)
        total = total + r
    pod: dict[str, Any] = {"containers": [c for c, _ in main]}
    init = draw(init_containers)
    if init is not None:
        for c, r in init:
            c["name"] = next(names)
            total = total.maximum(r)
        pod["initContainers"] = [c for c, _ in init]
    pc = draw(priority_classes)
    if pc is not None:
        pod["priorityClassName"] = pc
    selector = draw(node_selectors)
    if selector is not None:
        pod["nodeSelector"] = selector
    if draw(st.booleans()):
        pod["tolerations"] = [{"key": "gpu", "operator": "Exists"}]
    return pod, total, pc or DEFAULT_CLASS


# Kubernetes label names (``core.labels``): letters, digits, '-', '_', '.', alphanumeric at
# both ends; keys with an optional DNS-subdomain prefix; label values empty or a name.
_NAME_CHARS = _ALNUM + "ABCXYZ-_."
label_names = st.builds(
    lambda first, middle: first + middle,
    st.sampled_from(_ALNUM + "ABZ"),
    st.text(alphabet=_NAME_CHARS, max_size=10),
).map(lambda s: s if s[-1].isalnum() else s + "x")
qualified_keys = st.builds(
    lambda prefix, name: f"{prefix}/{name}" if prefix else name,
    st.none() | st.lists(labels_, min_size=1, max_size=3).map(".".join),
    label_names,
)
label_values = st.just("") | label_names
plain_annotations = st.dictionaries(
    qualified_keys.filter(lambda k: "armadaproject.io/" not in k), st.text(max_size=12)
)
priorities = st.none() | st.integers(0, MAX_PRIORITY)
namespaces = st.none() | labels_
gangs = st.none() | st.tuples(st.text(min_size=1, max_size=20), st.integers(1, 50))
fail_fasts = st.sampled_from([None, "true", "false"])
job_labels = st.dictionaries(qualified_keys, label_values, max_size=3)


@st.composite
def jobs(draw) -> tuple[dict[str, Any], dict[str, Any]]:
    """A valid job and the fields its JobSpec must have."""
    pod, total, pc = draw(pod_specs())
    job: dict[str, Any] = {"podSpec": pod}
    expected: dict[str, Any] = {"requests": total, "priority_class": pc, "pod_spec": pod}
    priority = draw(priorities)
    if priority is not None:
        job["priority"] = float(priority) if draw(st.booleans()) else priority
    expected["priority"] = priority or 0
    namespace = draw(namespaces)
    if namespace is not None:
        job["namespace"] = namespace
    expected["namespace"] = namespace or "default"
    annotations = draw(plain_annotations)
    gang = draw(gangs)
    if gang is not None:
        annotations |= {GANG_ID: gang[0], GANG_CARDINALITY: str(gang[1])}
    fail_fast = draw(fail_fasts)
    if fail_fast is not None:
        annotations[FAIL_FAST] = fail_fast
    if annotations or draw(st.booleans()):
        job["annotations"] = annotations
    expected["annotations"] = annotations
    expected["gang_id"] = gang[0] if gang else ""
    expected["gang_cardinality"] = gang[1] if gang else 1
    expected["fail_fast"] = fail_fast == "true" or (gang is not None and gang[1] > 1)
    labels = draw(job_labels)
    if labels:
        job["labels"] = labels
    expected["labels"] = labels
    return job, expected


queues_ = st.text(min_size=1, max_size=20)
job_sets = st.text(min_size=1, max_size=40).filter(str.strip)


@st.composite
def job_files(draw, max_jobs: int = 3) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    pairs = draw(st.lists(jobs(), min_size=1, max_size=max_jobs))
    doc = {"queue": draw(queues_), "jobSetId": draw(job_sets), "jobs": [j for j, _ in pairs]}
    return doc, [e for _, e in pairs]


file_documents = job_files().map(lambda pair: pair[0])
# For properties about one field: a file of one job is as good, and quicker to draw.
one_job_files = job_files(max_jobs=1).map(lambda pair: pair[0])


def document(job_file: JobFile) -> dict[str, Any]:
    """The parsed file written back as a job file."""
    return {
        "queue": job_file.queue,
        "jobSetId": job_file.job_set,
        "jobs": [
            {
                "priority": spec.priority,
                "namespace": spec.namespace,
                "annotations": spec.annotations,
                "labels": spec.labels,
                "podSpec": spec.pod_spec,
            }
            for spec in job_file.jobs
        ],
    }


# --- properties -------------------------------------------------------------------------------


@PROPERTY_SETTINGS
@given(job_files())
def test_valid_files_are_accepted_as_written(pair):
    doc, expected = pair
    result = parse(doc)
    assert (result.queue, result.job_set) == (doc["queue"], doc["jobSetId"])
    assert len(result.jobs) == len(expected)
    for spec, want in zip(result.jobs, expected, strict=True):
        for name, value in want.items():
            assert getattr(spec, name) == value, name


@PROPERTY_SETTINGS
@given(file_documents)
def test_the_parsed_form_parses_to_itself(doc):
    parsed = parse(doc)
    assert parse(document(parsed)) == parsed


@PROPERTY_SETTINGS
@given(junk(FILE_KEYS))
def test_any_input_is_accepted_or_refused_naming_fields(data):
    check_any_input(parse, data, KNOWN_FIELDS)


@PROPERTY_SETTINGS
@given(corrupted(file_documents, FILE_KEYS))
def test_broken_files_are_refused_naming_fields(data):
    result = check_any_input(parse, data, KNOWN_FIELDS)
    if result is not None:
        assert parse(document(result)) == result


ABSURD_QUANTITIES = st.one_of(
    # beyond the largest quantity (2**63 milli-units)
    st.sampled_from(
        ["8Ei", "9223372036854776", "1e19", "1e400", "16Ei", "10000000P", 2**63, 1e300]
    ),
    st.sampled_from([n for n in HUGE_NUMBERS if n >= 2**63 or n < 0]),
    very_long,
    st.integers(min_value=2**63 // 1000 + 1).map(str),
    # negative
    st.integers(max_value=-1),
    st.floats(max_value=-1e-3),
    st.integers(1, 10**6).map(lambda n: f"-{n}Mi"),
    # not a number
    st.sampled_from(["", "lots", "1Kb", "1 Gi", "0x10", "1e", "--1", "nan", "inf", "1,5", "½"]),
    st.sampled_from(NASTY_STRINGS).filter(lambda s: s.strip() not in ("0", "1e-999999999")),
    st.none(),
    st.booleans(),
    st.floats(allow_nan=True, allow_infinity=True).filter(
        lambda f: f != f or f in (float("inf"), float("-inf"))
    ),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


@PROPERTY_SETTINGS
@given(one_job_files, st.data())
def test_absurd_resources_are_refused_naming_the_resource(doc, data):
    doc = copy.deepcopy(doc)
    j = data.draw(st.integers(0, len(doc["jobs"]) - 1), label="job")
    pod = doc["jobs"][j]["podSpec"]
    i = data.draw(st.integers(0, len(pod["containers"]) - 1), label="container")
    resource = data.draw(st.sampled_from([CPU, MEMORY, GPU]), label="resource")
    value = data.draw(ABSURD_QUANTITIES, label="value")
    both = data.draw(st.booleans(), label="requests and limits")
    resources = pod["containers"][i]["resources"]
    resources["requests"][resource] = value
    if both:
        resources["limits"][resource] = value
    where = f"jobs[{j}].podSpec.containers[{i}].resources"
    with pytest.raises(ValidationFailed) as info:
        parse(doc)
    fields = [e.field for e in info.value.errors]
    assert f"{where}.requests.{resource}" in fields, info.value
    if both:
        assert f"{where}.limits.{resource}" in fields, info.value
    assert all(f.startswith(where) for f in fields), info.value


@FIELD_SETTINGS
@given(one_job_files, st.integers(1, 4))
def test_resources_beyond_the_largest_quantity_in_total_are_refused(doc, n):
    """Containers that each ask for a legal amount but together more than any quantity."""
    doc = copy.deepcopy(doc)
    pod = doc["jobs"][0]["podSpec"]
    taken = {c["name"] for c in pod["containers"]}
    free = (f"big-{c}" for c in range(100) if f"big-{c}" not in taken)
    big = str(MAX_MILLI // 1000 // (n + 1) + 1)  # (n + 1) of these overflow
    for _ in range(n + 1):
        name = next(free)
        pod["containers"].append(
            {
                "name": name,
                "image": "busybox",
                "resources": {
                    "requests": {CPU: "1", MEMORY: big},
                    "limits": {CPU: "1", MEMORY: big},
                },
            }
        )
    with pytest.raises(ValidationFailed) as info:
        parse(doc)
    assert [e.field for e in info.value.errors] == ["jobs[0].podSpec.containers"]
    assert MEMORY in info.value.errors[0].message


@FIELD_SETTINGS
@given(
    one_job_files,
    st.one_of(
        st.integers(-5, 2**40).map(str),
        st.sampled_from(
            ["", " 3", "3 ", "+3", "3_000", "٣", "1.0", "1e3", "2147483648", "9" * 100]
        ),
        st.text(max_size=6),
    ),
)
def test_gang_cardinality_is_a_plain_whole_number_that_fits(doc, written):
    doc = copy.deepcopy(doc)
    doc["jobs"][0]["annotations"] = {GANG_ID: "g", GANG_CARDINALITY: written}
    try:
        spec = parse(doc).jobs[0]
    except ValidationFailed as exc:
        assert [e.field for e in exc.errors] == [f"jobs[0].annotations[{GANG_CARDINALITY}]"]
    else:
        assert re.fullmatch(r"\s*[0-9]+\s*", written)
        assert spec.gang_cardinality == int(written)
        assert 1 <= spec.gang_cardinality <= 2**31 - 1


@FIELD_SETTINGS
@given(
    one_job_files,
    st.sampled_from([GANG_ID, GANG_UNIFORMITY_LABEL]),
    st.text(min_size=1, max_size=600),
)
def test_gang_annotations_have_a_bounded_length(doc, key, value):
    doc = copy.deepcopy(doc)
    doc["jobs"][0]["annotations"] = {GANG_ID: "g", GANG_CARDINALITY: "2", key: value}
    try:
        spec = parse(doc).jobs[0]
    except ValidationFailed as exc:
        assert len(value) > 255
        assert [e.field for e in exc.errors] == [f"jobs[0].annotations[{key}]"]
    else:
        assert len(value) <= 255
        assert value in (spec.gang_id, spec.gang_uniformity_label)


@FIELD_SETTINGS
@given(
    one_job_files,
    st.sampled_from(["annotations", "labels"]),
    st.one_of(qualified_keys, qualified_keys.map(lambda k: k + "\n"), st.text(max_size=70)),
    st.one_of(label_values, st.text(max_size=70)),
)
def test_annotation_and_label_keys_are_taken_only_as_kubernetes_takes_them(doc, where, key, value):
    """Any key (and, for a label, any value) is kept as written when Kubernetes would take
    it, and refused naming it otherwise."""
    doc = copy.deepcopy(doc)
    doc["jobs"][0][where] = {key: value}
    fine = key_problem(key) is None and (where == "annotations" or not label_value_problem(value))
    try:
        spec = parse(doc).jobs[0]
    except ValidationFailed as exc:
        assert not fine
        assert f"jobs[0].{where}[{key}]" in [e.field for e in exc.errors]
    else:
        assert fine
        assert getattr(spec, where)[key] == value


@FIELD_SETTINGS
@given(
    one_job_files,
    st.sampled_from(["namespace", "container"]),
    st.one_of(labels_.map(lambda s: s + "\n"), labels_.map(str.upper), st.text(max_size=70)),
)
def test_accepted_namespaces_and_container_names_are_labels(doc, which, name):
    doc = copy.deepcopy(doc)
    if which == "namespace":
        doc["jobs"][0]["namespace"] = name
        field = "jobs[0].namespace"
    else:
        pod = doc["jobs"][0]["podSpec"]
        pod["containers"] = pod["containers"][:1]
        pod["containers"][0]["name"] = name
        field = "jobs[0].podSpec.containers[0].name"
    try:
        result = parse(doc)
    except ValidationFailed as exc:
        assert field in [e.field for e in exc.errors]
    else:
        if which == "namespace":
            assert result.jobs[0].namespace == name
        assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", name) and len(name) <= 63


@FIELD_SETTINGS
@given(one_job_files, st.integers(MAX_JOBS + 1, 3 * MAX_JOBS))
def test_too_many_jobs_are_refused_whole(doc, n):
    doc = {**doc, "jobs": (doc["jobs"] * n)[:n]}
    with pytest.raises(ValidationFailed) as info:
        parse(doc)
    assert [(e.field, e.message) for e in info.value.errors] == [
        ("jobs", f"{n} jobs in one request; at most {MAX_JOBS} are accepted, split the file")
    ]
