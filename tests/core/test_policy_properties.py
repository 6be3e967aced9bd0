"""Properties of armada.core.policy, checked on generated documents.

- Any input at all (random nested mappings, lists and scalars; huge numbers; unicode) is
  either accepted or refused with ValidationFailed, never with another exception.
- Every error names a field path that exists in the input, or a known field that is missing.
- Generated valid policies are accepted with the values written, and
  ``parse_policy(policy_document(p)) == p``.

The helpers at the top (junk values, corruption of valid documents, the field-path check)
are shared with the submission and queue properties.
"""

from __future__ import annotations

import copy
import math
import pickle
import re
from collections.abc import Callable, Mapping
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from armada.core.errors import FieldError, ValidationFailed
from armada.core.policy import (
    API_VERSION,
    FAIL,
    MAX_RETRY_LIMIT,
    RETRY,
    MemoryBump,
    Mutation,
    RetryPolicy,
    Rule,
    parse_policy,
    policy_document,
)

# Reproducible in CI: the same examples every run, and nothing written to disk.
PROPERTY_SETTINGS = settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
# For properties about one field of an otherwise valid document: fewer examples suffice.
FIELD_SETTINGS = settings(PROPERTY_SETTINGS, max_examples=100)

# --- shared: junk -----------------------------------------------------------------------------

HUGE_NUMBERS = [2**31, 2**32, 2**63, 2**64, 10**30, 10**400, -(10**400), 1e308, -1e308]
# Integers of up to 4300 digits, the most a JSON or YAML loader turns into an int (beyond
# that, loading itself fails); built lazily so that no strategy repr prints them.
very_long = st.builds(pow, st.just(10), st.integers(1000, 4299))
huge_numbers = st.sampled_from(HUGE_NUMBERS) | very_long
NASTY_STRINGS = [
    "",
    " ",
    "\n",
    "\x00",
    "a\x00b",
    "abc\n",
    "\nabc",
    "ABC",
    "-1",
    "-1Gi",
    "0",
    "1e999999999",
    "1e-999999999",
    "9" * 400,
    "9" * 400 + "s",
    "99999999999h",
    "8Ei",
    "1_000",
    "٣",
    "nan",
    "inf",
    "Retry",
    "Fail",
    "true",
    "null",
    "💥",
    "x" * 2000,
]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    huge_numbers,
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.sampled_from(NASTY_STRINGS),
)


def junk(keys: list[str]) -> st.SearchStrategy[Any]:
    """Arbitrary YAML/JSON-like values whose mapping keys are often ``keys``."""
    key = st.one_of(
        st.sampled_from(keys),
        st.text(max_size=12),
        st.integers(),
        st.booleans(),
        st.none(),
        st.floats(allow_nan=False),
    )
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(key, inner, max_size=5),
        max_leaves=12,
    )


def _slots(node: Any) -> list[tuple[Any, Any]]:
    """Every (container, key-or-index) inside ``node``, depth first."""
    out: list[tuple[Any, Any]] = []
    items = (
        list(node.items())
        if isinstance(node, dict)
        else list(enumerate(node))
        if isinstance(node, list)
        else []
    )
    for k, v in items:
        out.append((node, k))
        out += _slots(v)
    return out


def _containers(node: Any) -> list[Any]:
    out = [node] if isinstance(node, dict | list) else []
    children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
    for v in children:
        out += _containers(v)
    return out


_ACTIONS = st.sampled_from(["replace", "replace", "delete", "add"])


def corrupted(valid: st.SearchStrategy[Any], keys: list[str]) -> st.SearchStrategy[Any]:
    """A valid document with one to three things broken: a value replaced by junk, a key
    removed, or an unknown (or misplaced known) key added, anywhere in the tree."""
    values = junk(keys)
    new_keys = st.sampled_from(keys) | st.text(max_size=8)

    @st.composite
    def strategy(draw) -> Any:
        doc = copy.deepcopy(draw(valid))
        for _ in range(draw(st.integers(1, 3))):
            action = draw(_ACTIONS)
            slots = _slots(doc)
            if action == "add" or not slots:
                mappings = [c for c in _containers(doc) if isinstance(c, dict)]
                if mappings:
                    target = mappings[draw(st.integers(0, len(mappings) - 1))]
                    target[draw(new_keys)] = draw(values)
                continue
            parent, key = slots[draw(st.integers(0, len(slots) - 1))]
            if action == "delete" and isinstance(parent, dict):
                del parent[key]
            else:
                parent[key] = draw(values)
        return doc

    return strategy()


# --- shared: checking errors ------------------------------------------------------------------


