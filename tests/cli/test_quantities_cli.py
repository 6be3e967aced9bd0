"""``armadactl`` shows quantities as people write them and rules numbered from 1: a job's
decision trail (as the API hands it out) and a node's allocatable resources."""

from __future__ import annotations

import json

import pytest
import yaml

from armada.core.config import parse_config
from tests.cli.conftest import live_armadactl
from tests.conftest import at
from tests.executor_api import register_executor
from tests.lookout.builders import make_job, make_run

pytestmark = pytest.mark.django_db(transaction=True)

MI = 2**20 * 1000  # milli-units of one MiB


@pytest.fixture
def ctl(live_server, admin_user, capsys):
    return live_armadactl(live_server.url, capsys, ("root", "root-password"))


def test_get_job_shows_the_trail_in_quantities_and_the_rule_from_one(ctl, queue, api):
    make_job("01q", state="queued", requests={"cpu": 500, "memory": 864 * MI})
    make_run(
        "r-1",
        "01q",
        state="failed",
        requests={"cpu": 500, "memory": 256 * MI},
        decision={
            "decision": "retry",
            "retry": True,
            "policy": "ml",
            "policyVersion": 1,
            "ruleIndex": 4,
            "retriesUsed": 0,
            "retryLimit": 3,
            "mutation": {"memory": {"kind": "factor", "before": 256 * MI, "after": 864 * MI}},
            "reason": "retry 1 of 3 (rule 5)",
        },
    )
    code, out, err = ctl("get", "job", "01q")
    assert (code, err) == (0, "")
    run = yaml.safe_load(out)["runs"][0]
    assert run["decision"]["rule"] == 5 and "ruleIndex" not in run["decision"]
    assert run["decision"]["mutation"]["memory"] == {
        "kind": "factor",
        "before": "256Mi",
        "after": "864Mi",
    }
    assert run["requests"] == {"cpu": "500m", "memory": "256Mi"}
    assert str(256 * MI) not in out
    # -o json is the API's representation, key for key.
    code, out, _ = ctl("get", "job", "01q", "-o", "json")
    assert code == 0 and json.loads(out) == api.get("/api/v1/jobs/01q").json()


def test_get_executor_shows_allocatable_as_quantities(ctl):
    config = parse_config(
        {
            "executors": [
                {
                    "id": "cluster-1",
                    "nodes": [
                        {
                            "name": "n1",
                            "allocatable": {
                                "cpu": "3500m",
                                "memory": "1.5Ti",
                                "nvidia.com/gpu": "2",
                            },
                        }
                    ],
                }
            ]
        }
    )
    register_executor(config.executors[0], at(0))
    code, out, _ = ctl("get", "executor", "cluster-1")
    assert code == 0
    node_row = next(line for line in out.splitlines() if line.startswith("n1 "))
    assert "cpu=3500m,memory=1.5Ti,nvidia.com/gpu=2" in node_row
    # For programs the numbers stay the API's own.
    code, out, _ = ctl("get", "executor", "cluster-1", "-o", "json")
    assert json.loads(out)["nodes"][0]["allocatable"]["cpu"] == 3500
