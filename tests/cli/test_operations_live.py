"""``armadactl`` against the real API (Django's live server): create -f with several kinds,
dry runs, cancel by state, job sets, executors and the scheduling record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.contrib.auth.models import Group, Permission

from armada.core.config import parse_config
from armada.models import Executor, Job, Queue, RetryPolicy
from armada.services.records import records_write
from armada.services.submit import job_submit
from tests.cli.conftest import live_armadactl
from tests.conftest import at, job, job_file
from tests.executor_api import register_executor

pytestmark = pytest.mark.django_db(transaction=True)

RESOURCES = """\
apiVersion: armadaproject.io/v1beta1
kind: RetryPolicy
name: oom-retries
retryLimit: 3
defaultAction: Fail
---
apiVersion: armadaproject.io/v1beta1
kind: Queue
name: analytics
priorityFactor: 2
retryPolicies: [oom-retries]
"""


@pytest.fixture
def ctl(live_server, admin_user, capsys):
    """As the admin (root) by default."""
    return live_armadactl(live_server.url, capsys, ("root", "root-password"))


def test_create_from_a_file_with_several_kinds_and_a_dry_run_first(ctl, tmp_path: Path):
    path = tmp_path / "resources.yaml"
    path.write_text(RESOURCES)
    code, out, err = ctl("create", "-f", str(path), "--dry-run")
    assert code == 0, err
    assert "Retry policy oom-retries is valid" in out and "Dry run: nothing was created." in out
    assert not Queue.objects.exists() and not RetryPolicy.objects.exists()

    code, out, err = ctl("create", "-f", str(path))
    assert (code, out) == (0, "Created retry policy oom-retries\nCreated queue analytics\n"), err
    assert Queue.objects.get(name="analytics").retry_policies == ["oom-retries"]

    code, out, err = ctl("create", "-f", str(path))
    assert code == 1 and "retry policy oom-retries: " in err and "already exists" in err


# Armada's own example queue file, as its repository has it (resourceLimits included).
ARMADA_EXAMPLE_QUEUE = """\
apiVersion: armadaproject.io/v1beta1
kind: Queue
name: test
permissions:
- subjects:
  - name: group1
    kind: Group
  - name: user1
    kind: User
  verbs: [submit, cancel, reprioritize, watch]
priorityFactor: 1.0
resourceLimits:
  cpu: 0.2
  memory: 0.1
