"""Every operation of our OpenAPI schema, fuzzed from the schema itself.

The schema is loaded from the app (``/api/v1/schema``) and each operation is called, in
process through WSGI, with generated valid and invalid input, as an admin (token auth). No
call may end in a server error, and the answers must match the schema (status codes,
content types, bodies). Deterministic (derandomized) and bounded in examples, so that CI
sees the same calls every run.
"""

from __future__ import annotations

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from armada.models import Job, Run, RunLog
from armada.services.ids import new_id
from armada.services.policies import policy_create
from armada.services.submit import job_submit
from tests.conftest import T0, job, job_file

pytestmark = pytest.mark.django_db

APP = get_wsgi_application()
schema = schemathesis.openapi.from_wsgi("/api/v1/schema?format=json", APP)
schema.config.generation.update(deterministic=True, database="none")

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


@pytest.fixture(autouse=True)
def _requests_in_the_test_transaction():
    """Django closes "old" connections around each request; in a test that would close the
    connection holding the test's transaction, so the calls keep it open, like Django's own
    test client does."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def token(admin_user) -> str:
    from rest_framework.authtoken.models import Token

    return Token.objects.create(user=admin_user).key


@pytest.fixture
def world(admin_user, queue) -> dict[str, str]:
    """Something for the calls to find: queue ``demo`` with job set ``set-1`` of two jobs (the
    first with a run that has a log) and a retry policy ``p``."""
    policy_create(
        actor=admin_user,
        data={
            "name": "p",
            "retryLimit": 1,
            "defaultAction": "Fail",
            "rules": [
                {
                    "action": "Retry",
                    "onCategory": "oom",
                    "mutate": {"resources": {"memory": {"static": "1Gi"}}},
                }
            ],
        },
        now=T0,
    )
    first, _ = job_submit(actor=admin_user, data=job_file(jobs=[job(), job()]), now=T0)
    run = Run.objects.create(
        id=new_id(),
        job=Job.objects.get(id=first),
        executor="cluster-a",
        node="node-1",
        pool="default",
        leased_at=T0,
    )
    RunLog.objects.create(run=run, text="hello\n", updated_at=T0)
    return {"job_id": first, "run_id": run.id}


@schema.parametrize()
@settings(
    max_examples=12,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_api(case, token, world):
    case.call_and_validate(headers={"Authorization": f"Token {token}"}, checks=CHECKS)


# Each call on the objects of ``world``, in an order that ends by deleting them, with the
# status expected; random names seldom hit them, so these run every time.
KNOWN_CALLS = [
    ("GET", "/api/v1/queues/{name}", {"name": "demo"}, None, 200),
    ("GET", "/api/v1/retry-policies/{name}", {"name": "p"}, None, 200),
    ("GET", "/api/v1/jobs/{job_id}", {"job_id": "job_id"}, None, 200),
    ("GET", "/api/v1/runs/{run_id}/log", {"run_id": "run_id"}, None, 200),
    ("PATCH", "/api/v1/queues/{name}", {"name": "demo"}, {"priorityFactor": 2.5}, 200),
    (
        "PUT",
        "/api/v1/queues/{name}",
        {"name": "demo"},
        {"name": "demo", "retryPolicies": ["p"]},
        200,
    ),
    ("POST", "/api/v1/queues/{name}/cordon", {"name": "demo"}, None, 200),
    ("POST", "/api/v1/queues/{name}/uncordon", {"name": "demo"}, None, 200),
    ("DELETE", "/api/v1/retry-policies/{name}", {"name": "p"}, None, 409),
    (
        "PUT",
        "/api/v1/retry-policies/{name}",
        {"name": "p"},
        {"name": "p", "retryLimit": 2, "defaultAction": "Retry"},
        200,
    ),
    (
        "POST",
        "/api/v1/jobs/reprioritize",
        {},
        {"queue": "demo", "jobSetId": "set-1", "priority": 3},
        200,
    ),
    ("POST", "/api/v1/jobs/{job_id}/preempt", {"job_id": "job_id"}, {"reason": "by hand"}, 202),
    ("DELETE", "/api/v1/queues/{name}", {"name": "demo"}, None, 409),
    ("POST", "/api/v1/jobs/cancel", {}, {"queue": "demo", "jobSetId": "set-1"}, 200),
    ("PATCH", "/api/v1/queues/{name}", {"name": "demo"}, {"retryPolicies": []}, 200),
    ("DELETE", "/api/v1/retry-policies/{name}", {"name": "p"}, None, 204),
    ("GET", "/api/v1/retry-policies/{name}", {"name": "p"}, None, 404),
]


def test_calls_on_existing_objects_conform_to_the_schema(token, world):
    for method, path, parameters, body, expected in KNOWN_CALLS:
        parameters = {k: world.get(v, v) for k, v in parameters.items()}
        kwargs = {} if body is None else {"body": body, "media_type": "application/json"}
        case = schema[path][method].Case(path_parameters=parameters, **kwargs)
        response = case.call_and_validate(
            headers={"Authorization": f"Token {token}"}, checks=CHECKS
        )
        assert response.status_code == expected, (method, path, response.text[:300])