def _walk(path: str, node: Any, known: frozenset[str], top: bool) -> bool:
    """True when ``path`` leads through ``node``; its last step may be a known missing field.

    Paths look like ``jobs[2].podSpec.containers[0].resources`` and
    ``jobs[0].annotations[armadaproject.io/gangId]``; keys may themselves hold dots, so every
    key that fits is tried.
    """
    if not path:
        return True
    if path.startswith("["):
        if isinstance(node, list):
            m = re.match(r"\[(\d+)\]", path)
            return (
                bool(m)
                and int(m[1]) < len(node)
                and _walk(path[m.end() :], node[int(m[1])], known, False)
            )
        if isinstance(node, Mapping):
            for k in node:
                if path.startswith(f"[{k}]") and _walk(
                    path[len(str(k)) + 2 :], node[k], known, False
                ):
                    return True
            m = re.fullmatch(r"\[(.+)\]", path)
            return bool(m) and m[1] in known
        return False
    if not top:
        if not path.startswith("."):
            return False
        path = path[1:]
    if not isinstance(node, Mapping):
        return False
    for k in node:
        s = str(k)
        fits = path.startswith(s) and (len(path) == len(s) or path[len(s)] in ".[")
        if fits and _walk(path[len(s) :], node[k], known, False):
            return True
    return path in known


def assert_rejected_properly(exc: ValidationFailed, data: Any, known: frozenset[str]) -> None:
    """The error lists at least one problem, each with a readable message and a field path
    that exists in ``data`` or is a known field that ``data`` lacks."""
    assert exc.errors, "ValidationFailed with no errors"
    for error in exc.errors:
        assert isinstance(error, FieldError)
        assert isinstance(error.field, str) and isinstance(error.message, str)
        assert error.message.strip(), error
        assert _walk(error.field, data, known, True), (error.field, data)
    assert str(exc)


def check_any_input(parse: Callable[[Any], Any], data: Any, known: frozenset[str]) -> Any:
    """Run ``parse``: it returns, or raises ValidationFailed that names fields properly.
    The input is never modified."""
    before = pickle.dumps(data)
    try:
        result = parse(data)
    except ValidationFailed as exc:
        assert_rejected_properly(exc, data, known)
        result = None
    assert pickle.dumps(data) == before, "the parser modified its input"
    return result


def test_walk_accepts_real_paths_and_refuses_made_up_ones():
    data = {"jobs": [{"annotations": {"a.b/c": "x"}, "podSpec": {"x.y": 1}}]}
    known = frozenset({"containers", "armadaproject.io/gangId"})
    for good in [
        "",
        "jobs",
        "jobs[0]",
        "jobs[0].annotations[a.b/c]",
        "jobs[0].podSpec.x.y",
        "jobs[0].podSpec.containers",
        "jobs[0].annotations[armadaproject.io/gangId]",
    ]:
        assert _walk(good, data, known, True), good
    for bad in ["jobz", "jobs[1]", "jobs[0].colour", "jobs[0].podSpec.x", "jobs.0", "[0]"]:
        assert not _walk(bad, data, known, True), bad


# --- policy strategies ------------------------------------------------------------------------

POLICY_KEYS = sorted(
    {
        "apiVersion",
        "kind",
        "name",
        "retryLimit",
        "defaultAction",
        "rules",
        "action",
        "onCategory",
        "onSubcategory",
        "mutate",
        "affinity",
        "avoidSameNode",
        "resources",
        "memory",
        "factor",
        "static",
        "version",
    }
)
KNOWN_POLICY_FIELDS = frozenset(POLICY_KEYS)

names = st.from_regex(r"\A[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\Z")
labels = st.text(min_size=1, max_size=20)
# A memory bump written as (text, bytes): "512Mi", "1G", "1048576" or a bare integer.
_BINARY = {"": 1, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "k": 10**3, "M": 10**6, "G": 10**9}


@st.composite
def static_bumps(draw) -> tuple[Any, int]:
    suffix = draw(st.sampled_from(sorted(_BINARY)))
    n = draw(st.integers(1, 4096))
    written: Any = f"{n}{suffix}" if suffix or draw(st.booleans()) else n
    return written, n * _BINARY[suffix] * 1000


@st.composite
def valid_rules(draw) -> tuple[dict[str, Any], Rule]:
    action = draw(st.sampled_from([RETRY, FAIL]))
    category = draw(labels)
    doc: dict[str, Any] = {"action": action, "onCategory": category}
    subcategory = draw(st.one_of(st.none(), labels))
    if subcategory is not None:
        doc["onSubcategory"] = subcategory
    mutation = None
    if action == RETRY and draw(st.booleans()):
        mutate: dict[str, Any] = {}
        avoid = False
        if draw(st.booleans()):
            avoid = draw(st.booleans())
            mutate["affinity"] = {"avoidSameNode": avoid}
        bump = None
        if draw(st.booleans()):
            if draw(st.booleans()):
                factor = draw(
                    st.floats(min_value=1.0, max_value=1e6, exclude_min=True) | st.integers(2, 100)
                )
                mutate["resources"] = {"memory": {"factor": factor}}
                bump = MemoryBump(factor=float(factor))
            else:
                written, milli = draw(static_bumps())
                mutate["resources"] = {"memory": {"static": written}}
                bump = MemoryBump(static=milli)
        doc["mutate"] = mutate
        if avoid or bump is not None:
            mutation = Mutation(avoid_same_node=avoid, memory=bump)
    rule = Rule(
        action=action, on_category=category, on_subcategory=subcategory or "", mutate=mutation
    )
    return doc, rule


