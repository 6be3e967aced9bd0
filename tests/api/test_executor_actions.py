"""``POST /api/v1/executors/{id}/cancel`` and ``.../preempt`` (body ``{reason, queues,
priorityClasses, pools}``, all optional -> 200 ``{"jobIds"}``) and ``DELETE
/api/v1/executors/{id}``: the contract of ``armadactl cancel|preempt|delete executor``. 403
names the global permission, 400 the field, 404 the executor or queue; none writes anything."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission

from armada.models import Event, Executor, Run
from armada.services.scheduler import scheduler_cycle
from armada.services.submit import job_submit
from tests.conftest import at, fake_agent, job, job_file

pytestmark = pytest.mark.django_db
FAKE = "fake.armadaproject.io/"
ACTIONS = ["cancel", "preempt"]


@pytest.fixture
def running(settings, queue, owner) -> list[str]:
    """Three running demo jobs on executor ``test``; one more stays queued."""
    agent = fake_agent(settings, cpu="3", memory="16Gi")
    long = job(annotations={FAKE + "duration": "1h"})
    job_submit(actor=owner, data=job_file(jobs=[long] * 4), now=at(0))
    scheduler_cycle(now=at(1))
    agent.tick(at(2))
    on_it = sorted(Run.objects.filter(executor="test").values_list("job_id", flat=True))
    assert len(on_it) == 3
    return on_it


@pytest.mark.parametrize("action", ACTIONS)
def test_every_job_on_the_executor_is_answered(api, running, action):
    response = api.post(f"/api/v1/executors/test/{action}", {"reason": "drain"}, format="json")
    assert response.status_code == 200, response.content
    assert response.json() == {"jobIds": running}
    stops = Run.objects.filter(job_id__in=running).values_list("stop_kind", "stop_reason")
    assert set(stops) == {(action, "drain")}


def test_no_body_and_filters(api, running):
    response = api.post("/api/v1/executors/test/preempt", {"pools": ["gpu"]}, format="json")
    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == "pools[0]"
    body = {"queues": ["demo"], "priorityClasses": ["armada-default"], "pools": ["default"]}
    response = api.post("/api/v1/executors/test/cancel", body, format="json")
    assert response.json() == {"jobIds": running}


@pytest.mark.parametrize("action", ACTIONS)
def test_the_queue_owner_needs_the_global_permission(api_as, owner, running, action):
    codename = {"cancel": "cancel_any_jobs", "preempt": "preempt_any_jobs"}[action]
    response = api_as(owner).post(f"/api/v1/executors/test/{action}", {"bogus": 1}, format="json")
    assert response.status_code == 403  # before the body is looked at
    assert codename in response.json()["message"]
    owner.user_permissions.add(Permission.objects.get(codename=codename))
    response = api_as(type(owner).objects.get(pk=owner.pk)).post(f"/api/v1/executors/test/{action}")
    assert (response.status_code, response.json()) == (200, {"jobIds": running})


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"bogus": 1}, "bogus"),
        ({"queues": "demo"}, "queues"),
        ({"priorityClasses": ["nope"]}, "priorityClasses[0]"),
        ({"reason": 7}, "reason"),
        (["not", "an", "object"], ""),
    ],
)
def test_bad_bodies_name_the_field_and_change_nothing(api, running, body, field):
    events = Event.objects.count()
    response = api.post("/api/v1/executors/test/cancel", body, format="json")
    assert response.status_code == 400, response.content
    assert [e["field"] for e in response.json()["errors"]] == [field]
    assert Event.objects.count() == events


def test_unknown_executor_and_queue_are_404(api, running):
    response = api.post("/api/v1/executors/nowhere/cancel")
    assert response.status_code == 404 and "nowhere" in response.json()["message"]
    response = api.post("/api/v1/executors/test/cancel", {"queues": ["ghost"]}, format="json")
    assert response.status_code == 404 and "ghost" in response.json()["message"]


def test_delete_retires_then_404(api, api_as, owner, running):
    response = api_as(owner).delete("/api/v1/executors/test")
    assert response.status_code == 403
    assert "update_executor_settings" in response.json()["message"]
    response = api.delete("/api/v1/executors/test")
    assert response.status_code == 200, response.content
    assert response.json() == {
        "id": "test",
        "credentialsRevoked": 1,
        "nodesRemoved": 1,
        "activeRuns": 3,
    }
    assert not Executor.objects.filter(id="test").exists()
    assert api.get("/api/v1/executors").json() == []
    assert api.get("/api/v1/executors/test").status_code == 404
    response = api.delete("/api/v1/executors/test")
    assert response.status_code == 404 and "test" in response.json()["message"]
