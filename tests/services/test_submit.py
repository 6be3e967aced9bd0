from __future__ import annotations

import pytest

from armada.core.errors import ValidationFailed
from armada.models import Event, Job
from armada.services.errors import PermissionDenied
from armada.services.submit import job_submit
from tests.conftest import T0, job, job_file

pytestmark = pytest.mark.django_db


def test_submit_writes_jobs_with_submitted_and_queued_events(queue, owner):
    ids = job_submit(actor=owner, data=job_file(jobs=[job(), job(cpu="2", memory="3Gi")]), now=T0)

    assert len(ids) == 2 and len(set(ids)) == 2
    jobs = {j.id: j for j in Job.objects.all()}
    assert set(jobs) == set(ids)
    second = jobs[ids[1]]
    assert second.state == "queued"
    assert second.owner == "olive"
    assert second.priority_class == "armada-default"
    assert second.requests == {"cpu": 2000, "memory": 3 * 2**30 * 1000}
    events = list(Event.objects.order_by("id").values_list("job_id", "type"))
    assert events == [
        (ids[0], "submitted"),
        (ids[0], "queued"),
        (ids[1], "submitted"),
        (ids[1], "queued"),
    ]


def test_job_ids_sort_in_submission_order(queue, owner):
    ids = job_submit(actor=owner, data=job_file(jobs=[job() for _ in range(20)]), now=T0)
    assert ids == sorted(ids)
    assert all(len(i) == 26 and i == i.lower() for i in ids)


def test_one_bad_job_rejects_the_whole_file_and_writes_nothing(queue, owner):
    bad = job()
    del bad["podSpec"]["containers"][0]["resources"]
    with pytest.raises(ValidationFailed) as exc:
        job_submit(actor=owner, data=job_file(jobs=[job(), bad, job()]), now=T0)

    assert [e.field for e in exc.value.errors] == ["jobs[1].podSpec.containers[0].resources"]
    assert Job.objects.count() == 0
    assert Event.objects.count() == 0


def test_missing_queue_is_named(db, owner):
    with pytest.raises(ValidationFailed) as exc:
        job_submit(actor=owner, data=job_file(queue="ghost"), now=T0)
    assert exc.value.errors[0].field == "queue"
    assert "ghost" in exc.value.errors[0].message
    assert Job.objects.count() == 0


def test_cordoned_queue_accepts_no_jobs(queue, owner, admin_user):
    from armada.services.queues import queue_set_cordoned

    queue_set_cordoned(actor=admin_user, name="demo", cordoned=True, now=T0)
    with pytest.raises(ValidationFailed, match="cordoned"):
        job_submit(actor=owner, data=job_file(), now=T0)
    assert Job.objects.count() == 0


def test_unknown_priority_class_is_refused(queue, owner):
    spec = job()
    spec["podSpec"]["priorityClassName"] = "armada-urgent"
    with pytest.raises(ValidationFailed) as exc:
        job_submit(actor=owner, data=job_file(jobs=[spec]), now=T0)
    assert exc.value.errors[0].field == "jobs[0].podSpec.priorityClassName"


@pytest.mark.parametrize(
    ("persona", "allowed"),
    [("admin_user", True), ("owner", True), ("member", True), ("outsider", False)],
)
def test_submit_permission_matrix(request, queue, persona, allowed):
    user = request.getfixturevalue(persona)
    if allowed:
        assert len(job_submit(actor=user, data=job_file(), now=T0)) == 1
    else:
        with pytest.raises(PermissionDenied, match="submit"):
            job_submit(actor=user, data=job_file(), now=T0)
        assert Job.objects.count() == 0
