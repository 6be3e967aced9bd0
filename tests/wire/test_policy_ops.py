"""Armada's RetryPolicyService, called as the transports call it: each call's success and
refusals (permission, not found, already exists, in use, invalid argument naming the field
in Armada's spelling and writing nothing), and the message <-> document mapping both ways."""

from __future__ import annotations

import logging

import pytest
from armada_client.armada import submit_pb2
from google.protobuf import empty_pb2

from armada.models import Queue, RetryPolicy, RetryPolicyVersion
from armada.services.errors import (
    AlreadyExists,
    FailedPrecondition,
    NotFound,
    PermissionDenied,
    ValidationFailed,
)
from armada.services.policies import policy_as_document, policy_file
from armada.services.queues import queue_update
from armada.wire.errors import wire_error
from armada.wire.policy_messages import policy_body, policy_message
from armada.wire.registry import Call, load_operations
from tests.conftest import T0, at

pytestmark = pytest.mark.django_db
P = submit_pb2.RetryPolicy
R = submit_pb2.RetryRule
FAIL, RETRY = submit_pb2.RETRY_ACTION_FAIL, submit_pb2.RETRY_ACTION_RETRY


def call(method: str, user, message, now=T0):
    operation = load_operations()[f"api.RetryPolicyService/{method}"]
    return operation.func(Call(actor=user, now=now), message)


def fields_of(error: ValidationFailed) -> set[str]:
    return {e.field for e in error.errors}


def full_policy(name: str = "ml") -> submit_pb2.RetryPolicy:
    """Every field of Armada's message set."""
    return P(
        name=name,
        retry_limit=3,
        default_action=FAIL,
        rules=[
            R(action=FAIL, on_category="user-error"),
            R(
                action=RETRY,
                on_category="internal",
                on_subcategory="node-failure",
                mutate=submit_pb2.RetryMutation(
                    affinity=submit_pb2.RetryAffinityMutation(avoid_same_node=True)
                ),
            ),
            R(
                action=RETRY,
                on_category="oom",
                mutate=submit_pb2.RetryMutation(
                    resources=submit_pb2.RetryResourceMutation(
                        memory=submit_pb2.RetryResourceBump(factor=1.5)
                    )
                ),
            ),
            R(
                action=RETRY,
                on_category="oom",
                on_subcategory="small",
                mutate=submit_pb2.RetryMutation(
                    resources=submit_pb2.RetryResourceMutation(
                        memory=submit_pb2.RetryResourceBump(static="512Mi")
                    )
                ),
            ),
        ],
    )


# --- the mapping ------------------------------------------------------------------------------


def test_a_message_becomes_our_document():
    assert policy_body(full_policy()) == {
        "name": "ml",
        "retryLimit": 3,
        "defaultAction": "Fail",
        "rules": [
            {"action": "Fail", "onCategory": "user-error"},
            {
                "action": "Retry",
                "onCategory": "internal",
                "onSubcategory": "node-failure",
                "mutate": {"affinity": {"avoidSameNode": True}},
            },
            {
                "action": "Retry",
                "onCategory": "oom",
                "mutate": {"resources": {"memory": {"factor": 1.5}}},
            },
            {
                "action": "Retry",
                "onCategory": "oom",
                "onSubcategory": "small",
                "mutate": {"resources": {"memory": {"static": "512Mi"}}},
            },
        ],
    }


def test_create_then_get_gives_the_same_message_back(admin_user, outsider):
    assert call("CreateRetryPolicy", admin_user, full_policy()) == empty_pb2.Empty()
    assert (
        call("GetRetryPolicy", outsider, submit_pb2.RetryPolicyGetRequest(name="ml"))
        == full_policy()
    )


def test_a_policy_made_through_our_api_reads_back_as_armadas_message(admin_user, api):
    document = {
        "name": "from-rest",
        "retryLimit": 2,
        "defaultAction": "Retry",
        "rules": [
            {
                "action": "Retry",
                "onCategory": "oom",
                "mutate": {"resources": {"memory": {"static": "1073741824"}}},
            }
        ],
    }
    assert api.post("/api/v1/retry-policies", document, format="json").status_code == 201
    message = call("GetRetryPolicy", admin_user, submit_pb2.RetryPolicyGetRequest(name="from-rest"))
    assert message.default_action == RETRY
    assert message.rules[0].mutate.resources.memory.static == "1Gi"  # as our file form writes it
    assert not message.rules[0].mutate.HasField("affinity")
    assert policy_message(policy_file(RetryPolicy.objects.get(name="from-rest"))) == message


# --- create -----------------------------------------------------------------------------------


def test_create_stores_version_one_with_its_history(admin_user):
    call("CreateRetryPolicy", admin_user, full_policy(), now=at(5))
    row = RetryPolicy.objects.get(name="ml")
    assert (row.version, row.updated_by, row.created_at) == (1, "root", at(5))
    assert RetryPolicyVersion.objects.filter(policy=row).count() == 1


