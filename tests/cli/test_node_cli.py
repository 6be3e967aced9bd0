"""``armadactl cancel|preempt node NODE -e EXECUTOR`` (Armada's shape) and ``cancel|preempt
on-node EXECUTOR NODE``: what is sent (a fake server), then the real thing against
Django's live server."""

from __future__ import annotations

import json

import pytest

from armada.cli.main import main
from armada.models import Run
from armada.services.scheduler import scheduler_cycle
from armada.services.submit import job_submit
from tests.cli.fake_armada import FakeArmada
from tests.conftest import at, fake_agent, job, job_file

FAKE = "fake.armadaproject.io/"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("action", ["cancel", "preempt"])
def test_both_shapes_send_the_same_request(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada, action: str
) -> None:
    path = f"/api/v1/executors/cluster-1/nodes/node-7/{action}"
    fake_armada.canned["POST", path] = (200, {"jobIds": ["j1", "j2"]})
    code, out, err = run(
        capsys, action, "node", "node-7", "-e", "cluster-1", "-q", "a,b", "--queues", "c",
        "-p", "armada-default", "--reason", "disk failing", "--url", fake_armada.url,
    )  # fmt: skip
    assert code == 0, err
    first = fake_armada.requests[-1]
    assert (first.method, first.path) == ("POST", path)
    assert first.body == {
        "reason": "disk failing",
        "queues": ["a", "b", "c"],
        "priorityClasses": ["armada-default"],
    }
    doing = {"cancel": "Cancelling", "preempt": "Preempting"}[action]
    assert out == (
        f"{doing} 2 job(s) on node node-7 of executor cluster-1 "
        "(queues a,b,c; priority classes armada-default)\n"
    )
    code, out, _ = run(
        capsys, action, "on-node", "cluster-1", "node-7", "-a", "-o", "json",
        "--url", fake_armada.url,
    )  # fmt: skip
    assert code == 0 and json.loads(out) == {"jobIds": ["j1", "j2"]}
    second = fake_armada.requests[-1]
    assert (second.path, second.body) == (path, {})  # no filters: every job on the node


def test_names_with_odd_characters_are_quoted_in_the_path(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    fake_armada.canned["POST", "/api/v1/executors/c%201/nodes/n%2F2/cancel"] = (200, {"jobIds": []})
    code, _, err = run(capsys, "cancel", "on-node", "c 1", "n/2", "--url", fake_armada.url)
    assert code == 0, err
    assert fake_armada.requests[-1].path == "/api/v1/executors/c%201/nodes/n%2F2/cancel"


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["cancel", "node", "n1"], "required: -e/--executor"),
        (["preempt", "node", "n1", "-e", " "], "required: -e/--executor"),
        (["cancel", "on-node", "cluster-1"], "NODE"),
        (["cancel", "node", "n1", "-e", "x", "-p", "a", "-a"], "not allowed with argument"),
        (["preempt", "on-node", "x", ""], "empty node name"),
    ],
)
def test_bad_arguments_are_usage_errors(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada, argv: list[str], fragment: str
) -> None:
    code, out, err = run(capsys, *argv, "--url", fake_armada.url)
    assert (code, out) == (2, "") and fragment in err
    assert fake_armada.requests == []


def test_a_server_answer_that_is_not_the_contract_is_an_error(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    fake_armada.canned["POST", "/api/v1/executors/x/nodes/n/cancel"] = (200, {"ids": []})
    code, _, err = run(capsys, "cancel", "node", "n", "-e", "x", "--url", fake_armada.url)
    assert code == 1 and "no jobIds list" in err


# == against the real API ===================================================================


@pytest.fixture
def on_node(settings, queue, owner) -> list[str]:
    """Three running demo jobs on node ``n`` of executor ``test``."""
    agent = fake_agent(settings, cpu="3", memory="16Gi")
    long = job(annotations={FAKE + "duration": "1h"})
    job_submit(actor=owner, data=job_file(jobs=[long] * 3), now=at(0))
    scheduler_cycle(now=at(1))
    agent.tick(at(2))
    ids = sorted(Run.objects.filter(node="n").values_list("job_id", flat=True))
    assert len(ids) == 3
    return ids


@pytest.mark.django_db(transaction=True)
def test_live_node_actions(ctl, on_node, member):
    code, _, err = ctl("cancel", "node", "ghost", "-e", "test")
    assert code == 1 and "ghost" in err
    code, _, err = ctl("cancel", "on-node", "nowhere", "n")
    assert code == 1 and "nowhere" in err
    code, _, err = ctl("preempt", "node", "n", "-e", "test", user=("mo", "mo-password"))
    assert code == 1 and "'preempt'" in err
    assert set(Run.objects.values_list("stop_kind", flat=True)) == {""}  # nothing changed

    code, out, err = ctl("preempt", "node", "n", "-e", "test", "-q", "other")
    assert code == 1 and "other" in err  # an unknown queue is named, nothing done

    code, out, err = ctl("preempt", "node", "n", "-e", "test", "--reason", "drain", "-o", "json")
    assert code == 0, err
    assert json.loads(out) == {"jobIds": on_node}
    stops = set(Run.objects.filter(job_id__in=on_node).values_list("stop_kind", "stop_reason"))
    assert stops == {("preempt", "drain")}
