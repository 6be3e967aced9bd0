"""The README's tour ("Tour: retry policies in five minutes"), run as written.

The marked blocks of README.md run with bash against ``manage.py runall`` started as the
tour's ``start`` block says (config/examples/tour.yaml on the embedded default), and every
outcome the text promises is checked through ``armadactl get job -o json``, ``/metrics`` and
Lookout's pages. ``armadactl watch``'s lines are for people and are not read here: a step
only has to end with status 0, and its ``job <id>`` line names the job it submitted.
"""

from __future__ import annotations

import contextlib
import json
import re
import uuid
from pathlib import Path

import pytest
import requests
import yaml

from tests.tour.readme_tour import (
    ROOT,
    Block,
    TourError,
    TourSystem,
    check_oom_retries,
    make_run_command,
    start_environment,
    tour_blocks,
)
from tests.waiting import wait_until

STEPS = ["start", "login", "policy", "oom", "exit-code", "fail-fast", "metrics"]
BLOCK_TIMEOUT = 240  # seconds for one block; a busy two-core machine is slow, not broken
README = (ROOT / "README.md").read_text()
MiB = 1 << 20


def blocks() -> dict[str, Block]:
    return {b.name: b for b in tour_blocks(README)}


def mebibytes(quantity: str) -> float:
    units = {"Ki": 1 << 10, "Mi": MiB, "Gi": 1 << 30}
    number, unit = re.fullmatch(r"([0-9.]+)([KMG]i)", quantity).groups()
    return float(number) * units[unit] / MiB


# --- the text ------------------------------------------------------------------------------


def test_the_readme_still_opens_with_the_two_set_up_commands():
    opening = README.split("```sh\n", 1)[1].split("```", 1)[0].splitlines()
    assert [line.split("#")[0].strip() for line in opening] == ["make run", "make test"]


def test_the_tour_is_marked_in_order_right_after_the_quickstart():
    assert list(blocks()) == STEPS
    headings = re.findall(r"^## (.+)$", README, re.M)
    assert headings[headings.index("Quickstart") + 1].startswith("Tour: retry policies")
    start = blocks()["start"]
    assert start_environment(start) == {"ARMADA_CONFIG": "config/examples/tour.yaml"}
    assert make_run_command((ROOT / "Makefile").read_text())[1:] == ["manage.py", "runall"]
    section = README.split("\n## Tour")[1].split("\n## ")[0]
    for path in re.findall(r"(?:config|examples)/[\w./-]+\.yaml", section):
        assert (ROOT / path).is_file(), path


def test_a_marker_without_its_block_or_used_twice_is_refused():
    with pytest.raises(TourError, match="not followed"):
        tour_blocks("<!-- tour: lost -->\n\ntext\n")
    twice = "<!-- tour: a -->\n```sh\ntrue\n```\n<!-- tour: a -->\n```sh\ntrue\n```\n"
    with pytest.raises(TourError, match="more than once"):
        tour_blocks(twice)
    with pytest.raises(TourError, match="make run"):
        start_environment(Block("start", "ARMADA_CONFIG=x make run && rm -rf /\n"))


def test_the_tour_configuration_turns_the_engine_on_and_deletes_retried_pods():
    """What the policy of config/examples/retry-policy.yaml retries must say action: Delete,
    and the engine must be on with a cap that leaves the policy's limit to decide."""
    config = yaml.safe_load((ROOT / "config/examples/tour.yaml").read_text())
    policy = yaml.safe_load((ROOT / "config/examples/retry-policy.yaml").read_text())
    retry = config["scheduling"]["retryPolicy"]
    assert retry["enabled"] is True and retry["globalMaxRetries"] >= policy["retryLimit"]
    [executor] = config["executors"]
    assert executor["backend"] == "local"
    actions = {c["name"]: c["action"] for c in executor["errorCategories"]["categories"]}
    retried = {r["onCategory"] for r in policy["rules"] if r["action"] == "Retry"}
    assert retried == {"oom", "gpu", "internal"}
    assert {actions[c] for c in retried} == {"Delete"}
    assert actions["user-error"] == "Retain"


# --- the tour, run -------------------------------------------------------------------------


def memory_cgroups_available(tmp_path: Path) -> bool:
    """Whether the local backend can hold a pod to its memory limit here (the tour's first
    requirement); the probe's cgroups are removed again."""
    from armada.executor.backends.local import LocalBackend

    probe = LocalBackend(tmp_path / "probe", executor_id=f"tour-probe-{uuid.uuid4().hex[:8]}")
    try:
        return probe.cgroup_mode != "none"
    finally:
        for cgroup in probe.executor_cgroups:
            with contextlib.suppress(OSError):
                cgroup.rmdir()


