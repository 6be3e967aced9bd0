"""services.backtest: who may ask, bad input named by its field, and that nothing is
written (the history is tests/services/backtest_history.py's)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from armada.core.errors import ValidationFailed
from armada.services.backtest import backtest
from armada.services.errors import NotFound, PermissionDenied
from armada.services.policies import policy_validate
from tests.services.backtest_history import NOW, SINCE, STRICTER, history, run, snapshot

pytestmark = pytest.mark.django_db
__all__ = ["history"]  # the fixture, used by name


def test_without_queues_only_the_queues_the_actor_may_view_are_read(history, owner, outsider):
    mine = run(owner)
    assert [q["queue"] for q in mine["queues"]] == ["demo"]
    assert mine["overall"]["examined"] == 7
    nothing = run(outsider)
    assert nothing["overall"]["examined"] == 0
    assert nothing["queues"] == [] and nothing["sample"] == [] and nothing["yield"] == []


def test_a_named_queue_the_actor_may_not_view_is_refused(history, owner):
    with pytest.raises(PermissionDenied, match="'other'"):
        run(owner, queues=["demo", "other"])


def test_an_unknown_queue_is_not_found(history, admin_user):
    with pytest.raises(NotFound, match="'nope'"):
        run(admin_user, queues=["nope"])


# --- bad input --------------------------------------------------------------------------------


def fields_of(error: ValidationFailed) -> list[str]:
    return [e.field for e in error.errors]


def test_an_invalid_draft_gets_the_errors_a_save_gets(history, admin_user):
    bad = {**STRICTER, "retryLimit": -1, "rules": [{"action": "Maybe", "onCategory": "oom"}]}
    with pytest.raises(ValidationFailed) as saved:
        policy_validate(data=bad)
    with pytest.raises(ValidationFailed) as replayed:
        run(admin_user, draft=bad)
    assert replayed.value.errors == saved.value.errors
    assert {"retryLimit", "rules[0].action"} <= set(fields_of(replayed.value))


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"since": NOW, "until": SINCE}, "since"),
        ({"since": NOW - timedelta(days=3 * 365), "until": NOW}, "since"),
        ({"since": SINCE.replace(tzinfo=None), "until": NOW}, "since"),
        ({"draft": None, "policy": "missing"}, "policy"),
        ({"draft": None, "policy": "ml", "version": 9}, "version"),
        ({"draft": None, "policy": "ml", "version": 0}, "version"),
        ({"draft": None}, "draft"),
        ({"policy": "ml"}, "draft"),
        ({"sample_size": 100000}, "sampleSize"),
        ({"queues": [""]}, "queues[0]"),
        ({"draft": "retryLimit: 3"}, ""),
    ],
    ids=[
        "since-after-until",
        "years",
        "naive-time",
        "unknown-policy",
        "unknown-version",
        "version-zero",
        "neither",
        "both",
        "sample-too-big",
        "empty-queue-name",
        "draft-not-a-mapping",
    ],
)
def test_bad_input_names_the_field(history, admin_user, kwargs, field):
    kwargs = {"since": SINCE, "until": NOW, "draft": STRICTER, **kwargs}
    with pytest.raises(ValidationFailed) as error:
        backtest(actor=admin_user, now=NOW, **kwargs)
    assert field in fields_of(error.value) or (field == "" and error.value.errors)


# --- it writes nothing ------------------------------------------------------------------------


def test_the_backtest_writes_nothing(history, admin_user, owner):
    before = snapshot()
    assert sum(len(rows) for rows in before.values()) > 20
    run(admin_user)
    run(admin_user, draft=None, policy="ml", version=1)
    run(owner, queues=["demo"])
    with pytest.raises(ValidationFailed):
        run(admin_user, draft={**STRICTER, "retryLimit": "x"})
    with pytest.raises(PermissionDenied):
        run(owner, queues=["other"])
    assert snapshot() == before
