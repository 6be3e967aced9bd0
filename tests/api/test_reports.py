"""Scheduling reports through the API: one queue's (``/api/v1/reports/queues/{name}``) and
the overall one (``/api/v1/reports/scheduling``): what they count, who may read them, and
bad options answered 400 naming the option."""

from __future__ import annotations

import pytest

from armada.services.queues import queue_create
from armada.services.records import records_write
from armada.services.submit import job_submit
from tests.conftest import T0, at, job, job_file

pytestmark = pytest.mark.django_db

NO_CPU = "no node with 1 cpu free"
NO_GPU = "no node has nvidia.com/gpu"


@pytest.fixture
def waiting(queue, owner, admin_user) -> dict[str, list[str]]:
    """Three queued jobs in ``demo`` (two without cpu, one without gpu), one queued job
    nobody considered, and one job in ``hidden``, a queue only the admin may watch."""
    demo = job_submit(actor=owner, data=job_file(jobs=[job(), job(), job(), job()]), now=at(0))
    queue_create(actor=admin_user, data={"name": "hidden"}, now=T0)
    hidden = job_submit(actor=admin_user, data=job_file(queue="hidden"), now=at(0))
    records_write(
        started_at=at(1),
        duration_ms=4,
        considered=4,
        leased_ids=[],
        expired=0,
        decided=0,
        unschedulable={demo[0]: NO_CPU, demo[1]: NO_CPU, demo[2]: NO_GPU, hidden[0]: NO_GPU},
    )
    return {"demo": demo, "hidden": hidden}


def test_queue_report_counts_reasons_and_jobs(api_as, owner, waiting):
    response = api_as(owner).get("/api/v1/reports/queues/demo")
    assert response.status_code == 200, response.content
    report = response.json()
    assert report["queue"] == "demo" and report["pool"] is None
    assert report["jobsByState"] == {"queued": 4}
    assert report["active"] is True and report["fairShare"] == pytest.approx(0.5)
    assert [(r["reason"], r["jobs"]) for r in report["pendingReasons"]] == [
        (NO_CPU, 2),
        (NO_GPU, 1),
    ]
    assert "jobIds" not in report["pendingReasons"][0]
    assert report["queuedWithoutReason"] == 1
    [latest] = report["latestRounds"]
    assert (latest["considered"], latest["unschedulable"]) == (4, 4)


def test_verbosity_adds_job_ids_and_rounds(api_as, owner, waiting):
    for second in (2, 3):
        records_write(
            started_at=at(second),
            duration_ms=1,
            considered=0,
            leased_ids=[],
            expired=0,
            decided=0,
            unschedulable={},
        )
    report = api_as(owner).get("/api/v1/reports/queues/demo?verbosity=1").json()
    reasons = {r["reason"]: r["jobIds"] for r in report["pendingReasons"]}
    assert reasons == {NO_CPU: sorted(waiting["demo"][:2]), NO_GPU: [waiting["demo"][2]]}
    assert len(report["latestRounds"]) == 3


def test_the_overall_report_shows_only_queues_the_caller_may_watch(
    api_as, owner, admin_user, waiting
):
    mine = api_as(owner).get("/api/v1/reports/scheduling").json()
    assert [q["queue"] for q in mine["queues"]] == ["demo"]
    assert [(r["reason"], r["jobs"]) for r in mine["pendingReasons"]] == [(NO_CPU, 2), (NO_GPU, 1)]
    everything = api_as(admin_user).get("/api/v1/reports/scheduling").json()
    assert [q["queue"] for q in everything["queues"]] == ["demo", "hidden"]
    # Most jobs first; a tie in reason order.
    assert [(r["reason"], r["jobs"]) for r in everything["pendingReasons"]] == [
        (NO_GPU, 2),
        (NO_CPU, 2),
    ]


def test_reading_a_queue_report_needs_watch(api_as, outsider, waiting):
    response = api_as(outsider).get("/api/v1/reports/queues/demo")
    assert response.status_code == 403 and "'watch'" in response.json()["message"]
    assert api_as(None).get("/api/v1/reports/scheduling").status_code == 401
    response = api_as(outsider).get("/api/v1/reports/queues/nope")
    assert response.status_code == 404 and "nope" in response.json()["message"]
    # An outsider's overall report lists nothing and counts nothing of others' queues.
    report = api_as(outsider).get("/api/v1/reports/scheduling").json()
    assert report["queues"] == [] and report["pendingReasons"] == []


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("verbosity=4", "verbosity"),
        ("verbosity=-1", "verbosity"),
        ("verbosity=lots", "verbosity"),
        ("pool=nowhere", "pool"),
    ],
)
def test_bad_options_are_400_naming_them(api, waiting, query, field):
    for path in ("/api/v1/reports/scheduling", "/api/v1/reports/queues/demo"):
        response = api.get(f"{path}?{query}")
        assert response.status_code == 400, response.content
        assert [e["field"] for e in response.json()["errors"]] == [field]


def test_a_pool_is_a_configured_one(api, waiting):
    response = api.get("/api/v1/reports/queues/demo?pool=default")
    assert response.status_code == 200 and response.json()["pool"] == "default"