@pytest.fixture
def tour(tmp_path: Path):
    if not memory_cgroups_available(tmp_path):
        pytest.skip("no writable memory cgroup on this machine: the tour's OOM kills need one")
    system = TourSystem(tmp_path, blocks()["start"])
    system.start()
    try:
        wait_until(
            "runall to be up and its web process to answer",
            system.ready,
            timeout=180,
            interval=0.5,
            details=lambda: system.log()[-6000:],
        )
        yield system
    finally:
        system.stop()


def run(system: TourSystem, name: str) -> str:
    done = system.run_block(blocks()[name], timeout=BLOCK_TIMEOUT)
    assert done.returncode == 0, (
        f"tour step {name} failed ({done.returncode})\n--- stdout\n{done.stdout}\n"
        f"--- stderr\n{done.stderr}\n--- runall\n{system.log()[-4000:]}"
    )
    return done.stdout


def job_of(system: TourSystem, output: str) -> dict:
    """The job the step submitted (its ``job <id>`` line), as ``armadactl get job -o json``
    shows it."""
    job_id = re.search(r"^job (\S+)$", output, re.M).group(1)
    shown = system.armadactl("get", "job", job_id, "-o", "json")
    assert shown.returncode == 0, shown.stderr
    return json.loads(shown.stdout)


def lookout_session(system: TourSystem) -> requests.Session:
    session = requests.Session()
    page = session.get(f"{system.url}/login", timeout=60)
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    password = (system.var / "admin-password").read_text().strip()
    answer = session.post(
        f"{system.url}/login",
        data={"csrfmiddlewaretoken": csrf, "username": "admin", "password": password},
        headers={"Referer": f"{system.url}/login"},
        timeout=60,
        allow_redirects=False,
    )
    assert answer.status_code == 302, answer.text[:2000]
    return session


@pytest.mark.e2e
@pytest.mark.timeout(900)
def test_the_readme_tour_runs_as_written(tour: TourSystem):
    # Logging in stores a token in the (temporary) home's ~/.armadactl.yaml.
    run(tour, "login")
    stored = yaml.safe_load((tour.home / ".armadactl.yaml").read_text())
    assert stored["token"].startswith("arm_") and "password" not in stored

    run(tour, "policy")
    queue = json.loads(tour.armadactl("get", "queue", "tour", "-o", "json").stdout)
    assert queue["retryPolicies"] == ["ml-training-retries"]

    # 2. OOM-killed at 64Mi and 96Mi, each time retried with memory x1.5, then it fits.
    oom = job_of(tour, run(tour, "oom"))
    runs = oom["runs"]
    assert oom["state"] == "succeeded", oom
    assert [r["requests"]["memory"] for r in runs] == ["64Mi", "96Mi", "144Mi"]
    sizes = [mebibytes(r["requests"]["memory"]) for r in runs]
    assert [after / before for before, after in zip(sizes, sizes[1:], strict=False)] == [1.5, 1.5]
    failed = runs[:2]
    check_oom_retries(failed)
    assert all("holding" in r["message"] and r["hint"] for r in failed)
    assert runs[2]["state"] == "succeeded" and oom["retryCount"] == 2

    # 3. Exit code 2 is a user-error: failed at once by rule 1, never retried.
    exit_code = job_of(tour, run(tour, "exit-code"))
    [only] = exit_code["runs"]
    assert exit_code["state"] == "failed" and exit_code["failureCategory"] == "user-error"
    assert (only["exitCode"], only["retryable"]) == (2, False)
    assert (only["decision"]["decision"], only["decision"]["rule"]) == ("fail_rule", 1)
    assert "ml-training-retries" in exit_code["terminalReason"]
    assert "rule 1" in exit_code["terminalReason"]

    # 4. failFast: an OOM kill the policy would retry, failed on the first failure.
    fail_fast = job_of(tour, run(tour, "fail-fast"))
    [only] = fail_fast["runs"]
    assert fail_fast["state"] == "failed" and only["failureCategory"] == "oom"
    assert (only["decision"]["decision"], only["retryable"]) == ("not_retried", False)
    assert "failFast" in only["decision"]["reason"]

    # 5. The counters: two retries and one fail_rule for queue tour; fail-fast is not one.
    counted = {}
    for line in run(tour, "metrics").splitlines():
        labels, value = line.rsplit(" ", 1)
        if 'queue="tour"' in labels and 'policy="ml-training-retries"' in labels:
            counted[re.search(r'decision="([^"]+)"', labels).group(1)] = float(value)
    assert counted == {"retry": 2.0, "fail_rule": 1.0}

    # Lookout: the job page with its decision trail, and the decision metrics page.
    session = lookout_session(tour)
    page = session.get(f"{tour.url}/jobs/{oom['id']}", timeout=60)
    assert page.status_code == 200
    assert "ml-training-retries" in page.text and "64Mi → 144Mi" in page.text
    metrics = session.get(f"{tour.url}/metrics/decisions", timeout=60)
    assert metrics.status_code == 200 and "ml-training-retries" in metrics.text
