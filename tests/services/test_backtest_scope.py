"""services.backtest: which queues a backtest replays when none are named: the queues that
use the policy (the first they name), else, for a policy no queue uses yet, every queue the
actor may view; and the answer says which (the history is tests/services/backtest_history.py's:
policy ``ml`` on ``demo`` and ``other``)."""

from __future__ import annotations

import pytest

from armada.core.backtest_scope import replayed_text
from armada.services.policies import policy_create
from armada.services.queues import queue_create, queue_update
from tests.conftest import T0
from tests.lookout.builders import make_job
from tests.services.backtest_history import (
    POLICY_V1,
    POLICY_V2,
    SINCE,
    failed,
    history,
    run,
    trail,
)

pytestmark = pytest.mark.django_db
__all__ = ["history"]  # the fixture, used by name

STORED_ML = {**POLICY_V2, "apiVersion": "armadaproject.io/v1beta1", "kind": "RetryPolicy"}


@pytest.fixture
def bystander(history, admin_user):
    """Queue ``plain`` with no retry policy, one failure in range (which ``ml`` would retry:
    an OOM), and queue ``second`` naming ``ml`` only second (never evaluated)."""
    queue_create(actor=admin_user, data={"name": "plain"}, now=T0)
    policy_create(actor=admin_user, data={**POLICY_V1, "name": "first"}, now=T0)
    queue_create(
        actor=admin_user, data={"name": "second", "retryPolicies": ["first", "ml"]}, now=T0
    )
    make_job("job-plain", queue="plain", state="failed")
    failed("r-plain-1", "job-plain", SINCE, "oom", trail("not_retried", 0))
    return "plain"


def test_a_policy_replays_only_the_queues_that_use_it(bystander, admin_user):
    answer = run(admin_user, draft=STORED_ML)
    assert answer["replayed"] == {"basis": "policy", "queues": ["demo", "other"], "notVisible": 0}
    assert [q["queue"] for q in answer["queues"]] == ["demo", "other"]
    assert "job-plain" not in {s["jobId"] for s in answer["sample"]}
    assert answer["overall"]["examined"] == 8
    # A stored policy by name: the same queues.
    stored = run(admin_user, draft=None, policy="ml")
    assert stored["replayed"]["queues"] == ["demo", "other"]


def test_a_policy_no_queue_uses_yet_replays_every_queue_the_actor_may_view(
    bystander, admin_user, owner
):
    answer = run(admin_user)  # the draft ml-strict: no queue names it
    assert answer["replayed"] == {"basis": "all", "queues": None, "notVisible": 0}
    assert "plain" in [q["queue"] for q in answer["queues"]]
    assert answer["overall"]["examined"] == 9
    mine = run(owner)
    assert mine["replayed"] == {"basis": "all", "queues": ["demo"], "notVisible": 0}


def test_queues_using_the_policy_that_the_actor_may_not_view_are_counted_not_read(bystander, owner):
    answer = run(owner, draft=STORED_ML)
    assert answer["replayed"] == {"basis": "policy", "queues": ["demo"], "notVisible": 1}
    assert [q["queue"] for q in answer["queues"]] == ["demo"]
    assert answer["overall"]["examined"] == 7


def test_named_queues_win_over_the_policys_own(bystander, admin_user):
    answer = run(admin_user, draft=STORED_ML, queues=["plain"])
    assert answer["replayed"] == {"basis": "named", "queues": ["plain"], "notVisible": 0}
    assert [q["queue"] for q in answer["queues"]] == ["plain"]
    assert answer["overall"]["examined"] == 1


def test_a_queue_that_drops_the_policy_is_no_longer_replayed(bystander, admin_user):
    queue_update(actor=admin_user, name="other", data={"retryPolicies": []}, now=T0)
    answer = run(admin_user, draft=STORED_ML)
    assert answer["replayed"]["queues"] == ["demo"]


@pytest.mark.parametrize(
    ("replayed", "text"),
    [
        (
            {"basis": "policy", "queues": ["a", "b"], "notVisible": 0},
            "Queues replayed (those that use the policy): a, b.",
        ),
        (
            {"basis": "policy", "queues": [], "notVisible": 2},
            "Queues replayed (those that use the policy): none. 2 more use it but you may "
            "not view them.",
        ),
        (
            {"basis": "named", "queues": ["a"], "notVisible": 0},
            "Queues replayed (as asked): a.",
        ),
        (
            {"basis": "all", "queues": None, "notVisible": 0},
            "Queues replayed: every queue (no queue uses the policy yet).",
        ),
        (
            {"basis": "all", "queues": ["a"], "notVisible": 0},
            "Queues replayed (no queue uses the policy yet; those you may view): a.",
        ),
    ],
)
def test_the_words_for_what_was_replayed(replayed, text):
    assert replayed_text(replayed) == text