def test_create_of_a_taken_name_is_already_exists(admin_user):
    call("CreateRetryPolicy", admin_user, full_policy())
    with pytest.raises(AlreadyExists) as raised:
        call("CreateRetryPolicy", admin_user, P(name="ml", retry_limit=9, default_action=RETRY))
    assert wire_error(raised.value).code.name == "ALREADY_EXISTS"
    assert RetryPolicy.objects.get(name="ml").retry_limit == 3


def test_create_needs_its_permission(outsider):
    with pytest.raises(PermissionDenied, match="create_retry_policy"):
        call("CreateRetryPolicy", outsider, full_policy())
    assert not RetryPolicy.objects.exists()


def _bump(**fields) -> submit_pb2.RetryMutation:
    return submit_pb2.RetryMutation(
        resources=submit_pb2.RetryResourceMutation(memory=submit_pb2.RetryResourceBump(**fields))
    )


BAD = [
    # (id, message, the field named)
    ("no-name", P(retry_limit=1, default_action=FAIL), "name"),
    ("bad-name", P(name="ML_Policy", default_action=FAIL), "name"),
    ("unspecified-default-action", P(name="p"), "defaultAction"),
    ("unknown-default-action", P(name="p", default_action=7), "defaultAction"),
    (
        "retry-limit-too-large",
        P(name="p", retry_limit=2**32 - 1, default_action=FAIL),
        "retryLimit",
    ),
    (
        "unspecified-rule-action",
        P(name="p", default_action=FAIL, rules=[R(on_category="oom")]),
        "rules[0].action",
    ),
    (
        "rule-without-category",
        P(name="p", default_action=FAIL, rules=[R(action=RETRY)]),
        "rules[0].onCategory",
    ),
    (
        "subcategory-without-category",
        P(name="p", default_action=FAIL, rules=[R(action=RETRY, on_subcategory="x")]),
        "rules[0].onSubcategory",
    ),
    (
        "bump-with-neither",
        P(
            name="p",
            default_action=FAIL,
            rules=[R(action=RETRY, on_category="oom", mutate=_bump())],
        ),
        "rules[0].mutate.resources.memory",
    ),
    (
        "bump-with-both",
        P(
            name="p",
            default_action=FAIL,
            rules=[R(action=RETRY, on_category="oom", mutate=_bump(static="1Gi", factor=2))],
        ),
        "rules[0].mutate.resources.memory",
    ),
    (
        "factor-not-above-one",
        P(
            name="p",
            default_action=FAIL,
            rules=[R(action=RETRY, on_category="oom", mutate=_bump(factor=0.5))],
        ),
        "rules[0].mutate.resources.memory.factor",
    ),
    (
        "bad-static",
        P(
            name="p",
            default_action=FAIL,
            rules=[R(action=RETRY, on_category="oom", mutate=_bump(static="lots"))],
        ),
        "rules[0].mutate.resources.memory.static",
    ),
    (
        "negative-static",
        P(
            name="p",
            default_action=FAIL,
            rules=[R(action=RETRY, on_category="oom", mutate=_bump(static="-1Gi"))],
        ),
        "rules[0].mutate.resources.memory.static",
    ),
]


