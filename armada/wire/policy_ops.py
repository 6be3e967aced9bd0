"""Armada's ``api.RetryPolicyService``, over the same services as our REST API
(``services.policies``).

- CreateRetryPolicy of a name that is taken: ALREADY_EXISTS (Armada overwrites; our
  specification keeps create and update apart). A ``mutate`` block on a Fail rule is accepted
  and dropped; the warning is logged (the answer, Empty, has no place for it).
- UpdateRetryPolicy of a policy that does not exist: NOT_FOUND. Of a policy with a rule's
  retry delay (``backoff``, our extension, which the message cannot carry):
  FAILED_PRECONDITION, so that the delay is never dropped unseen.
- DeleteRetryPolicy of a policy that a queue names: FAILED_PRECONDITION naming the queues
  (our specification refuses it; Armada detaches the policy). Of a policy that does not
  exist: success, as in Armada.
- GetRetryPolicy of a policy that does not exist: NOT_FOUND; GetRetryPolicies: every policy,
  in name order. Reading needs no permission beyond being let in, as in Armada and our REST.
"""

from __future__ import annotations

from contextlib import suppress

from armada_client.armada import submit_pb2
from google.protobuf import empty_pb2

from armada.services.errors import NotFound
from armada.services.policies import (
    policy_create,
    policy_delete,
    policy_file,
    policy_get,
    policy_list,
    policy_update,
)
from armada.wire.policy_messages import armada_words, policy_body, policy_message
from armada.wire.queue_ops import required_name
from armada.wire.registry import Call, unary


@unary("api.RetryPolicyService/CreateRetryPolicy")
def create_retry_policy(call: Call, request: submit_pb2.RetryPolicy) -> empty_pb2.Empty:
    with armada_words():
        policy_create(actor=call.actor, data=policy_body(request), now=call.now)
    return empty_pb2.Empty()


@unary("api.RetryPolicyService/UpdateRetryPolicy")
def update_retry_policy(call: Call, request: submit_pb2.RetryPolicy) -> empty_pb2.Empty:
    with armada_words():
        policy_update(
            actor=call.actor,
            name=request.name,
            data=policy_body(request),
            now=call.now,
            carries_backoff=False,
        )
    return empty_pb2.Empty()


@unary("api.RetryPolicyService/DeleteRetryPolicy")
def delete_retry_policy(
    call: Call, request: submit_pb2.RetryPolicyDeleteRequest
) -> empty_pb2.Empty:
    # Deleting a policy that does not exist succeeds, as in Armada.
    with suppress(NotFound):
        policy_delete(actor=call.actor, name=required_name(request.name))
    return empty_pb2.Empty()


@unary("api.RetryPolicyService/GetRetryPolicy")
def get_retry_policy(
    call: Call, request: submit_pb2.RetryPolicyGetRequest
) -> submit_pb2.RetryPolicy:
    return policy_message(policy_file(policy_get(name=required_name(request.name))))


@unary("api.RetryPolicyService/GetRetryPolicies")
def get_retry_policies(
    call: Call, request: submit_pb2.RetryPolicyListRequest
) -> submit_pb2.RetryPolicyList:
    return submit_pb2.RetryPolicyList(
        retry_policies=[policy_message(policy_file(row)) for row in policy_list()]
    )
