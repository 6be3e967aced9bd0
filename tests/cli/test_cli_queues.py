"""Queue commands against a real HTTP server: get, create, update, delete, cordon.

No Django, no database: the fake server of conftest.py speaks the REST contract.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from tests.cli.fake_armada import FakeArmada
from tests.cli.helpers import run

# == 2. against a real HTTP server ========================================================


def test_get_queues_table_yaml_and_json(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    fake_armada.add_queue(
        "analytics", priorityFactor=2.0, owners=["alice"], labels={"team": "data"}
    )
    fake_armada.add_queue("batch")
    code, out, err = run(capsys, "--url", fake_armada.url, "get", "queues")
    assert (code, err) == (0, "")
    rows = [line.split() for line in out.splitlines()]
    assert rows[1] == ["analytics", "2", "false", "alice", "-", "-", "team=data"]
    assert rows[2][0] == "batch"

    code, out, _ = run(capsys, "get", "queues", "-o", "yaml", "--url", fake_armada.url)
    assert code == 0
    assert [q["name"] for q in yaml.safe_load(out)] == ["analytics", "batch"]

    code, out, _ = run(capsys, "get", "queues", "-o", "json", "--url", fake_armada.url)
    assert json.loads(out)[0] == fake_armada.queues["analytics"]


def test_get_queues_when_there_are_none(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    code, out, err = run(capsys, "--url", fake_armada.url, "get", "queues")
    assert (code, out) == (0, "")
    assert err.strip() == "No queues found."
    code, out, _ = run(capsys, "--url", fake_armada.url, "get", "queues", "-o", "json")
    assert json.loads(out) == []


def test_get_queue_found_and_not_found(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    fake_armada.add_queue("analytics", retryPolicies=["oom", "net"])
    code, out, _ = run(capsys, "--url", fake_armada.url, "get", "queue", "analytics", "-o", "yaml")
    assert code == 0
    assert yaml.safe_load(out)["retryPolicies"] == ["oom", "net"]

    code, out, _ = run(capsys, "--url", fake_armada.url, "get", "queue", "analytics")
    assert code == 0 and out.splitlines()[1].split()[0] == "analytics"

    code, out, err = run(capsys, "--url", fake_armada.url, "get", "queue", "ghost")
    assert (code, out) == (1, "")
    assert err.strip() == "Error: queue ghost does not exist"


def test_create_queue_sends_the_flags_as_a_queue_body(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    code, out, err = run(
        capsys,
        "--url",
        fake_armada.url,
        "create",
        "queue",
        "analytics",
        "--priority-factor",
        "3",
        "--owners",
        "alice,bob",
        "--group-owners",
        "ops",
        "--labels",
        "team=data",
        "--retry-policies",
        "oom",
        "--cordoned",
    )
    assert (code, err) == (0, "")
    assert out.strip() == "Created queue analytics"
    (request,) = fake_armada.requests
    assert (request.method, request.path) == ("POST", "/api/v1/queues")
    assert request.body == {
        "name": "analytics",
        "priorityFactor": 3.0,
        "owners": ["alice", "bob"],
        "groupOwners": ["ops"],
        "labels": {"team": "data"},
        "retryPolicies": ["oom"],
        "cordoned": True,
    }


def test_create_queue_minimal_body_and_conflict(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    assert run(capsys, "--url", fake_armada.url, "create", "queue", "q1")[0] == 0
    assert fake_armada.requests[0].body == {"name": "q1"}
    code, out, err = run(capsys, "--url", fake_armada.url, "create", "queue", "q1")
    assert (code, out) == (1, "")
    assert err.splitlines() == ["Error: queue q1 already exists", "  name: must be unique"]


# -- queue changes, jobs and logs against the server --------------------------------------


def test_create_queue_sends_several_retry_policies_as_a_list(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    argv = ["--url", fake_armada.url, "create", "queue", "q1", "--retry-policies", "a, b"]
    assert run(capsys, *argv)[0] == 0
    assert fake_armada.requests[0].body == {"name": "q1", "retryPolicies": ["a", "b"]}


def test_update_queue_patches_only_the_flags_given(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    fake_armada.add_queue("analytics", owners=["carol"], labels={"old": "1"})
    fake_armada.add_policy("oom")
    fake_armada.add_policy("net")
    code, out, err = run(
        capsys,
        "--url",
        fake_armada.url,
        "update",
        "queue",
        "analytics",
        "--priority-factor",
        "2",
        "--owners",
        "alice,bob",
        "--group-owners",
        "ops",
        "--labels",
        "team=data,tier=gold",
        "--retry-policies",
        "oom,net",
        "--cordoned",
    )
    assert (code, err) == (0, "")
    assert out == "Updated queue analytics\n"
    (request,) = fake_armada.requests
    assert (request.method, request.path) == ("PATCH", "/api/v1/queues/analytics")
    assert request.body == {
        "priorityFactor": 2.0,
        "owners": ["alice", "bob"],
        "groupOwners": ["ops"],
        "labels": {"team": "data", "tier": "gold"},
        "retryPolicies": ["oom", "net"],
        "cordoned": True,
    }
    assert fake_armada.queues["analytics"]["retryPolicies"] == ["oom", "net"]


@pytest.mark.parametrize(
    ("flags", "body"),
    [
        (["--retry-policies", ""], {"retryPolicies": []}),
        (["--owners", ""], {"owners": []}),
        (["--labels", ""], {"labels": {}}),
        (["--uncordoned"], {"cordoned": False}),
        (["--priority-factor", "1.5"], {"priorityFactor": 1.5}),
    ],
    ids=["clear-policies", "clear-owners", "clear-labels", "uncordoned", "priority-only"],
)
def test_update_queue_single_flags(
    capsys: pytest.CaptureFixture[str],
    fake_armada: FakeArmada,
    flags: list[str],
    body: dict[str, Any],
) -> None:
    fake_armada.add_queue("q1", retryPolicies=["oom"], owners=["a"], cordoned=True)
    code, out, _ = run(capsys, "--url", fake_armada.url, "update", "queue", "q1", *flags)
    assert (code, out) == (0, "Updated queue q1\n")
    assert fake_armada.requests[0].body == body


def test_update_queue_without_flags_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    code, out, err = run(capsys, "--url", fake_armada.url, "update", "queue", "q1")
    assert (code, out) == (2, "")
    assert err.startswith("usage: armadactl update queue")
    assert err.splitlines()[-1].startswith("Error: nothing to change; give at least one of")
    assert fake_armada.requests == []


def test_update_queue_cordoned_and_uncordoned_exclude_each_other(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = run(capsys, "update", "queue", "q1", "--cordoned", "--uncordoned")
    assert code == 2
    assert "Error: argument --uncordoned: not allowed with argument --cordoned" in err


def test_update_queue_prints_field_errors_and_not_found(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    fake_armada.add_queue("q1")
    code, out, err = run(
        capsys,
        "--url",
        fake_armada.url,
        "update",
        "queue",
        "q1",
        "--retry-policies",
        "ghost",
        "--priority-factor",
        "0.5",
    )
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        "Error: the queue is not valid",
        "  retryPolicies[0]: retry policy 'ghost' does not exist",
        "  priorityFactor: must be at least 1.0",
    ]
    assert fake_armada.queues["q1"]["retryPolicies"] == []

    code, out, err = run(capsys, "--url", fake_armada.url, "update", "queue", "nope", "--cordoned")
    assert (code, out) == (1, "")
    assert err.strip() == "Error: queue nope does not exist"


def test_delete_queue(capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada) -> None:
    fake_armada.add_queue("old")
    code, out, err = run(capsys, "--url", fake_armada.url, "delete", "queue", "old")
    assert (code, out, err) == (0, "Deleted queue old\n", "")
    (request,) = fake_armada.requests
    assert (request.method, request.path, request.body) == ("DELETE", "/api/v1/queues/old", None)
    assert "old" not in fake_armada.queues


def test_delete_queue_refused_by_the_server(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    fake_armada.add_queue("busy")
    fake_armada.busy_queues.add("busy")
    code, out, err = run(capsys, "--url", fake_armada.url, "delete", "queue", "busy")
    assert (code, out) == (1, "")
    assert err.strip() == "Error: queue busy has unfinished jobs; cancel them or wait"
    code, _, err = run(capsys, "--url", fake_armada.url, "delete", "queue", "ghost")
    assert code == 1 and err.strip() == "Error: queue ghost does not exist"


def test_cordon_and_uncordon_queue(
    capsys: pytest.CaptureFixture[str], fake_armada: FakeArmada
) -> None:
    fake_armada.add_queue("q1")
    code, out, err = run(capsys, "--url", fake_armada.url, "cordon", "queue", "q1")
    assert (code, out, err) == (0, "Cordoned queue q1\n", "")
    assert fake_armada.queues["q1"]["cordoned"] is True
    code, out, _ = run(capsys, "uncordon", "queue", "q1", "--url", fake_armada.url)
    assert (code, out) == (0, "Uncordoned queue q1\n")
    assert fake_armada.queues["q1"]["cordoned"] is False
    assert [(r.method, r.path, r.body) for r in fake_armada.requests] == [
        ("POST", "/api/v1/queues/q1/cordon", None),
        ("POST", "/api/v1/queues/q1/uncordon", None),
    ]
    code, _, err = run(capsys, "--url", fake_armada.url, "cordon", "queue", "ghost")
    assert code == 1 and err.strip() == "Error: queue ghost does not exist"
