"""armada.core.labels selectors: parsing ``key=value,key2,!key3,key4!=v`` and matching label
sets, as ``armadactl -l`` selects queues."""

from __future__ import annotations

import pytest

from armada.core.errors import ValidationFailed
from armada.core.labels import EQUALS, EXISTS, NOT_EQUALS, NOT_EXISTS, Requirement, parse_selector

LABELS = {"team": "ml", "gpu": "", "zone": "eu-1", "armadaproject.io/tier": "gold"}

MATCHES = [
    # (id, selector, matches LABELS)
    ("equal", "team=ml", True),
    ("equal-other-value", "team=infra", False),
    ("double-equals", "team==ml", True),
    ("exists", "gpu", True),
    ("exists-missing", "tpu", False),
    ("not-exists", "!tpu", True),
    ("not-exists-present", "!gpu", False),
    ("not-equal", "zone!=us-1", True),
    ("not-equal-same", "zone!=eu-1", False),
    ("not-equal-missing-key", "tpu!=x", True),
    ("empty-value-equal", "gpu=", True),
    ("prefixed-key", "armadaproject.io/tier=gold", True),
    ("all-terms-must-hold", "team=ml,gpu,zone=eu-1", True),
    ("one-term-fails", "team=ml,gpu,zone=us-1", False),
    ("spaces-ignored", " team = ml , gpu ", True),
]


@pytest.mark.parametrize(
    ("text", "expected"), [m[1:] for m in MATCHES], ids=[m[0] for m in MATCHES]
)
def test_matching(text, expected):
    assert parse_selector(text).matches(LABELS) is expected


def test_no_labels_at_all():
    assert parse_selector("!team").matches(None)
    assert not parse_selector("team").matches({})


def test_terms_parse_to_requirements_and_print_back():
    selector = parse_selector("a=1, b ,!c,d!=2,e==3")
    assert selector.requirements == (
        Requirement("a", EQUALS, "1"),
        Requirement("b", EXISTS),
        Requirement("c", NOT_EXISTS),
        Requirement("d", NOT_EQUALS, "2"),
        Requirement("e", EQUALS, "3"),
    )
    assert str(selector) == "a=1,b,!c,d!=2,e=3"
    assert parse_selector(str(selector)) == selector


BAD = [
    # (id, selector, fragment of the message)
    ("empty", "", "is empty"),
    ("blank", "   ", "is empty"),
    ("empty-term", "a,,b", "term 2 is empty"),
    ("trailing-comma", "a=1,", "term 2 is empty"),
    ("no-key", "=x", "bad key"),
    ("bang-alone", "!", "bad key"),
    ("space-in-key", "my team=ml", "bad key"),
    ("bad-prefix", "Example.com/a=1", "bad key"),
    ("space-in-value", "a=b c", "bad value"),
    ("value-too-long", "a=" + "x" * 64, "bad value"),
    ("equals-in-value", "a=b=c", "bad value"),
    ("not-text", 7, "must be text"),
]


@pytest.mark.parametrize(("text", "fragment"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_selectors_name_the_field(text, fragment):
    with pytest.raises(ValidationFailed) as info:
        parse_selector(text)
    assert {e.field for e in info.value.errors} == {"selector"}
    assert fragment in str(info.value)


def test_every_bad_term_is_reported_and_the_field_name_is_the_callers():
    with pytest.raises(ValidationFailed) as info:
        parse_selector("ok,=x,a=b c", where="labelSelector")
    assert [e.field for e in info.value.errors] == ["labelSelector", "labelSelector"]
    assert "'=x'" in info.value.errors[0].message
    assert "'a=b c'" in info.value.errors[1].message
