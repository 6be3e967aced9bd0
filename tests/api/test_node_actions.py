"""``POST /api/v1/executors/{executor}/nodes/{node}/cancel`` and ``.../preempt``: the contract
``armadactl cancel on-node`` and ``preempt on-node`` use. Body ``{reason, queues,
priorityClasses}`` (all optional) -> 200 ``{"jobIds": [...]}``; 404 naming the executor or
node; 400 naming the field; 403 naming the permission."""

from __future__ import annotations

import pytest

from armada.models import Event, Job, Run
from armada.services.queues import queue_create
from armada.services.scheduler import scheduler_cycle
from armada.services.submit import job_submit
from tests.conftest import T0, at, fake_agent, job, job_file

pytestmark = pytest.mark.django_db
FAKE = "fake.armadaproject.io/"
ACTIONS = ["cancel", "preempt"]


def url(action: str, executor: str = "test", node: str = "n") -> str:
    return f"/api/v1/executors/{executor}/nodes/{node}/{action}"


@pytest.fixture
def running(settings, queue, owner) -> list[str]:
    """Three running demo jobs on node ``n`` of executor ``test``; one more stays queued."""
    agent = fake_agent(settings, cpu="3", memory="16Gi")
    long = job(annotations={FAKE + "duration": "1h"})
    ids = job_submit(actor=owner, data=job_file(jobs=[long] * 4), now=at(0))
    scheduler_cycle(now=at(1))
    agent.tick(at(2))
    on_node = sorted(Run.objects.filter(node="n").values_list("job_id", flat=True))
    assert len(on_node) == 3 and set(on_node) < set(ids)
    return on_node


@pytest.mark.parametrize("action", ACTIONS)
def test_every_job_on_the_node_is_answered(api, running, action):
    response = api.post(url(action), {"reason": "node maintenance"}, format="json")
    assert response.status_code == 200, response.content
    assert response.json() == {"jobIds": running}
    stops = Run.objects.filter(job_id__in=running).values_list("stop_kind", "stop_reason")
    assert set(stops) == {(action, "node maintenance")}
    event = {"cancel": "cancelling", "preempt": "preempting"}[action]
    assert Event.objects.filter(type=event).count() == 3


@pytest.mark.parametrize("action", ACTIONS)
def test_no_body_means_every_queue_and_class(api, running, action):
    response = api.post(url(action))
    assert response.status_code == 200
    assert response.json()["jobIds"] == running


def test_filters_select_by_queue_and_priority_class(api, running):
    response = api.post(
        url("cancel"),
        {"queues": ["demo"], "priorityClasses": ["armada-preemptible"]},
        format="json",
    )
    assert response.status_code == 200 and response.json() == {"jobIds": []}
    response = api.post(
        url("cancel"), {"queues": ["demo"], "priorityClasses": ["armada-default"]}, format="json"
    )
    assert response.json() == {"jobIds": running}


@pytest.mark.parametrize("action", ACTIONS)
@pytest.mark.parametrize(
    ("executor", "node", "message"),
    [
        ("nope", "n", "executor 'nope' does not exist"),
        ("test", "n-1", "node 'n-1' does not exist on executor 'test'"),
    ],
)
def test_unknown_executor_or_node_is_404_naming_it(api, running, action, executor, node, message):
    response = api.post(url(action, executor, node), {}, format="json")
    assert response.status_code == 404
    assert message in response.json()["message"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"queue": ["demo"]}, "queue"),  # a typo must not widen the selection to every queue
        ({"queues": "demo"}, "queues"),
        ({"priorityClasses": ["gold"]}, "priorityClasses[0]"),
        ({"reason": "x" * 300}, "reason"),
    ],
)
def test_bad_bodies_are_400_naming_the_field_and_change_nothing(api, running, body, field):
    response = api.post(url("cancel"), body, format="json")
    assert response.status_code == 400, response.content
    assert field in [e["field"] for e in response.json()["errors"]]
    assert not Run.objects.filter(stop_requested_at__isnull=False).exists()


def test_a_body_that_is_not_an_object_is_400(api, running):
    response = api.post(url("preempt"), ["demo"], format="json")
    assert response.status_code == 400


def test_permission_per_queue_all_or_nothing(api_as, running, owner, outsider, admin_user):
    assert api_as(outsider).post(url("cancel")).status_code == 403
    # The owner may cancel on demo; a job of a queue they may not touch refuses the lot.
    queue_create(actor=admin_user, data={"name": "other", "owners": ["someone"]}, now=T0)
    Job.objects.filter(id=running[0]).update(queue_id="other")
    response = api_as(owner).post(url("cancel"), {}, format="json")
    assert response.status_code == 403
    assert "'other'" in response.json()["message"]
    assert not Run.objects.filter(stop_requested_at__isnull=False).exists()
    response = api_as(owner).post(url("cancel"), {"queues": ["demo"]}, format="json")
    assert response.status_code == 200 and response.json()["jobIds"] == running[1:]


def test_anonymous_is_refused(api_as, running):
    assert api_as(None).post(url("cancel")).status_code == 401


def test_the_schema_publishes_both_operations(api):
    schema = api.get("/api/v1/schema", HTTP_ACCEPT="application/json").json()
    for action in ACTIONS:
        op = schema["paths"][f"/api/v1/executors/{{executor}}/nodes/{{node}}/{action}"]["post"]
        assert {"200", "400", "403", "404"} <= set(op["responses"])
        body = op["requestBody"]["content"]["application/json"]["schema"]["$ref"].split("/")[-1]
        assert set(schema["components"]["schemas"][body]["properties"]) == {
            "reason",
            "queues",
            "priorityClasses",
        }
        result = op["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
        assert schema["components"]["schemas"][result.split("/")[-1]]["required"] == ["jobIds"]
