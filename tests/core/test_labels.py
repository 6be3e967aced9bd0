"""armada.core.labels: Kubernetes' rules for label and annotation keys, label values and the
size of a set of annotations."""

from __future__ import annotations

import pytest

from armada.core.labels import (
    MAX_ANNOTATIONS_BYTES,
    annotation_problems,
    key_problem,
    label_problems,
    label_value_problem,
)

KEYS = [
    # (id, key, fragment of the problem or None when valid)
    ("plain", "app", None),
    ("one-character", "a", None),
    ("upper-case-name", "App.Version_2", None),
    ("prefixed", "armadaproject.io/gangId", None),
    ("deep-prefix", "fake.armadaproject.io/log", None),
    ("name-of-63", "a" * 63, None),
    ("prefix-of-253", ".".join(["a" * 63] * 3) + "." + "b" * 61 + "/x", None),
    ("empty", "", "the name (after any prefix) is required"),
    ("name-of-64", "a" * 64, "at most 63 characters"),
    ("prefix-of-254", ".".join(["a" * 63] * 3) + "." + "b" * 62 + "/x", "DNS subdomain"),
    ("starts-with-dash", "-app", "starting and ending with a letter or digit"),
    ("ends-with-dot", "app.", "starting and ending with a letter or digit"),
    ("space", "my app", "letters, digits"),
    ("two-slashes", "a/b/c", "DNS subdomain"),
    ("leading-slash", "/app", "must not start with '/'"),
    ("empty-name", "example.com/", "the name (after any prefix) is required"),
    ("upper-case-prefix", "Example.com/app", "DNS subdomain"),
    ("underscore-in-prefix", "my_co.io/app", "DNS subdomain"),
    ("non-ascii", "équipe", "letters, digits"),
]


LABEL_VALUES = [
    ("empty", "", None),
    ("plain", "team-a", None),
    ("mixed", "v1.2_rc-3", None),
    ("of-63", "a" * 63, None),
    ("of-64", "a" * 64, "at most 63"),
    ("slash", "a/b", "must be empty or"),
    ("space", "a b", "must be empty or"),
    ("ends-with-dash", "a-", "must be empty or"),
]
CASES = [("key-" + c[0], key_problem, *c[1:]) for c in KEYS] + [
    ("value-" + c[0], label_value_problem, *c[1:]) for c in LABEL_VALUES
]


@pytest.mark.parametrize(
    ("rule", "text", "fragment"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_keys_are_qualified_names_and_values_names_or_empty(rule, text, fragment):
    problem = rule(text)
    if fragment is None:
        assert problem is None
    else:
        assert problem is not None and fragment in problem


def test_label_problems_name_each_field_and_check_values_of_good_keys_only():
    problems = label_problems({"ok": "fine", "bad key": "x", "team": "a b"}, "jobs[0].labels")
    assert [(p.field, p.message.split(" ")[0]) for p in problems] == [
        ("jobs[0].labels[bad key]", "(the"),
        ("jobs[0].labels[team]", "must"),
    ]


SIZES = [
    # (id, annotations, whether the size is refused)
    ("empty", {}, False),
    ("exactly-the-cap", {"k": "v" * (MAX_ANNOTATIONS_BYTES - 1)}, False),
    ("one-byte-over", {"k": "v" * MAX_ANNOTATIONS_BYTES}, True),
    ("keys-count", {"k" * 10: "v" * (MAX_ANNOTATIONS_BYTES - 10), "x": ""}, True),
    ("counted-in-utf8-bytes", {"k": "é" * (MAX_ANNOTATIONS_BYTES // 2)}, True),
    ("spread-over-many", {f"k{i}": "v" * 1000 for i in range(300)}, True),
    ("a-long-log-under-the-cap", {"fake.armadaproject.io/log": "line\n" * 50_000}, False),
]


@pytest.mark.parametrize(
    ("annotations", "refused"), [s[1:] for s in SIZES], ids=[s[0] for s in SIZES]
)
def test_annotations_are_at_most_256_kib_keys_and_values_together(annotations, refused):
    problems = annotation_problems(annotations, "jobs[0].annotations")
    if refused:
        [problem] = problems
        assert problem.field == "jobs[0].annotations"
        assert "at most 262144 (256 KiB)" in problem.message
    else:
        assert problems == []


def test_annotation_values_are_free_text_but_keys_are_checked():
    problems = annotation_problems({"note": "any text / at all", "bad key": ""}, "annotations")
    assert [p.field for p in problems] == ["annotations[bad key]"]
