"""The operator endpoints: job list, job sets, cancel by state, executors and nodes, the
scheduling record of a job, dry-run creates, and their place in the schema."""

from __future__ import annotations

import pytest

from armada.core.config import parse_config
from armada.models import Event, Job, Queue, RetryPolicy, SchedulingReason
from armada.services import stopping
from armada.services.records import records_write
from armada.services.scheduler import scheduler_cycle
from armada.services.submit import job_submit
from tests.conftest import at, job, job_file
from tests.executor_api import api_agent

pytestmark = pytest.mark.django_db
FAKE = "fake.armadaproject.io/"


@pytest.fixture
def agent(settings):
    settings.ARMADA = parse_config(
        {
            "executors": [
                {
                    "id": "test",
                    "trackedNodeLabels": ["zone"],
                    "nodes": [
                        {
                            "name": "n",
                            "labels": {"zone": "a", "hidden": "x"},
                            "allocatable": {"cpu": "1", "memory": "8Gi"},
                        }
                    ],
                }
            ]
        }
    )
    a = api_agent(settings.ARMADA.executors[0])
    a.tick(at(0))
    return a


def test_job_list_filters_and_pages_by_keyset(api, queue, owner):
    ids = job_submit(actor=owner, data=job_file(jobs=[job() for _ in range(5)]), now=at(0))
    other = job_submit(actor=owner, data=job_file(job_set="other"), now=at(0))
    Job.objects.filter(id=ids[1]).update(state="cancelled")

    first = api.get("/api/v1/jobs?queue=demo&jobSetId=set-1&limit=2").json()
    assert [j["id"] for j in first["items"]] == ids[:2] and first["next"] == ids[1]
    second = api.get(f"/api/v1/jobs?queue=demo&jobSetId=set-1&limit=2&after={first['next']}")
    assert [j["id"] for j in second.json()["items"]] == ids[2:4]
    last = api.get(f"/api/v1/jobs?queue=demo&jobSetId=set-1&limit=2&after={ids[3]}").json()
    assert [j["id"] for j in last["items"]] == ids[4:] and last["next"] is None

    queued = api.get("/api/v1/jobs?queue=demo&state=queued").json()["items"]
    assert [j["id"] for j in queued] == [i for i in ids + other if i != ids[1]]
    either = api.get("/api/v1/jobs?queue=demo&state=cancelled,queued&jobSetId=other").json()
    assert [j["id"] for j in either["items"]] == other
    assert set(first["items"][0]) >= {"id", "queue", "jobSetId", "state", "priority", "owner"}


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("state=sleeping", "state"),
        ("limit=0", "limit"),
        ("limit=abc", "limit"),
        ("limit=1001", "limit"),
        ("jobSetId=set-1", "queue"),
    ],
)
def test_job_list_rejects_bad_filters_naming_the_field(api, queue, query, field):
    response = api.get(f"/api/v1/jobs?{query}")
    assert response.status_code == 400
    assert [e["field"] for e in response.json()["errors"]] == [field]


def test_job_list_of_a_missing_queue_is_a_404(api, queue):
    response = api.get("/api/v1/jobs?queue=ghost")
    assert response.status_code == 404 and "ghost" in response.json()["message"]


def test_job_sets_with_counts_per_state(api, queue, owner):
    ids = job_submit(actor=owner, data=job_file(jobs=[job(), job(), job()]), now=at(0))
    job_submit(actor=owner, data=job_file(job_set="b"), now=at(1))
    Job.objects.filter(id=ids[0]).update(state="succeeded")
    Job.objects.filter(
        id__in=job_submit(actor=owner, data=job_file(job_set="c"), now=at(2))
    ).update(state="failed")
    sets = api.get("/api/v1/queues/demo/job-sets").json()
    assert [s["jobSetId"] for s in sets] == ["b", "c", "set-1"]
    by_name = {s["jobSetId"]: s for s in sets}
    assert by_name["set-1"]["counts"]["queued"] == 2
    assert by_name["set-1"]["counts"]["succeeded"] == 1
    assert by_name["set-1"]["total"] == 3 and by_name["set-1"]["active"] is True
    assert by_name["c"]["active"] is False and by_name["c"]["counts"]["failed"] == 1
    assert api.get("/api/v1/queues/ghost/job-sets").status_code == 404


