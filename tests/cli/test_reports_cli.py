"""``armadactl get queue-report | job-report | scheduling-report`` against Django's live
server: what the reports say about waiting and running jobs, ``-v``, ``-o json``,
Armada's deprecated ``scheduling-report --queue/--job-id``, and refusals."""

from __future__ import annotations

import json

import pytest
from django.utils import timezone

from armada.models import Executor, Run
from armada.services.records import records_write
from armada.services.scheduler import scheduler_cycle
from armada.services.submit import job_submit
from tests.conftest import at, fake_agent, job, job_file

pytestmark = pytest.mark.django_db(transaction=True)

FAKE = "fake.armadaproject.io/"
NO_CPU = "no node with 8 cpu free"


@pytest.fixture
def world(settings, queue, owner) -> dict[str, str]:
    """One demo job running on node ``n`` of executor ``test``, one too big to fit (its
    reason recorded by the scheduler's round) and one submitted after the round."""
    agent = fake_agent(settings, cpu="2", memory="16Gi")
    [running, big] = job_submit(
        actor=owner,
        data=job_file(jobs=[job(annotations={FAKE + "duration": "1h"}), job(cpu="8")]),
        now=at(0),
    )
    scheduler_cycle(now=at(1))
    agent.tick(at(2))
    assert Run.objects.get().job_id == running
    records_write(
        started_at=at(3),
        duration_ms=2,
        considered=1,
        leased_ids=[],
        expired=0,
        decided=0,
        unschedulable={big: NO_CPU},
    )
    [late] = job_submit(actor=owner, data=job_file(), now=at(4))
    # Alive now, so that its node counts in the pool's capacity (2 cpu, half of it used).
    Executor.objects.update(last_heartbeat=timezone.now())
    return {"running": running, "big": big, "late": late}


def test_queue_report(ctl, world):
    code, out, err = ctl("get", "queue-report", "demo")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "Queue demo (pool: all pools)"
    assert "Jobs: queued 2, running 1" in out
    assert "Fair share 1.000, current share 0.500" in out and "Allocated: cpu=1," in out
    reasons = lines.index("Queued jobs wait because:")
    assert lines[reasons + 1].split() == ["JOBS", "SINCE", "REASON"]
    assert lines[reasons + 2].split()[0] == "1" and lines[reasons + 2].endswith(NO_CPU)
    assert "1 queued job(s) have no recorded reason yet" in out
    assert lines[-1].startswith("Latest round: ") and "unschedulable 1" in lines[-1]
    assert world["big"] not in out  # ids only with -v

    code, out, _ = ctl("get", "queue-report", "demo", "-v")
    assert f"  {NO_CPU}: {world['big']}" in out and "Latest rounds:" in out
    code, out, _ = ctl("get", "queue-report", "demo", "-o", "json", "--pool", "default")
    report = json.loads(out)
    assert report["pool"] == "default" and report["pendingReasons"][0]["jobs"] == 1


def test_job_report(ctl, world):
    code, out, err = ctl("get", "job-report", world["big"])
    assert code == 0, err
    assert out.splitlines()[:2] == [
        f"Job {world['big']} (queue demo, job set set-1): queued",
        f"Unschedulable: {NO_CPU} (round " + out.split("(round ", 1)[1].split(")", 1)[0] + ")",
    ]
    code, out, _ = ctl("get", "job-report", world["running"])
    assert f"Job {world['running']} (queue demo, job set set-1): running" in out
    assert "on node n of executor test (pool default)" in out
    code, out, _ = ctl("get", "job-report", world["late"])
    assert "no scheduling round has considered this job yet" in out
    code, out, _ = ctl("get", "job-report", world["running"], "-o", "json")
    data = json.loads(out)
    assert data["scheduling"]["state"] == "running" and data["runs"][0]["node"] == "n"


def test_scheduling_report_and_the_deprecated_flags(ctl, world, admin_user):
    code, out, err = ctl("get", "scheduling-report")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "Scheduling report (pool: all pools)"
    assert lines[1].startswith("Latest round: ")
    header = lines.index(next(line for line in lines if line.startswith("QUEUE")))
    assert lines[header + 1].split()[:6] == ["demo", "1", "1.000", "0.500", "2", "1"]
    assert NO_CPU in out

    code, out, err = ctl("get", "scheduling-report", "--queue", "demo")
    assert code == 0 and "Please use `queue-report` instead." in err
    assert out.startswith("Queue demo")
    code, out, err = ctl("get", "scheduling-report", "--job-id", world["big"])
    assert code == 0 and "Please use `job-report` instead." in err
    assert out.startswith(f"Job {world['big']}")


def test_refusals_and_usage_errors(ctl, world, outsider):
    code, _, err = ctl("get", "queue-report", "demo", user=("otto", "otto-password"))
    assert code == 1 and "'watch'" in err
    code, out, err = ctl("get", "scheduling-report", user=("otto", "otto-password"))
    assert code == 0 and "No active queue you may watch." in out and world["big"] not in out
    code, _, err = ctl("get", "queue-report", "nope")
    assert code == 1 and "nope" in err
    code, _, err = ctl("get", "job-report", "01nosuchjob")
    assert code == 1 and "01nosuchjob" in err
    code, _, err = ctl("get", "queue-report", "demo", "--pool", "elsewhere")
    assert code == 1 and "pool:" in err and "default" in err
    code, _, err = ctl("get", "scheduling-report", "-vvvv")
    assert code == 2 and "at most 3 times" in err
    code, _, err = ctl("get", "scheduling-report", "--queue", "demo", "--job-id", "x")
    assert code == 2 and "not allowed with argument" in err
