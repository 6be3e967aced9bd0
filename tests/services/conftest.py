"""Fixtures of the retry-decision tests (test_decisions, test_decisions_policies)."""

from __future__ import annotations

import pytest

from armada.services.policies import policy_create
from armada.services.policy_cache import policy_cache
from armada.services.queues import queue_update
from tests.conftest import at
from tests.services.decision_world import POLICY


@pytest.fixture
def fresh_policy_cache():
    policy_cache.__init__()
    yield
    policy_cache.__init__()


@pytest.fixture
def with_policy(queue, admin_user):
    policy_create(actor=admin_user, data=POLICY, now=at(0))
    queue_update(actor=admin_user, name="demo", data={"retryPolicies": ["training"]}, now=at(0))
