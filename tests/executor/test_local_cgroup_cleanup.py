"""When an executor stops, the local backend removes the cgroups of its pods that are gone
and its own cgroup directories once they are empty; a live pod's cgroups stay (pods outlive
their executor)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from armada.executor.backends.cgroups import _Cgroups, remove_leftovers
from armada.executor.backends.local import LocalBackend
from tests.executor.test_local_backend import NOW, request, sh, wait_for, wait_gone


def test_only_the_cgroups_of_pods_that_are_gone_go_then_the_empty_parents(tmp_path: Path):
    base = tmp_path / "armada" / "ex"
    for pod in ("live", "gone"):
        (base / pod / "main").mkdir(parents=True)
    remove_leftovers(_Cgroups(2, base, base), live_pods={"live"})
    assert sorted(p.name for p in base.iterdir()) == ["live"]
    assert (base / "live" / "main").is_dir()  # a live pod's container cgroup stays
    remove_leftovers(_Cgroups(2, base, base), live_pods=set())
    assert not (tmp_path / "armada").exists()


def test_a_shared_parent_with_another_executors_cgroups_stays(tmp_path: Path):
    mine, theirs = tmp_path / "armada" / "mine", tmp_path / "armada" / "theirs"
    (mine / "p").mkdir(parents=True)
    (theirs / "q").mkdir(parents=True)
    remove_leftovers(_Cgroups(1, mine, None), live_pods=set())
    assert not mine.exists() and (theirs / "q").is_dir()


def test_a_stopping_executor_leaves_no_cgroup_of_a_deleted_pod(tmp_path: Path):
    backend = LocalBackend(tmp_path / "state", executor_id=f"test-{uuid.uuid4().hex[:10]}")
    if backend.cgroup_mode == "none":
        pytest.skip("no writable memory cgroup (v2 with the memory controller, or v1) here")
    dirs = backend.executor_cgroups
    backend.create_pod(request("p-done", sh("true", resources={"limits": {"memory": "64Mi"}})), NOW)
    wait_for(backend, "p-done")
    backend.delete_pod("p-done", NOW)
    wait_gone(backend, "p-done")
    backend.close()
    assert all(not d.exists() for d in dirs), [d for d in dirs if d.exists()]