@pytest.mark.parametrize(("message", "field"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_a_bad_policy_is_invalid_argument_naming_the_field_and_writes_nothing(
    admin_user, message, field
):
    with pytest.raises(ValidationFailed) as raised:
        call("CreateRetryPolicy", admin_user, message)
    assert field in fields_of(raised.value)
    error = wire_error(raised.value)
    assert error.code.name == "INVALID_ARGUMENT" and field in error.message
    assert not RetryPolicy.objects.exists()


def test_a_bad_action_is_named_in_armadas_words(admin_user):
    with pytest.raises(ValidationFailed) as raised:
        call("CreateRetryPolicy", admin_user, P(name="p", rules=[R(on_category="oom")]))
    assert {(e.field, e.message) for e in raised.value.errors} == {
        ("defaultAction", "must be RETRY_ACTION_FAIL or RETRY_ACTION_RETRY"),
        ("rules[0].action", "must be RETRY_ACTION_FAIL or RETRY_ACTION_RETRY"),
    }


def test_a_mutate_block_on_a_fail_rule_is_accepted_dropped_and_logged(admin_user, caplog):
    message = P(
        name="p",
        default_action=FAIL,
        rules=[
            R(
                action=FAIL,
                on_category="oom",
                mutate=submit_pb2.RetryMutation(
                    affinity=submit_pb2.RetryAffinityMutation(avoid_same_node=True)
                ),
            )
        ],
    )
    with caplog.at_level(logging.WARNING, logger="armada.services.policies"):
        call("CreateRetryPolicy", admin_user, message)
    assert RetryPolicy.objects.get(name="p").rules == [{"action": "Fail", "onCategory": "oom"}]
    assert "rules[0].mutate: has no effect on a Fail rule" in caplog.text
    stored = call("GetRetryPolicy", admin_user, submit_pb2.RetryPolicyGetRequest(name="p"))
    assert not stored.rules[0].HasField("mutate")


# --- update -----------------------------------------------------------------------------------


def test_update_replaces_the_policy_and_bumps_the_version(admin_user):
    call("CreateRetryPolicy", admin_user, full_policy())
    call(
        "UpdateRetryPolicy",
        admin_user,
        P(name="ml", retry_limit=5, default_action=RETRY),
        now=at(9),
    )
    row = RetryPolicy.objects.get(name="ml")
    assert (row.retry_limit, row.default_action, row.rules, row.version) == (5, "Retry", [], 2)
    assert row.updated_at == at(9)


def test_update_of_a_missing_policy_is_not_found(admin_user):
    with pytest.raises(NotFound, match="ghost"):
        call("UpdateRetryPolicy", admin_user, P(name="ghost", default_action=FAIL))
    assert not RetryPolicy.objects.exists()


def test_update_needs_its_permission(admin_user, outsider):
    call("CreateRetryPolicy", admin_user, full_policy())
    with pytest.raises(PermissionDenied, match="update_retry_policy"):
        call("UpdateRetryPolicy", outsider, P(name="ml", retry_limit=0, default_action=FAIL))
    assert RetryPolicy.objects.get(name="ml").version == 1


def test_a_bad_update_names_the_field_and_changes_nothing(admin_user):
    call("CreateRetryPolicy", admin_user, full_policy())
    with pytest.raises(ValidationFailed) as raised:
        call(
            "UpdateRetryPolicy",
            admin_user,
            P(name="ml", default_action=FAIL, rules=[R(action=RETRY)]),
        )
    assert fields_of(raised.value) == {"rules[0].onCategory"}
    assert RetryPolicy.objects.get(name="ml").version == 1


# --- delete -----------------------------------------------------------------------------------


def test_delete(admin_user):
    call("CreateRetryPolicy", admin_user, full_policy())
    call("DeleteRetryPolicy", admin_user, submit_pb2.RetryPolicyDeleteRequest(name="ml"))
    assert not RetryPolicy.objects.exists()


def test_deleting_a_policy_that_does_not_exist_succeeds_as_in_armada(admin_user):
    assert (
        call("DeleteRetryPolicy", admin_user, submit_pb2.RetryPolicyDeleteRequest(name="ghost"))
        == empty_pb2.Empty()
    )


def test_deleting_a_policy_a_queue_names_is_failed_precondition_naming_the_queue(admin_user, queue):
    call("CreateRetryPolicy", admin_user, full_policy())
    queue_update(actor=admin_user, name="demo", data={"retryPolicies": ["ml"]}, now=T0)
    with pytest.raises(FailedPrecondition, match="demo") as raised:
        call("DeleteRetryPolicy", admin_user, submit_pb2.RetryPolicyDeleteRequest(name="ml"))
    assert wire_error(raised.value).code.name == "FAILED_PRECONDITION"
    assert RetryPolicy.objects.filter(name="ml").exists()
    assert Queue.objects.get(name="demo").retry_policies == ["ml"]


def test_delete_needs_its_permission_and_a_name(admin_user, outsider):
    call("CreateRetryPolicy", admin_user, full_policy())
    with pytest.raises(PermissionDenied, match="delete_retry_policy"):
        call("DeleteRetryPolicy", outsider, submit_pb2.RetryPolicyDeleteRequest(name="ml"))
    with pytest.raises(ValidationFailed) as raised:
        call("DeleteRetryPolicy", admin_user, submit_pb2.RetryPolicyDeleteRequest())
    assert fields_of(raised.value) == {"name"}
    assert RetryPolicy.objects.filter(name="ml").exists()


# --- get --------------------------------------------------------------------------------------


def test_get_of_a_missing_policy_is_not_found_and_needs_a_name(admin_user):
    with pytest.raises(NotFound, match="ghost"):
        call("GetRetryPolicy", admin_user, submit_pb2.RetryPolicyGetRequest(name="ghost"))
    with pytest.raises(ValidationFailed) as raised:
        call("GetRetryPolicy", admin_user, submit_pb2.RetryPolicyGetRequest())
    assert fields_of(raised.value) == {"name"}


def test_get_retry_policies_lists_every_policy_in_name_order(admin_user, outsider):
    assert (
        call("GetRetryPolicies", outsider, submit_pb2.RetryPolicyListRequest())
        == submit_pb2.RetryPolicyList()
    )
    for name in ("zeta", "alpha"):
        call("CreateRetryPolicy", admin_user, full_policy(name))
    listed = call("GetRetryPolicies", outsider, submit_pb2.RetryPolicyListRequest())
    assert list(listed.retry_policies) == [full_policy("alpha"), full_policy("zeta")]


def test_our_api_shows_what_the_message_cannot_carry(admin_user):
    call("CreateRetryPolicy", admin_user, full_policy(), now=at(3))
    document = policy_as_document(RetryPolicy.objects.get(name="ml"))
    assert (document["version"], document["updatedBy"]) == (1, "root")
