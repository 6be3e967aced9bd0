"""``armadactl cancel|preempt executor NAME`` and ``delete executor NAME``: Armada's flags and
lines, what is sent (a fake server), then the real thing against Django's live server."""

from __future__ import annotations

import json

import pytest

from armada.models import Executor, ExecutorCredential, Run
from armada.services.scheduler import scheduler_cycle
from armada.services.submit import job_submit
from tests.cli.conftest import live_armadactl
from tests.cli.fake_armada import FakeArmada
from tests.cli.helpers import run
from tests.conftest import at, fake_agent, job, job_file

FAKE = "fake.armadaproject.io/"


@pytest.mark.parametrize(
    ("action", "noun"), [("cancel", "cancellation"), ("preempt", "preemption")]
)
def test_flags_become_the_body_and_armadas_line_is_printed(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada, action: str, noun: str
) -> None:
    path = f"/api/v1/executors/cluster-1/{action}"
    fake_armada.canned["POST", path] = (200, {"jobIds": ["j1", "j2"]})
    code, out, err = run(
        capsys, action, "executor", "cluster-1", "-q", "a,b", "--queues", "c",
        "-p", "armada-default", "--pools", "default,gpu", "--reason", "drain",
        "--url", fake_armada.url,
    )  # fmt: skip
    assert (code, err) == (0, "")
    request = fake_armada.requests[-1]
    assert (request.method, request.path) == ("POST", path)
    assert request.body == {
        "reason": "drain",
        "queues": ["a", "b", "c"],
        "priorityClasses": ["armada-default"],
        "pools": ["default", "gpu"],
    }
    doing = "Cancelling" if action == "cancel" else "Preempting"
    assert out.splitlines() == [
        f"Requesting {noun} of jobs matching executor: cluster-1, queues: a,b,c, "
        "priority-classes: armada-default, pools: default,gpu",
        f"{doing} 2 job(s) on executor cluster-1",
    ]


def test_all_priority_classes_sends_no_filter_and_json_output(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    fake_armada.canned["POST", "/api/v1/executors/x/cancel"] = (200, {"jobIds": ["j1"]})
    code, out, err = run(
        capsys, "cancel", "executor", "x", "-a", "-o", "json", "--url", fake_armada.url
    )
    assert code == 0, err
    assert fake_armada.requests[-1].body == {}
    assert json.loads(out) == {"jobIds": ["j1"]}


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["cancel", "executor", "x"], "-a/--all-priority-classes"),
        (["preempt", "executor", "x", "-q", "a"], "-p/--priority-classes"),
        (["cancel", "executor", "x", "-p", "a", "-a"], "not allowed with argument"),
        (["cancel", "executor", " ", "-a"], "empty executor name"),
        (["preempt", "executor"], "EXECUTOR"),
        (["delete", "executor", ""], "must be non-empty"),
    ],
)
def test_bad_arguments_are_usage_errors_and_send_nothing(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada, argv: list[str], fragment: str
) -> None:
    code, out, err = run(capsys, *argv, "--url", fake_armada.url)
    assert (code, out) == (2, "") and fragment in err
    assert fake_armada.requests == []


def test_delete_executor_prints_what_happened(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    fake_armada.canned["DELETE", "/api/v1/executors/old"] = (
        200,
        {"id": "old", "credentialsRevoked": 2, "nodesRemoved": 3, "activeRuns": 4},
    )
    code, out, err = run(capsys, "delete", "executor", "old", "--url", fake_armada.url)
    assert (code, err) == (0, "")
    assert out == (
        "Deleted executor old (2 credential(s) revoked; 4 active run(s) will end by lease expiry)\n"
    )


def test_docs_lists_topics_and_shows_one(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "docs")
    assert code == 0 and "  executors" in out and "  connection" in out
    code, out, _ = run(capsys, "docs", "submit", "-p")
    assert code == 0 and "Submitted job with id <job id> to job set <job set>" in out
    code, out, err = run(capsys, "docs", "nope")
    assert (code, out) == (2, "") and "no topic 'nope'; topics: connection" in err


# == against the real API ===================================================================


@pytest.fixture
def running(settings, queue, owner) -> list[str]:
    """Three running demo jobs on executor ``test``."""
    agent = fake_agent(settings, cpu="3", memory="16Gi")
    long = job(annotations={FAKE + "duration": "1h"})
    job_submit(actor=owner, data=job_file(jobs=[long] * 3), now=at(0))
    scheduler_cycle(now=at(1))
    agent.tick(at(2))
    ids = sorted(Run.objects.filter(executor="test").values_list("job_id", flat=True))
    assert len(ids) == 3
    return ids


@pytest.mark.django_db(transaction=True)
def test_live_executor_commands(live_server, capsys, admin_user, running):
    as_owner = live_armadactl(live_server.url, capsys, ("olive", "olive-password"))
    ctl = live_armadactl(live_server.url, capsys, ("root", "root-password"))

    code, _, err = as_owner("cancel", "executor", "test", "-a")
    assert code == 1 and "cancel_any_jobs" in err  # owning the queue is not enough
    code, _, err = ctl("cancel", "executor", "nowhere", "-a")
    assert code == 1 and "nowhere" in err
    code, _, err = ctl("preempt", "executor", "test", "-p", "nope")
    assert code == 1 and "priorityClasses[0]: unknown priority class 'nope'" in err
    assert set(Run.objects.values_list("stop_kind", flat=True)) == {""}  # nothing changed

    code, out, err = ctl("preempt", "executor", "test", "-a", "--reason", "drain", "-o", "json")
    assert code == 0, err
    assert json.loads(out) == {"jobIds": running}
    stops = set(Run.objects.filter(job_id__in=running).values_list("stop_kind", "stop_reason"))
    assert stops == {("preempt", "drain")}

    code, _, err = as_owner("delete", "executor", "test")
    assert code == 1 and "update_executor_settings" in err
    code, out, err = ctl("delete", "executor", "test")
    assert (code, err) == (0, "")
    assert out.startswith("Deleted executor test (1 credential(s) revoked")
    assert not Executor.objects.exists()
    assert not ExecutorCredential.objects.filter(revoked_at__isnull=True).exists()
    code, out, err = ctl("get", "executors")
    assert (code, out) == (0, "") and "No executors found." in err
    code, _, err = ctl("delete", "executor", "test")
    assert code == 1 and "executor 'test' does not exist" in err