def test_cancel_by_state_cancels_across_job_sets_and_leaves_the_others(agent, api, queue, owner):
    running, waiting = job_submit(
        actor=owner,
        data=job_file(jobs=[job(annotations={FAKE + "duration": "1h"}), job()]),
        now=at(0),
    )
    scheduler_cycle(now=at(1))
    agent.tick(at(2))
    [elsewhere] = job_submit(actor=owner, data=job_file(job_set="other"), now=at(3))
    response = api.post(
        "/api/v1/jobs/cancel", {"queue": "demo", "states": ["queued"]}, format="json"
    )
    assert response.status_code == 200
    assert sorted(response.json()["jobIds"]) == sorted([waiting, elsewhere])
    assert Job.objects.get(id=waiting).state == "cancelled"
    assert Job.objects.get(id=elsewhere).state == "cancelled"
    assert Job.objects.get(id=running).state == "running"
    assert list(
        Event.objects.filter(job_id=elsewhere).order_by("id").values_list("job_set", "type")
    )[-1] == ("other", "cancelled")

    response = api.post(
        "/api/v1/jobs/cancel-by-state", {"queue": "demo", "states": ["running"]}, format="json"
    )
    assert response.status_code == 200 and response.json()["jobIds"] == [running]
    agent.tick(at(4))
    agent.tick(at(5))
    assert Job.objects.get(id=running).state == "cancelled"


def test_cancel_by_state_is_all_or_nothing(agent, api, queue, owner, monkeypatch):
    running, waiting = job_submit(
        actor=owner,
        data=job_file(jobs=[job(annotations={FAKE + "duration": "1h"}), job()]),
        now=at(0),
    )
    scheduler_cycle(now=at(1))
    agent.tick(at(2))
    events_before = Event.objects.count()

    def broken(**kwargs):
        raise RuntimeError("the database went away half way")

    monkeypatch.setattr(stopping, "_mark_stops", broken)  # the running half fails
    with pytest.raises(RuntimeError):
        api.post(
            "/api/v1/jobs/cancel", {"queue": "demo", "states": ["queued", "running"]}, format="json"
        )
    assert Job.objects.get(id=waiting).state == "queued"  # the queued half was rolled back
    assert Event.objects.count() == events_before


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"queue": "demo", "states": []}, "states"),
        ({"queue": "demo", "states": ["succeeded"]}, "states"),
        ({"queue": "demo", "states": "queued"}, "states"),
        ({"queue": "demo", "states": ["queued"], "jobSetId": "set-1"}, "states"),
        ({"states": ["queued"]}, "queue"),
    ],
)
def test_cancel_by_state_rejects_bad_bodies_and_changes_nothing(api, queue, owner, body, field):
    [job_id] = job_submit(actor=owner, data=job_file(), now=at(0))
    response = api.post("/api/v1/jobs/cancel", body, format="json")
    assert response.status_code == 400
    assert [e["field"] for e in response.json()["errors"]] == [field]
    assert Job.objects.get(id=job_id).state == "queued"


def test_the_old_cancel_shape_still_works(api, queue, owner):
    [job_id] = job_submit(actor=owner, data=job_file(), now=at(0))
    response = api.post(
        "/api/v1/jobs/cancel", {"queue": "demo", "jobSetId": "set-1"}, format="json"
    )
    assert response.status_code == 200 and response.json()["jobIds"] == [job_id]


def test_executors_and_their_nodes(agent, api):
    [executor] = api.get("/api/v1/executors").json()
    assert executor["id"] == "test" and executor["nodeCount"] == 1
    assert executor["cordoned"] is False
    detail = api.get("/api/v1/executors/test").json()
    [node] = detail["nodes"]
    assert node["name"] == "n" and node["labels"] == {"zone": "a"}
    assert node["allocatable"]["cpu"] == 1000 and node["unschedulable"] is False
    assert api.get("/api/v1/executors/ghost").status_code == 404


