"""Properties of armada.core.queues, checked on generated queue bodies.

- Any input is accepted or refused with ValidationFailed, never another exception, and every
  error names a field path of the input (or a known field the input lacks).
- Generated valid queues are accepted with the values written (lists without repeats), and
  the parsed form written back as a body parses to the same fields.
"""

from __future__ import annotations

import copy
import math
import re
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from armada.core.errors import ValidationFailed
from armada.core.queues import QUEUE_FIELDS, SUBJECT_KINDS, VERBS, parse_queue
from tests.core.test_policy_properties import (
    FIELD_SETTINGS,
    NASTY_STRINGS,
    PROPERTY_SETTINGS,
    check_any_input,
    corrupted,
    huge_numbers,
    junk,
)
from tests.core.test_submission_properties import label_values, qualified_keys

QUEUE_KEYS = sorted(QUEUE_FIELDS | {"subjects", "verbs", "kind", "name"})
KNOWN_FIELDS = frozenset(QUEUE_KEYS)
# Model field names back to the names of the body.
BODY_NAMES = {
    "priority_factor": "priorityFactor",
    "group_owners": "groupOwners",
    "retry_policies": "retryPolicies",
    "resource_limits_by_priority_class_name": "resourceLimitsByPriorityClassName",
}

_ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789"
queue_names = st.builds(
    lambda first, middle, last: first + middle + last,
    st.sampled_from(_ALNUM),
    st.text(alphabet=_ALNUM + "-", max_size=20),
    st.sampled_from(["", *_ALNUM]),
).map(lambda s: s if not s.endswith("-") else s + "x")
user_names = st.text(min_size=1, max_size=12)


@st.composite
def grants(draw) -> tuple[dict[str, Any], dict[str, Any]]:
    subjects = draw(
        st.lists(
            st.fixed_dictionaries({"kind": st.sampled_from(SUBJECT_KINDS), "name": user_names}),
            min_size=1,
            max_size=3,
        )
    )
    verbs = draw(st.lists(st.sampled_from(VERBS), min_size=1, max_size=6))
    return {"subjects": subjects, "verbs": verbs}, {
        "subjects": subjects,
        "verbs": list(dict.fromkeys(verbs)),
    }


@st.composite
def valid_queues(draw, partial: bool = False) -> tuple[dict[str, Any], dict[str, Any]]:
    """A valid queue body and what parse_queue returns for it."""
    body: dict[str, Any] = {}
    out: dict[str, Any] = {}
    if not partial or draw(st.booleans()):
        body["name"] = out["name"] = draw(queue_names)
    if draw(st.booleans()):
        pf = draw(st.floats(min_value=1.0, max_value=1e12) | st.integers(1, 10**6))
        body["priorityFactor"], out["priority_factor"] = pf, float(pf)
    for key, model in (
        ("owners", "owners"),
        ("groupOwners", "group_owners"),
        ("retryPolicies", "retry_policies"),
    ):
        if draw(st.booleans()):
            names = draw(st.lists(user_names, max_size=4))
            body[key], out[model] = names, list(dict.fromkeys(names))
    if draw(st.booleans()):
        pairs = draw(st.lists(grants(), max_size=3))
        body["permissions"] = [p for p, _ in pairs]
        out["permissions"] = [g for _, g in pairs]
    if draw(st.booleans()):
        labels = draw(st.dictionaries(qualified_keys, label_values, max_size=3))
        body["labels"] = out["labels"] = labels
    if draw(st.booleans()):
        body["cordoned"] = out["cordoned"] = draw(st.booleans())
    return body, out


queue_bodies = valid_queues().map(lambda pair: pair[0])


def body_of(fields: dict[str, Any]) -> dict[str, Any]:
    """parse_queue's output written back as a body."""
    return {BODY_NAMES.get(k, k): v for k, v in fields.items()}


# --- properties -------------------------------------------------------------------------------


@PROPERTY_SETTINGS
@given(st.booleans().flatmap(lambda partial: st.tuples(st.just(partial), valid_queues(partial))))
def test_valid_queues_are_accepted_as_written(case):
    partial, (body, expected) = case
    assert parse_queue(body, partial=partial) == expected


@PROPERTY_SETTINGS
@given(queue_bodies)
def test_the_parsed_form_round_trips(body):
    fields = parse_queue(body)
    assert parse_queue(body_of(fields)) == fields
    assert parse_queue(copy.deepcopy(body_of(fields)), partial=True) == fields


@PROPERTY_SETTINGS
@given(junk(QUEUE_KEYS), st.booleans())
def test_any_input_is_accepted_or_refused_naming_fields(data, partial):
    check_any_input(lambda d: parse_queue(d, partial=partial), data, KNOWN_FIELDS)


@PROPERTY_SETTINGS
@given(corrupted(queue_bodies, QUEUE_KEYS), st.booleans())
def test_broken_queues_are_refused_naming_fields(data, partial):
    fields = check_any_input(lambda d: parse_queue(d, partial=partial), data, KNOWN_FIELDS)
    if fields is not None:
        assert parse_queue(body_of(fields), partial=partial) == fields


@FIELD_SETTINGS
@given(
    queue_bodies,
    st.one_of(
        huge_numbers, st.floats(allow_nan=True), st.integers(), st.sampled_from(NASTY_STRINGS)
    ),
)
def test_priority_factor_is_a_finite_number_of_at_least_one(body, pf):
    try:
        fields = parse_queue({**body, "priorityFactor": pf})
    except ValidationFailed as exc:
        assert [e.field for e in exc.errors] == ["priorityFactor"]
    else:
        assert isinstance(pf, int | float) and not isinstance(pf, bool)
        assert math.isfinite(fields["priority_factor"]) and fields["priority_factor"] >= 1.0


@PROPERTY_SETTINGS
@given(
    st.one_of(
        st.text(min_size=1, max_size=70),
        queue_names.map(lambda n: n + "\n"),
        queue_names.map(str.upper),
        st.sampled_from(NASTY_STRINGS),
    )
)
def test_an_accepted_name_is_a_label(name):
    try:
        fields = parse_queue({"name": name})
    except ValidationFailed as exc:
        assert [e.field for e in exc.errors] == ["name"]
    else:
        assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", fields["name"])
        assert len(fields["name"]) <= 63