"""


def test_armadas_example_queue_is_created_with_a_warning_for_resource_limits(ctl, tmp_path: Path):
    path = tmp_path / "queue.yaml"
    path.write_text(ARMADA_EXAMPLE_QUEUE)
    code, out, err = ctl("create", "-f", str(path))
    assert (code, out) == (0, "Created queue test\n"), err
    assert "warning: resourceLimits: is deprecated and ignored" in err
    queue = Queue.objects.get(name="test")
    assert queue.priority_factor == 1.0 and len(queue.permissions) == 1


def test_create_from_a_file_reports_the_servers_field_errors(ctl, tmp_path: Path):
    path = tmp_path / "bad.yaml"
    path.write_text("kind: Queue\nname: ok-queue\npriorityFactor: 0.5\n---\nkind: Pod\nname: x\n")
    code, _, err = ctl("create", "-f", str(path))
    assert code == 1 and "document 2: kind" in err  # checked locally, nothing sent
    path.write_text("kind: Queue\nname: ok-queue\npriorityFactor: 0.5\n")
    code, _, err = ctl("create", "-f", str(path), "--dry-run")
    assert code == 1 and "priorityFactor:" in err
    assert not Queue.objects.exists()


def test_create_queue_dry_run_and_a_refusal_naming_the_permission(ctl, owner):
    code, out, _ = ctl("create", "queue", "fresh", "--dry-run")
    assert code == 0 and "dry run" in out and not Queue.objects.filter(name="fresh").exists()
    code, _, err = ctl("create", "queue", "fresh", user=("olive", "olive-password"))
    assert code == 1 and "'create_queue'" in err


def test_cancel_queue_by_state_and_job_sets(ctl, queue, owner, member):
    ids = job_submit(actor=owner, data=job_file(jobs=[job(), job()]), now=at(0))
    job_submit(actor=owner, data=job_file(job_set="other"), now=at(0))
    Job.objects.filter(id=ids[0]).update(state="running")

    code, out, _ = ctl("get", "job-sets", "demo")
    assert code == 0
    header, *rows = out.splitlines()
    assert header.split()[:3] == ["JOB", "SET", "QUEUED"]
    assert [r.split()[0] for r in rows] == ["other", "set-1"]
    code, out, _ = ctl("get", "job-sets", "demo", "-o", "json")
    counts = {s["jobSetId"]: s["counts"] for s in json.loads(out)}
    assert counts["set-1"]["queued"] == 1 and counts["set-1"]["running"] == 1

    code, _, err = ctl("cancel", "queue", "demo", "--state", "queued", user=("mo", "mo-password"))
    assert code == 1 and "'cancel'" in err
    code, out, _ = ctl("cancel", "queue", "demo", "--state", "queued")
    assert (code, out) == (0, "Cancelling 2 job(s) in queue demo (queued)\n")
    assert Job.objects.filter(state="queued").count() == 0
    assert Job.objects.get(id=ids[0]).state == "running"


def test_executors_cordon_and_nodes(ctl, owner):
    config = parse_config(
        {
            "executors": [
                {
                    "id": "cluster-1",
                    "nodes": [{"name": "n1", "allocatable": {"cpu": "4", "memory": "8Gi"}}],
                }
            ]
        }
    )
    register_executor(config.executors[0], at(0))
    code, out, _ = ctl("get", "executors")
    assert code == 0 and out.splitlines()[1].split()[:4] == [
        "cluster-1",
        "default",
        "fake",
        "false",
    ]
    code, out, _ = ctl("get", "executor", "cluster-1", "-o", "yaml")
    assert code == 0 and "name: n1" in out and "unschedulable: false" in out
    code, _, err = ctl("cordon", "executor", "cluster-1", user=("olive", "olive-password"))
    assert code == 1 and "'update_executor_settings'" in err and not Executor.objects.get().cordoned
    code, out, _ = ctl("cordon", "executor", "cluster-1")
    assert (code, out) == (0, "Cordoned executor cluster-1\n") and Executor.objects.get().cordoned
    code, out, _ = ctl("uncordon", "executor", "cluster-1")
    assert code == 0 and not Executor.objects.get().cordoned
    code, _, err = ctl("cordon", "executor", "ghost")
    assert code == 1 and "ghost" in err


def test_get_scheduling_says_why_a_job_waits(ctl, queue, owner):
    [job_id] = job_submit(actor=owner, data=job_file(), now=at(0))
    code, out, _ = ctl("get", "scheduling", job_id)
    assert code == 0 and "no scheduling round has considered this job yet" in out
    records_write(
        started_at=at(1),
        duration_ms=3,
        considered=1,
        leased_ids=[],
        expired=0,
        decided=0,
        unschedulable={job_id: "no node with 1 cpu free"},
    )
    code, out, _ = ctl("get", "scheduling", job_id)
    assert code == 0 and "Pending: no node with 1 cpu free" in out and "Latest rounds:" in out
    code, out, _ = ctl("get", "scheduling", job_id, "-o", "json")
    assert json.loads(out)["pendingReason"]["reason"] == "no node with 1 cpu free"


def test_cordon_executor_with_a_reason_needs_update_executor_settings(ctl, owner, outsider):
    Executor.objects.create(
        id="cluster-2", pool="default", backend="fake", registered_at=at(0), last_heartbeat=at(0)
    )
    group = Group.objects.create(name="operators")
    group.permissions.add(Permission.objects.get(codename="update_executor_settings"))
    outsider.groups.add(group)
    code, _, err = ctl("cordon", "executor", "cluster-2", "disk", user=("olive", "olive-password"))
    assert code == 1 and "'update_executor_settings'" in err
    code, out, err = ctl(
        "cordon", "executor", "cluster-2", "kernel upgrade", user=("otto", "otto-password")
    )
    assert (code, out) == (0, "Cordoned executor cluster-2 (kernel upgrade)\n"), err
    assert Executor.objects.get().cordon_reason == "kernel upgrade"
    code, out, _ = ctl("get", "executors")
    header, row = out.splitlines()
    assert header.split()[-2:] == ["CORDON", "REASON"] and row.endswith("kernel upgrade")
    code, out, _ = ctl("uncordon", "executor", "cluster-2", user=("otto", "otto-password"))
    assert (code, out) == (0, "Uncordoned executor cluster-2\n")
    assert Executor.objects.get().cordon_reason == ""
