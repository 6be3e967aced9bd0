"""Live logs end to end, on one system for the module (web, grpc, the scheduler with beat, the
executor API and a ``local`` executor whose pods are real processes): a job that prints a
line a second shows its lines in ``GET /api/v1/runs/{id}/log`` while it runs,
``armadactl logs -f`` prints them as they come and returns when the run is cancelled, and
Lookout's Logs tab, in Chromium, shows each new line within 2 seconds of the job writing it.

Nothing waits on a sleep being long enough: every wait polls with a generous deadline."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.browser.conftest import browser  # noqa: F401 - the module's Chromium
from tests.e2e.conftest import E2E_CONFIG, PY, ROOT, System
from tests.e2e.wire_system import (
    ADMIN,
    ADMIN_PASSWORD,
    module_database,
    new_system,
    run_system,
    users_and_tokens,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

WAIT = 90.0  # seconds; generous, for a busy two-core machine
CONFIG = {
    **E2E_CONFIG,
    "executors": [
        {
            "id": "local",
            "backend": "local",
            "tickPeriod": "300ms",
            "nodes": [{"name": "local-node", "allocatable": {"cpu": "4", "memory": "4Gi"}}],
        }
    ],
}
TICKS = "for i in $(seq 1 20); do echo tick $i; sleep 1; done"
# Each line says when it was written (seconds since the epoch), for the browser's clock.
STAMPED_TICKS = "for i in $(seq 1 40); do echo tick $i $(date +%s.%N); sleep 1; done"
LINE = re.compile(r"^tick (\d+)$")


@pytest.fixture(scope="module")
def transactional_db(django_db_setup, django_db_blocker) -> Iterator[None]:
    """pytest-django's ``transactional_db`` for the whole module (``module_database``)."""
    yield from module_database(django_db_blocker)


@pytest.fixture(scope="module")
def system(transactional_db, tmp_path_factory) -> Iterator[System]:
    """The module's system, its static files collected first (as ``runall`` does) so that
    Lookout's pages get their scripts."""
    users_and_tokens()
    system = new_system(tmp_path_factory.mktemp("live-logs"), CONFIG)
    try:
        subprocess.run(
            [PY, "manage.py", "collectstatic", "--noinput", "--verbosity", "0"],
            env=system.env,
            cwd=ROOT,
            check=True,
            timeout=WAIT * 2,
        )
        run_system(system, CONFIG)
        answer = system.post("/api/v1/queues", json={"name": "live"})
        assert answer.status_code == 201, answer.text
        yield system
    finally:
        system.stop_all()


def submit(system: System, script: str, job_set: str) -> str:
    job = {
        "podSpec": {
            "containers": [
                {
                    "name": "main",
                    "image": "local",
                    "command": ["sh", "-c", script],
                    "resources": {
                        "requests": {"cpu": "100m", "memory": "64Mi"},
                        "limits": {"cpu": "100m", "memory": "64Mi"},
                    },
                }
            ]
        }
    }
    body = {"queue": "live", "jobSetId": job_set, "jobs": [job]}
    answer = system.post("/api/v1/jobs", json=body)
    assert answer.status_code == 201, answer.text
    return answer.json()["jobIds"][0]


def running_run(system: System, job_id: str) -> str:
    def run_id() -> str | None:
        runs = system.get(f"/api/v1/jobs/{job_id}").json().get("runs") or []
        return runs[0]["id"] if runs and runs[0]["state"] == "running" else None

    return system.wait_for("the job's run to run", run_id, timeout=WAIT)


def cancel(system: System, job_id: str, job_set: str) -> None:
    body = {"queue": "live", "jobSetId": job_set, "jobIds": [job_id]}
    answer = system.post("/api/v1/jobs/cancel", json=body)
    assert answer.status_code in (200, 202), answer.text


def ticks_of(text: str) -> list[int]:
    return [int(m.group(1)) for line in text.splitlines() if (m := LINE.match(line))]


def test_the_api_and_armadactl_follow_a_running_jobs_log(system):
    job_id = submit(system, TICKS, "api")
    run_id = running_run(system, job_id)
    follower = subprocess.Popen(
        [str(Path(PY).with_name("armadactl")), "logs", "-f", run_id],
        env=system.env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:

        def three_ticks_while_running() -> dict | None:
            body = system.get(f"/api/v1/runs/{run_id}/log").json()
            return body if len(ticks_of(body["log"])) >= 3 else None

        body = system.wait_for("three ticks in the API", three_ticks_while_running, timeout=WAIT)
        seen = ticks_of(body["log"])
        assert seen == list(range(1, len(seen) + 1)) and len(seen) < 20  # in order, live
        assert body["runState"] == "running" and body["truncated"] is False
        assert body["updatedAt"] is not None and body["dropped"] == 0

        cancel(system, job_id, "api")
        out, err = follower.communicate(timeout=WAIT)  # it returns once the run has ended
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.communicate()
    assert follower.returncode == 0, err
    printed = ticks_of(out)
    assert printed == list(range(1, len(printed) + 1)) and len(printed) >= len(seen)
    assert f"Run {run_id} ended: cancelled." in err


def test_lookouts_logs_tab_shows_new_lines_within_two_seconds(system, browser):  # noqa: F811
    from playwright.sync_api import expect

    job_id = submit(system, STAMPED_TICKS, "browser")
    run_id = running_run(system, job_id)
    context = browser.new_context(base_url=system.url, viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.set_default_timeout(WAIT * 1000)
    try:
        page.goto(f"/jobs/{job_id}")
        expect(page).to_have_url(re.compile(r"/login\?next="))
        page.fill("#id_username", ADMIN)
        page.fill("#id_password", ADMIN_PASSWORD)
        page.click("form.login-form button[type=submit]")
        expect(page).to_have_url(re.compile(re.escape(f"/jobs/{job_id}") + "$"))
        page.wait_for_load_state("load")
        log = page.locator("pre.log")
        expect(log).to_contain_text("tick 1 ")
        # Note when each line first shows, by the page's clock (this machine's).
        page.evaluate(
            """() => {
                const pre = document.querySelector("pre.log");
                window.tickSeen = {};
                window.watchFrom = Date.now() / 1000;
                const note = () => {
                    const now = Date.now() / 1000;
                    for (const m of pre.textContent.matchAll(/tick (\\d+) (\\d+\\.\\d+)/g)) {
                        if (!(m[1] in window.tickSeen)) window.tickSeen[m[1]] = [now, +m[2]];
                    }
                };
                new MutationObserver(note).observe(pre, {
                    childList: true, characterData: true, subtree: true
                });
                note();
            }"""
        )
        page.wait_for_function(
            "() => Object.values(window.tickSeen).filter(([s, w]) => w > window.watchFrom)"
            ".length >= 6",
            timeout=WAIT * 1000,
        )
        seen = page.evaluate("() => [window.watchFrom, window.tickSeen]")
        watch_from, ticks = seen
        lags = {int(n): shown - written for n, (shown, written) in ticks.items()}
        fresh = {n: lag for n, lag in lags.items() if ticks[str(n)][1] > watch_from}
        assert len(fresh) >= 6
        assert max(fresh.values()) <= 2.0, f"lines shown this long after written: {fresh}"
        assert "Following" in page.locator(".log-status").inner_text()

        cancel(system, job_id, "browser")
        expect(page.locator(".log-status")).to_have_text("The run has ended.")
        assert system.get(f"/api/v1/runs/{run_id}/log").json()["runState"] == "cancelled"
    finally:
        context.close()
