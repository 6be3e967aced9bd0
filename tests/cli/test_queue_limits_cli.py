"""``armadactl`` and a queue's ``resourceLimitsByPriorityClassName``: ``create -f`` and
``update -f`` carry it from an Armada-shaped queue file, ``get queue`` shows it for people,
and a bad value is refused naming its path (against Django's live server)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from armada.cli.output import class_limits_text, render_queue
from armada.models import Queue
from tests.cli.conftest import live_armadactl
from tests.queue_limits import EXAMPLE, EXAMPLE_YAML, LIMITS, PC, two_pools

QUEUE_FILE = (
    "apiVersion: armadaproject.io/v1beta1\nkind: Queue\nname: science\npriorityFactor: 2\n"
    + EXAMPLE_YAML
)


@pytest.fixture
def ctl(live_server, admin_user, capsys, settings):
    two_pools(settings)
    return live_armadactl(live_server.url, capsys, ("root", "root-password"))


@pytest.mark.django_db(transaction=True)
def test_create_from_an_armada_shaped_file_then_get_and_update(ctl, tmp_path: Path):
    path = tmp_path / "queue.yaml"
    path.write_text(QUEUE_FILE)
    code, out, err = ctl("create", "-f", str(path))
    assert (code, out) == (0, "Created queue science\n"), err
    assert Queue.objects.get(name="science").resource_limits_by_priority_class_name == EXAMPLE

    code, out, err = ctl("get", "queue", "science")
    assert code == 0, err
    assert out.splitlines()[-2:] == [
        "Resource limits by priority class:",
        f"  {PC}: cpu 30%, memory 30%; in pool gpu-pool: cpu 10%",
    ]
    code, out, _ = ctl("get", "queue", "science", "-o", "yaml")
    assert yaml.safe_load(out)[LIMITS] == EXAMPLE

    path.write_text(
        "kind: Queue\nname: science\n"
        f"{LIMITS}:\n  armada-default:\n    maximumResourceFraction: {{memory: 0.5}}\n"
    )
    code, out, err = ctl("update", "-f", str(path))
    assert (code, out) == (0, "Updated queue science\n"), err
    queue = Queue.objects.get(name="science")
    assert queue.priority_factor == 2  # not in the file: kept
    assert queue.resource_limits_by_priority_class_name == {
        "armada-default": {
            "maximumResourceFraction": {"memory": 0.5},
            "maximumResourceFractionByPool": {},
        }
    }


@pytest.mark.django_db(transaction=True)
def test_a_bad_value_in_the_file_is_refused_naming_its_path(ctl, tmp_path: Path):
    path = tmp_path / "queue.yaml"
    path.write_text(QUEUE_FILE.replace("cpu: 0.1", "cpu: 10"))
    code, _, err = ctl("create", "-f", str(path))
    assert code == 1
    assert (
        f"{LIMITS}.{PC}.maximumResourceFractionByPool.gpu-pool.maximumResourceFraction.cpu: "
        "must be a number from 0 to 1"
    ) in err
    assert not Queue.objects.exists()

    ctl("create", "queue", "science")
    path.write_text(f"kind: Queue\nname: science\n{LIMITS}: {{armada-urgent: {{}}}}\n")
    code, _, err = ctl("update", "-f", str(path))
    assert code == 1 and "queue science: " in err
    assert f"{LIMITS}.armada-urgent: unknown priority class; configured: " in err
    assert Queue.objects.get(name="science").resource_limits_by_priority_class_name == {}


def test_update_needs_a_resource_or_a_file(capsys):
    from armada.cli.main import main

    assert main(["update"]) == 1
    assert "give a RESOURCE (queue, retry-policy) or -f FILE" in capsys.readouterr().err


def test_the_queue_commands_help_says_the_file_is_the_way(capsys):
    from armada.cli.main import main

    for verb in ("create", "update"):
        assert main([verb, "queue", "--help"]) == 0
        assert f"armadactl {verb} -f" in capsys.readouterr().out.replace("\n", " ")


@pytest.mark.parametrize(
    ("entry", "text"),
    [
        (EXAMPLE[PC], "cpu 30%, memory 30%; in pool gpu-pool: cpu 10%"),
        ({"maximumResourceFraction": {}, "maximumResourceFractionByPool": {}}, "none"),
        (
            {"maximumResourceFractionByPool": {"default": {"maximumResourceFraction": {}}}},
            "in pool default: none",
        ),
        (
            {"maximumResourceFraction": {"nvidia.com/gpu": 0.125, "cpu": 1}},
            "nvidia.com/gpu 12.5%, cpu 100%",
        ),
    ],
    ids=["example", "empty", "empty-pool", "odd-fractions"],
)
def test_class_limits_text(entry, text):
    assert class_limits_text(entry) == text


def test_a_queue_without_limits_is_its_row_alone():
    assert render_queue({"name": "q", LIMITS: {}}, "table").splitlines()[-1].startswith("q ")
