"""Armada's RetryPolicyService and a rule's retry delay (``backoff``, our extension), which its
message cannot carry: Get leaves it out, and an Update that would lose it is refused."""

from __future__ import annotations

import pytest
from armada_client.armada import submit_pb2

from armada.models import RetryPolicy
from armada.services.errors import FailedPrecondition
from armada.services.policies import policy_create, policy_update
from armada.wire.errors import wire_error
from tests.conftest import T0, at
from tests.wire.test_policy_ops import FAIL, RETRY, P, R, call

pytestmark = pytest.mark.django_db


def test_a_retry_delay_the_message_cannot_carry_is_left_out_of_get_and_never_dropped(admin_user):
    """``backoff`` (our extension) has no place in Armada's message: Get leaves it out, and an
    Update that would lose it is refused, changing nothing; our API still updates it."""
    document = {
        "name": "ml",
        "retryLimit": 3,
        "defaultAction": "Fail",
        "rules": [
            {"action": "Retry", "onCategory": "oom", "backoff": {"initial": "30s"}},
        ],
    }
    policy_create(actor=admin_user, data=document, now=T0)
    got = call("GetRetryPolicy", admin_user, submit_pb2.RetryPolicyGetRequest(name="ml"))
    assert got == P(
        name="ml", retry_limit=3, default_action=FAIL, rules=[R(action=RETRY, on_category="oom")]
    )
    with pytest.raises(FailedPrecondition, match="retry delay") as raised:
        call("UpdateRetryPolicy", admin_user, got)
    assert wire_error(raised.value).code.name == "FAILED_PRECONDITION"
    row = RetryPolicy.objects.get(name="ml")
    assert (row.version, row.rules[0]["backoff"]) == (1, {"initial": "30s"})
    policy_update(actor=admin_user, name="ml", data={**document, "retryLimit": 4}, now=at(1))
    assert RetryPolicy.objects.get(name="ml").version == 2
