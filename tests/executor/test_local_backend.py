"""The local backend with real processes and real cgroups: no mocks.

Every test polls with a deadline instead of sleeping fixed times, and leaves no pod, process
or cgroup behind (the ``backend`` fixture deletes what a test did not and removes the
executor's cgroup directories).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from armada.executor.backends import cgroups as cgroups_module
from armada.executor.backends import local_pod_files
from armada.executor.backends.base import PodCreationFailed, PodExists, PodRequest, PodStatus
from armada.executor.backends.local import LocalBackend

ROOT = Path(__file__).resolve().parents[2]
NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)  # the backend does not decide by `now`
PY = sys.executable


def container(
    command: list[str],
    name: str = "main",
    args: list[str] | None = None,
    memory: str = "128Mi",
    cpu: str = "100m",
    **extra: object,
) -> dict:
    c: dict = {
        "name": name,
        "image": "ignored:latest",
        "command": command,
        "resources": {
            "requests": {"cpu": cpu, "memory": memory},
            "limits": {"cpu": cpu, "memory": memory},
        },
        **extra,
    }
    if args is not None:
        c["args"] = args
    return c


def sh(script: str, name: str = "main", **extra: object) -> dict:
    return container(["sh", "-c", script], name=name, **extra)


def request(name: str, *containers: dict, init: tuple[dict, ...] = (), **spec: object):
    pod_spec: dict = {"containers": list(containers), **spec}
    if init:
        pod_spec["initContainers"] = list(init)
    return PodRequest(name, f"run-{name}", f"job-{name}", "localhost", pod_spec, {})


def find(backend: LocalBackend, name: str) -> PodStatus | None:
    return next((s for s in backend.poll(NOW) if s.name == name), None)


def wait_for(
    backend: LocalBackend,
    name: str,
    predicate: Callable[[PodStatus], bool] = lambda s: s.finished_at is not None,
    timeout: float = 10.0,
) -> PodStatus:
    give_up = time.monotonic() + timeout
    status = None
    while time.monotonic() < give_up:
        status = find(backend, name)
        if status is not None and predicate(status):
            return status
        time.sleep(0.02)
    raise AssertionError(f"pod {name} did not get there in {timeout}s; last status {status}")


def wait_until(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    give_up = time.monotonic() + timeout
    while time.monotonic() < give_up:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError(f"condition not met in {timeout}s")


def wait_gone(backend: LocalBackend, name: str, timeout: float = 10.0) -> None:
    wait_until(lambda: find(backend, name) is None, timeout)


def remove(backend: LocalBackend, name: str, grace: float = 0.2) -> None:
    """Delete a pod and wait until it is gone."""
    backend.delete_pod(name, NOW, grace_seconds=grace)
    wait_gone(backend, name)


def pod_file(backend: LocalBackend, name: str, file: str) -> dict:
    return json.loads((backend.state_dir / "pods" / name / file).read_text())


def container_pid(backend: LocalBackend, name: str) -> int:
    """The pod's container process id, once the shim has recorded it (its output can show
    before the status file is written)."""
    wait_until(lambda: pod_file(backend, name, local_pod_files.STATUS_FILE).get("containers"))
    return pod_file(backend, name, local_pod_files.STATUS_FILE)["containers"][0]["pid"]


def process_gone(pid: int) -> bool:
    return local_pod_files.start_ticks(pid) is None  # no such process, or a zombie


@pytest.fixture
def backend(tmp_path: Path):
    b = LocalBackend(tmp_path / "state", executor_id=f"test-{uuid.uuid4().hex[:10]}")
    yield b
    for status in b.poll(NOW):
        b.delete_pod(status.name, NOW, grace_seconds=0.1)
    wait_until(lambda: not b.poll(NOW))
    for d in b.executor_cgroups:
        with contextlib.suppress(OSError):
            d.rmdir()


@pytest.fixture
def needs_cgroup(backend: LocalBackend) -> None:
    if backend.cgroup_mode == "none":
        pytest.skip(
            "no writable memory cgroup (v2 with the memory controller, or v1) on this machine"
        )


# --- running containers --------------------------------------------------------------------


def test_echo_succeeds_with_its_log_and_utc_times(backend: LocalBackend) -> None:
    backend.create_pod(request("echo", sh("echo hi")), NOW)

    s = wait_for(backend, "echo")

    assert s.succeeded and s.exit_code == 0 and s.exit_codes == {"main": 0}
    assert [(c.name, c.exit_code, c.reason) for c in s.containers] == [("main", 0, "Completed")]
    assert (s.reason, s.conditions, s.pod_error, s.lost) == ("", (), "", False)
    assert s.run_id == "run-echo"
    assert "hi" in backend.read_log("echo")
    for t in (s.pending_at, s.running_at, s.finished_at):
        assert t is not None and t.utcoffset() is not None and t.utcoffset().total_seconds() == 0
    assert s.pending_at <= s.running_at <= s.finished_at
    assert abs(time.time() - s.finished_at.timestamp()) < 30  # the wall clock, not `now`
    remove(backend, "echo")


def test_exit_code_is_an_error(backend: LocalBackend) -> None:
    backend.create_pod(request("fails", sh("exit 3")), NOW)

    s = wait_for(backend, "fails")

    assert not s.succeeded and s.exit_code == 3
    assert [(c.exit_code, c.reason) for c in s.containers] == [(3, "Error")]
    assert s.reason == "Error" and s.message == "container main exited with code 3"
    remove(backend, "fails")


def test_command_not_found_is_a_start_error(backend: LocalBackend) -> None:
    backend.create_pod(request("nocmd", container(["/nonexistent/program"])), NOW)

    s = wait_for(backend, "nocmd")

    assert not s.succeeded and s.exit_code == 128 and s.reason == "StartError"
    assert "/nonexistent/program" in s.message and "not found" in s.message
    remove(backend, "nocmd")


def test_env_args_working_dir_and_expansion(backend: LocalBackend, tmp_path: Path) -> None:
    wd = tmp_path / "wd"
    wd.mkdir()
    c = container(
        ["sh", "-c"],
        args=['echo "cwd=$(pwd) foo=$FOO zero=$0 one=$1 two=$2"', "$(FOO)-x", "$(BAR)", "$$(FOO)"],
        env=[{"name": "FOO", "value": "hello"}, {"name": "BAR", "value": "$(FOO) world"}],
        workingDir=str(wd),
    )
    backend.create_pod(request("env", c), NOW)

    s = wait_for(backend, "env")

    assert s.succeeded, s
    # $(pwd) names no variable, so it is left for the shell; $$ escapes expansion.
    expected = f"cwd={wd} foo=hello zero=hello-x one=hello world two=$(FOO)"
    assert expected in backend.read_log("env")
    remove(backend, "env")


def test_environment_is_not_the_workers(backend: LocalBackend, monkeypatch) -> None:
    monkeypatch.setenv("ARMADA_TEST_SECRET", "leaked")
    backend.create_pod(request("clean", sh('echo "[$ARMADA_TEST_SECRET] home=$HOME"')), NOW)

    assert wait_for(backend, "clean").succeeded
    log = backend.read_log("clean")
    assert "[] home=" in log and "/pods/clean/work" in log
    remove(backend, "clean")


def test_containers_of_a_pod_run_concurrently(backend: LocalBackend) -> None:
    # Each waits for the other's file: only concurrent containers both get through.
    a = sh("touch a; while [ ! -e b ]; do sleep 0.02; done; echo a-done", name="a")
    b = sh("touch b; while [ ! -e a ]; do sleep 0.02; done; echo b-done", name="b")
    backend.create_pod(request("pair", a, b), NOW)

    s = wait_for(backend, "pair")

    assert s.succeeded and s.exit_codes == {"a": 0, "b": 0}
    log = backend.read_log("pair")
    assert "==> a <==\na-done" in log and "==> b <==\nb-done" in log
    remove(backend, "pair")


def test_init_containers_run_first_in_order(backend: LocalBackend) -> None:
    init = (sh("echo one > order", name="first"), sh("echo two >> order", name="second"))
    backend.create_pod(request("inits", sh("cat order"), init=init), NOW)

    s = wait_for(backend, "inits")

    assert s.succeeded
    assert [c.name for c in s.containers] == ["first", "second", "main"]
    assert backend.read_log("inits").endswith("==> main <==\none\ntwo\n")
    remove(backend, "inits")


def test_a_failing_init_container_fails_the_pod(backend: LocalBackend) -> None:
    init = (sh("echo setting up; exit 5", name="setup"),)
    backend.create_pod(request("badinit", sh("echo main ran"), init=init), NOW)

    s = wait_for(backend, "badinit")

    assert not s.succeeded and s.exit_code == 5 and s.running_at is None
    assert [(c.name, c.exit_code, c.reason) for c in s.containers] == [("setup", 5, "Error")]
    assert s.reason == "Error" and "setting up" in s.message
    assert "main ran" not in backend.read_log("badinit")
    remove(backend, "badinit")


def test_read_log_returns_the_tail(backend: LocalBackend) -> None:
    script = "i=0; while [ $i -lt 2000 ]; do echo line-$i; i=$((i+1)); done; echo THE-END"
    backend.create_pod(request("chatty", sh(script)), NOW)
    wait_for(backend, "chatty")

    full = backend.read_log("chatty")
    tail = backend.read_log("chatty", limit_bytes=20)

    assert full.startswith("line-0\n") and full.endswith("line-1999\nTHE-END\n")
    assert len(tail.encode()) == 20 and full.endswith(tail)
    assert backend.read_log("no-such-pod") == "" and backend.read_log("chatty", 0) == ""
    remove(backend, "chatty")


# --- termination messages ------------------------------------------------------------------


def test_termination_message_file_is_reported(backend: LocalBackend) -> None:
    ok = sh('echo "  all good  " > "$ARMADA_TERMINATION_MESSAGE_PATH"; echo noise')
    bad = sh('echo "bad input" > "$ARMADA_TERMINATION_MESSAGE_PATH"; echo noise; exit 2')
    backend.create_pod(request("msg-ok", ok), NOW)
    backend.create_pod(request("msg-bad", bad), NOW)

    s_ok, s_bad = wait_for(backend, "msg-ok"), wait_for(backend, "msg-bad")

    assert s_ok.succeeded and s_ok.containers[0].message == "all good"
    assert s_bad.containers[0].message == "bad input" and s_bad.message == "bad input"
    remove(backend, "msg-ok")
    remove(backend, "msg-bad")


def test_own_termination_message_path_is_read(backend: LocalBackend, tmp_path: Path) -> None:
    path = tmp_path / "custom-termination"
    c = sh(f'echo custom > "{path}"; exit 1', terminationMessagePath=str(path))
    backend.create_pod(request("msg-own", c), NOW)

    assert wait_for(backend, "msg-own").containers[0].message == "custom"
    remove(backend, "msg-own")


def test_failure_falls_back_to_the_log_tail(backend: LocalBackend) -> None:
    script = "i=0; while [ $i -lt 500 ]; do echo out-$i; i=$((i+1)); done; echo boom >&2; exit 2"
    backend.create_pod(request("fallback", sh(script)), NOW)
    backend.create_pod(request("policy-file", sh(script, terminationMessagePolicy="File")), NOW)
    backend.create_pod(request("ok-quiet", sh("echo fine")), NOW)

    s = wait_for(backend, "fallback")
    message = s.containers[0].message
    assert message.endswith("out-499\nboom") and s.message == message
    assert len(message.encode()) <= 4096 and len(message.splitlines()) <= 80
    assert wait_for(backend, "policy-file").containers[0].message == ""
    assert wait_for(backend, "ok-quiet").containers[0].message == ""  # only on failure
    for name in ("fallback", "policy-file", "ok-quiet"):
        remove(backend, name)


# --- memory and cpu ------------------------------------------------------------------------


@pytest.mark.usefixtures("needs_cgroup")
def test_over_the_memory_limit_is_oom_killed(backend: LocalBackend) -> None:
    hog = container([PY, "-c", "bytearray(300 * 1024 * 1024)"], memory="64Mi")
    backend.create_pod(request("hog", hog), NOW)

    s = wait_for(backend, "hog", timeout=20)

    assert not s.succeeded and s.exit_code == 137
    assert [(c.exit_code, c.reason) for c in s.containers] == [(137, "OOMKilled")]
    assert s.conditions == ("OOMKilled",) and s.reason == "OOMKilled"
    cgroups = pod_file(backend, "hog", local_pod_files.POD_FILE)["cgroups"]
    pod_cgroup = Path(cgroups["pod"])
    limit_file = "memory.max" if cgroups["version"] == 2 else "memory.limit_in_bytes"
    assert int((pod_cgroup / limit_file).read_text()) == 64 * 1024 * 1024
    remove(backend, "hog")
    assert not pod_cgroup.exists()


@pytest.mark.usefixtures("needs_cgroup")
def test_within_the_memory_limit_succeeds(backend: LocalBackend) -> None:
    ok = container([PY, "-c", "b = bytearray(32 * 1024 * 1024); print(len(b))"], memory="128Mi")
    backend.create_pod(request("fits", ok), NOW)

    s = wait_for(backend, "fits", timeout=20)

    assert s.succeeded and s.conditions == ()
    remove(backend, "fits")


@pytest.mark.usefixtures("needs_cgroup")
def test_cpu_request_becomes_the_cpu_share(backend: LocalBackend) -> None:
    backend.create_pod(request("cpu", sh("sleep 30", cpu="500m")), NOW)
    wait_for(backend, "cpu", lambda s: s.running_at is not None)
    cgroups = pod_file(backend, "cpu", local_pod_files.POD_FILE)["cgroups"]
    if cgroups["version"] == 1 and cgroups["cpu"]:
        assert (Path(cgroups["cpu"]) / "cpu.shares").read_text().strip() == "512"
    elif cgroups["version"] == 2 and (Path(cgroups["pod"]) / "cpu.weight").exists():
        assert (Path(cgroups["pod"]) / "cpu.weight").read_text().strip() == "20"
    else:
        pytest.skip("no cpu controller to set a share in")
    remove(backend, "cpu")


def test_without_cgroups_rlimit_as_limits_memory(tmp_path: Path, monkeypatch, caplog) -> None:
    monkeypatch.setattr(cgroups_module, "_rlimit_warned", False)
    b = LocalBackend(tmp_path / "state", executor_id="rlimit", cgroups="none")
    hog = container([PY, "-c", "bytearray(300 * 1024 * 1024)"], memory="64Mi")
    b.create_pod(request("hog", hog), NOW)
    b.create_pod(request("hog2", hog), NOW)

    s = wait_for(b, "hog", timeout=20)

    assert b.cgroup_mode == "none"
    assert not s.succeeded and s.exit_code == 1 and "MemoryError" in s.message
    warnings = [r for r in caplog.records if "RLIMIT_AS" in r.getMessage()]
    assert len(warnings) == 1 and warnings[0].levelname == "WARNING"
    remove(b, "hog")
    remove(b, "hog2")


# --- deadline and deletion -----------------------------------------------------------------


def test_active_deadline_kills_the_pod(backend: LocalBackend) -> None:
    started = time.monotonic()
    backend.create_pod(request("slow", container(["sleep", "60"]), activeDeadlineSeconds=1), NOW)

    s = wait_for(backend, "slow", timeout=10)

    assert 0.9 <= time.monotonic() - started < 8
    assert not s.succeeded and s.reason == "DeadlineExceeded"
    assert s.conditions == ("DeadlineExceeded",)
    assert [(c.exit_code, c.reason) for c in s.containers] == [(143, "DeadlineExceeded")]
    remove(backend, "slow")


def test_pod_exists_until_deletion_completes(backend: LocalBackend) -> None:
    stubborn = sh("trap '' TERM; echo ready; while :; do sleep 0.05; done")
    backend.create_pod(request("dup", stubborn), NOW)
    with pytest.raises(PodExists):
        backend.create_pod(request("dup", sh("true")), NOW)
    wait_until(lambda: "ready" in backend.read_log("dup"))

    backend.delete_pod("dup", NOW, grace_seconds=1.5)
    assert wait_for(backend, "dup", lambda s: s.deleting).deleting
    with pytest.raises(PodExists):
        backend.create_pod(request("dup", sh("true")), NOW)
    wait_gone(backend, "dup")

    backend.create_pod(request("dup", sh("echo again")), NOW)
    assert wait_for(backend, "dup").succeeded
    assert "again" in backend.read_log("dup") and "ready" not in backend.read_log("dup")
    remove(backend, "dup")


def test_delete_stops_a_process_that_exits_on_sigterm(
    backend: LocalBackend, tmp_path: Path
) -> None:
    marker = tmp_path / "got-term"
    polite = sh(
        f"trap 'echo bye > {marker}; exit 0' TERM; echo ready; while :; do sleep 0.05; done"
    )
    backend.create_pod(request("polite", polite), NOW)
    wait_until(lambda: "ready" in backend.read_log("polite"))
    pid = container_pid(backend, "polite")

    started = time.monotonic()
    backend.delete_pod("polite", NOW, grace_seconds=10)
    wait_gone(backend, "polite")

    assert time.monotonic() - started < 5  # well within the grace period
    assert marker.read_text() == "bye\n"
    assert process_gone(pid)
    assert not (backend.state_dir / "pods" / "polite").exists()


def test_delete_sigkills_a_process_that_ignores_sigterm(backend: LocalBackend) -> None:
    stubborn = sh("trap '' TERM; echo ready; while :; do sleep 0.05; done")
    backend.create_pod(request("stubborn", stubborn), NOW)
    wait_until(lambda: "ready" in backend.read_log("stubborn"))
    pid = container_pid(backend, "stubborn")

    started = time.monotonic()
    backend.delete_pod("stubborn", NOW, grace_seconds=1.0)
    time.sleep(0.3)
    s = find(backend, "stubborn")
    assert s is not None and s.deleting and s.finished_at is None  # still in its grace
    wait_gone(backend, "stubborn")

    assert 1.0 <= time.monotonic() - started < 5
    assert process_gone(pid)


def test_default_grace_is_the_pod_spec_termination_grace(backend: LocalBackend) -> None:
    stubborn = sh("trap '' TERM; echo ready; while :; do sleep 0.05; done")
    backend.create_pod(request("spec-grace", stubborn, terminationGracePeriodSeconds=0), NOW)
    wait_until(lambda: "ready" in backend.read_log("spec-grace"))

    started = time.monotonic()
    backend.delete_pod("spec-grace", NOW)  # the default: take the pod's own (0 s)
    wait_gone(backend, "spec-grace")

    assert time.monotonic() - started < 1.0


def test_delete_during_init_containers_never_starts_the_rest(
    backend: LocalBackend, tmp_path: Path
) -> None:
    init = (container(["sleep", "60"], name="setup"),)
    trace = tmp_path / "main-ran"
    backend.create_pod(request("in-init", sh(f"touch {trace}"), init=init), NOW)
    s = wait_for(backend, "in-init", lambda s: bool(s.containers))
    assert s.running_at is None and [c.name for c in s.containers] == ["setup"]

    backend.delete_pod("in-init", NOW, grace_seconds=5)
    # The deletion may be over before a look sees it under way (``sleep`` ends at SIGTERM),
    # so the main container's trace is looked for outside the pod's directory.
    seen: list[PodStatus] = []

    def gone() -> bool:
        status = find(backend, "in-init")
        if status is not None:
            seen.append(status)
        return status is None

    wait_until(gone)
    assert all([c.name for c in seen_status.containers] == ["setup"] for seen_status in seen)
    assert not trace.exists()


def test_sigterm_to_the_shim_stops_the_pod_with_results(backend: LocalBackend) -> None:
    backend.create_pod(request("shutdown", container(["sleep", "60"])), NOW)
    wait_for(backend, "shutdown", lambda s: s.running_at is not None)
    shim_pid = pod_file(backend, "shutdown", local_pod_files.SHIM_FILE)["pid"]

    os.kill(shim_pid, signal.SIGTERM)  # e.g. the machine shutting down

    s = wait_for(backend, "shutdown")
    assert not s.lost and not s.succeeded
    assert [(c.exit_code, c.reason) for c in s.containers] == [(143, "Error")]
    remove(backend, "shutdown")


def test_delete_twice_and_unknown_pods_are_fine(backend: LocalBackend) -> None:
    backend.delete_pod("never-was", NOW)
    backend.delete_pod("../escape", NOW)
    backend.create_pod(request("twice", sh("echo x")), NOW)
    wait_for(backend, "twice")

    backend.delete_pod("twice", NOW)
    backend.delete_pod("twice", NOW)

    wait_gone(backend, "twice")
    backend.delete_pod("twice", NOW)


# --- restarts and lost processes -----------------------------------------------------------

SCRIPT = """
import json, sys, time
from datetime import UTC, datetime
from pathlib import Path
from armada.executor.backends.base import PodRequest
from armada.executor.backends.local import LocalBackend