@st.composite
def valid_policies(draw) -> tuple[dict[str, Any], RetryPolicy]:
    """A valid policy document and the policy it stands for."""
    name = draw(names)
    limit = draw(st.integers(0, MAX_RETRY_LIMIT))
    default = draw(st.sampled_from([RETRY, FAIL]))
    doc: dict[str, Any] = {"name": name, "retryLimit": limit, "defaultAction": default}
    if draw(st.booleans()):
        doc |= {"apiVersion": API_VERSION, "kind": "RetryPolicy"}
    if draw(st.booleans()):
        doc |= {"version": draw(st.integers()), "updatedBy": draw(st.text(max_size=5))}
    rules = draw(st.lists(valid_rules(), max_size=5))
    if rules or draw(st.booleans()):
        doc["rules"] = [d for d, _ in rules]
    return doc, RetryPolicy(
        name=name, retry_limit=limit, default_action=default, rules=tuple(r for _, r in rules)
    )


policy_documents = valid_policies().map(lambda pair: pair[0])


# --- properties -------------------------------------------------------------------------------


@PROPERTY_SETTINGS
@given(valid_policies())
def test_valid_policies_are_accepted_as_written(pair):
    doc, expected = pair
    assert parse_policy(doc) == expected


@PROPERTY_SETTINGS
@given(valid_policies())
def test_document_round_trips(pair):
    policy = parse_policy(pair[0])
    document = policy_document(policy)
    assert parse_policy(document) == policy
    assert policy_document(parse_policy(document)) == document


@PROPERTY_SETTINGS
@given(junk(POLICY_KEYS))
def test_any_input_is_accepted_or_refused_naming_fields(data):
    check_any_input(parse_policy, data, KNOWN_POLICY_FIELDS)


@PROPERTY_SETTINGS
@given(corrupted(policy_documents, POLICY_KEYS))
def test_broken_policies_are_refused_naming_fields(data):
    policy = check_any_input(parse_policy, data, KNOWN_POLICY_FIELDS)
    if policy is not None:
        # Whatever was accepted is a policy the file form can write and read back.
        assert parse_policy(policy_document(policy)) == policy


@FIELD_SETTINGS
@given(
    policy_documents,
    st.one_of(
        st.text(min_size=1, max_size=70),
        names.map(lambda n: n + "\n"),
        names.map(lambda n: n.upper()),
        st.sampled_from(NASTY_STRINGS),
    ),
)
def test_an_accepted_name_is_a_label(doc, name):
    try:
        policy = parse_policy({**doc, "name": name})
    except ValidationFailed as exc:
        assert [e.field for e in exc.errors] == ["name"]
    else:
        assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", policy.name)
        assert len(policy.name) <= 63


@FIELD_SETTINGS
@given(
    policy_documents,
    st.one_of(
        huge_numbers,
        st.floats(),
        st.integers(),
        st.text(max_size=10),
        st.sampled_from(NASTY_STRINGS),
    ),
)
def test_a_bad_memory_factor_is_refused_naming_it(doc, factor):
    doc = {
        **doc,
        "rules": [
            {
                "action": RETRY,
                "onCategory": "oom",
                "mutate": {"resources": {"memory": {"factor": factor}}},
            }
        ],
    }
    where = "rules[0].mutate.resources.memory.factor"
    if not isinstance(factor, bool) and _finite_above_one(factor):
        assert parse_policy(doc).rules[0].mutate.memory.factor == float(factor)
    else:
        with pytest.raises(ValidationFailed) as info:
            parse_policy(doc)
        assert [e.field for e in info.value.errors] == [where]


def _finite_above_one(value: Any) -> bool:
    if not isinstance(value, int | float):
        return False
    try:
        return math.isfinite(float(value)) and float(value) > 1.0
    except OverflowError:  # an int beyond any float
        return False


@FIELD_SETTINGS
@given(
    policy_documents,
    st.one_of(
        st.sampled_from([n for n in HUGE_NUMBERS if not 0 < n < 2**53]) | very_long,
        st.integers(max_value=0),
        st.sampled_from(["-1Gi", "0", "0Mi", "lots", "1Kb", "100m", "16Ei", "1e400", "", "\x00"]),
        st.floats(max_value=0.0)
        | st.floats(allow_nan=True, allow_infinity=True).filter(math.isinf),
        st.just([1]),
    ),
)
def test_an_absurd_static_bump_is_refused_naming_it(doc, static):
    doc = {
        **doc,
        "rules": [
            {
                "action": RETRY,
                "onCategory": "oom",
                "mutate": {"resources": {"memory": {"static": static}}},
            }
        ],
    }
    with pytest.raises(ValidationFailed) as info:
        parse_policy(doc)
    assert [e.field for e in info.value.errors] == ["rules[0].mutate.resources.memory.static"]
