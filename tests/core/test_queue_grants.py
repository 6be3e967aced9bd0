"""Granting and revoking a queue's permissions a subject at a time (core.queue_grants): the
new list, every other grant kept as written, and the body's problems named by field."""

from __future__ import annotations

import pytest

from armada.core.errors import ValidationFailed
from armada.core.queue_grants import Change, grant, parse_change, revoke

ALICE, BOB, ML = ("User", "alice"), ("User", "bob"), ("Group", "ml")


def g(subjects, verbs):
    return {"subjects": [{"kind": k, "name": n} for k, n in subjects], "verbs": list(verbs)}


@pytest.mark.parametrize(
    ("before", "subjects", "verbs", "after"),
    [
        pytest.param([], [ALICE], ["watch"], [g([ALICE], ["watch"])], id="first grant"),
        pytest.param(
            [g([ML], ["submit"])],
            [ALICE, ML],
            ["watch"],
            [g([ML], ["submit"]), g([ALICE, ML], ["watch"])],
            id="added at the end",
        ),
        pytest.param(
            [g([ALICE], ["watch"])], [ALICE], ["watch"], [g([ALICE], ["watch"])], id="held already"
        ),
        pytest.param(
            [g([ALICE, BOB], ["watch"])],
            [BOB, ALICE],
            ["cancel"],
            [g([ALICE, BOB], ["watch", "cancel"])],
            id="same subjects take the verb",
        ),
        pytest.param(
            [g([ALICE, ML], ["watch"])],
            [ALICE],
            ["watch", "cancel"],
            [g([ALICE, ML], ["watch"]), g([ALICE], ["watch", "cancel"])],
            id="a subject lacking one verb",
        ),
    ],
)
def test_grant(before, subjects, verbs, after):
    assert grant(before, subjects, verbs) == after


@pytest.mark.parametrize(
    ("before", "subjects", "verbs", "after"),
    [
        pytest.param([g([ALICE], ["watch"])], [ALICE], ["watch"], [], id="the only grant goes"),
        pytest.param(
            [g([ALICE, ML], ["watch", "submit"])],
            [ALICE],
            ["watch"],
            [g([ML], ["watch", "submit"]), g([ALICE], ["submit"])],
            id="split: others keep all, the subject keeps the rest",
        ),
        pytest.param(
            [g([ALICE], ["watch", "cancel"]), g([BOB], ["watch"])],
            [ALICE],
            [],
            [g([BOB], ["watch"])],
            id="no verbs: every verb",
        ),
        pytest.param(
            [g([ALICE], ["submit"])],
            [ALICE],
            ["watch"],
            [g([ALICE], ["submit"])],
            id="a verb not held: unchanged",
        ),
        pytest.param(
            [g([ML], ["watch"])],
            [("User", "ml")],
            ["watch"],
            [g([ML], ["watch"])],
            id="kind counts",
        ),
    ],
)
def test_revoke(before, subjects, verbs, after):
    assert revoke(before, subjects, verbs) == after


def test_parse_change_reads_subjects_and_verbs_once_each():
    change = parse_change(
        {
            "subjects": [{"kind": "User", "name": " alice "}, {"kind": "User", "name": "alice"}],
            "verbs": ["watch", "watch", "submit"],
        },
        verbs_required=True,
    )
    assert change == Change(subjects=(ALICE,), verbs=("watch", "submit"))
    assert (
        parse_change({"subjects": [{"kind": "Group", "name": "ml"}]}, verbs_required=False).verbs
        == ()
    )


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({"subjects": [], "verbs": ["watch"]}, ["subjects"]),
        ({"subjects": [{"kind": "Team", "name": "a"}], "verbs": ["watch"]}, ["subjects[0]"]),
        ({"subjects": [{"kind": "User", "name": " "}], "verbs": ["watch"]}, ["subjects[0]"]),
        ({"subjects": [{"kind": "User", "name": "a"}], "verbs": ["look"]}, ["verbs"]),
        ({"subjects": [{"kind": "User", "name": "a"}]}, ["verbs"]),
        ({"subjects": [{"kind": "User", "name": "a"}], "verbs": ["watch"], "who": 1}, ["who"]),
        ([], ["body"]),
    ],
)
def test_parse_change_names_each_bad_field(body, fields):
    with pytest.raises(ValidationFailed) as failed:
        parse_change(body, verbs_required=True)
    assert [e.field for e in failed.value.errors] == fields