state, executor, action, name = sys.argv[1:5]
backend = LocalBackend(Path(state), executor_id=executor)
now = datetime.fromtimestamp(time.time(), UTC)
if action == "create":
    spec = json.loads(sys.argv[5])
    backend.create_pod(PodRequest(name, "run-1", "job-1", "localhost", spec, {}), now)
    print(json.dumps({"created": name}))
else:
    give_up = time.monotonic() + 10
    while True:
        found = [s for s in backend.poll(now) if s.name == name]
        s = found[0] if found else None
        if action == "poll" or (s and s.finished_at) or time.monotonic() > give_up:
            break
        time.sleep(0.02)
    print(json.dumps(None if s is None else {
        "running": s.running_at is not None,
        "finished": s.finished_at is not None,
        "succeeded": s.succeeded,
        "containers": [[c.name, c.exit_code, c.reason] for c in s.containers],
        "finished_after_running": bool(s.finished_at and s.finished_at >= s.running_at),
        "tz": s.pending_at.utcoffset().total_seconds(),
    }))
"""


def in_other_process(backend: LocalBackend, *args: str) -> object:
    """Run SCRIPT with a brand-new LocalBackend on the same state dir in a new interpreter."""
    result = subprocess.run(
        [PY, "-c", SCRIPT, str(backend.state_dir), backend.executor_id, *args],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_pods_survive_the_worker_and_are_found_by_a_new_backend(
    backend: LocalBackend, tmp_path: Path
) -> None:
    go = tmp_path / "go"
    spec = {"containers": [sh(f"while [ ! -e {go} ]; do sleep 0.02; done; echo finished")]}

    # Created by a process that then exits: the pod must outlive it.
    assert in_other_process(backend, "create", "survivor", json.dumps(spec)) == {
        "created": "survivor"
    }
    seen = in_other_process(backend, "poll", "survivor")
    assert seen["running"] and not seen["finished"]
    assert seen["containers"] == [["main", None, ""]]

    go.touch()
    done = in_other_process(backend, "wait", "survivor")

    assert done["finished"] and done["succeeded"] and done["finished_after_running"]
    assert done["containers"] == [["main", 0, "Completed"]] and done["tz"] == 0
    s = find(backend, "survivor")  # and this process's backend agrees
    assert s is not None and s.succeeded and "finished" in backend.read_log("survivor")
    remove(backend, "survivor")


def test_killed_shim_and_process_show_pod_error(backend: LocalBackend) -> None:
    backend.create_pod(request("victim", container(["sleep", "60"])), NOW)
    wait_for(backend, "victim", lambda s: s.running_at is not None)
    shim_pid = pod_file(backend, "victim", local_pod_files.SHIM_FILE)["pid"]
    pid = container_pid(backend, "victim")

    os.kill(shim_pid, signal.SIGKILL)
    wait_until(lambda: process_gone(shim_pid))
    os.kill(pid, signal.SIGKILL)

    s = wait_for(backend, "victim")
    assert s.lost and not s.succeeded and s.finished_at is not None
    assert "gone" in s.pod_error and s.message == s.pod_error and s.reason == "ProcessLost"
    assert find(backend, "victim") == s  # stable across polls
    remove(backend, "victim")


def test_processes_of_a_lost_pod_are_killed_on_delete(backend: LocalBackend) -> None:
    backend.create_pod(request("orphan", container(["sleep", "60"])), NOW)
    wait_for(backend, "orphan", lambda s: s.running_at is not None)
    shim_pid = pod_file(backend, "orphan", local_pod_files.SHIM_FILE)["pid"]
    pid = container_pid(backend, "orphan")

    os.kill(shim_pid, signal.SIGKILL)
    s = wait_for(backend, "orphan")
    assert s.lost and "gone" in s.pod_error
    assert not process_gone(pid)  # the container outlived its shim

    remove(backend, "orphan")
    assert process_gone(pid)


# --- specs it cannot run -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pod_spec", "complaint"),
    [
        ({"containers": [{"name": "main", "image": "busybox"}]}, "command is required"),
        ({"containers": []}, "at least one container"),
        ({"containers": [sh("true")], "restartPolicy": "Always"}, "restartPolicy"),
        (
            {"containers": [sh("true", env=[{"name": "X", "valueFrom": {"secretKeyRef": {}}}])]},
            "valueFrom",
        ),
        ({"containers": [sh("true"), sh("true")]}, "duplicate container name"),
        ({"containers": [container(["true"], memory="lots")]}, "not a quantity"),
        ({"containers": [container("true")]}, "list of strings"),
    ],
    ids=["no-command", "no-containers", "restart", "value-from", "duplicate", "quantity", "str"],
)
def test_specs_it_cannot_run_fail_creation(
    backend: LocalBackend, pod_spec: dict, complaint: str
) -> None:
    with pytest.raises(PodCreationFailed, match=complaint):
        backend.create_pod(PodRequest("bad", "r", "j", "n", pod_spec, {}), NOW)
    assert find(backend, "bad") is None
    backend.create_pod(request("bad", sh("true")), NOW)  # the name was not taken
    remove(backend, "bad")