def test_a_cordoned_executor_gets_no_new_leases(agent, api, queue, owner):
    assert api.post("/api/v1/executors/test/cordon").json()["cordoned"] is True
    [job_id] = job_submit(actor=owner, data=job_file(), now=at(1))
    agent.tick(at(1))
    scheduler_cycle(now=at(2))
    assert Job.objects.get(id=job_id).state == "queued"
    assert api.post("/api/v1/executors/test/uncordon").json()["cordoned"] is False
    scheduler_cycle(now=at(3))
    assert Job.objects.get(id=job_id).state == "leased"
    assert api.post("/api/v1/executors/ghost/cordon").status_code == 404


def test_scheduling_record_says_why_a_job_waits(api, queue, owner):
    [job_id] = job_submit(actor=owner, data=job_file(), now=at(0))
    before = api.get(f"/api/v1/jobs/{job_id}/scheduling").json()
    assert before["state"] == "queued" and before["pendingReason"] is None
    assert before["latestRounds"] == []
    records_write(
        started_at=at(1),
        duration_ms=12,
        considered=1,
        leased_ids=[],
        expired=0,
        decided=0,
        unschedulable={job_id: "no node has 1 cpu free"},
    )
    assert SchedulingReason.objects.filter(job_id=job_id).exists()
    found = api.get(f"/api/v1/jobs/{job_id}/scheduling").json()
    assert found["pendingReason"]["reason"] == "no node has 1 cpu free"
    [round_] = found["latestRounds"]
    assert (round_["considered"], round_["unschedulable"], round_["durationMs"]) == (1, 1, 12)
    assert found["pendingReason"]["roundId"] == round_["id"]
    assert api.get("/api/v1/jobs/ghost/scheduling").status_code == 404


def test_dry_run_create_checks_everything_and_writes_nothing(api, queue):
    ok = api.post("/api/v1/queues?dryRun=true", {"name": "fresh"}, format="json")
    assert ok.status_code == 200 and ok.json()["name"] == "fresh"
    assert not Queue.objects.filter(name="fresh").exists()
    taken = api.post("/api/v1/queues?dryRun=true", {"name": "demo"}, format="json")
    assert taken.status_code == 409
    bad = api.post(
        "/api/v1/queues?dryRun=true", {"name": "x", "retryPolicies": ["ghost"]}, format="json"
    )
    assert bad.status_code == 400 and bad.json()["errors"][0]["field"] == "retryPolicies"
    policy = {"name": "p", "retryLimit": 1, "defaultAction": "Fail"}
    ok = api.post("/api/v1/retry-policies?dryRun=true", policy, format="json")
    assert ok.status_code == 200 and ok.json()["version"] == 1
    assert not RetryPolicy.objects.exists()
    bad = api.post(
        "/api/v1/retry-policies?dryRun=true", {**policy, "retryLimit": -1}, format="json"
    )
    assert bad.status_code == 400 and bad.json()["errors"][0]["field"] == "retryLimit"
    assert api.post("/api/v1/queues?dryRun=maybe", {"name": "y"}, format="json").status_code == 400


def test_schema_documents_the_new_operations_and_the_error_shape(api):
    schema = api.get("/api/v1/schema", HTTP_ACCEPT="application/json").json()
    for path in (
        "/api/v1/jobs",
        "/api/v1/jobs/cancel-by-state",
        "/api/v1/jobs/{job_id}/scheduling",
        "/api/v1/queues/{name}/job-sets",
        "/api/v1/executors",
        "/api/v1/executors/{executor_id}",
        "/api/v1/executors/{executor_id}/cordon",
        "/api/v1/executors/{executor_id}/uncordon",
    ):
        assert path in schema["paths"], path
    assert "get" in schema["paths"]["/api/v1/jobs"] and "post" in schema["paths"]["/api/v1/jobs"]
    error = schema["components"]["schemas"]["Error"]
    assert set(error["properties"]) == {"message", "errors"}
    forbidden = schema["paths"]["/api/v1/executors/{executor_id}/cordon"]["post"]["responses"][
        "403"
    ]
    assert forbidden["content"]["application/json"]["schema"]["$ref"].endswith("/Error")
    params = {p["name"] for p in schema["paths"]["/api/v1/queues"]["post"]["parameters"]}
    assert "dryRun" in params
